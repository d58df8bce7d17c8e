// `cutlass = true` on a machine without the CUTLASS headers: the error names the install command.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #include <cute/tensor.hpp>
    extern "C" __global__ void k(float* x) { x[0] = 1.0f; }
"#, cutlass = true);

fn main() {}

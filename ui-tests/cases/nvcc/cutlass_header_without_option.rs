// A CUTLASS/CuTe include without `cutlass = true`: nvcc's error, and a help line naming the option.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    #include <cute/tensor.hpp>
    extern "C" __global__ void k(float* x) { x[0] = 1.0f; }
"#);

fn main() {}

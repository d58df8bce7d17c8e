// A kernel that is declared but never defined is not in the compiled code.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void k(float* x);
    extern "C" __global__ void other(float* x) { x[threadIdx.x] = 1.0f; }
"#);

fn main() {}

// Compiler options are string literals.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] = N; }"#,
    options = [-DN]
);

fn main() {}

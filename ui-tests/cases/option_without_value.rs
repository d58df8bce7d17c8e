// An option needs `= [...]`.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }"#,
    archs
);

fn main() {}

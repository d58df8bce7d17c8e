// Architectures are numbers (`90`) or strings (`"90a"`), not identifiers.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }"#,
    archs = [sm_90]
);

fn main() {}

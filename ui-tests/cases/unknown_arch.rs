// sm_52 is not an architecture nvcc 13 builds for.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }"#,
    archs = [80, 52]
);

fn main() {}

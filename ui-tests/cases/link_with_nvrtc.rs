// Separate compilation needs nvcc at build time: NVRTC compiles one translation unit.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void parent(float* y) { y[threadIdx.x] = 1.f; }"#,
    rdc = true,
    compiler = "nvrtc",
);

fn main() {}

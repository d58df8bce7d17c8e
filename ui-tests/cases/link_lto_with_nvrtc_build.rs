// `lto` (LTO-IR linked by nvlink) without an rdc-capable compiler: build-time NVRTC cannot link.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.f; }"#,
    lto = true,
    compiler = "nvrtc-build",
);

fn main() {}

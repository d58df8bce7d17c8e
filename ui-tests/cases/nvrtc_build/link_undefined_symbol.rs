// Linked without nvcc (build-time NVRTC compiles, nvJitLink links): a `__device__` function that is
// declared and called but defined in no unit is a compile error naming it, as with nvcc.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    __device__ float cube(float x);
    extern "C" __global__ void k(float* y) { y[0] = cube(y[0]); }
"#,
    rdc = true,
    compiler = "nvrtc-build",
);

fn main() {}

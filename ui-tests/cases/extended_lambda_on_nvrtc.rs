// NVRTC has no `--extended-lambda`: a module NVRTC compiles cannot take the flag, and the error
// names the flag, the compiler path and the fix.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    template <class F> __global__ void apply(float* x, F f) { x[0] = f(x[0]); }
    void host_side(float* x) { apply<<<1, 1>>>(x, [] __device__ (float v) { return v * 2.f; }); }
    extern "C" __global__ void plain(float* x) { x[0] = 1.f; }
"#,
    compiler = "nvrtc",
    extended_lambda = true
);

fn main() {}

// With no nvcc but libnvrtc (here forced with `compiler = "nvrtc-build"`), a mistake in the CUDA
// source is a compile error with NVRTC's log, citing this Rust file and the line of the mistake
// (line 9: `undefined_name`), not a failure at run time.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void scale(float* x, float s, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= undefined_name;
    }
"#, compiler = "nvrtc-build");

fn main() {}

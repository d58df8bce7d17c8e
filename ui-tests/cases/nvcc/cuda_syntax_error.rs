// A syntax error in the CUDA source is reported with nvcc's log, citing this Rust file and the
// line of the mistake (line 8: the `#if` is missing its `)`).
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void scale(float* x, float s, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
    #if (__CUDA_ARCH__ >= 800
        if (i < n) x[i] *= s;
    #endif
    }
"#);

fn main() {}

// `move` is a fine CUDA name but a Rust keyword.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void move(float* dst, const float* src, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) dst[i] = src[i];
    }
"#);

fn main() {}

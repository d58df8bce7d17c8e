// A C++ syntax error (line 8: missing `;`; the compiler notices it at the `}` on line 9) is
// reported with nvcc's log, citing this Rust file.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void scale(float* x, float s, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= s
    }
"#);

fn main() {}

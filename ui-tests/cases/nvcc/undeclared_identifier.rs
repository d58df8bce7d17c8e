// A semantic error in the kernel body (line 7: `m` is undeclared), reported with nvcc's log.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void scale(float* x, float s, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < m) x[i] *= s;
    }
"#);

fn main() {}

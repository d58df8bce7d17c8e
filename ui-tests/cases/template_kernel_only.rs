// Template kernels need an instantiation: with nothing else, there is nothing to launch.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    template <typename T>
    __global__ void fill(T* x, T v, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = v;
    }
"#);

fn main() {}

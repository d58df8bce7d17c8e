// A function pointer is not device memory: the macro should reject it.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    extern "C" __global__ void apply(float* x, float (*f)(float)) {
        x[threadIdx.x] = f(x[threadIdx.x]);
    }
"#);

fn main() {}

// Two `__global__` overloads of one name cannot share one `scale::launch`.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"
    __global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }
    __global__ void scale(float* x, float s) { x[threadIdx.x] *= s; }
"#);

fn main() {}

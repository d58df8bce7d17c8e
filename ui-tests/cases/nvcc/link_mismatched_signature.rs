// `square` declared with a `double` parameter but defined in the linked file with a `float` one.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    __device__ float square(double x);
    extern "C" __global__ void k(float* y) { y[threadIdx.x] = square(y[threadIdx.x]); }
"#,
    link = ["cases/link_math.cu"],
);

fn main() {}

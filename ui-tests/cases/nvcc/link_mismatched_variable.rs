// `calls` declared `extern` as a float array here, defined as one `unsigned int` in the linked file.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"
    extern __device__ float calls[4];
    extern "C" __global__ void k(float* y) { y[threadIdx.x] = calls[threadIdx.x]; }
"#,
    link = ["cases/link_math.cu"],
);

fn main() {}

// A `link` file that does not exist (paths are relative to the crate root, like `file`).
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = 1.f; }"#,
    link = ["kernels/missing_math.cu"],
);

fn main() {}

// An option nvcc does not know is reported with nvcc's own message.
use cuda_embed::cuda_kernel;

cuda_kernel!(
    r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }"#,
    options = ["--no-such-option"]
);

fn main() {}

// `cutlass` takes `true` or `false`.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"extern "C" __global__ void k(float* x) { x[0] = 1.0f; }"#, cutlass = "yes");

fn main() {}

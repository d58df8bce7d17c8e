// A register limit no GPU accepts.
use cuda_embed::cuda_kernel;

cuda_kernel!(r#"extern "C" __global__ void k(float* x) {}"#, maxrregcount = 4);

fn main() {}

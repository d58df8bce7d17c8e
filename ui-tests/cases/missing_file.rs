// A `file` that does not exist (paths are relative to the crate root).
use cuda_embed::cuda_kernel;

cuda_kernel!(file = "kernels/missing.cu");

fn main() {}

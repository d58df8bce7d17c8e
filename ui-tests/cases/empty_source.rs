// An empty (whitespace-only) source.
use cuda_embed::cuda_kernel;

cuda_kernel!("   ");

fn main() {}

// The macro needs at least the source.
use cuda_embed::cuda_kernel;

cuda_kernel!();

fn main() {}

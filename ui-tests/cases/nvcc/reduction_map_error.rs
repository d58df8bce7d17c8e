// A CUDA error in `map` is reported by nvcc at the Rust line of the `map` string.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    l2norm,
    inputs = "float x",
    outputs = "float y",
    map = "x * scale",
    reduce = "a + b",
    post_map = "y = sqrtf(a)",
    identity = "0",
);

fn main() {}

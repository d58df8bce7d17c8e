// A misspelt key is an error at the key, listing the keys a reduction takes.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    l2norm,
    inputs = "float x",
    outputs = "float y",
    map = "x * x",
    reduce = "a + b",
    post_mapp = "y = sqrtf(a)",
    identity = "0",
);

fn main() {}

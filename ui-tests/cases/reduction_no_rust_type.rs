// A reduction parameter whose CUDA type has no Rust counterpart is a clear error, not a panic.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    wide_sum,
    inputs = "long double x",
    outputs = "double y",
    map = "(double)x",
    reduce = "a + b",
    identity = "0",
);

fn main() {}

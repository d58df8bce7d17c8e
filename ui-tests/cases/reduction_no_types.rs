// A placeholder with no `types = [...]` to say which instances to build.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    total,
    inputs = "T x",
    outputs = "T y",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

fn main() {}

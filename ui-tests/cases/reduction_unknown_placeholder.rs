// An instance binding a placeholder the parameters do not use points at that instance.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    total,
    inputs = "T x",
    outputs = "T y",
    map = "x",
    reduce = "a + b",
    identity = "0",
    types = ["T=float", "U=double"],
);

fn main() {}

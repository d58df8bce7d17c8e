// A name that is both an input and an output: a reduction's outputs are written, not read.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    in_place,
    inputs = "float x",
    outputs = "float x",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

fn main() {}

// An output name used twice, and the `outputs` key given twice, are errors at the place to fix.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    same_name,
    inputs = "float x",
    outputs = "float y, int y",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

reduction_kernel!(
    same_key,
    inputs = "float x",
    outputs = "float y",
    outputs = "float z",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

fn main() {}

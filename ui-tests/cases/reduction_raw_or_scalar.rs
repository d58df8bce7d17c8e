// `raw` arrays are not reduction parameters; `scalar` is for inputs only; a reduction needs an
// array input to reduce.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    raw_input,
    inputs = "raw float x",
    outputs = "float y",
    map = "x[i]",
    reduce = "a + b",
    identity = "0",
);

reduction_kernel!(
    raw_output,
    inputs = "float x",
    outputs = "raw float y",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

reduction_kernel!(
    scalar_output,
    inputs = "float x",
    outputs = "scalar float y",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

reduction_kernel!(
    only_scalars,
    inputs = "scalar float s",
    outputs = "float y",
    map = "s",
    reduce = "a + b",
    identity = "0",
);

fn main() {}

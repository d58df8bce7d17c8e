// A name declared both as an input and as an output: an output that is also read is declared
// once, in `outputs`.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    axpy,
    inputs = "float x, float y, scalar float a",
    outputs = "float y",
    operation = "y = a * x + y",
);

fn main() {}

// The same output declared twice in `outputs`.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    twice,
    inputs = "float x",
    outputs = "float y, float y",
    operation = "y = x",
);

fn main() {}

// An output cannot be a `scalar`: there is one value per index to write.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    total,
    inputs = "float x",
    outputs = "scalar float s",
    operation = "s = x",
);

fn main() {}

// No `operation`: the kernel would do nothing.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    copy,
    inputs = "float x",
    outputs = "float y",
);

fn main() {}

// With `reduce`, the last step declares the value that is reduced, so it needs a type.
use cuda_embed::fuse;

fuse!(
    total,
    inputs = "float x",
    steps = ["float d = x * 2.0f", "s = d"],
    outputs = "float s",
    reduce = "a + b",
    identity = "0",
);

fn main() {}

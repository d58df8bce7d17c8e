// Without `reduce`, a step either declares a typed local or assigns an output: `e` is neither.
use cuda_embed::fuse;

fuse!(
    chain,
    inputs = "float x",
    steps = ["float d = x * 2.0f", "e = d + 1.0f"],
    outputs = "float y",
);

fn main() {}

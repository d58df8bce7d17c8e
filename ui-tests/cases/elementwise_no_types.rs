// Placeholders with no `types = [...]`: nothing says which instances to build.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    squared_diff,
    inputs = "T x, T y",
    outputs = "T z",
    operation = "z = (x - y) * (x - y)",
);

fn main() {}

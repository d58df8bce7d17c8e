// `types` binds a placeholder (`U`) that no parameter uses: the instance names it.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    scale,
    inputs = "T x",
    outputs = "T y",
    operation = "y = x * 2",
    types = ["T=float, U=int"],
);

fn main() {}

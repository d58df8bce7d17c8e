// An option the macro does not know (CuPy's `reduce_dims`) lists the options it does know.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    copy,
    inputs = "float x",
    outputs = "float y",
    operation = "y = x",
    reduce_dims = false,
);

fn main() {}

// A CUDA compile error in the operation (`xx` is not declared) is reported with the compiler's
// log at the operation string's line (line 9) of this file.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    scale,
    inputs = "float x, scalar float s",
    outputs = "float y",
    operation = "y = xx * s",
);

fn main() {}

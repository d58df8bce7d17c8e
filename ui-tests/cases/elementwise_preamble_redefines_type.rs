// The preamble's own macro redefines a type the parameters are checked as: refused at the preamble.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    widen,
    inputs = "int32_t x",
    outputs = "int32_t y",
    preamble = "#define int32_t long long",
    operation = "y = x",
);

fn main() {}

// A Rust name that is a C++ keyword cannot name the generated CUDA kernel: a compile error at the
// name, not nvcc's error about the generated source.
use cuda_embed::{elementwise_kernel, reduction_kernel};

elementwise_kernel!(
    delete,
    inputs = "float x",
    outputs = "float y",
    operation = "y = x",
);

reduction_kernel!(
    float,
    inputs = "float x",
    outputs = "float y",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

fn main() {}

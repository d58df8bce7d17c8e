// A `-D` option that makes `float` mean `double`: the reduction would read 8-byte elements from
// buffers the launcher checks as `f32`. Refused at the option.
use cuda_embed::reduction_kernel;

reduction_kernel!(
    total,
    inputs = "float x",
    outputs = "float y",
    map = "x",
    reduce = "a + b",
    identity = "0",
    options = ["-lineinfo", "-Dfloat=double"],
);

fn main() {}

// A define that makes `float` mean `double`: the kernel would read 8-byte elements from buffers
// the launcher checks as `f32`. Refused at the define.
use cuda_embed::elementwise_kernel;

elementwise_kernel!(
    widen,
    inputs = "float x",
    outputs = "float y",
    operation = "y = x",
    defines = ["N=4", "float=double"],
);

fn main() {}

// Launching with an element type the macro did not build names the instances that exist.
use cuda_embed::elementwise_kernel;
use cuda_embed::{CudaSlice, CudaStream};

elementwise_kernel!(
    squared_diff,
    inputs = "T x, T y",
    outputs = "T z",
    operation = "z = (x - y) * (x - y)",
    types = ["float", "double"],
);

fn run(stream: &CudaStream, x: &CudaSlice<i32>, y: &CudaSlice<i32>, z: &mut CudaSlice<i32>) {
    let _ = squared_diff::launch(stream, x, y, z);
}

fn main() {}

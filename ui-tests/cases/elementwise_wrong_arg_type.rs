// An array of the wrong element type for a concrete `float` parameter.
use cuda_embed::elementwise_kernel;
use cuda_embed::{CudaSlice, CudaStream};

elementwise_kernel!(
    relu,
    inputs = "float x, scalar float floor",
    outputs = "float y",
    operation = "y = x > floor ? x : floor",
);

fn run(stream: &CudaStream, x: &CudaSlice<f64>, y: &mut CudaSlice<f32>) {
    let _ = relu::launch(stream, x, 0.0f32, y);
}

fn main() {}

// With one type listed, `T` is that type: a buffer of another element type is reported at its
// argument, naming the parameter, instead of a trait error of cudarc's on another argument.
use cuda_embed::elementwise_kernel;
use cuda_embed::{CudaSlice, CudaStream};

elementwise_kernel!(
    axpy,
    inputs = "T x, scalar T a",
    outputs = "T y",
    operation = "y = a * x + y",
    types = ["float"],
);

fn run(stream: &CudaStream, x: &CudaSlice<f64>, y: &mut CudaSlice<f32>) {
    let _ = axpy::launch(stream, x, 2.0, y);
}

fn main() {}

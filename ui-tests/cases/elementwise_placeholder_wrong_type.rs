// `T` is `f32` for `x`, so an `f64` buffer for the output `y` (also `T`) is reported at `y`,
// naming the parameter and both element types; in the flat and in the N-D launcher.
use cuda_embed::elementwise_kernel;
use cuda_embed::{CudaSlice, CudaStream, NdView, NdViewMut};

elementwise_kernel!(
    scale,
    inputs = "T x, scalar T a",
    outputs = "T y",
    operation = "y = a * x",
    types = ["float", "double"],
);

fn run(stream: &CudaStream, x: &CudaSlice<f32>, y: &mut CudaSlice<f64>) {
    let _ = scale::launch(stream, x, 2.0, y);
}

fn run_nd(stream: &CudaStream, x: &NdView<f32>, y: &mut NdViewMut<f64>) {
    let _ = scale::launch_nd(stream, x, 2.0, y);
}

fn main() {}

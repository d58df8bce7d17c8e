// Launching a reduction for types its `types = [...]` did not list: one error, naming the types
// built and where to add one.
use cuda_embed::{reduction_kernel, CudaSlice, CudaStream};
use std::sync::Arc;

reduction_kernel!(
    total,
    inputs = "T x",
    outputs = "T y",
    map = "x",
    reduce = "a + b",
    identity = "0",
    types = ["float", "int"],
);

reduction_kernel!(
    dot,
    inputs = "T x, U w",
    outputs = "double y",
    map = "(double)x * (double)w",
    reduce = "a + b",
    identity = "0",
    types = ["T=float, U=float", "T=double, U=double"],
);

fn run(stream: &Arc<CudaStream>, x: &CudaSlice<f64>, y: &mut CudaSlice<f64>) {
    let _ = total::launch(stream, x, y);
}

fn run_dot(stream: &Arc<CudaStream>, x: &CudaSlice<f32>, w: &CudaSlice<i32>, y: &mut CudaSlice<f64>) {
    let _ = dot::launch::<f32, i32>(stream, x, w, y);
}

fn main() {}

// A buffer of the wrong element type, and a `cols` that is not a usize, at the call site.
use cuda_embed::{reduction_kernel, CudaSlice, CudaStream};
use std::sync::Arc;

reduction_kernel!(
    total,
    inputs = "float x",
    outputs = "float y",
    map = "x",
    reduce = "a + b",
    identity = "0",
);

fn run(stream: &Arc<CudaStream>, x: &CudaSlice<i32>, y: &mut CudaSlice<f32>) {
    let _ = total::launch(stream, x, y);
}

fn rows(stream: &Arc<CudaStream>, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>, cols: i32) {
    let _ = total::launch_rows(stream, x, cols, y);
}

fn main() {}

// `T` is `f32` for `x`, so an `f64` buffer for `w` (also `T`) is reported at `w`, naming the
// parameter and both element types: in `launch_rows` and in the N-D `launch_axes`.
use cuda_embed::{reduction_kernel, CudaSlice, CudaStream, NdView, NdViewMut};
use std::sync::Arc;

reduction_kernel!(
    dot,
    inputs = "T x, T w",
    outputs = "T y",
    map = "x * w",
    reduce = "a + b",
    identity = "0",
    types = ["float", "double"],
);

fn rows(stream: &Arc<CudaStream>, x: &CudaSlice<f32>, w: &CudaSlice<f64>, y: &mut CudaSlice<f32>) {
    let _ = dot::launch_rows(stream, x, w, 16, y);
}

fn axes(stream: &Arc<CudaStream>, x: &NdView<f32>, w: &NdView<f32>, y: &mut NdViewMut<f64>) {
    let _ = dot::launch_axes(stream, x, w, &[1], y);
}

fn main() {}

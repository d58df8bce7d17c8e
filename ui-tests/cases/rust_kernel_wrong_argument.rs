// The launcher of a Rust-syntax kernel is typed like a cuda_kernel! one: a `&[f32]` parameter
// takes a device buffer of f32, so a buffer of f64 is a type error at the argument.
use cuda_embed::device::*;
use cuda_embed::{CudaSlice, CudaStream, LaunchConfig};

#[cuda_embed::kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

fn launch(stream: &CudaStream, x: &CudaSlice<f64>, y: &mut CudaSlice<f32>) -> cuda_embed::Result<()> {
    unsafe { saxpy::launch(stream, LaunchConfig::for_num_elems(1), 2.0, x, y) }
}

fn main() {}

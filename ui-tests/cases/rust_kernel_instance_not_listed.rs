// A generic Rust-syntax kernel is built for the listed types only: launching it for another is
// a compile error naming the instances built.
use cuda_embed::device::*;
use cuda_embed::{CudaSlice, CudaStream, LaunchConfig};

#[cuda_embed::kernel(instances = ["f32"])]
fn scale<T>(a: T, x: &mut [T]) {
    let i = thread_idx().x as usize;
    x[i] = a * x[i];
}

fn launch(stream: &CudaStream, x: &mut CudaSlice<f64>) -> cuda_embed::Result<()> {
    unsafe { scale::launch::<f64>(stream, LaunchConfig::for_num_elems(1), 2.0, x) }
}

fn main() {}

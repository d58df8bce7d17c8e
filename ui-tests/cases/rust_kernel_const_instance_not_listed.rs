// A const-generic Rust-syntax kernel is built for the listed values only: launching it for
// another is a compile error naming the instances built.
use cuda_embed::device::*;
use cuda_embed::{CudaSlice, CudaStream, LaunchConfig};

#[cuda_embed::kernel(instances = [64, 256])]
fn fill<const N: usize>(x: &mut [f32]) {
    let tile = shared::<f32, N>();
    let i = thread_idx().x as usize;
    tile[i] = 1.0;
    x[i] = tile[i];
}

fn launch(stream: &CudaStream, x: &mut CudaSlice<f32>) -> cuda_embed::Result<()> {
    unsafe { fill::launch::<128>(stream, LaunchConfig::for_num_elems(1), x) }
}

fn main() {}

// CUDA C++ defines no operators on vector types: a Rust-syntax kernel works per component.
use cuda_embed::device::*;
use cuda_embed::Float4;

#[cuda_embed::kernel]
fn add4(a: &[Float4], b: &[Float4], c: &mut [Float4]) {
    let i = thread_idx().x as usize;
    c[i] = a[i] + b[i];
}

fn main() {}

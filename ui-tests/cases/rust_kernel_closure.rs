// A closure inside a Rust-syntax kernel: not in the supported subset. The error points at it.
use cuda_embed::device::*;

#[cuda_embed::kernel]
fn scale(x: &mut [f32]) {
    let i = thread_idx().x as usize;
    let twice = |v: f32| v * 2.0;
    x[i] = twice(x[i]);
}

fn main() {}

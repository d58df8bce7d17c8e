// Writing through `&[T]`: the parameter is read-only; the error says to declare it `&mut [T]`.
use cuda_embed::device::*;

#[cuda_embed::kernel]
fn clear(x: &[f32]) {
    let i = thread_idx().x as usize;
    x[i] = 0.0;
}

fn main() {}

// A reference to a local: kernels use values; the error points at the `&`.
use cuda_embed::device::*;

#[cuda_embed::kernel]
fn copy(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x as usize;
    let v = x[i];
    let r = &v;
    y[i] = v;
}

fn main() {}

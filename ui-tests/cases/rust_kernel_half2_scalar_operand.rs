// `Half2` arithmetic takes two `Half2`: a scalar is widened by the user, `Half2::new(s, s)`.
use cuda_embed::device::*;
use cuda_embed::Half2;

#[cuda_embed::kernel]
fn scale(s: f16, x: &mut [Half2]) {
    let i = thread_idx().x as usize;
    x[i] = x[i] * s;
}

fn main() {}

// An iterator method on a slice: only `.len()` and indexing are supported.
#[cuda_embed::kernel]
fn total(x: &[f32], out: &mut [f32]) {
    out[0] = x.iter().sum();
}

fn main() {}

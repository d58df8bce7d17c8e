// A slice of slices: one flat slice, indexed `row * width + col`, is what a kernel takes.
#[cuda_embed::kernel]
fn rows(x: &[&[f32]], out: &mut [f32]) {}

fn main() {}

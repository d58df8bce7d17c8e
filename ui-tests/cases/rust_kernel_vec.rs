// A `Vec` parameter: kernels take slices. The error points at the type.
#[cuda_embed::kernel]
fn sum(x: Vec<f32>, out: &mut [f32]) {}

fn main() {}

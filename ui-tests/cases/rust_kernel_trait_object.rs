// A trait object parameter: kernels have no dynamic dispatch.
#[cuda_embed::kernel]
fn apply(f: &dyn Fn(f32) -> f32, x: &mut [f32]) {}

fn main() {}

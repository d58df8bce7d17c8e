// A `String` parameter: strings are not supported in kernels.
#[cuda_embed::kernel]
fn greet(name: String, out: &mut [u8]) {}

fn main() {}

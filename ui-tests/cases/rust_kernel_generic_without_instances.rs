// A generic kernel lists the types it is built for.
#[cuda_embed::kernel]
fn scale<T>(a: T, x: &mut [T]) {}

fn main() {}

// A `#[device]` function on its own: it goes in a `#[cuda_embed::kernels]` module with the
// kernels that call it.
#[cuda_embed::device]
fn square(v: f32) -> f32 {
    v * v
}

fn main() {}

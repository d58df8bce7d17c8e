// `thread_idx` without `use cuda_embed::device::*`: rustc reports it where it is called.
#[cuda_embed::kernel]
fn fill(x: &mut [f32]) {
    let i = thread_idx().x as usize;
    x[i] = 1.0;
}

fn main() {}

// A const parameter's instances are integers of its type.
use cuda_embed::device::*;

#[cuda_embed::kernel(instances = [64, "f32"])]
fn fill<const N: usize>(x: &mut [f32]) {
    let i = thread_idx().x as usize;
    x[i] = N as f32;
}

#[cuda_embed::kernel(instances = [300])]
fn small<const N: u8>(x: &mut [f32]) {
    let i = thread_idx().x as usize;
    x[i] = N as f32;
}

fn main() {}

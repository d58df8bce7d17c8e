// A CUDA compile error inside the C++ a Rust-syntax kernel was translated to: nvcc's message
// names the Rust line that produced the code (here a call to a C++ function with one argument
// too many).
use cuda_embed::device::*;

#[cuda_embed::kernel(cpp = "__device__ float twice(float v) { return 2.0f * v; }")]
fn doubled(x: &mut [f32]) {
    let i = thread_idx().x as usize;
    let v: f32 = twice(x[i], 1.0);
    x[i] = v;
}

fn main() {}

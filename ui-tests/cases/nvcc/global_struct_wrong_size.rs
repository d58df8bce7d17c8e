// A `__constant__` struct whose Rust twin is smaller than the CUDA struct (here half of it, so
// the byte count divides evenly): a compile error naming the CUDA struct's size.
use cuda_embed::cuda_kernel;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Pair {
    a: f32,
    b: f32,
}
// SAFETY: repr(C) plain data (a hand-written impl: no field layout to compare).
unsafe impl cuda_embed::DeviceSafe for Pair {}

cuda_kernel!(r#"
    struct Pair { float a; float b; float c; float d; };
    __constant__ Pair pair;
    extern "C" __global__ void k(float* x) { x[0] = pair.a + pair.d; }
"#);

fn main() {}

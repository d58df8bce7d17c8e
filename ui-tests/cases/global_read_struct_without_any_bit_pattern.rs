// A user struct can be read back only when it is marked `AnyBitPattern` (every field valid for
// any bits): `DeviceSafe` alone allows writing it, not reading it.
use cuda_embed::{cuda_kernel, CudaStream};

#[repr(C)]
#[derive(Clone, Copy, cuda_embed::DeviceSafe)]
pub struct Flags {
    on: bool,
    count: i32,
}

cuda_kernel!(r#"
    struct Flags { bool on; int count; };
    __device__ Flags flags;
    extern "C" __global__ void k(int* x) { if (flags.on) x[0] = flags.count; }
"#);

fn run(stream: &CudaStream) {
    let _ = flags.read(stream);
}

fn main() {}

// A field of a `DeviceSafe` struct must be `DeviceSafe` itself: a kernel cannot follow a host
// reference. The error points at the field.
use cuda_embed::DeviceSafe;

#[repr(C)]
#[derive(Clone, Copy, DeviceSafe)]
pub struct Params {
    pub n: i32,
    pub scale: &'static f32,
}

fn main() {}

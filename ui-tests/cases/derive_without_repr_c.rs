// `#[derive(DeviceSafe)]` needs `#[repr(C)]`: without it Rust may reorder the fields.
use cuda_embed::DeviceSafe;

#[derive(Clone, Copy, DeviceSafe)]
pub struct Params {
    pub scale: f32,
    pub n: i32,
}

fn main() {}

// `#[derive(DeviceSafe)]` is for structs; a C++ enum parameter is passed as its integer type.
use cuda_embed::DeviceSafe;

#[repr(C)]
#[derive(Clone, Copy, DeviceSafe)]
pub enum Mode {
    Fast,
    Exact,
}

fn main() {}

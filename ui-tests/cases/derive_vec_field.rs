// A `Vec` lives in host memory (and is not `Copy`): it cannot be a field of a struct passed to a
// kernel. The error points at the field.
use cuda_embed::DeviceSafe;

#[repr(C)]
#[derive(Clone, DeviceSafe)]
pub struct Batch {
    pub n: i32,
    pub values: Vec<f32>,
}

fn main() {}

// Same fields, same size, another order than the CUDA struct `struct Params { float scale; int n; }`:
// the layout check (which the macro generates from the offsets the compiler reports; here called
// directly with them) names the field and both offsets.
use cuda_embed::DeviceSafe;

#[repr(C)]
#[derive(Clone, Copy, DeviceSafe)]
pub struct Params {
    pub n: i32,
    pub scale: f32,
}

const _: () = cuda_embed::__private::check_layout::<Params>("Params", &[("scale", 0, 4), ("n", 4, 4)]);

fn main() {}

// Same size, wrong alignment: the CUDA `P` is `__align__(16)`, the Rust twin is not.
use cuda_embed::cuda_kernel;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct P {
    pub v: [f32; 4],
}

unsafe impl cuda_embed::DeviceSafe for P {}

cuda_kernel!(r#"
    struct __align__(16) P { float v[4]; };
    extern "C" __global__ void use_p(float* out, P p) { out[threadIdx.x] = p.v[threadIdx.x % 4]; }
"#);

fn main() {}

// The Rust twin of a by-value struct must have the CUDA struct's layout: here the CUDA `P` is
// 16 bytes (float + double) and the Rust `P` 4 bytes.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

#[repr(C)]
#[derive(Clone, Copy)]
pub struct P {
    pub a: f32,
}

unsafe impl cuda_embed::DeviceSafe for P {}

cuda_kernel!(r#"
    struct P { float a; double b; };
    extern "C" __global__ void use_p(double* out, P p) { out[0] = p.a + p.b; }
"#);

fn run(stream: &CudaStream, out: &mut CudaSlice<f64>) -> cuda_embed::Result<()> {
    unsafe { use_p::launch(stream, LaunchConfig::for_num_elems(1), out, P { a: 1.0 }) }
}

fn main() {
    let _ = run;
}

// A struct passed by value needs a Rust twin marked `unsafe impl DeviceSafe`.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Params {
    pub scale: f32,
    pub n: i32,
}

cuda_kernel!(r#"
    struct Params { float scale; int n; };
    extern "C" __global__ void scale(float* x, Params p) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < p.n) x[i] *= p.scale;
    }
"#);

fn run(stream: &CudaStream, x: &mut CudaSlice<f32>) -> cuda_embed::Result<()> {
    unsafe { scale::launch(stream, LaunchConfig::for_num_elems(1024), x, Params { scale: 2.0, n: 1024 }) }
}

fn main() {
    let _ = run;
}

// Same size and alignment, fields in another order: the CUDA `Params` has `scale` then `n`, the
// Rust twin `n` then `scale`. The size/alignment check passes; the field check (offsets read from
// the compiled CUDA struct, compared with `#[derive(DeviceSafe)]`'s layout) names the field.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

#[derive(Clone, Copy, cuda_embed::DeviceSafe)]
#[repr(C)]
pub struct Params {
    pub n: i32,
    pub scale: f32,
}

cuda_kernel!(r#"
    struct Params { float scale; int n; };
    extern "C" __global__ void scale(float* x, Params p) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < p.n) x[i] *= p.scale;
    }
"#);

fn run(stream: &CudaStream, x: &mut CudaSlice<f32>) -> cuda_embed::Result<()> {
    unsafe { scale::launch(stream, LaunchConfig::for_num_elems(4), x, Params { n: 4, scale: 2.0 }) }
}

fn main() {
    let _ = run;
}

// A `__constant__ float` array is a `Global<f32>`: writing f64 values is a type error.
use cuda_embed::{cuda_kernel, CudaStream};

cuda_kernel!(r#"
    __constant__ float coeffs[4];
    extern "C" __global__ void k(float* x) { x[0] = coeffs[0]; }
"#);

fn run(stream: &CudaStream) {
    let _ = coeffs.write(stream, &[1.0f64, 2.0, 3.0, 4.0]);
}

fn main() {}

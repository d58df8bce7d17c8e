// `float a` maps to `f32`: an `f64` value is a type error on the argument.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

cuda_kernel!(r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#);

fn run(stream: &CudaStream, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) -> cuda_embed::Result<()> {
    let a: f64 = 2.0;
    unsafe { saxpy::launch(stream, LaunchConfig::for_num_elems(1024), a, x, y, 1024) }
}

fn main() {
    let _ = run;
}

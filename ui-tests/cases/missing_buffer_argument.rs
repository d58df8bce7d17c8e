// Leaving out a device-buffer argument: rustc names the missing argument by the CUDA parameter's
// name (`/* y */`), since the launcher's Rust parameters are named after the CUDA ones.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

cuda_kernel!(r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#);

fn run(stream: &CudaStream, x: &CudaSlice<f32>) -> cuda_embed::Result<()> {
    unsafe { saxpy::launch(stream, LaunchConfig::for_num_elems(1024), 2.0, x, 1024) }
}

fn main() {
    let _ = run;
}

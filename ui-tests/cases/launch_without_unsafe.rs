// A launch runs arbitrary device code, so calling `launch` needs an `unsafe` block.
use cuda_embed::{cuda_kernel, CudaSlice, CudaStream, LaunchConfig};

cuda_kernel!(r#"
    extern "C" __global__ void scale(float* x, float s, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= s;
    }
"#);

fn run(stream: &CudaStream, x: &mut CudaSlice<f32>) -> cuda_embed::Result<()> {
    scale::launch(stream, LaunchConfig::for_num_elems(1024), x, 2.0, 1024)
}

fn main() {
    let _ = run;
}

// `float* y` (non-const pointee) means the kernel may write: it needs `&mut y`, not `&y`.
use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#);

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let x = stream.alloc_zeros::<f32>(1024)?;
    let y = stream.alloc_zeros::<f32>(1024)?;
    unsafe { saxpy::launch(&stream, LaunchConfig::for_num_elems(1024), 2.0, &x, &y, 1024) }
}

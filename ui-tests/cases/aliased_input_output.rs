// The same buffer as `const float* x` (shared borrow) and `float* y` (exclusive borrow) is
// rejected by the borrow checker.
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
    let mut x = stream.alloc_zeros::<f32>(1024)?;
    unsafe { saxpy::launch(&stream, LaunchConfig::for_num_elems(1024), 2.0, &x, &mut x, 1024) }
}

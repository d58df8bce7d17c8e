//! Template kernels: one C++ template, several instances, one generic Rust launcher.
//!
//! Run with `cargo run --example templates`. Without a GPU it prints why and exits with status 2.

use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(
    r#"
    template <typename T>
    __global__ void axpy(T a, const T* x, T* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }

    template <typename T, int BLOCK>
    __global__ void block_sum(const T* x, T* out, int n) {
        __shared__ T s[BLOCK];
        T acc = 0;
        for (int i = threadIdx.x; i < n; i += BLOCK) acc += x[i];
        s[threadIdx.x] = acc;
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w /= 2) {
            if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) *out = s[0];
    }
"#,
    instances = ["axpy<float>", "axpy<double>", "block_sum<float, 128>", "block_sum<float, 512>"]
);

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 4096;
    let cfg = LaunchConfig::for_num_elems(n as u32);

    // The instance is picked from the argument types: f32 here, f64 below.
    let x = stream.clone_htod(&vec![1.5f32; n])?;
    let mut y = stream.clone_htod(&vec![1.0f32; n])?;
    unsafe { axpy::launch(&stream, cfg, 2.0f32, &x, &mut y, n as i32)? };
    let xd = stream.clone_htod(&vec![0.25f64; n])?;
    let mut yd = stream.alloc_zeros::<f64>(n)?;
    unsafe { axpy::launch(&stream, cfg, 4.0f64, &xd, &mut yd, n as i32)? };

    // Non-type parameters are const generics: name the block size.
    let mut sum = stream.alloc_zeros::<f32>(1)?;
    let block = |b| LaunchConfig { grid_dim: (1, 1, 1), block_dim: (b, 1, 1), shared_mem_bytes: 0 };
    unsafe { block_sum::launch::<f32, 512>(&stream, block(512), &y, &mut sum, n as i32)? };
    let s512 = stream.clone_dtoh(&sum)?[0];
    unsafe { block_sum::launch::<f32, 128>(&stream, block(128), &y, &mut sum, n as i32)? };
    let s128 = stream.clone_dtoh(&sum)?[0];
    let yd0 = stream.clone_dtoh(&yd)?[0];
    let want = 4.0 * n as f32;
    println!(
        "axpy<float> then block_sum: {s512} (512 threads), {s128} (128 threads), want {want}; axpy<double>: {yd0}"
    );
    if s512 != want || s128 != want || yd0 != 1.0 {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("templates example: {e}");
        std::process::exit(2);
    }
}

//! Kernels that launch kernels (dynamic parallelism) and a `__device__` function of another file,
//! linked at build time.
//!
//! `rdc = true` compiles relocatable device code and device-links it with the CUDA device runtime
//! (`libcudadevrt`), so `parent` can launch `child` with `<<<...>>>` from the GPU. `link = [...]`
//! adds `.cu` files, each its own translation unit; `lto = true` optimises across them.
//!
//! Run: `scripts/with-cuda cargo run --example device_launch` (needs a GPU; nvcc, or libnvrtc and
//! nvJitLink, link it at build time, else NVRTC and the driver link it at first use).

use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(
    r#"
    __global__ void child(float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] += 1.f;
    }
    // One thread decides how much work there is and launches the grid for it.
    extern "C" __global__ void parent(float* y, int n) {
        if (threadIdx.x == 0) child<<<(n + 255) / 256, 256>>>(y, n);
    }
"#,
    rdc = true,
);

mod squares {
    // main.cu calls `square`, defined in math.cu, and counts the calls in math.cu's `calls`.
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/main.cu", link = ["tests/kernels/link/math.cu"], lto = true);
}

fn main() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 100_000usize;
    let mut y = stream.clone_htod(&vec![1.0f32; n])?;

    // SAFETY: the child grid covers exactly n elements of y.
    unsafe {
        parent::launch(
            &stream,
            LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 },
            &mut y,
            n as i32,
        )?
    };
    println!("after the device-side launch: y[0] = {}", stream.clone_dtoh(&y)?[0]);

    squares::calls.set(&stream, 0)?;
    // SAFETY: n elements.
    unsafe { squares::square_all::launch(&stream, LaunchConfig::for_num_elems(n as u32), &mut y, n as i32)? };
    println!("squared across files: y[0] = {}, calls = {}", stream.clone_dtoh(&y)?[0], squares::calls.get(&stream)?);
    Ok(())
}

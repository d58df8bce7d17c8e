//! The README example: y = a*x + y on the GPU, checked against the CPU.
//!
//! Run with `cargo run --example saxpy`. Without a GPU it prints why and exits with status 2.

use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(
    r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#
);

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 1 << 20;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = stream.clone_htod(&xs)?;
    let mut y = stream.clone_htod(&vec![1.0f32; n])?;
    unsafe { saxpy::launch(&stream, LaunchConfig::for_num_elems(n as u32), 2.0, &x, &mut y, n)? };
    let out = stream.clone_dtoh(&y)?;
    let wrong = out.iter().zip(&xs).filter(|(o, x)| **o != 2.0 * **x + 1.0).count();
    println!(
        "saxpy on {} ({} elements, module built by {:?}): {} wrong",
        ctx.name()?,
        n,
        saxpy::module().build_info(),
        wrong
    );
    if wrong != 0 {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("saxpy example: {e}");
        std::process::exit(2);
    }
}

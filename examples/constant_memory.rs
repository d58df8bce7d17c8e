//! `__constant__` coefficients written from the host and a `__device__` counter read back.
//!
//! Run with `cargo run --example constant_memory`. Without a GPU it prints why and exits with
//! status 2.

use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(
    r#"
    __constant__ float taps[5];            // a 5-tap filter, set from the host
    __device__ unsigned int clipped;       // how many outputs were clipped

    extern "C" __global__ void filter(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float acc = 0.f;
        for (int k = -2; k <= 2; ++k) {
            int j = min(max(i + k, 0), n - 1);
            acc += taps[k + 2] * x[j];
        }
        if (acc > 1.f) { acc = 1.f; atomicAdd(&clipped, 1u); }
        y[i] = acc;
    }
"#
);

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 1000;
    let xs: Vec<f32> = (0..n).map(|i| (i % 10) as f32 / 5.0).collect();
    let x = stream.clone_htod(&xs)?;
    let mut y = stream.alloc_zeros::<f32>(n)?;

    taps.write(&stream, &[0.1, 0.2, 0.4, 0.2, 0.1])?; // `taps` is a Global<f32> of 5 elements
    clipped.set(&stream, 0)?;
    unsafe { filter::launch(&stream, LaunchConfig::for_num_elems(n as u32), &x, &mut y, n as i32)? };

    let out = stream.clone_dtoh(&y)?;
    let host: Vec<f32> = (0..n)
        .map(|i| {
            let t = [0.1f32, 0.2, 0.4, 0.2, 0.1];
            let acc: f32 = (0..5).map(|k| t[k] * xs[(i as i64 + k as i64 - 2).clamp(0, n as i64 - 1) as usize]).sum();
            acc.min(1.0)
        })
        .collect();
    let wrong = out.iter().zip(&host).filter(|(a, b)| (**a - **b).abs() > 1e-5).count();
    let clips = clipped.get(&stream)?; // the `__device__` counter, read back
    println!("filter with taps {:?}: {wrong} wrong, {clips} of {n} outputs clipped", taps.read(&stream)?);
    if wrong != 0 || clips == 0 || clips as usize > n {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("constant_memory example: {e}");
        std::process::exit(2);
    }
}

//! Would autotuning help `elementwise_kernel!`? Its automatic configuration (occupancy's block
//! size, one 16-byte vector per thread, grid-stride beyond that) against every configuration a
//! tuner would try (block 128/256/512/1024 x one vector per thread / two waves of resident blocks
//! / 8 waves), f32 saxpy at sizes 2^12 to 2^28, in one process on one GPU. The table gives, per
//! size, the automatic time, the best configuration's, and how much the best would gain.
//!
//! GPU time: CUDA events around 50 launches, median of 11 repetitions, after warm-up.
//!
//! Run: `cargo bench --bench elementwise_sweep` (or `bash .gpu/run bench elementwise_sweep`).

mod common;

use cuda_embed::cudarc::driver::{sys, CudaStream};
use cuda_embed::{elementwise_kernel, LaunchConfig};
use std::sync::Arc;

elementwise_kernel!(
    sweep_saxpy,
    inputs = "float x, scalar float a",
    outputs = "float y",
    operation = "y = a * x + y",
    archs = [90],
);

const REPS: usize = 11;
const INNER: usize = 50;

/// Median microseconds per call of `f` (events around INNER calls).
fn time_gpu(stream: &Arc<CudaStream>, f: impl FnMut() -> cuda_embed::Result<()>) -> cuda_embed::Result<f64> {
    Ok(common::gpu_ms(stream, (3, REPS, INNER), f)? * 1e3)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("elementwise_sweep bench: {e}");
        std::process::exit(2);
    }
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let sms = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
    let per_sm = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32;
    println!("GPU: {} ({sms} SMs); f32 saxpy, 12 bytes per element", ctx.name()?);
    println!("| n | automatic us | GB/s | best configuration | best us | automatic / best |");
    println!("|---|---|---|---|---|---|");
    let mut worst: f64 = 1.0;
    for log2 in (12..=28).step_by(2) {
        let n = 1usize << log2;
        let x = stream.clone_htod(&vec![1.0f32; n])?;
        let mut y = stream.alloc_zeros::<f32>(n)?;
        let auto = time_gpu(&stream, || sweep_saxpy::launch(&stream, &x, 2.0f32, &mut y))?;
        let mut best = (f64::MAX, String::new());
        for block in [128u32, 256, 512, 1024] {
            let vectors = (n / 4).div_ceil(block as usize) as u32;
            let waves = |w: u32| (sms * (per_sm / block).max(1) * w).min(vectors).max(1);
            for (what, grid) in [("one vector/thread", vectors.max(1)), ("2 waves", waves(2)), ("8 waves", waves(8))] {
                let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 };
                let t = time_gpu(&stream, || sweep_saxpy::launch_with(&stream, cfg, &x, 2.0f32, &mut y))?;
                if t < best.0 {
                    best = (t, format!("{grid} x {block} ({what})"));
                }
            }
        }
        let ratio = auto / best.0;
        worst = worst.max(ratio);
        let gbs = 12.0 * n as f64 / (auto * 1e-6) / 1e9;
        println!("| 2^{log2} | {auto:.2} | {gbs:.0} | {} | {:.2} | {ratio:.3}x |", best.1, best.0);
    }
    println!();
    println!("largest gain a tuner could make over the automatic configuration: {worst:.3}x");
    Ok(())
}

//! Kernels written in Rust syntax (`#[cuda_embed::kernel]`): saxpy, a block reduction through
//! shared memory, a Rust device function, a C++ `__device__` function, and an out-of-range index
//! reported as an `Error`. Each result is checked against the CPU.
//!
//! Run with `cargo run --example rust_kernels`. Without a GPU it prints why and exits with
//! status 2.

use cuda_embed::device::*;
use cuda_embed::{Error, LaunchConfig};

/// y = a * x + y.
#[cuda_embed::kernel]
fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// The sum of `x` into `out[0]`: 256 threads per block, a tree in shared memory.
#[cuda_embed::kernel(bounds_checks = false)]
fn sum(x: &[f32], out: &mut [f32]) {
    let tile = shared::<f32, 256>();
    let t = thread_idx().x as usize;
    let mut acc = 0.0;
    for i in ((block_idx().x * 256 + thread_idx().x) as usize..x.len()).step_by((grid_dim().x * 256) as usize) {
        acc += x[i];
    }
    tile[t] = acc;
    sync_threads();
    let mut s = 128;
    while s > 0 {
        if t < s {
            tile[t] += tile[t + s];
        }
        sync_threads();
        s /= 2;
    }
    if t == 0 {
        atomic_add(&mut out[0], tile[0]);
    }
}

/// A Rust device function and a CUDA C++ one, called from a kernel.
#[cuda_embed::kernels(cpp = "__device__ float smoothstep(float e0, float e1, float v) {
    float t = fminf(fmaxf((v - e0) / (e1 - e0), 0.0f), 1.0f);
    return t * t * (3.0f - 2.0f * t);
}")]
mod shading {
    use cuda_embed::device::*;

    #[device]
    fn luminance(r: f32, g: f32, b: f32) -> f32 {
        0.2126 * r + 0.7152 * g + 0.0722 * b
    }

    /// `out[i]` = smoothstep of the luminance of pixel `i` (`rgb` holds r, g, b per pixel).
    #[kernel]
    pub fn shade(rgb: &[f32], out: &mut [f32]) {
        let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
        if i < out.len() {
            let l = luminance(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
            let s: f32 = smoothstep(0.2, 0.8, l);
            out[i] = s;
        }
    }
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 1 << 20;
    let xs: Vec<f32> = (0..n).map(|i| (i % 100) as f32 * 0.01).collect();
    let x = stream.clone_htod(&xs)?;
    let mut y = stream.clone_htod(&vec![1.0f32; n])?;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    // SAFETY: the kernel checks `i < y.len()`, and its indexing is bounds-checked.
    unsafe { saxpy::launch(&stream, cfg, 2.0, &x, &mut y)? };
    saxpy::check_errors(&stream)?;
    let out = stream.clone_dtoh(&y)?;
    let wrong = out.iter().zip(&xs).filter(|(o, x)| **o != 2.0f32.mul_add(**x, 1.0)).count();
    println!("saxpy: {wrong} wrong of {n}");

    let mut total = stream.clone_htod(&[0.0f32])?;
    let rcfg = LaunchConfig { grid_dim: (120, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: 256 threads per block, as the kernel's tile expects; the loop stays below x.len().
    unsafe { sum::launch(&stream, rcfg, &x, &mut total)? };
    let sum_got = stream.clone_dtoh(&total)?[0] as f64;
    let want: f64 = xs.iter().map(|&v| v as f64).sum();
    println!("sum: {sum_got} (CPU {want})");

    let pixels = 4096;
    let rgb: Vec<f32> = (0..3 * pixels).map(|i| (i % 17) as f32 / 16.0).collect();
    let drgb = stream.clone_htod(&rgb)?;
    let mut shaded = stream.alloc_zeros::<f32>(pixels)?;
    // SAFETY: bounds-checked; `i < out.len()` and 3 * out.len() == rgb.len().
    unsafe { shading::shade::launch(&stream, LaunchConfig::for_num_elems(pixels as u32), &drgb, &mut shaded)? };
    shading::shade::check_errors(&stream)?;
    let got = stream.clone_dtoh(&shaded)?;
    let bad = (0..pixels)
        .filter(|&i| {
            let l = 0.2126 * rgb[3 * i] + 0.7152 * rgb[3 * i + 1] + 0.0722 * rgb[3 * i + 2];
            let t = ((l - 0.2) / 0.6f32).clamp(0.0, 1.0);
            (got[i] - t * t * (3.0 - 2.0 * t)).abs() > 1e-5
        })
        .count();
    println!("shade: {bad} wrong of {pixels}");

    // Too few pixels of input: the last pixel's reads are out of range, and reported.
    let short = drgb.slice(0..3 * pixels - 2);
    // SAFETY: bounds-checked.
    unsafe { shading::shade::launch(&stream, LaunchConfig::for_num_elems(pixels as u32), &short, &mut shaded)? };
    // `cuda_embed::synchronize` waits for the stream and reports any checked kernel's index.
    match cuda_embed::synchronize(&stream) {
        Err(e @ Error::IndexOutOfBounds { .. }) => println!("as expected: {e}"),
        other => {
            println!("expected an out-of-bounds report, got {other:?}");
            std::process::exit(1);
        }
    }
    if wrong != 0 || bad != 0 || (sum_got - want).abs() > 1e-3 * want.abs().max(1.0) {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("rust_kernels: {e}");
        std::process::exit(if matches!(e, Error::NoDriver { .. } | Error::NoDevice { .. }) { 2 } else { 1 });
    }
}

//! reduction_kernel! speed: sum of squares (f32) over the full array, rows and columns, in GB/s
//! (bytes read / time of 10 back-to-back runs between syncs, median of 20 after warm-up), with device-to-device copy
//! bandwidth measured in the same process as the ceiling; and the total time of a 1,000-element
//! reduction (launch + sync, host clock) against an empty kernel launch + sync.
//! The CuPy side (ReductionKernel, cupy.sum through CUB) is `benches/reduction_cupy.py`, run in the
//! same device call.
//!
//! Run: `cargo bench --bench reduction` (or `bash .gpu/run bench reduction` on the GPU machine).

use cuda_embed::{cuda_kernel, reduction_kernel, CudaStream, LaunchConfig};
use std::sync::Arc;
use std::time::Instant;

reduction_kernel!(
    ssq,
    inputs = "T x",
    outputs = "T y",
    map = "x * x",
    reduce = "a + b",
    identity = "0",
    types = ["float"]
);

cuda_kernel!(
    r#"
    extern "C" __global__ void empty_kernel(float* y) {}
"#
);

fn main() {
    if let Err(e) = run() {
        eprintln!("reduction bench: {e}");
        std::process::exit(2);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median milliseconds per run of `f`: 3 warm-up runs, then 20 samples of 10 back-to-back runs
/// between stream syncs (host clock; the sync cost is spread over the 10 runs).
fn time_gpu(stream: &Arc<CudaStream>, mut f: impl FnMut() -> cuda_embed::Result<()>) -> cuda_embed::Result<f64> {
    for _ in 0..3 {
        f()?;
    }
    stream.synchronize()?;
    let mut v = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..10 {
            f()?;
        }
        stream.synchronize()?;
        v.push(t.elapsed().as_secs_f64() * 1e3 / 10.0);
    }
    Ok(median(v))
}

/// Median host microseconds of `f` followed by a stream sync (200 warm-up, 2000 timed).
fn time_host(stream: &Arc<CudaStream>, mut f: impl FnMut() -> cuda_embed::Result<()>) -> cuda_embed::Result<f64> {
    for _ in 0..200 {
        f()?;
        stream.synchronize()?;
    }
    let mut v = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        f()?;
        stream.synchronize()?;
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(v))
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n: usize = 1 << 28;
    let host: Vec<f32> = (0..n).map(|i| ((i.wrapping_mul(2_654_435_761) >> 7) % 1000) as f32 * 1e-3).collect();
    let x = stream.clone_htod(&host)?;
    let mut copy = stream.alloc_zeros::<f32>(n)?;
    let bytes = (n * 4) as f64;
    let copy_ms = time_gpu(&stream, || Ok(stream.memcpy_dtod(&x, &mut copy)?))?;
    let copy_gbs = 2.0 * bytes / copy_ms / 1e6;
    drop(copy);
    println!("device: {}", ctx.name()?);
    println!("device-to-device copy: {copy_gbs:.0} GB/s (read + write)");
    println!("{:<28} {:>10} {:>10} {:>12}", "case", "ms", "GB/s", "x copy BW");
    let mut y1 = stream.alloc_zeros::<f32>(1)?;
    let ms = time_gpu(&stream, || ssq::launch(&stream, &x, &mut y1))?;
    let row = |name: &str, ms: f64, b: f64| {
        let gbs = b / ms / 1e6;
        println!("{name:<28} {ms:>10.4} {gbs:>10.0} {:>12.3}", gbs / copy_gbs);
    };
    row("full 2^28", ms, bytes);
    let want: f64 = host.iter().map(|&v| f64::from(v * v)).sum();
    let got = f64::from(stream.clone_dtoh(&y1)?[0]);
    println!("(check: full sum {got} vs f64 {want}, rel err {:.1e})", (got - want).abs() / want);
    for (rows, cols) in [(65536usize, 4096usize), (4096, 65536), (1 << 20, 32)] {
        let xs = x.slice(0..rows * cols);
        let b = (rows * cols * 4) as f64;
        let mut yr = stream.alloc_zeros::<f32>(rows)?;
        let ms = time_gpu(&stream, || ssq::launch_rows(&stream, &xs, cols, &mut yr))?;
        row(&format!("rows {rows}x{cols}"), ms, b);
        let mut yc = stream.alloc_zeros::<f32>(cols)?;
        let ms = time_gpu(&stream, || ssq::launch_cols(&stream, &xs, cols, &mut yc))?;
        row(&format!("cols {rows}x{cols}"), ms, b);
    }
    let small = x.slice(0..1000);
    let mut ys = stream.alloc_zeros::<f32>(1)?;
    let red_us = time_host(&stream, || ssq::launch(&stream, &small, &mut ys))?;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the empty kernel touches no memory.
    let empty_us = time_host(&stream, || unsafe { empty_kernel::launch(&stream, cfg, &mut ys) })?;
    println!(
        "small 1000 elements: reduction + sync {red_us:.2} us, empty kernel + sync {empty_us:.2} us, ratio {:.3}",
        red_us / empty_us
    );
    Ok(())
}

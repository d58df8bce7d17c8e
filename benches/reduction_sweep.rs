//! Would autotuning help `reduction_kernel!`? Its automatic plan for a full reduction (blocks of
//! 256 threads: one block up to four blocks' worth of loads, then one block per 1024 vector
//! groups up to a wave of 4 resident blocks per multiprocessor, see
//! `cuda_embed_source::reduction::plan_segments`) against every
//! configuration a tuner would try: 64, 128 or 256 threads per block (the kernels' launch bound
//! is 256) times 1, 2, 4, ... blocks (down to 64 vector groups per thread) and a quarter, half,
//! one, two and four waves, each as long as every thread has at least one vector group to read. f32 sum at sizes 2^12 to 2^28.
//!
//! GPU time: 20 launches queued behind a blocking kernel (`tune::time_queued`), so the GPU runs
//! them back to back and CUDA events measure the kernels' own execution, not the launch path;
//! median of 7 samples, the configurations round-robin in each, after warm-up. Also counted: the
//! configurations whose result differs in its bits from the automatic plan's (another plan adds
//! the partial values in another order).
//!
//! Run: `cargo bench --bench reduction_sweep` (or `bash .gpu/run bench reduction_sweep`);
//! `SWEEP_ALL=1` also prints every configuration's time on stderr.

use cuda_embed::__private::reduce::with_full_plan;
use cuda_embed::cudarc::driver::sys;
use cuda_embed::{reduction_kernel, tune, CudaSlice, CudaStream};
use std::sync::Arc;

reduction_kernel!(sweep_sum, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b", identity = "0");

const SAMPLES: usize = 7;
const PER: usize = 20;

fn main() {
    if let Err(e) = run() {
        eprintln!("reduction_sweep bench: {e}");
        std::process::exit(2);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A configuration: `None` is the automatic plan, else (blocks, threads).
type Config = Option<(u32, u32)>;

/// One reduction under `config`.
fn reduce(
    stream: &Arc<CudaStream>,
    config: Config,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
) -> cuda_embed::Result<()> {
    match config {
        None => sweep_sum::launch(stream, x, y),
        Some((blocks, threads)) => with_full_plan(blocks, threads, || sweep_sum::launch(stream, x, y))?,
    }
}

/// The configurations a tuner would try at `n` elements on a GPU of `sms` multiprocessors.
fn candidates(n: usize, sms: u32) -> Vec<Config> {
    let wave = sms * 4;
    let groups = n.div_ceil(4) as u64;
    let mut out = vec![None];
    for threads in [64u32, 128, 256] {
        // At most one block per `threads` groups (every thread reads something); powers of two
        // only down to 64 groups per thread (fewer blocks leave most of a large GPU idle), and
        // the wave multiples whatever the work per thread.
        let most = groups.div_ceil(u64::from(threads)).max(1);
        let least = groups / (u64::from(threads) * 64);
        let mut blocks: Vec<u32> = (0..31).map(|k| 1u32 << k).filter(|&b| u64::from(b) >= least).collect();
        blocks.extend([wave / 4, wave / 2, wave, wave * 2, wave * 4]);
        blocks.sort_unstable();
        blocks.dedup();
        out.extend(blocks.into_iter().filter(|&b| b >= 1 && u64::from(b) <= most).map(|b| Some((b, threads))));
    }
    out
}

fn label(c: Config) -> String {
    match c {
        None => "automatic".into(),
        Some((b, t)) => format!("{b} x {t}"),
    }
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let sms = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
    println!("GPU: {} ({sms} SMs); f32 sum, GPU time queued behind a blocking kernel", ctx.name()?);
    println!("| n | automatic plan | automatic us | GB/s | best configuration | best us | automatic / best | worst configuration | worst us | results differing |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let host: Vec<f32> = (0..1usize << 28).map(|i| ((i % 7) as f32) * 0.1).collect();
    let mut largest: (f64, usize) = (1.0, 0);
    let mut timeouts = 0;
    let all = std::env::var_os("SWEEP_ALL").is_some();
    for log2 in (12..=28).step_by(2) {
        let n = 1usize << log2;
        let x = stream.clone_htod(&host[..n])?;
        let mut y = stream.alloc_zeros::<f32>(1)?;
        let want: f64 = host[..n].iter().map(|v| f64::from(*v)).sum();
        let configs = candidates(n, sms);
        // Warm-up, the result of each configuration, and its check.
        let mut bits = Vec::with_capacity(configs.len());
        for &c in &configs {
            for _ in 0..3 {
                reduce(&stream, c, &x, &mut y)?;
            }
            let got = stream.clone_dtoh(&y)?[0];
            assert!((f64::from(got) - want).abs() <= 1e-4 * want.abs(), "{}: sum {got}, expected {want}", label(c));
            bits.push(got.to_bits());
        }
        let differing = bits.iter().filter(|&&b| b != bits[0]).count();
        let mut samples = vec![Vec::with_capacity(SAMPLES); configs.len()];
        for _ in 0..SAMPLES {
            for (k, &c) in configs.iter().enumerate() {
                let t = tune::time_queued(&stream, || {
                    for _ in 0..PER {
                        reduce(&stream, c, &x, &mut y)?;
                    }
                    Ok(())
                })?;
                timeouts += usize::from(t.with_gaps);
                samples[k].push(t.ms * 1e3 / PER as f64);
            }
        }
        let times: Vec<f64> = samples.into_iter().map(median).collect();
        if all {
            let each: Vec<String> = configs.iter().zip(&times).map(|(&c, t)| format!("{} {t:.2}", label(c))).collect();
            eprintln!("2^{log2}, us: {}", each.join(", "));
        }
        let auto = times[0];
        let (mut best, mut worst) = (0, 0);
        for k in 1..times.len() {
            if times[k] < times[best] {
                best = k;
            }
            if times[k] > times[worst] {
                worst = k;
            }
        }
        let plan = cuda_embed_source::reduction::plan_segments(sms, 1, n as u64, 4);
        let ratio = auto / times[best];
        if ratio > largest.0 {
            largest = (ratio, log2);
        }
        let gbs = 4.0 * n as f64 / (auto * 1e-6) / 1e9;
        println!(
            "| 2^{log2} | {} x {} | {auto:.2} | {gbs:.0} | {} | {:.2} | {ratio:.3}x | {} | {:.2} | {differing} of {} |",
            plan.grid.0,
            plan.block.0,
            label(configs[best]),
            times[best],
            label(configs[worst]),
            times[worst],
            configs.len() - 1
        );
    }
    println!();
    println!(
        "largest gain a tuner could make over the automatic plan: {:.3}x (at 2^{}); samples that may include launch gaps (the blocking kernel timed out): {timeouts}",
        largest.0, largest.1
    );
    Ok(())
}

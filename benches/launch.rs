//! Host cost per launch: an empty kernel with 4 arguments, launched 100k times each by
//! (1) raw `cuLaunchKernel` through cudarc's sys layer, (2) the generated `launch`, and
//! (3) cudarc's `launch_builder`, interleaved in one process on one stream.
//!
//! Only the launch calls are timed: launches go in batches of 500 with a stream sync between
//! batches (not timed), so the GPU queue never fills and the figure is host cost.
//!
//! Two estimators from the same rounds (in each round every method runs its launches, back to
//! back, in an order rotated from round to round): the old one, each method's median over the
//! rounds and the ratio of those medians (what BENCHMARKS.md's tables before 2026-11-26 show),
//! and the paired one, the median of the per-round ratios with their interquartile range and a
//! 95% confidence interval of the median (drift slower than a round cancels within each ratio).
//! `LAUNCH_ROUNDS` (600) and `LAUNCH_PER_ROUND` (1,000 launches, a multiple of 500) change the
//! size; the timing thread is pinned to one CPU (`BENCH_PIN=0` leaves it free).
//!
//! Run: `cargo bench --bench launch` (or `bash .gpu/run bench launch` on the GPU machine).

use cuda_embed::cudarc::driver::{sys, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, PushKernelArg};
use cuda_embed::cudarc::nvrtc::Ptx;
use cuda_embed::{cuda_kernel, LaunchConfig};
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

mod common;
use common::Paired;

cuda_kernel!(
    r#"
    extern "C" __global__ void empty4(const float* a, float* b, int n, float s) {}
"#
);

cuda_kernel!(
    r#"
    extern "C" __global__ void empty4_sm90(const float* a, float* b, int n, float s) {}
"#,
    archs = [90]
);

const BATCH: usize = 500;
/// Rounds run first and not counted.
const WARMUP: usize = 2;

/// Rounds and launches per method per round (a whole number of batches).
#[derive(Clone, Copy)]
struct Size {
    rounds: usize,
    per_round: usize,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("launch bench: {e}");
        std::process::exit(2);
    }
}

fn median(v: &[f64]) -> f64 {
    common::median(v.to_vec())
}

fn run() -> cuda_embed::Result<()> {
    let start = Instant::now();
    let size = Size {
        rounds: common::env_usize("LAUNCH_ROUNDS", 600).max(1),
        per_round: common::env_usize("LAUNCH_PER_ROUND", 1_000).div_ceil(BATCH).max(1) * BATCH,
    };
    let (rounds, per_round) = (size.rounds, size.per_round);
    let ctx = cuda_embed::context(0)?;
    let pinned = common::pin_to_one_cpu();
    let stream = ctx.default_stream();
    let a = stream.alloc_zeros::<f32>(1024)?;
    let mut b = stream.alloc_zeros::<f32>(1024)?;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let (n, s) = (1024i32, 1.0f32);

    // Load through the registry, then take the raw handle for the reference.
    unsafe { empty4::launch(&stream, cfg, &a, &mut b, n, s)? };
    let f = empty4::KERNEL.function(&ctx)?.cu_function();
    // cudarc loads the very same fatbin for its builder.
    let Some(bytes) = empty4::module().spec().image.fatbin_bytes() else {
        eprintln!("launch bench: built without nvcc; the comparison needs the fatbin");
        std::process::exit(2);
    };
    let cudarc_fn = ctx.load_module(Ptx::from_binary(bytes.to_vec()))?.load_function("empty4")?;
    stream.synchronize()?;

    let (pa, _ga) = a.device_ptr(&stream);
    let (pb, _gb) = b.device_ptr(&stream);
    let (pa, pb) = (pa, pb);
    drop((_ga, _gb));
    let cu_stream = stream.cu_stream();

    let mut raw = Vec::new();
    let mut ours = Vec::new();
    let mut builder = Vec::new();
    let mut unchecked = Vec::new();
    for round in 0..rounds + WARMUP {
        // Rotate the order so no method always runs first.
        for m in 0..4 {
            let method = (m + round) % 4;
            let mut elapsed = 0.0f64;
            for _ in 0..per_round / BATCH {
                let t0 = Instant::now();
                match method {
                    0 => raw_batch(f, cu_stream, (pa, pb), (n, s)),
                    1 => ours_batch(&stream, cfg, &a, &mut b, (n, s))?,
                    3 => unchecked_batch(&stream, cfg, &a, &mut b, (n, s))?,
                    _ => builder_batch(&stream, &cudarc_fn, cfg, &a, &mut b, (n, s))?,
                }
                elapsed += t0.elapsed().as_secs_f64();
                stream.synchronize()?;
            }
            if round >= WARMUP {
                let ns = elapsed * 1e9 / per_round as f64;
                [&mut raw, &mut ours, &mut builder, &mut unchecked][method].push(ns);
            }
        }
    }
    let _ = b.device_ptr_mut(&stream);
    let (major, _) = ctx.compute_capability()?;
    let cluster_rows = if major >= 9 { cluster_compare(&stream, &a, &mut b, size)? } else { None };
    let (r, o, bl, u) = (median(&raw), median(&ours), median(&builder), median(&unchecked));
    println!("GPU: {}  launches per method: {}", ctx.name()?, rounds * per_round);
    println!("{pinned}");
    println!();
    println!("Old estimator: each method's median over the rounds, then the ratio of the medians.");
    println!("| method | ns/launch (median of {rounds} rounds of {per_round}) | vs raw |");
    println!("|---|---|---|");
    println!("| raw cuLaunchKernel (cudarc sys) | {r:.0} | 1.000x |");
    println!("| cuda-embed generated launch (limits checked) | {o:.0} | {:.3}x |", o / r);
    println!("| same launcher, limit checks left out | {u:.0} | {:.3}x |", u / r);
    println!("| cudarc launch_builder | {bl:.0} | {:.3}x |", bl / r);
    println!();
    println!("limit checks: checked / unchecked = {:.3}x", o / u);
    println!();
    println!("Paired estimator: each round's ratio of the two methods (run back to back in that round).");
    println!("{}", common::paired_header("ratio", rounds));
    let pairs = [
        ("generated launch (limits checked) / raw cuLaunchKernel", &ours, &raw),
        ("limit checks left out / raw cuLaunchKernel", &unchecked, &raw),
        ("cudarc launch_builder / raw cuLaunchKernel", &builder, &raw),
        ("generated launch / cudarc launch_builder", &ours, &builder),
        ("limits checked / left out", &ours, &unchecked),
    ];
    for (what, x, y) in pairs {
        println!("| {what} | {} |", Paired::new(x, y).cell());
    }
    if let Some((plain, ex)) = cluster_rows {
        let (p, e) = (median(&plain), median(&ex));
        println!();
        println!("| sm_90 kernel, grid 2 | ns/launch (median) | vs plain |");
        println!("|---|---|---|");
        println!("| launch (cuLaunchKernel) | {p:.0} | 1.000x |");
        println!("| launch_cluster (2,1,1) (cuLaunchKernelEx) | {e:.0} | {:.3}x |", e / p);
        println!("{}", common::paired_header("ratio", rounds));
        println!("| launch_cluster (2,1,1) / launch | {} |", Paired::new(&ex, &plain).cell());
    }
    println!();
    println!("bench time: {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

// One batch of each method, each in a function of its own so that a profile (callgrind on the
// stand-in driver: `scripts/stub-libcuda`) can count each method's instructions per launch.

/// `BATCH` raw `cuLaunchKernel`s with pre-packed pointers.
#[inline(never)]
fn raw_batch(f: sys::CUfunction, cu_stream: sys::CUstream, (pa, pb): (u64, u64), (n, s): (i32, f32)) {
    for _ in 0..BATCH {
        let mut args: [*mut c_void; 4] = [
            &pa as *const u64 as *mut c_void,
            &pb as *const u64 as *mut c_void,
            &n as *const i32 as *mut c_void,
            &s as *const f32 as *mut c_void,
        ];
        // SAFETY: `f` is empty4 on this context; args match its parameters.
        let r =
            unsafe { sys::cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, cu_stream, args.as_mut_ptr(), std::ptr::null_mut()) };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    }
}

/// `BATCH` launches through the generated launcher.
#[inline(never)]
fn ours_batch(
    stream: &CudaStream,
    cfg: LaunchConfig,
    a: &CudaSlice<f32>,
    b: &mut CudaSlice<f32>,
    (n, s): (i32, f32),
) -> cuda_embed::Result<()> {
    for _ in 0..BATCH {
        // SAFETY: empty4's body is empty; `a` and `b` are live buffers of the stream's context.
        unsafe { empty4::launch(stream, cfg, a, b, n, s)? };
    }
    Ok(())
}

/// The generated launcher's body with the limit checks (and the buffers' device checks) left
/// out: what `launch` costs minus what the checks cost. The buffers' pointers are taken as the
/// generated launcher takes them (`bind`'s `bind` on the launch's binding).
#[inline(never)]
fn unchecked_batch(
    stream: &Arc<CudaStream>,
    cfg: LaunchConfig,
    a: &CudaSlice<f32>,
    b: &mut CudaSlice<f32>,
    (n, s): (i32, f32),
) -> cuda_embed::Result<()> {
    for _ in 0..BATCH {
        let binding = cuda_embed::__private::kernel_binding(stream, *empty4::KERNEL)?;
        use cuda_embed::__private::bind::{Checked, CheckedMut};
        // SAFETY: `a` and `b` are buffers of the stream's context (the check left out).
        let (pa, _sa) = unsafe { Checked::<f32, _>::unchecked(a) }.bind(&binding);
        // SAFETY: as above.
        let (pb, _sb) = unsafe { CheckedMut::<f32, _>::unchecked(&mut *b) }.bind(&binding);
        let mut args: [*mut c_void; 4] = [
            &pa as *const u64 as *mut c_void,
            &pb as *const u64 as *mut c_void,
            &n as *const i32 as *mut c_void,
            &s as *const f32 as *mut c_void,
        ];
        // SAFETY: kernel 0 of the module is empty4; args match its parameters.
        unsafe { cuda_embed::__private::launch_unchecked(*empty4::KERNEL, stream, &cfg, &mut args)? };
    }
    Ok(())
}

/// `BATCH` launches through cudarc's `launch_builder`.
#[inline(never)]
fn builder_batch(
    stream: &Arc<CudaStream>,
    function: &CudaFunction,
    cfg: LaunchConfig,
    a: &CudaSlice<f32>,
    b: &mut CudaSlice<f32>,
    (n, s): (i32, f32),
) -> cuda_embed::Result<()> {
    for _ in 0..BATCH {
        let mut l = stream.launch_builder(function);
        l.arg(a).arg(&mut *b).arg(&n).arg(&s);
        // SAFETY: `function` is empty4 (empty body); the arguments match its parameters.
        unsafe { l.launch(cfg)? };
    }
    Ok(())
}

/// Plain launch vs a cluster launch of the same sm_90 kernel, interleaved like above: each
/// method's ns per launch, round by round.
#[allow(clippy::type_complexity)]
fn cluster_compare(
    stream: &Arc<CudaStream>,
    a: &CudaSlice<f32>,
    b: &mut CudaSlice<f32>,
    Size { rounds, per_round }: Size,
) -> cuda_embed::Result<Option<(Vec<f64>, Vec<f64>)>> {
    let cfg = LaunchConfig { grid_dim: (2, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let (n, s) = (1024i32, 1.0f32);
    let (mut plain, mut ex) = (Vec::new(), Vec::new());
    for round in 0..rounds + WARMUP {
        for m in 0..2 {
            let method = (m + round) % 2;
            let mut elapsed = 0.0f64;
            for _ in 0..per_round / BATCH {
                let t0 = Instant::now();
                for _ in 0..BATCH {
                    if method == 0 {
                        unsafe { empty4_sm90::launch(stream, cfg, a, b, n, s)? };
                    } else {
                        unsafe { empty4_sm90::launch_cluster(stream, cfg, (2, 1, 1), a, b, n, s)? };
                    }
                }
                elapsed += t0.elapsed().as_secs_f64();
                stream.synchronize()?;
            }
            if round >= WARMUP {
                [&mut plain, &mut ex][method].push(elapsed * 1e9 / per_round as f64);
            }
        }
    }
    Ok(Some((plain, ex)))
}

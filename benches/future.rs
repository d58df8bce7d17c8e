//! Awaited GPU work (issue 35), against the blocking forms in the same process:
//!
//! 1. **Latency**: one empty-kernel launch awaited to completion (`block_on(launch_async(..))`,
//!    and `block_on_with(.., 0)`, which parks at once so the wake-up comes through the stream
//!    callback and the completion thread, as under any other executor) against `launch` +
//!    `stream.synchronize()` on the same thread (target: at most 1.10x).
//!    Rounds of `FUTURE_PER_ROUND` (100) of each, the order alternating from round to round; the
//!    paired median of the per-round ratios.
//! 2. **Launch host cost**: `launch_async` (the launch and an event record behind it; the futures
//!    dropped untimed) against the plain `launch`, in batches of 500 with a sync between batches
//!    (target: at most 1.05x); and `launch` followed by a raw `cuEventRecord`, the driver's floor
//!    for any launch whose completion is watched by an event.
//! 3. **Throughput**: 10,000 kernels of about 2 us over 8 streams, all in flight as futures and
//!    awaited, from one thread (parking at once) and from 8 tokio tasks on 8 worker threads (one
//!    per stream), against 8 threads each launching and synchronising its stream's share: kernels
//!    per second, and the process CPU time over wall time of each (the waiting side must not keep
//!    a core busy). Then the waiting alone: one ~100 ms kernel per stream, 8 futures awaited from
//!    one thread against 8 threads synchronising, CPU time over wall time of each.
//! 4. **Stream-ordered allocation**: a 100-step loop, each step allocating a 4 MiB temporary
//!    (`alloc_zeros`: `cuMemAllocAsync`), filling it, dropping it (`cuMemFreeAsync`) and awaiting
//!    the step, with the default pool's release threshold at the driver's default (0: freed memory
//!    goes back at every synchronisation) against `future::retain_freed_memory` keeping it.
//!
//! `FUTURE_ROUNDS` (300) rounds. Run: `cargo bench --bench future` (`bash .gpu/run bench future`).

use cuda_embed::future::{block_on, block_on_with};
use cuda_embed::{cuda_kernel, CudaStream, GpuFuture, LaunchConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::Paired;

cuda_kernel!(
    r#"
    extern "C" __global__ void empty0(int n) {}
    extern "C" __global__ void fill(float* y, float v, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = v;
    }
    extern "C" __global__ void spin(long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) { }
    }
"#
);

const BATCH: usize = 500;
const WARMUP: usize = 3;

fn main() {
    if let Err(e) = run() {
        eprintln!("future bench: {e}");
        std::process::exit(2);
    }
}

fn one() -> LaunchConfig {
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 }
}

/// Process CPU time (user + system, all threads), in seconds, from `/proc/self/stat` (clock
/// ticks of 10 ms on Linux; the phases measured run far longer).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return f64::NAN };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
    // utime and stime are fields 14 and 15 of the line; here 11 and 12 (0-based after ')').
    (ticks(11) + ticks(12)) / 100.0
}

/// `BATCH` async launches, their futures kept in `held` (dropped untimed). A function of its own
/// so that `scripts/hostcost` can count its instructions.
#[inline(never)]
fn async_batch(stream: &CudaStream, held: &mut Vec<GpuFuture<'static>>) {
    for _ in 0..BATCH {
        held.push(unsafe { empty0::launch_async(stream, one(), 0) });
    }
}

/// `BATCH` plain launches, each followed by a raw `cuEventRecord` of one event: the driver's
/// floor under `async_batch` (an awaited launch records an event behind its work).
#[inline(never)]
fn recorded_batch(stream: &CudaStream, event: cuda_embed::cudarc::driver::sys::CUevent) -> cuda_embed::Result<()> {
    use cuda_embed::cudarc::driver::sys;
    for _ in 0..BATCH {
        unsafe { empty0::launch(stream, one(), 0)? };
        // SAFETY: a live event of the stream's context.
        let r = unsafe { sys::cuEventRecord(event, stream.cu_stream()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(cuda_embed::Error::Driver {
                call: "cuEventRecord",
                device: 0,
                cause: cuda_embed::DriverCode(r),
            });
        }
    }
    Ok(())
}

/// `BATCH` plain launches (the reference of `async_batch`).
#[inline(never)]
fn plain_batch(stream: &CudaStream) -> cuda_embed::Result<()> {
    for _ in 0..BATCH {
        unsafe { empty0::launch(stream, one(), 0)? };
    }
    Ok(())
}

/// Runs `work(k, stream)` on one thread per stream (the blocking side of the throughput and
/// waiting figures), all at once; the first error, once every thread is done.
fn on_blocking_threads(
    streams: &[Arc<CudaStream>],
    work: impl Fn(usize, &CudaStream) -> cuda_embed::Result<()> + Sync,
) -> cuda_embed::Result<()> {
    std::thread::scope(|t| {
        let work = &work;
        let handles: Vec<_> = streams.iter().enumerate().map(|(k, s)| t.spawn(move || work(k, s))).collect();
        handles.into_iter().try_for_each(|h| h.join().expect("a blocking thread panicked"))
    })
}

fn run() -> cuda_embed::Result<()> {
    let rounds = common::env_usize("FUTURE_ROUNDS", 300).max(1);
    let per_round = common::env_usize("FUTURE_PER_ROUND", 100).max(1);
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    unsafe { empty0::launch(&stream, one(), 0)? };
    block_on(unsafe { empty0::launch_async(&stream, one(), 0) })?;
    stream.synchronize()?;
    println!("GPU: {}", ctx.name()?);
    println!();

    // 1. Latency.
    let (mut awaited, mut parked, mut blocking) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds + WARMUP {
        for m in 0..3 {
            let method = (m + round) % 3;
            let t0 = Instant::now();
            for _ in 0..per_round {
                match method {
                    0 => block_on(unsafe { empty0::launch_async(&stream, one(), 0) })?,
                    1 => block_on_with(unsafe { empty0::launch_async(&stream, one(), 0) }, Duration::ZERO)?,
                    _ => {
                        unsafe { empty0::launch(&stream, one(), 0)? };
                        stream.synchronize()?;
                    }
                }
            }
            let us = t0.elapsed().as_secs_f64() * 1e6 / per_round as f64;
            if round >= WARMUP {
                [&mut awaited, &mut parked, &mut blocking][method].push(us);
            }
        }
    }
    let (a, w, b) = (common::median(awaited.clone()), common::median(parked.clone()), common::median(blocking.clone()));
    println!("Latency of one empty launch to completion (us, median of {rounds} rounds of {per_round}):");
    println!("| method | us | vs launch + synchronize |");
    println!("|---|---|---|");
    println!("| launch + stream.synchronize() | {b:.2} | 1.000x |");
    println!("| block_on(launch_async) (polls for up to 20 us, then parks) | {a:.2} | {:.3}x |", a / b);
    println!(
        "| block_on_with(launch_async, 0) (parks at once: the watcher stream's callback) | {w:.2} | {:.3}x |",
        w / b
    );
    println!("{}", common::paired_header("awaited / blocking", rounds));
    println!("| block_on | {} |", Paired::new(&awaited, &blocking).cell());
    println!("| parked at once | {} |", Paired::new(&parked, &blocking).cell());
    println!();

    // 2. Launch host cost.
    let (mut asyncs, mut plains, mut recorded) = (Vec::new(), Vec::new(), Vec::new());
    let mut held: Vec<GpuFuture<'static>> = Vec::with_capacity(BATCH);
    let event = ctx.new_event(None)?; // timing disabled, as the watches' events
    for round in 0..rounds.min(200) + WARMUP {
        for m in 0..3 {
            let method = (m + round) % 3;
            let t0 = Instant::now();
            match method {
                0 => async_batch(&stream, &mut held),
                1 => plain_batch(&stream)?,
                _ => recorded_batch(&stream, event.cu_event())?,
            }
            let ns = t0.elapsed().as_secs_f64() * 1e9 / BATCH as f64;
            stream.synchronize()?;
            held.clear();
            if round >= WARMUP {
                [&mut asyncs, &mut plains, &mut recorded][method].push(ns);
            }
        }
    }
    let (a, p, r) = (common::median(asyncs.clone()), common::median(plains.clone()), common::median(recorded.clone()));
    println!("Launch host cost (ns per launch, batches of {BATCH}):");
    println!("| method | ns | vs launch |");
    println!("|---|---|---|");
    println!("| launch | {p:.0} | 1.000x |");
    println!("| launch + raw cuEventRecord (the driver's floor for a watched launch) | {r:.0} | {:.3}x |", r / p);
    println!("| launch_async (launch + pooled watch + event record) | {a:.0} | {:.3}x |", a / p);
    println!("{}", common::paired_header("ratio", asyncs.len()));
    println!("| launch_async / launch | {} |", Paired::new(&asyncs, &plains).cell());
    println!("| launch + cuEventRecord / launch | {} |", Paired::new(&recorded, &plains).cell());
    println!("| launch_async / (launch + cuEventRecord) | {} |", Paired::new(&asyncs, &recorded).cell());
    println!();

    // 3. Throughput.
    let streams: Vec<Arc<CudaStream>> = (0..8).map(|_| ctx.new_stream()).collect::<Result<_, _>>()?;
    let total = common::env_usize("FUTURE_KERNELS", 10_000);
    let cycles: i64 = 4_000; // about 2 us at 2 GHz
    for s in &streams {
        block_on(unsafe { spin::launch_async(s, one(), cycles) })?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .build()
        .map_err(|e| cuda_embed::Error::Shape { op: "tokio runtime".into(), detail: e.to_string() })?;
    let mut rows = Vec::new();
    for _ in 0..3 {
        // Futures: every kernel in flight at once, awaited in order from one thread.
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let futures: Vec<GpuFuture<'static>> =
            (0..total).map(|i| unsafe { spin::launch_async(&streams[i % 8], one(), cycles) }).collect();
        for f in futures {
            block_on_with(f, Duration::ZERO)?;
        }
        let (wall_f, cpu_f) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
        // Futures under tokio (8 worker threads): one task per stream, each with its share in
        // flight at once, awaited in order; the launches spread over the workers as the blocking
        // threads' are.
        let (c0, t0) = (cpu_seconds(), Instant::now());
        rt.block_on(async {
            let tasks: Vec<_> = streams
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    let s = s.clone();
                    tokio::spawn(async move {
                        let futures: Vec<GpuFuture<'static>> =
                            (k..total).step_by(8).map(|_| unsafe { spin::launch_async(&s, one(), cycles) }).collect();
                        for f in futures {
                            f.await?;
                        }
                        Ok::<(), cuda_embed::Error>(())
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("a tokio task panicked")?;
            }
            Ok::<(), cuda_embed::Error>(())
        })?;
        let (wall_t, cpu_t) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
        // 8 blocking threads, each launching and synchronising its stream's share.
        let (c0, t0) = (cpu_seconds(), Instant::now());
        on_blocking_threads(&streams, |k, s| {
            for _ in (k..total).step_by(8) {
                unsafe { spin::launch(s, one(), cycles)? };
                s.synchronize()?;
            }
            Ok(())
        })?;
        let (wall_b, cpu_b) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
        rows.push((wall_f, cpu_f, wall_t, cpu_t, wall_b, cpu_b));
    }
    println!("Throughput: {total} kernels of ~2 us over 8 streams (3 runs; kernels/s, process CPU time / wall):");
    println!(
        "| run | futures, one thread | CPU/wall | futures, tokio 8 workers | CPU/wall | 8 blocking threads | CPU/wall | \
         one thread vs threads | tokio vs threads |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (i, (wf, cf, wt, ct, wb, cb)) in rows.iter().enumerate() {
        println!(
            "| {} | {:.0} | {:.2} | {:.0} | {:.2} | {:.0} | {:.2} | {:.3}x | {:.3}x |",
            i + 1,
            total as f64 / wf,
            cf / wf,
            total as f64 / wt,
            ct / wt,
            total as f64 / wb,
            cb / wb,
            wb / wf,
            wb / wt
        );
    }

    // 3b. CPU time while only waiting: one ~100 ms kernel per stream, awaited as futures from one
    // thread (parking at once) against 8 threads each synchronising its stream.
    let long: i64 = common::env_usize("FUTURE_WAIT_CYCLES", 200_000_000) as i64;
    let (c0, t0) = (cpu_seconds(), Instant::now());
    let futures: Vec<GpuFuture<'static>> =
        streams.iter().map(|s| unsafe { spin::launch_async(s, one(), long) }).collect();
    for f in futures {
        block_on_with(f, Duration::ZERO)?;
    }
    let (wall_f, cpu_f) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    let (c0, t0) = (cpu_seconds(), Instant::now());
    on_blocking_threads(&streams, |_, s| {
        unsafe { spin::launch(s, one(), long)? };
        s.synchronize()?;
        Ok(())
    })?;
    let (wall_b, cpu_b) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    println!();
    println!("Waiting only: one ~100 ms kernel on each of 8 streams (process CPU time / wall time):");
    println!("| method | wall ms | CPU/wall |");
    println!("|---|---|---|");
    println!("| 8 futures awaited from one thread (parked) | {:.1} | {:.3} |", wall_f * 1e3, cpu_f / wall_f);
    println!("| 8 blocking threads, launch + synchronize | {:.1} | {:.3} |", wall_b * 1e3, cpu_b / wall_b);

    // 4. Stream-ordered allocation.
    let steps = 100;
    let elems = 1 << 20;
    let (mut released, mut retained) = (Vec::new(), Vec::new());
    if ctx.has_async_alloc() {
        for round in 0..(rounds / 10).max(5) + WARMUP {
            for m in 0..2 {
                let method = (m + round) % 2;
                cuda_embed::future::retain_freed_memory(&ctx, if method == 0 { 0 } else { u64::MAX })?;
                let t0 = Instant::now();
                for _ in 0..steps {
                    let mut tmp = stream.alloc_zeros::<f32>(elems)?;
                    block_on(unsafe {
                        fill::launch_async(
                            &stream,
                            LaunchConfig::for_num_elems(elems as u32),
                            &mut tmp,
                            1.0,
                            elems as i32,
                        )
                    })?;
                    drop(tmp);
                }
                let us = t0.elapsed().as_secs_f64() * 1e6 / steps as f64;
                if round >= WARMUP {
                    [&mut released, &mut retained][method].push(us);
                }
            }
        }
        cuda_embed::future::retain_freed_memory(&ctx, 0)?;
    }
    println!();
    if released.is_empty() {
        println!("Stream-ordered allocation: this device has no memory pools (cudarc allocates synchronously)");
    } else {
        let (r, k) = (common::median(released.clone()), common::median(retained.clone()));
        println!("Stream-ordered allocation: {steps} steps of alloc_zeros(4 MiB) + fill + drop + await (us per step):");
        println!("| pool release threshold | us per step | vs default |");
        println!("|---|---|---|");
        println!("| 0 (the driver's default: freed memory returned at each sync) | {r:.1} | 1.000x |");
        println!("| retain_freed_memory(u64::MAX) | {k:.1} | {:.3}x |", k / r);
        println!("{}", common::paired_header("retained / default", released.len()));
        println!("| per step | {} |", Paired::new(&retained, &released).cell());
    }
    Ok(())
}

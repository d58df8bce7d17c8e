//! Programmatic dependent launch (PDL) against plain stream order: a chain of 100 short
//! dependent kernels (each reads the previous one's output: ping-pong buffers), timed with CUDA
//! events around the whole chain,
//!
//! 1. on a stream: `launch` for every link against `launch_dependent` (every link after the
//!    first);
//! 2. in a graph: one launch of a 100-node graph with full edges against the same graph with
//!    programmatic edges (`Graph::dependent`), twice: with the inferred edges (link k follows
//!    k - 1, and k - 2 whose output it overwrites: 197 edges; a dependent link drops the one
//!    from k - 2, which k - 1 follows: 99) and as a plain chain (explicit edges, inference off:
//!    99 edges, as on the stream);
//! 3. on a stream again, with cudarc's per-buffer event tracking off (`disable_event_tracking`:
//!    every buffer used on one stream). With it on, its default, each launch also records an
//!    event behind every buffer it binds (cudarc's cross-stream ordering), and those stream
//!    operations sit between one link and the next.
//!
//! Each side is timed twice: as submitted (events around the launches, so on a stream the time
//! includes the host's submission of 100 launches when that is slower than the GPU), and queued
//! (the events and the chain enqueued behind a kernel that spins `PDL_SPIN_US`, 2,000 µs, on the
//! GPU: the chain is all queued before the GPU reaches it, so the events time the GPU alone,
//! which is where PDL acts).
//!
//! Each kernel first lets its successor launch (`cudaTriggerProgrammaticLaunchCompletion`, which
//! only schedules it) and then waits for its predecessor to complete
//! (`cudaGridDependencySynchronize`, which makes its writes visible), so with PDL the next
//! kernel is launched and resident, waiting, before the current one ends. Plain and PDL run back to back in each round (the order
//! alternated); printed: each side's median µs per chain and the paired speed-up (plain / PDL:
//! median, IQR, 95% CI of the median). `PDL_N` (elements per kernel, 32,768), `PDL_ROUNDS` (51)
//! change the sizes. The target of issue 36: at least 1.15x, on a stream and in a graph.
//!
//! Run: `cargo bench --bench pdl` (or `bash .gpu/run bench pdl` on the GPU machine).

use cuda_embed::cudarc::driver::{sys, CudaSlice, CudaStream};
use cuda_embed::{cuda_kernel, Graph, LaunchConfig};
use std::sync::Arc;

mod common;
use common::Paired;

// `link`: one link of the chain (lets the next one start, then waits for the one before it).
cuda_kernel!(file = "examples/kernels/pdl_link.cu");

cuda_kernel!(
    r#"
    // Keeps the stream busy for `ns` nanoseconds of the GPU's global timer.
    extern "C" __global__ void spin(unsigned long long ns) {
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do {
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        } while (t - t0 < ns);
    }
"#
);

const CHAIN: usize = 100;

fn main() {
    if let Err(e) = run() {
        eprintln!("pdl bench: {e}");
        std::process::exit(2);
    }
}

/// GPU microseconds of `f` between two events on `stream`; with `spin_ns`, both events and `f`'s
/// work queued behind a kernel that keeps the stream busy that long.
fn event_us(
    stream: &Arc<CudaStream>,
    spin_ns: Option<u64>,
    f: impl FnOnce() -> cuda_embed::Result<()>,
) -> cuda_embed::Result<f64> {
    let ctx = stream.context();
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (a, b) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
    if let Some(ns) = spin_ns {
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the kernel touches no memory.
        unsafe { spin::launch(stream, one, ns)? };
    }
    a.record(stream)?;
    f()?;
    b.record(stream)?;
    b.synchronize()?;
    Ok(a.elapsed_ms(&b)? as f64 * 1e3)
}

fn run() -> cuda_embed::Result<()> {
    let n = common::env_usize("PDL_N", 32_768).max(1);
    let rounds = common::env_usize("PDL_ROUNDS", 51).max(1);
    let spin_ns = common::env_usize("PDL_SPIN_US", 2_000) as u64 * 1_000;
    let ctx = cuda_embed::context(0)?;
    let pinned = common::pin_to_one_cpu();
    let stream = ctx.new_stream()?;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let ni = n as i32;
    let (mut a, mut b): (CudaSlice<f32>, CudaSlice<f32>) = (stream.alloc_zeros(n)?, stream.alloc_zeros(n)?);

    let stream_chain = |a: &mut CudaSlice<f32>, b: &mut CudaSlice<f32>, dependent: bool| -> cuda_embed::Result<()> {
        for k in 0..CHAIN {
            let (from, to) = if k % 2 == 0 { (&*a, &mut *b) } else { (&*b, &mut *a) };
            // SAFETY: `n` threads over `n` elements of each buffer.
            unsafe {
                if dependent && k > 0 {
                    link::launch_dependent(&stream, cfg, from, to, 0.5, ni)?;
                } else {
                    link::launch(&stream, cfg, from, to, 0.5, ni)?;
                }
            }
        }
        Ok(())
    };

    // 1. On a stream, as submitted and queued: (plain, PDL) times of each.
    let on_stream = |a: &mut CudaSlice<f32>, b: &mut CudaSlice<f32>| -> cuda_embed::Result<Vec<(Vec<f64>, Vec<f64>)>> {
        let mut times = Vec::new();
        for spin in [None, Some(spin_ns)] {
            let (mut plain_s, mut pdl_s) = (Vec::new(), Vec::new());
            for r in 0..rounds + 3 {
                let order = if r % 2 == 0 { [false, true] } else { [true, false] };
                for dependent in order {
                    let t = event_us(&stream, spin, || stream_chain(a, b, dependent))?;
                    // The first rounds warm up (module load, clocks).
                    if r >= 3 {
                        if dependent { &mut pdl_s } else { &mut plain_s }.push(t);
                    }
                }
            }
            times.push((plain_s, pdl_s));
        }
        Ok(times)
    };
    let stream_times = on_stream(&mut a, &mut b)?;

    // 2. In a graph.
    let (ga, gb): (CudaSlice<f32>, CudaSlice<f32>) = (stream.alloc_zeros(n)?, stream.alloc_zeros(n)?);
    // `chain`: explicit edges from the previous link only (inference off), else inferred.
    let build = |dependent: bool, chain: bool| -> cuda_embed::Result<cuda_embed::GraphExec<'_>> {
        let mut g = Graph::new(&ctx)?;
        g.infer_dependencies(!chain);
        let mut last = None;
        for k in 0..CHAIN {
            let (from, to) = if k % 2 == 0 { (&ga, &gb) } else { (&gb, &ga) };
            if let (true, Some(prev)) = (chain, last) {
                g.after(&[prev]);
            }
            let g = if dependent && k > 0 { g.dependent() } else { &mut g };
            last = Some(*link::node(g, cfg, from, to, 0.5, ni)?);
        }
        // Inferred, link k follows k - 1 and k - 2 (whose output it overwrites); a dependent link
        // drops the edge from k - 2, which k - 1 follows (`Graph::dependent`).
        assert_eq!(g.edges().len(), if chain || dependent { CHAIN - 1 } else { 2 * CHAIN - 3 });
        let exec = g.instantiate()?;
        exec.upload(&stream)?;
        Ok(exec)
    };
    // Per shape (inferred, chain) and timing (submitted, queued): the plain and the PDL graph's
    // times.
    let mut graph_times = Vec::new();
    for chain in [false, true] {
        let (plain_g, pdl_g) = (build(false, chain)?, build(true, chain)?);
        for spin in [None, Some(spin_ns)] {
            let (mut plain_gt, mut pdl_gt) = (Vec::new(), Vec::new());
            for r in 0..rounds + 3 {
                let order = if r % 2 == 0 { [false, true] } else { [true, false] };
                for dependent in order {
                    let exec = if dependent { &pdl_g } else { &plain_g };
                    // SAFETY: `n` threads over `n` elements of each buffer.
                    let t = event_us(&stream, spin, || unsafe { exec.launch(&stream) })?;
                    if r >= 3 {
                        if dependent { &mut pdl_gt } else { &mut plain_gt }.push(t);
                    }
                }
            }
            graph_times.push((plain_gt, pdl_gt));
        }
    }

    // 3. On a stream again, with cudarc's buffer event tracking off: with it on (its default),
    // every launch records an event behind each buffer it binds, and those stream operations
    // between two links are what a dependent launch would otherwise overlap.
    // SAFETY: from here on every buffer is used on the one stream.
    unsafe { ctx.disable_event_tracking() };
    let untracked_times = on_stream(&mut a, &mut b)?;

    println!(
        "pdl bench on {} ({} SMs): a chain of {CHAIN} dependent kernels of {n} elements, medians of {rounds} rounds",
        ctx.name()?,
        ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
    );
    println!("{pinned}");
    println!("| chain of {CHAIN} | plain, us | PDL, us |");
    println!("|---|---|---|");
    let med = |v: &Vec<f64>| common::median(v.clone());
    let timings = ["submitted", "queued behind a spin kernel"];
    let mut rows = Vec::new();
    for (timing, times) in timings.iter().zip(&stream_times) {
        rows.push((format!("stream ({timing}): launch / launch_dependent"), times));
    }
    for (timing, times) in timings.iter().zip(&untracked_times) {
        rows.push((format!("stream, event tracking off ({timing}): launch / launch_dependent"), times));
    }
    let shapes = ["graph, inferred edges", "graph, chain of explicit edges"];
    for (i, times) in graph_times.iter().enumerate() {
        rows.push((format!("{} ({}): full / programmatic edges", shapes[i / 2], timings[i % 2]), times));
    }
    for (row, (plain, pdl)) in &rows {
        println!("| {row} | {:.1} | {:.1} |", med(plain), med(pdl));
    }
    println!("{}", common::paired_header("speed-up, plain / PDL (target >= 1.15x)", rounds));
    for (row, (plain, pdl)) in &rows {
        println!("| {row} | {} |", Paired::new(plain, pdl).cell());
    }
    Ok(())
}

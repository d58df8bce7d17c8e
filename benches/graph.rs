//! CUDA graphs: `Graph` against the same graphs built with raw driver calls (cudarc's sys layer),
//! in one process, on one stream, rounds interleaved so neither side always runs first.
//!
//! 1. Replay of a 100-node chain of empty kernels (each writes the same buffer, so the inferred
//!    dependencies make a chain; the raw graph gets the same edges explicitly).
//! 2. Building and instantiating that graph (ours infers the edges).
//! 3. Updating one kernel node of the instantiated graph: `GraphExec::set` (typed) against a raw
//!    `cuGraphExecKernelNodeSetParams`.
//! 4. A fork-join graph (4 independent chains of 25 kernels, inferred from 4 buffers) against the
//!    100-chain, with empty kernels and with kernels that spin ~2 us each.
//!
//! 2 and 3 are measured twice: with cudarc's per-buffer event tracking on (its default; our
//! node arguments read each buffer's address through cudarc, which then makes a
//! `cuStreamWaitEvent` call per buffer) and off (`disable_event_tracking`). Each is printed with
//! two estimators from the same rounds (raw and ours back to back in each round, the order
//! rotated): the old one, each side's median over the rounds and their ratio, and the paired one,
//! the median of the per-round ratios with their interquartile range and a 95% confidence
//! interval of the median. `GRAPH_BUILD_ROUNDS` (3,000 builds each), `GRAPH_UPDATE_ROUNDS`
//! (1,000) and `GRAPH_UPDATES_PER_ROUND` (2,000) change the sizes; the timing thread is pinned to
//! one CPU (`BENCH_PIN=0` leaves it free).
//!
//! Run: `cargo bench --bench graph` (or `bash .gpu/run bench graph` on the GPU machine).

use cuda_embed::cudarc::driver::{sys, CudaSlice, CudaStream, DevicePtr};
use cuda_embed::{cuda_kernel, Graph, LaunchConfig};
use std::ffi::c_void;
use std::time::Instant;

mod common;
use common::Paired;

cuda_kernel!(
    r#"
    extern "C" __global__ void empty1(float* p, int v) {}
    extern "C" __global__ void spin(float* p, long long cycles) {
        long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
        if (threadIdx.x == 0 && p[0] == 12345.0f) p[1] = 1.0f;
    }
"#
);

const NODES: usize = 100;
const ROUNDS: usize = 15;
const REPLAYS: usize = 50;
/// Build and update rounds run first and not counted.
const WARMUP: usize = 5;

fn main() {
    if let Err(e) = run() {
        eprintln!("graph bench: {e}");
        std::process::exit(2);
    }
}

fn median(v: &[f64]) -> f64 {
    common::median(v.to_vec())
}

fn ok(r: sys::CUresult, call: &str) {
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "{call}");
}

fn cfg() -> LaunchConfig {
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 }
}

fn kparams(f: sys::CUfunction, params: &mut [*mut c_void]) -> sys::CUDA_KERNEL_NODE_PARAMS {
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: f,
        gridDimX: 1,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: 32,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: params.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// A raw graph of `chains` chains of `per` kernel nodes `f(ptrs[c], arg)`; returns graph, exec.
#[inline(never)]
fn raw_graph(f: sys::CUfunction, ptrs: &[u64], per: usize, arg: &mut [u8; 8]) -> (sys::CUgraph, sys::CUgraphExec) {
    let mut g = std::ptr::null_mut();
    ok(unsafe { sys::cuGraphCreate(&mut g, 0) }, "cuGraphCreate");
    for &p in ptrs {
        let mut prev: Option<sys::CUgraphNode> = None;
        for _ in 0..per {
            let mut p = p;
            let mut params = [&mut p as *mut u64 as *mut c_void, arg.as_mut_ptr() as *mut c_void];
            let kp = kparams(f, &mut params);
            let mut n = std::ptr::null_mut();
            let (deps, nd) = match &prev {
                Some(d) => (d as *const sys::CUgraphNode, 1),
                None => (std::ptr::null(), 0),
            };
            ok(unsafe { sys::cuGraphAddKernelNode_v2(&mut n, g, deps, nd, &kp) }, "cuGraphAddKernelNode");
            prev = Some(n);
        }
    }
    let mut e = std::ptr::null_mut();
    ok(unsafe { sys::cuGraphInstantiateWithFlags(&mut e, g, 0) }, "cuGraphInstantiate");
    (g, e)
}

fn raw_destroy((g, e): (sys::CUgraph, sys::CUgraphExec)) {
    unsafe {
        sys::cuGraphExecDestroy(e);
        sys::cuGraphDestroy(g);
    }
}

/// Our graph: `per` nodes on each buffer; dependencies inferred.
#[inline(never)]
fn our_graph<'a>(
    ctx: &std::sync::Arc<cuda_embed::CudaContext>,
    bufs: &'a [CudaSlice<f32>],
    per: usize,
    spin_cycles: Option<i64>,
) -> cuda_embed::Result<Graph<'a>> {
    let mut g = Graph::new(ctx)?;
    for b in bufs {
        for i in 0..per {
            match spin_cycles {
                Some(c) => drop(spin::node(&mut g, cfg(), b, c)?),
                None => drop(empty1::node(&mut g, cfg(), b, i as i32)?),
            }
        }
    }
    Ok(g)
}

// The update loops, each in a function of its own so that a profile (callgrind on the stand-in
// driver: `scripts/stub-libcuda`) can count each side's instructions per update.

/// `count` raw `cuGraphExecKernelNodeSetParams` of `node` in `exec`: `empty1(p, i)`.
#[inline(never)]
fn raw_updates(f: sys::CUfunction, (exec, node): (sys::CUgraphExec, sys::CUgraphNode), p: u64, count: usize) {
    for i in 0..count {
        let mut p = p;
        let mut v = i as i32;
        let mut params = [&mut p as *mut u64 as *mut c_void, &mut v as *mut i32 as *mut c_void];
        let kp = kparams(f, &mut params);
        // SAFETY: `node` is an empty1 kernel node of `exec`; `params` match empty1's parameters.
        ok(unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, &kp) }, "set");
    }
}

/// `count` typed updates of `node` in `exec`: `empty1(buf, i)`.
#[inline(never)]
fn typed_updates<'g>(
    exec: &mut cuda_embed::GraphExec<'g>,
    node: &cuda_embed::KernelNode<(cuda_embed::__private::Out<f32>, i32)>,
    buf: &'g CudaSlice<f32>,
    count: usize,
) -> cuda_embed::Result<()> {
    for i in 0..count {
        empty1::update(exec, node, cfg(), buf, i as i32)?;
    }
    Ok(())
}

fn replay_us(stream: &CudaStream, launch: &dyn Fn()) -> f64 {
    stream.synchronize().unwrap();
    let t = Instant::now();
    for _ in 0..REPLAYS {
        launch();
    }
    stream.synchronize().unwrap();
    t.elapsed().as_secs_f64() * 1e6 / REPLAYS as f64
}

fn run() -> cuda_embed::Result<()> {
    let start = Instant::now();
    let build_rounds = common::env_usize("GRAPH_BUILD_ROUNDS", 3_000).max(1);
    let update_rounds = common::env_usize("GRAPH_UPDATE_ROUNDS", 1_000).max(1);
    let updates = common::env_usize("GRAPH_UPDATES_PER_ROUND", 2_000).max(1);
    let ctx = cuda_embed::context(0)?;
    let pinned = common::pin_to_one_cpu();
    let stream = ctx.default_stream();
    let bufs: Vec<CudaSlice<f32>> = (0..4).map(|_| stream.alloc_zeros::<f32>(64)).collect::<Result<_, _>>()?;
    let f_empty = empty1::KERNEL.function(&ctx)?.cu_function();
    let f_spin = spin::KERNEL.function(&ctx)?.cu_function();
    let ptrs: Vec<u64> = bufs
        .iter()
        .map(|b| {
            let (p, g) = b.device_ptr(&stream);
            drop(g);
            p
        })
        .collect();
    ctx.bind_to_thread()?;
    let cu_stream = stream.cu_stream();
    let mut zero = [0u8; 8];
    // ~2 us of spinning at the GPU's clock.
    let clock_khz = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as i64;
    let spin_cycles = clock_khz * 2 / 1000;
    let mut spin_arg = spin_cycles.to_ne_bytes();

    println!(
        "graph bench on {} ({} SMs), {NODES}-node graphs; medians of {ROUNDS} rounds (replays), \
         {build_rounds} (build), {update_rounds} of {updates} updates (update)",
        ctx.name()?,
        ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
    );
    println!("{pinned}");

    // 1 + 4: replays.
    let raw_chain = raw_graph(f_empty, &ptrs[..1], NODES, &mut zero);
    let raw_fork = raw_graph(f_empty, &ptrs, NODES / 4, &mut zero);
    let raw_spin_chain = raw_graph(f_spin, &ptrs[..1], NODES, &mut spin_arg);
    let ours_chain_g = our_graph(&ctx, &bufs[..1], NODES, None)?;
    let ours_fork_g = our_graph(&ctx, &bufs, NODES / 4, None)?;
    let ours_spin_chain_g = our_graph(&ctx, &bufs[..1], NODES, Some(spin_cycles))?;
    let ours_spin_fork_g = our_graph(&ctx, &bufs, NODES / 4, Some(spin_cycles))?;
    assert_eq!(ours_chain_g.edges().len(), NODES - 1);
    assert_eq!(ours_fork_g.edges().len(), NODES - 4);
    let execs = [&ours_chain_g, &ours_fork_g, &ours_spin_chain_g, &ours_spin_fork_g].map(|g| g.instantiate().unwrap());
    for e in &execs {
        e.upload(&stream)?;
    }
    let raw_launch = |e: sys::CUgraphExec| move || ok(unsafe { sys::cuGraphLaunch(e, cu_stream) }, "cuGraphLaunch");
    let ours_launch = |i: usize| {
        let e = &execs[i];
        let s = &stream;
        move || unsafe { e.launch(s).unwrap() }
    };
    type Method<'m> = (&'static str, Box<dyn Fn() + 'm>);
    let methods: Vec<Method<'_>> = vec![
        ("raw chain", Box::new(raw_launch(raw_chain.1))),
        ("Graph chain", Box::new(ours_launch(0))),
        ("raw fork-join", Box::new(raw_launch(raw_fork.1))),
        ("Graph fork-join", Box::new(ours_launch(1))),
        ("raw spin chain", Box::new(raw_launch(raw_spin_chain.1))),
        ("Graph spin chain", Box::new(ours_launch(2))),
        ("Graph spin fork-join", Box::new(ours_launch(3))),
    ];
    let mut times = vec![Vec::new(); methods.len()];
    for round in 0..ROUNDS + 1 {
        for k in 0..methods.len() {
            let m = (k + round) % methods.len();
            let t = replay_us(&stream, &*methods[m].1);
            if round > 0 {
                times[m].push(t);
            }
        }
    }
    let med: Vec<f64> = times.iter().map(|t| median(t)).collect();
    println!("\n| replay (one graph launch) | us per graph | us per kernel | ratio |");
    println!("|---|---|---|---|");
    let rows = [
        (0, 0, "raw"),
        (1, 0, "Graph / raw chain"),
        (2, 0, "raw fork / raw chain"),
        (3, 1, "fork / chain (Graph)"),
        (4, 4, "raw"),
        (5, 4, "Graph / raw spin chain"),
        (6, 5, "spin fork / spin chain (Graph)"),
    ];
    for (i, base, what) in rows {
        println!(
            "| {} | {:.2} | {:.3} | {:.4} ({what}) |",
            methods[i].0,
            med[i],
            med[i] / NODES as f64,
            med[i] / med[base]
        );
    }
    drop(methods);
    drop(execs);
    for r in [raw_chain, raw_fork, raw_spin_chain] {
        raw_destroy(r);
    }

    for tracking in [true, false] {
        if !tracking {
            // SAFETY: from here on every buffer is used on the one stream.
            unsafe { ctx.disable_event_tracking() };
        }
        // 2: build + instantiate.
        let (mut raw_t, mut ours_t) = (Vec::new(), Vec::new());
        for round in 0..build_rounds + WARMUP {
            for m in 0..2 {
                let m = (m + round) % 2;
                let t = Instant::now();
                if m == 0 {
                    let r = raw_graph(f_empty, &ptrs[..1], NODES, &mut zero);
                    let e = t.elapsed().as_secs_f64() * 1e6;
                    raw_destroy(r);
                    if round >= WARMUP {
                        raw_t.push(e);
                    }
                } else {
                    let g = our_graph(&ctx, &bufs[..1], NODES, None)?;
                    let x = g.instantiate()?;
                    let e = t.elapsed().as_secs_f64() * 1e6;
                    drop((x, g));
                    if round >= WARMUP {
                        ours_t.push(e);
                    }
                }
            }
        }
        let (r, o) = (median(&raw_t), median(&ours_t));
        let on = if tracking { "on" } else { "off" };
        println!("\nevent tracking {}:", if tracking { "on (cudarc default)" } else { "off" });
        println!("| build + instantiate {NODES}-node chain | us | ratio |");
        println!("|---|---|---|");
        println!("| raw driver calls (explicit edges) | {r:.1} | 1.000 |");
        println!("| Graph, inferred edges | {o:.1} | {:.3} |", o / r);
        println!("{}", common::paired_header("ratio", build_rounds));
        println!("| build + instantiate, Graph / raw, tracking {on} | {} |", Paired::new(&ours_t, &raw_t).cell());

        // 3: update one kernel node.
        let node = {
            let mut g2 = Graph::new(&ctx)?;
            let n = empty1::node(&mut g2, cfg(), &bufs[0], 0)?;
            (g2, n)
        };
        let (g2, kn) = node;
        let mut exec = g2.instantiate()?;
        let raw_exec = exec.cu_graph_exec();
        let raw_node = {
            let mut nodes = [std::ptr::null_mut(); 1];
            let mut count = 1usize;
            ok(unsafe { sys::cuGraphGetNodes(g2.cu_graph(), nodes.as_mut_ptr(), &mut count) }, "cuGraphGetNodes");
            nodes[0]
        };
        let (mut raw_u, mut ours_u) = (Vec::new(), Vec::new());
        for round in 0..update_rounds + WARMUP {
            for m in 0..2 {
                let m = (m + round) % 2;
                let t = Instant::now();
                if m == 0 {
                    raw_updates(f_empty, (raw_exec, raw_node), ptrs[0], updates);
                } else {
                    typed_updates(&mut exec, &kn, &bufs[0], updates)?;
                }
                let e = t.elapsed().as_secs_f64() * 1e9 / updates as f64;
                if round >= WARMUP {
                    if m == 0 {
                        raw_u.push(e)
                    } else {
                        ours_u.push(e)
                    }
                }
            }
        }
        let (r, o) = (median(&raw_u), median(&ours_u));
        println!("| update one kernel node | ns per update | ratio |");
        println!("|---|---|---|");
        println!("| raw cuGraphExecKernelNodeSetParams | {r:.1} | 1.000 |");
        println!("| GraphExec::set (typed) | {o:.1} | {:.3} |", o / r);
        println!("{}", common::paired_header("ratio", update_rounds));
        println!("| typed update / raw, tracking {on} | {} |", Paired::new(&ours_u, &raw_u).cell());
        drop(exec);
    }
    println!();
    println!("bench time: {:.1} s", start.elapsed().as_secs_f64());
    Ok(())
}

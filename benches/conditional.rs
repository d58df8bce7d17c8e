//! A loop inside one graph against the same kernels in a host loop: the Jacobi solver of
//! `examples/jacobi_graph.rs` (2-D Poisson, a small grid), `ITERATIONS` iterations of two sweeps
//! each.
//!
//! - graph: one launch of a graph whose `while` node runs the body (memset of the change, two
//!   sweeps, a check kernel that counts the iteration and sets the loop's condition) until the
//!   count is reached (tolerance 0: the residual never stops it first), then one synchronisation;
//! - host loop: per iteration, the memset and the two sweeps launched on the stream, then the
//!   largest change copied to the host and tested there (the round trip the graph avoids).
//!
//! Both run the same sweeps on the same grid, in the same process, back to back in each round
//! (the order alternated). Printed: each side's median time per solve and per iteration, and the
//! paired speed-up (host loop time / graph time per round: median, IQR, 95% CI of the median).
//! `JACOBI_N` (grid side, 32), `JACOBI_ITERATIONS` (1,000) and `JACOBI_ROUNDS` (21) change the
//! sizes. The target of issue 36: at least 2x at 1,000 small iterations.
//!
//! Run: `cargo bench --bench conditional` (or `bash .gpu/run bench conditional` on the GPU machine).

use cuda_embed::cudarc::driver::sys;
use cuda_embed::{cuda_kernel, CudaSlice, Graph, LaunchConfig};
use std::time::Instant;

mod common;
use common::Paired;

cuda_kernel!(file = "examples/kernels/jacobi.cu");

fn main() {
    if let Err(e) = run() {
        eprintln!("conditional bench: {e}");
        std::process::exit(2);
    }
}

fn run() -> cuda_embed::Result<()> {
    let n = common::env_usize("JACOBI_N", 32).max(1);
    let iterations = common::env_usize("JACOBI_ITERATIONS", 1_000).max(1) as i32;
    let rounds = common::env_usize("JACOBI_ROUNDS", 21).max(1);
    let ctx = cuda_embed::context(0)?;
    let pinned = common::pin_to_one_cpu();
    let stream = ctx.default_stream();
    let w = n + 2;
    let h = 1.0 / (n + 1) as f32;
    let h2 = h * h;
    let f_host: Vec<f32> = (0..w * w)
        .map(|i| {
            let (x, y) = ((i % w) as f32 * h, (i / w) as f32 * h);
            2.0 * std::f32::consts::PI.powi(2) * (std::f32::consts::PI * x).sin() * (std::f32::consts::PI * y).sin()
        })
        .collect();
    let f: CudaSlice<f32> = stream.clone_htod(&f_host)?;
    let b = 16u32;
    let g = (n as u32).div_ceil(b);
    let sweep = LaunchConfig { grid_dim: (g, g, 1), block_dim: (b, b, 1), shared_mem_bytes: 0 };
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let ni = n as i32;

    // The graph's buffers (borrowed by it for its lifetime) ...
    let (u, v) = (stream.alloc_zeros::<f32>(w * w)?, stream.alloc_zeros::<f32>(w * w)?);
    let change = stream.alloc_zeros::<u32>(1)?;
    let count = stream.alloc_zeros::<i32>(1)?;
    // ... and the host loop's.
    let (mut u2, mut v2) = (stream.alloc_zeros::<f32>(w * w)?, stream.alloc_zeros::<f32>(w * w)?);

    let mut graph = Graph::new(&ctx)?;
    graph.memset(&u, 0.0f32)?;
    graph.memset(&v, 0.0f32)?;
    graph.memset(&count, 0i32)?;
    let more = graph.condition(1)?;
    graph.while_loop(&more, |body| {
        body.memset(&change, 0u32)?;
        jacobi_sweep::node(body, sweep, &u, &f, &v, &change, ni, h2)?;
        jacobi_sweep::node(body, sweep, &v, &f, &u, &change, ni, h2)?;
        jacobi_check::node(body, one, &change, &count, 0.0, h2, iterations, &more)?;
        Ok(())
    })?;
    let exec = graph.instantiate()?;
    exec.upload(&stream)?;

    let in_graph = || -> cuda_embed::Result<f64> {
        let t = Instant::now();
        // SAFETY: the sweeps stay within the (n + 2)^2 points; the check kernel one element.
        unsafe { exec.launch(&stream)? };
        exec.synchronize(&stream)?;
        Ok(t.elapsed().as_secs_f64())
    };
    let host_loop = |u2: &mut CudaSlice<f32>, v2: &mut CudaSlice<f32>| -> cuda_embed::Result<f64> {
        let mut change2 = stream.alloc_zeros::<u32>(1)?;
        stream.synchronize()?;
        let t = Instant::now();
        stream.memset_zeros(u2)?;
        stream.memset_zeros(v2)?;
        let mut largest = [0u32];
        for _ in 0..iterations {
            stream.memset_zeros(&mut change2)?;
            // SAFETY: as above.
            unsafe {
                jacobi_sweep::launch(&stream, sweep, &*u2, &f, v2, &mut change2, ni, h2)?;
                jacobi_sweep::launch(&stream, sweep, &*v2, &f, u2, &mut change2, ni, h2)?;
            }
            stream.memcpy_dtoh(&change2, &mut largest)?;
            stream.synchronize()?;
            // The test the graph's check kernel makes (tolerance 0: never met).
            if f32::from_bits(largest[0]) * 4.0 / h2 < 0.0 {
                break;
            }
        }
        Ok(t.elapsed().as_secs_f64())
    };

    // Warm-up, and both sides compute the same field.
    in_graph()?;
    host_loop(&mut u2, &mut v2)?;
    assert_eq!(stream.clone_dtoh(&count)?, [iterations], "the graph ran every iteration");
    let (a, b2) = (stream.clone_dtoh(&u)?, stream.clone_dtoh(&u2)?);
    let diff = a.iter().zip(&b2).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(diff < 1e-5, "the graph and the host loop differ by {diff}");

    let (mut graph_s, mut host_s) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        if r % 2 == 0 {
            graph_s.push(in_graph()?);
            host_s.push(host_loop(&mut u2, &mut v2)?);
        } else {
            host_s.push(host_loop(&mut u2, &mut v2)?);
            graph_s.push(in_graph()?);
        }
    }
    let (gm, hm) = (common::median(graph_s.clone()), common::median(host_s.clone()));
    println!(
        "conditional bench on {} ({} SMs): Jacobi {n} x {n}, {iterations} iterations (2 sweeps each), \
         medians of {rounds} rounds",
        ctx.name()?,
        ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
    );
    println!("{pinned}");
    println!("| solve | ms | us per iteration |");
    println!("|---|---|---|");
    println!(
        "| host loop, residual read back every iteration | {:.3} | {:.2} |",
        hm * 1e3,
        hm * 1e6 / iterations as f64
    );
    println!("| one graph, `while` node | {:.3} | {:.2} |", gm * 1e3, gm * 1e6 / iterations as f64);
    println!("{}", common::paired_header("speed-up, host loop / graph", rounds));
    println!("| speed-up (target >= 2x) | {} |", Paired::new(&host_s, &graph_s).cell());
    Ok(())
}

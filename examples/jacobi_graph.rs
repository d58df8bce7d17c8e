//! A Jacobi solver for the 2-D Poisson problem `-Laplace(u) = f` on the unit square (u = 0 on
//! the boundary) that loops inside one CUDA graph until its residual falls below a tolerance: a
//! `while` node whose body sweeps twice and then runs a kernel that tests the residual and sets
//! the loop's condition (`cudaGraphSetConditional`). No host round trip per iteration: one graph
//! launch runs the whole solve.
//!
//! The result is checked against the same iteration on the CPU (in f64), and against the exact
//! solution of the continuous problem, `sin(pi x) sin(pi y)` for `f = 2 pi^2 sin(pi x) sin(pi y)`
//! (the difference is the grid's discretisation error, O(h^2)).
//!
//! Run: `cargo run --release --example jacobi_graph [n] [tol]` (default a 32 x 32 grid, tolerance
//! 1e-2 on the largest residual, about 850 iterations).

use cuda_embed::{cuda_kernel, CudaSlice, Graph, LaunchConfig};
use std::f64::consts::PI;

cuda_kernel!(file = "examples/kernels/jacobi.cu");

/// The problem: `n` x `n` interior points, spacing `h`, right-hand side `f` (with its boundary
/// ring, (n + 2)^2 values).
struct Problem {
    n: usize,
    h: f64,
    f: Vec<f32>,
}

impl Problem {
    fn new(n: usize) -> Problem {
        let h = 1.0 / (n + 1) as f64;
        let w = n + 2;
        let f = (0..w * w)
            .map(|i| {
                let (x, y) = ((i % w) as f64 * h, (i / w) as f64 * h);
                (2.0 * PI * PI * (PI * x).sin() * (PI * y).sin()) as f32
            })
            .collect();
        Problem { n, h, f }
    }

    /// The sweep configuration: 16 x 16 blocks over the interior.
    fn sweep(&self) -> LaunchConfig {
        let b = 16u32;
        let g = (self.n as u32).div_ceil(b);
        LaunchConfig { grid_dim: (g, g, 1), block_dim: (b, b, 1), shared_mem_bytes: 0 }
    }
}

/// Solves on the GPU in one graph launch: returns u (with its boundary) and the iterations run.
fn solve_in_graph(p: &Problem, tol: f32, max_iterations: i32) -> cuda_embed::Result<(Vec<f32>, i32)> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let w = p.n + 2;
    let f: CudaSlice<f32> = stream.clone_htod(&p.f)?;
    let u = stream.alloc_zeros::<f32>(w * w)?;
    let v = stream.alloc_zeros::<f32>(w * w)?;
    let change = stream.alloc_zeros::<u32>(1)?;
    let iterations = stream.alloc_zeros::<i32>(1)?;
    let (n, h2) = (p.n as i32, (p.h * p.h) as f32);
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let mut g = Graph::new(&ctx)?;
    g.memset(&u, 0.0f32)?;
    g.memset(&v, 0.0f32)?;
    g.memset(&iterations, 0i32)?;
    let more = g.condition(1)?;
    g.while_loop(&more, |body| {
        body.memset(&change, 0u32)?;
        jacobi_sweep::node(body, p.sweep(), &u, &f, &v, &change, n, h2)?;
        jacobi_sweep::node(body, p.sweep(), &v, &f, &u, &change, n, h2)?;
        jacobi_check::node(body, one, &change, &iterations, tol, h2, max_iterations, &more)?;
        Ok(())
    })?;
    let exec = g.instantiate()?;
    // SAFETY: the sweeps touch the (n + 2)^2 points of their buffers only (the grid covers the
    // interior, the kernel checks the bounds); the check kernel one element of each buffer.
    unsafe { exec.launch(&stream)? };
    exec.synchronize(&stream)?;
    drop(exec);
    drop(g);
    Ok((stream.clone_dtoh(&u)?, stream.clone_dtoh(&iterations)?[0]))
}

/// The same iteration on the CPU in f64: u and the iterations run.
fn solve_on_cpu(p: &Problem, tol: f64, max_iterations: i32) -> (Vec<f64>, i32) {
    let w = p.n + 2;
    let h2 = p.h * p.h;
    let (mut u, mut v) = (vec![0.0f64; w * w], vec![0.0f64; w * w]);
    let sweep = |from: &[f64], to: &mut [f64]| {
        let mut change = 0.0f64;
        for y in 1..=p.n {
            for x in 1..=p.n {
                let i = y * w + x;
                let new = 0.25 * (from[i - 1] + from[i + 1] + from[i - w] + from[i + w] + h2 * p.f[i] as f64);
                change = change.max((new - from[i]).abs());
                to[i] = new;
            }
        }
        change
    };
    let mut iterations = 0;
    loop {
        let c = sweep(&u, &mut v).max(sweep(&v, &mut u));
        iterations += 1;
        if c * 4.0 / h2 < tol || iterations >= max_iterations {
            return (u, iterations);
        }
    }
}

fn main() -> cuda_embed::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(32);
    let tol: f32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1e-2);
    let p = Problem::new(n);
    let max_iterations = 1_000_000;
    let t = std::time::Instant::now();
    let (u, iterations) = solve_in_graph(&p, tol, max_iterations)?;
    let gpu_s = t.elapsed().as_secs_f64();
    let (cpu, cpu_iterations) = solve_on_cpu(&p, tol as f64, max_iterations);
    let w = n + 2;
    let (mut vs_cpu, mut vs_exact) = (0.0f64, 0.0f64);
    for y in 0..w {
        for x in 0..w {
            let i = y * w + x;
            let exact = (PI * x as f64 * p.h).sin() * (PI * y as f64 * p.h).sin();
            vs_cpu = vs_cpu.max((u[i] as f64 - cpu[i]).abs());
            vs_exact = vs_exact.max((u[i] as f64 - exact).abs());
        }
    }
    println!(
        "{n} x {n} grid, residual < {tol}: {iterations} iterations in one graph launch ({:.2} ms with setup); \
         the CPU solve took {cpu_iterations}",
        gpu_s * 1e3
    );
    println!("largest difference from the CPU solve: {vs_cpu:.2e}; from the exact solution: {vs_exact:.2e}");
    // f32 against f64: near the tolerance the f32 residual carries rounding noise, so it may
    // cross later (32 x 32, 1e-2: 839 against 837 iterations; 1e-3: 1167 against 1091).
    let slack = 2 + cpu_iterations / 10;
    assert!(
        (iterations - cpu_iterations).abs() <= slack,
        "{iterations} iterations on the GPU, {cpu_iterations} on the CPU"
    );
    assert!(vs_cpu < 2e-4, "the GPU solution differs from the CPU solve by {vs_cpu}");
    assert!(vs_exact < 2e-2, "the solution is {vs_exact} from the exact one");
    println!("ok");
    Ok(())
}

//! A CUDA graph built from typed kernel calls: upload, saxpy, scale, download, a host node;
//! dependencies inferred from the borrows; replayed, then updated with new typed arguments. Then
//! an elementwise kernel feeding a reduction, both as graph nodes.
//!
//! Run with `cargo run --example graph`. Without a GPU it prints why and exits with status 2.

use cuda_embed::{cuda_kernel, elementwise_kernel, reduction_kernel, Graph, LaunchConfig};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

cuda_kernel!(
    r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    extern "C" __global__ void scale(float* y, float s, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] *= s;
    }
"#
);

elementwise_kernel!(diff, inputs = "float a, float b", outputs = "float d", operation = "d = a - b");
reduction_kernel!(
    sum_sq,
    inputs = "float d",
    outputs = "double s",
    map = "(double)d * d",
    reduce = "a + b",
    identity = "0",
    reduce_type = "double"
);

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 1 << 16;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let host_x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut host_y = vec![0.0f32; n];
    let x = stream.alloc_zeros::<f32>(n)?;
    let y = stream.alloc_zeros::<f32>(n)?;
    let runs = Arc::new(AtomicUsize::new(0));

    {
        let mut g = Graph::new(&ctx)?;
        let up = g.memcpy_htod(&host_x, &x)?; // x = host_x
        let k1 = saxpy::node(&mut g, cfg, 2.0, &x, &y, n)?; // y = 2x + y   (after up: reads x)
        let k2 = scale::node(&mut g, cfg, &y, 0.5, n)?; // y *= 0.5      (after k1: writes y)
        let down = g.memcpy_dtoh(&y, &mut host_y)?; // host_y = y     (after k2: reads y)
        let counter = runs.clone();
        let done = g.after(&[*down]).host(move || {
            counter.fetch_add(1, Ordering::Relaxed);
        })?;
        println!(
            "{} nodes, edges {:?}",
            g.len(),
            g.edges().iter().map(|(a, b)| (a.index(), b.index())).collect::<Vec<_>>()
        );
        println!("{}", g.to_dot());
        assert_eq!(g.edges(), vec![(*up, *k1), (*k1, *k2), (*k2, *down), (*down, done)]);

        let mut exec = g.instantiate()?;
        exec.upload(&stream)?;
        for _ in 0..3 {
            // SAFETY: both kernels stay within n elements of buffers of n elements.
            unsafe { exec.launch(&stream)? };
        }
        exec.synchronize(&stream)?;
        // Typed update: saxpy with a = 4 from now on (a wrong type would not compile).
        saxpy::update(&mut exec, &k1, cfg, 4.0, &x, &y, n)?;
        // SAFETY: as above.
        unsafe { exec.launch(&stream)? };
        exec.synchronize(&stream)?;
    }
    // y went 0 -> x -> 1.5x -> 1.75x (a = 2, three times), then (4x + 1.75x) / 2 = 2.875x.
    let wrong = host_y.iter().zip(&host_x).filter(|(y, x)| (**y - 2.875 * **x).abs() > 1e-3 * x.abs().max(1.0)).count();
    println!(
        "graph on {}: 4 launches, host node ran {} times, {} of {} results wrong",
        ctx.name()?,
        runs.load(Ordering::Relaxed),
        wrong,
        n
    );
    if wrong != 0 || runs.load(Ordering::Relaxed) != 4 {
        std::process::exit(1);
    }

    // Elementwise and reduction nodes: the squared distance between x and y on the device.
    let (xd, yd) = (stream.clone_htod(&host_x)?, stream.clone_htod(&host_y)?);
    let d = stream.alloc_zeros::<f32>(n)?;
    let s = stream.alloc_zeros::<f64>(1)?;
    let mut g = Graph::new(&ctx)?;
    let k1 = diff::node(&mut g, &xd, &yd, &d)?; // d = x - y
    let k2 = sum_sq::node(&mut g, &d, &s)?; // s = sum(d * d)   (after k1: reads d)
    assert_eq!(g.edges(), vec![(k1, k2)]);
    let exec = g.instantiate()?;
    // SAFETY: generated elementwise and reduction kernels stay within their checked arrays.
    unsafe { exec.launch(&stream)? };
    exec.synchronize(&stream)?;
    drop(exec);
    let got = stream.clone_dtoh(&s)?[0];
    let want: f64 = host_x.iter().zip(&host_y).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    println!("squared distance by graph: {got}, on the CPU: {want}");
    if (got - want).abs() > 1e-9 * want.abs() {
        std::process::exit(1);
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("graph example: {e}");
        std::process::exit(2);
    }
}

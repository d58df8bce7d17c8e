//! CuPy's `l2norm` ReductionKernel and a weighted mean, with reduction_kernel!, checked against
//! the CPU. Exits with status 2 and a message when there is no GPU.

use cuda_embed::reduction_kernel;

// cp.ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = sqrt(a)', '0', 'l2norm')
reduction_kernel!(
    l2norm,
    inputs = "T x",
    outputs = "T y",
    map = "x * x",
    reduce = "a + b",
    post_map = "y = sqrt(a)",
    identity = "0",
    types = ["float", "double"],
);

// sum(x * w) / sum(w), both sums carried in one (value, weight) pair, accumulated in double.
reduction_kernel!(
    weighted_mean,
    inputs = "float x, float w",
    outputs = "float y",
    preamble = "struct Acc { double xw; double w; };",
    reduce_type = "Acc",
    map = "Acc{(double)x * w, (double)w}",
    reduce = "Acc{a.xw + b.xw, a.w + b.w}",
    identity = "Acc{0.0, 0.0}",
    post_map = "y = (float)(a.xw / a.w)",
);

fn main() {
    if let Err(e) = run() {
        eprintln!("reduction example: {e}");
        std::process::exit(2);
    }
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let (rows, cols) = (1000, 300);
    let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    let w: Vec<f32> = (0..rows * cols).map(|i| (i % 7 + 1) as f32).collect();
    let (dx, dw) = (stream.clone_htod(&x)?, stream.clone_htod(&w)?);

    let mut norm = stream.alloc_zeros::<f32>(1)?;
    l2norm::launch(&stream, &dx, &mut norm)?;
    let mut row_norms = stream.alloc_zeros::<f32>(rows)?;
    l2norm::launch_rows(&stream, &dx, cols, &mut row_norms)?;
    let mut mean = stream.alloc_zeros::<f32>(1)?;
    weighted_mean::launch(&stream, &dx, &dw, &mut mean)?;
    let mut col_means = stream.alloc_zeros::<f32>(cols)?;
    weighted_mean::launch_cols(&stream, &dx, &dw, cols, &mut col_means)?;

    let norm = stream.clone_dtoh(&norm)?[0];
    let want = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>().sqrt();
    println!("l2norm: {norm} (CPU {want:.6})");
    assert!((f64::from(norm) - want).abs() < 1e-4 * want);
    let row0 = stream.clone_dtoh(&row_norms)?[0];
    let want0 = x[..cols].iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>().sqrt();
    println!("l2norm of row 0: {row0} (CPU {want0:.6})");
    assert!((f64::from(row0) - want0).abs() < 1e-4 * want0);
    let mean = stream.clone_dtoh(&mean)?[0];
    let sw: f64 = w.iter().map(|&v| f64::from(v)).sum();
    let want = x.iter().zip(&w).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum::<f64>() / sw;
    println!("weighted mean: {mean} (CPU {want:.6})");
    assert!((f64::from(mean) - want).abs() < 1e-5);
    let c3 = stream.clone_dtoh(&col_means)?[3];
    let (mut s, mut sw) = (0.0f64, 0.0f64);
    for r in 0..rows {
        s += f64::from(x[r * cols + 3]) * f64::from(w[r * cols + 3]);
        sw += f64::from(w[r * cols + 3]);
    }
    println!("weighted mean of column 3: {c3} (CPU {:.6})", s / sw);
    assert!((f64::from(c3) - s / sw).abs() < 1e-5);
    Ok(())
}

//! A small layer on N-D views: a per-channel bias added to a `[batch, channels, h, w]` tensor by
//! broadcasting, an activation fused with it (`fuse!`), and the per-channel mean of the result
//! (`launch_axes` over the batch and spatial axes), checked against the CPU.
//!
//! Run: `cargo run --example ndarray` (needs a CUDA GPU).

use cuda_embed::{fuse, reduction_kernel, NdView, NdViewMut};

// bias add + leaky ReLU in one kernel: `v` is never stored.
fuse!(
    bias_leaky_relu,
    inputs = "float x, float b, scalar float slope",
    steps = ["float v = x + b", "y = v > 0.0f ? v : slope * v"],
    outputs = "float y",
);

reduction_kernel!(
    mean,
    inputs = "float x",
    outputs = "float y",
    map = "x",
    reduce = "a + b",
    post_map = "y = a / (float)n",
    identity = "0",
);

fn main() -> cuda_embed::Result<()> {
    let stream = cuda_embed::context(0)?.default_stream();
    let (batch, channels, h, w) = (8, 16, 32, 32);
    let shape = [batch, channels, h, w];
    let n = batch * channels * h * w;
    let host: Vec<f32> = (0..n).map(|k| ((k * 7919) % 2001) as f32 / 1000.0 - 1.0).collect();
    let bias: Vec<f32> = (0..channels).map(|c| c as f32 * 0.1 - 0.5).collect();
    let x = stream.clone_htod(&host)?;
    let b = stream.clone_htod(&bias)?;
    let mut y = stream.alloc_zeros::<f32>(n)?;

    // The bias as [channels, 1, 1] broadcasts over batch, h and w.
    let xv = NdView::new(&x, &shape)?;
    let bv = NdView::new(&b, &[channels, 1, 1])?;
    bias_leaky_relu::launch_nd(&stream, &xv, &bv, 0.1, &mut NdViewMut::new(&mut y, &shape)?)?;

    // Per-channel mean over the batch and spatial axes (keepdims: the output's shape decides).
    let mut m = stream.alloc_zeros::<f32>(channels)?;
    let yv = NdView::new(&y, &shape)?;
    mean::launch_axes(&stream, &yv, &[0, 2, 3], &mut NdViewMut::new(&mut m, &[1, channels, 1, 1])?)?;

    let got = stream.clone_dtoh(&m)?;
    for (c, g) in got.iter().enumerate() {
        let mut sum = 0.0f64;
        for bi in 0..batch {
            for s in 0..h * w {
                let v = host[(bi * channels + c) * h * w + s] + bias[c];
                sum += f64::from(if v > 0.0 { v } else { 0.1 * v });
            }
        }
        let want = sum / (batch * h * w) as f64;
        println!("channel {c:2}: mean {g:+.5} (CPU {want:+.5})");
        assert!((f64::from(*g) - want).abs() < 1e-4, "channel {c}");
    }
    println!("ok: bias + activation fused over {shape:?}, per-channel means match the CPU");
    Ok(())
}

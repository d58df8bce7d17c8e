//! N-D launches against their references, in one process on one GPU: `launch_nd` on a contiguous
//! 64x64x256x256 view against the flat `launch` of the same kernel (ratio), and GB/s of the cases
//! `benches/ndarray_cupy.py` times with CuPy in the same device call (transposed `x.T + y`, a bias
//! add, reductions over axes (0,2) and (1,3) of 64x128x64x128 and over the last axis of a
//! transposed view). Each line `ROW <key> <GB/s>` is read by the CuPy script's `--rust` join.
//!
//! GPU time: CUDA events around 10 launches, median of 11 repetitions, after warm-up; bandwidth
//! counts each input element read once and each output element written once.
//!
//! Run: `cargo bench --bench ndarray | tee rust.log; python3 benches/ndarray_cupy.py --rust rust.log`.

mod common;

use cuda_embed::cudarc::driver::CudaStream;
use cuda_embed::{elementwise_kernel, fuse, reduction_kernel, NdView, NdViewMut};
use std::sync::Arc;

elementwise_kernel!(nd_add, inputs = "float x, float y", outputs = "float z", operation = "z = x + y", archs = [90]);

reduction_kernel!(
    nd_sum,
    inputs = "float x",
    outputs = "float y",
    map = "x",
    reduce = "a + b",
    identity = "0",
    archs = [90]
);

fuse!(
    fused_wsd,
    inputs = "float x, float y, float w",
    steps = ["float d = x - y", "float e = d * d * w"],
    outputs = "float s",
    reduce = "a + b",
    identity = "0",
    archs = [90]
);

elementwise_kernel!(u_sub, inputs = "float x, float y", outputs = "float d", operation = "d = x - y", archs = [90]);
elementwise_kernel!(u_sqw, inputs = "float d, float w", outputs = "float e", operation = "e = d * d * w", archs = [90]);

const REPS: usize = 11;
const INNER: usize = 10;

/// Median milliseconds per call of `f`.
fn time_gpu(stream: &Arc<CudaStream>, f: impl FnMut() -> cuda_embed::Result<()>) -> cuda_embed::Result<f64> {
    common::gpu_ms(stream, (2, REPS, INNER), f)
}

fn row(key: &str, label: &str, bytes: f64, ms: f64) -> f64 {
    let gbs = bytes / (ms * 1e-3) / 1e9;
    println!("{label:<48} {ms:>9.4} ms {gbs:>8.0} GB/s");
    println!("ROW {key} {gbs:.1}");
    gbs
}

fn main() -> cuda_embed::Result<()> {
    let stream = cuda_embed::context(0)?.default_stream();
    let name = stream.context().name()?;
    println!("device: {name}");
    let n = 1usize << 28;
    let host: Vec<f32> = (0..n).map(|k| ((k * 2654435761) >> 7) as f32 % 1000.0 * 1e-3).collect();
    let x = stream.clone_htod(&host)?;
    let y = stream.clone_htod(&host)?;
    let mut z = stream.alloc_zeros::<f32>(n)?;
    let b3 = 3.0 * 4.0 * n as f64;

    // Contiguous N-D against flat.
    let flat = time_gpu(&stream, || nd_add::launch(&stream, &x, &y, &mut z))?;
    let shape = [64, 64, 256, 256];
    let (xv, yv) = (NdView::new(&x, &shape)?, NdView::new(&y, &shape)?);
    let nd = time_gpu(&stream, || {
        let mut zv = NdViewMut::new(&mut z, &shape)?;
        nd_add::launch_nd(&stream, &xv, &yv, &mut zv)
    })?;
    let f = row("flat", "flat launch 2^28 f32 x + y", b3, flat);
    let g = row("nd_contig", "launch_nd contiguous 64x64x256x256", b3, nd);
    println!("contiguous N-D / flat: {:.3}x", g / f);

    // Transposed x.T + y, 16384^2.
    let m = 16384;
    let xt = NdView::new(&x, &[m, m])?.transpose();
    let ym = NdView::new(&y, &[m, m])?;
    let t = time_gpu(&stream, || {
        let mut zv = NdViewMut::new(&mut z, &[m, m])?;
        nd_add::launch_nd(&stream, &xt, &ym, &mut zv)
    })?;
    row("transpose", "x.T + y 16384x16384", b3, t);

    // Bias add [4096, 16384] + [16384].
    let (r, c) = (4096, 16384);
    let xb = NdView::new(&x, &[r, c])?;
    let bias = NdView::new(&y, &[c])?;
    let t = time_gpu(&stream, || {
        let mut zv = NdViewMut::new(&mut z, &[r, c])?;
        nd_add::launch_nd(&stream, &xb, &bias, &mut zv)
    })?;
    row("bias", "[4096,16384] + [16384]", 4.0 * (2 * r * c + c) as f64, t);

    // Reductions over axes of 64x128x64x128.
    let s4 = [64, 128, 64, 128];
    let x4 = NdView::new(&x, &s4)?;
    let bytes4 = 4.0 * (1u64 << 26) as f64;
    let mut out = stream.alloc_zeros::<f32>(1 << 14)?;
    let t = time_gpu(&stream, || {
        let mut ov = NdViewMut::new(&mut out, &[128, 128])?;
        nd_sum::launch_axes(&stream, &x4, &[0, 2], &mut ov)
    })?;
    row("red02", "sum axes (0,2) of 64x128x64x128", bytes4 + 4.0 * 16384.0, t);
    let t = time_gpu(&stream, || {
        let mut ov = NdViewMut::new(&mut out, &[64, 64])?;
        nd_sum::launch_axes(&stream, &x4, &[1, 3], &mut ov)
    })?;
    row("red13", "sum axes (1,3) of 64x128x64x128", bytes4 + 4.0 * 4096.0, t);
    // The last axis of a transposed 8192x8192 view (each output a strided column).
    let q = 8192;
    let xq = NdView::new(&x, &[q, q])?.transpose();
    let t = time_gpu(&stream, || nd_sum::launch_axes(&stream, &xq, &[1], &mut out.slice_mut(0..q)))?;
    row("redT", "sum last axis of transposed 8192x8192", 4.0 * (q * q + q) as f64, t);

    // fuse!: d = x - y; e = d * d * w; sum(e) on 2^28, against the three unfused kernels (bytes:
    // the fused kernel's 12 per element for both, so the GB/s ratio is the time ratio).
    let w = stream.clone_htod(&host)?;
    let mut s = stream.alloc_zeros::<f32>(1)?;
    let fused = time_gpu(&stream, || fused_wsd::launch(&stream, &x, &y, &w, &mut s))?;
    let mut e = stream.alloc_zeros::<f32>(n)?;
    let unfused = time_gpu(&stream, || {
        u_sub::launch(&stream, &x, &y, &mut z)?;
        u_sqw::launch(&stream, &z, &w, &mut e)?;
        nd_sum::launch(&stream, &e, &mut s)
    })?;
    let f = row("fuse", "fuse! d=x-y; e=d*d*w; sum(e) 2^28", b3, fused);
    let u = row("unfused", "unfused sub, mul, sum 2^28", b3, unfused);
    println!("fused / unfused: {:.3}x", f / u);
    // The same fused figure under a second key, joined by the CuPy script with its hand-fused
    // ReductionKernel (map = the whole chain): the fair fused reference beside `cupy.fuse`.
    println!("ROW fuse_rk {f:.1}");
    Ok(())
}

//! Rust-syntax kernels (`#[cuda_embed::kernel]`) against the same algorithm written as a
//! `cuda_kernel!` C++ kernel, in one process on one GPU: saxpy (2^28 f32), a shared-memory block
//! reduction, a warp-shuffle reduction (2^28 f32 each), a 2-D 5-point stencil and a tiled
//! transpose (8192 x 8192 f32); with bounds checks off. Then saxpy with bounds checks on against
//! the same kernel with them off.
//!
//! GPU time: CUDA events around 10 launches; the two kernels of a pair alternate, 15 repetitions
//! each, after warm-up; the figure is the median time. "speed vs C++" is C++ time / Rust time
//! (>= 1: the Rust-syntax kernel is as fast or faster).
//!
//! Run: `cargo bench --bench rust_kernel`. The kernels are in tests/kernels/rust_kernels.rs.

include!("../tests/kernels/rust_kernels.rs");

mod common;

use common::{gpu_ms, median};
use cuda_embed::{CudaStream, LaunchConfig};
use std::sync::Arc;

const REPS: usize = 15;
const INNER: usize = 10;

/// Median milliseconds of `a` and of `b`, timed alternately: after 3 warm-up calls of each,
/// REPS repetitions of INNER calls of `a`, then of `b` (one `gpu_ms` measurement each).
fn pair(
    stream: &Arc<CudaStream>,
    mut a: impl FnMut() -> cuda_embed::Result<()>,
    mut b: impl FnMut() -> cuda_embed::Result<()>,
) -> cuda_embed::Result<(f64, f64)> {
    for _ in 0..3 {
        a()?;
        b()?;
    }
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..REPS {
        ta.push(gpu_ms(stream, (0, 1, INNER), &mut a)?);
        tb.push(gpu_ms(stream, (0, 1, INNER), &mut b)?);
    }
    Ok((median(ta), median(tb)))
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn report(what: &str, bytes: f64, rust_ms: f64, cpp_ms: f64) {
    println!(
        "{what:<34} rust {rust_ms:>8.4} ms ({:>6.0} GB/s)   c++ {cpp_ms:>8.4} ms ({:>6.0} GB/s)   speed vs C++ {:.3}x",
        bytes / (rust_ms * 1e-3) / 1e9,
        bytes / (cpp_ms * 1e-3) / 1e9,
        cpp_ms / rust_ms
    );
}

fn main() {
    if let Err(e) = run() {
        eprintln!("rust_kernel bench: {e}");
        std::process::exit(1);
    }
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    println!("device: {}", ctx.name()?);

    // saxpy, 2^28 f32.
    let n = 1usize << 28;
    let x = stream.clone_htod(&random(n, 1))?;
    let mut y = stream.clone_htod(&random(n, 2))?;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let cfg = LaunchConfig { block_dim: (256, 1, 1), grid_dim: ((n as u32).div_ceil(256), 1, 1), ..cfg };
    let y_ptr: *mut _ = &mut y;
    // SAFETY (all launches below): each kernel stays within its buffers for these grids; the two
    // closures of a pair never run at the same time, so the one buffer they write is not aliased.
    let (rs, cpp) = pair(
        &stream,
        || unsafe { saxpy_rs::launch(&stream, cfg, 1.0001, &x, &mut *y_ptr) },
        || unsafe { saxpy_cpp::launch(&stream, cfg, 1.0001, &x, &mut *y_ptr, n) },
    )?;
    report("saxpy 2^28 f32", 12.0 * n as f64, rs, cpp);
    let (checked, unchecked) = pair(
        &stream,
        || unsafe { saxpy_checked::launch(&stream, cfg, 1.0001, &x, &mut *y_ptr) },
        || unsafe { saxpy_rs::launch(&stream, cfg, 1.0001, &x, &mut *y_ptr) },
    )?;
    saxpy_checked::check_errors(&stream)?;
    println!(
        "{:<34} checked {checked:>8.4} ms   unchecked {unchecked:>8.4} ms   cost of the checks {:.3}x",
        "saxpy bounds checks on vs off",
        checked / unchecked
    );

    // Reductions over the same 2^28 f32.
    let rcfg = LaunchConfig {
        grid_dim: (
            ctx.attribute(
                cuda_embed::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )? as u32
                * 8,
            1,
            1,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut out_rs = stream.clone_htod(&[0.0f32])?;
    let mut out_cpp = stream.clone_htod(&[0.0f32])?;
    let (rs, cpp) = pair(
        &stream,
        || unsafe { block_sum_rs::launch(&stream, rcfg, &x, &mut out_rs) },
        || unsafe { block_sum_cpp::launch(&stream, rcfg, &x, n, &mut out_cpp) },
    )?;
    report("block reduction (shared) 2^28 f32", 4.0 * n as f64, rs, cpp);
    let (rs, cpp) = pair(
        &stream,
        || unsafe { warp_sum_rs::launch(&stream, rcfg, &x, &mut out_rs) },
        || unsafe { warp_sum_cpp::launch(&stream, rcfg, &x, n, &mut out_cpp) },
    )?;
    report("warp-shuffle reduction 2^28 f32", 4.0 * n as f64, rs, cpp);
    let (a, b) = (stream.clone_dtoh(&out_rs)?[0], stream.clone_dtoh(&out_cpp)?[0]);
    assert!((a - b).abs() <= 1e-3 * b.abs().max(1.0), "the reductions disagree: {a} vs {b}");
    drop((x, y));

    // 2-D: 8192 x 8192 f32.
    let (w, h) = (8192u32, 8192u32);
    let m = (w * h) as usize;
    let a = stream.clone_htod(&random(m, 3))?;
    let mut b = stream.alloc_zeros::<f32>(m)?;
    let b_ptr: *mut _ = &mut b;
    let scfg = LaunchConfig { grid_dim: (w / 32, h / 8, 1), block_dim: (32, 8, 1), shared_mem_bytes: 0 };
    let (rs, cpp) = pair(
        &stream,
        || unsafe { stencil_rs::launch(&stream, scfg, w, h, &a, &mut *b_ptr) },
        || unsafe { stencil_cpp::launch(&stream, scfg, w, h, &a, &mut *b_ptr) },
    )?;
    report("5-point stencil 8192^2 f32", 8.0 * m as f64, rs, cpp);
    let tcfg = LaunchConfig { grid_dim: (w / 32, h / 32, 1), block_dim: (32, 8, 1), shared_mem_bytes: 0 };
    let (rs, cpp) = pair(
        &stream,
        || unsafe { transpose_rs::launch(&stream, tcfg, w, h, &a, &mut *b_ptr) },
        || unsafe { transpose_cpp::launch(&stream, tcfg, w, h, &a, &mut *b_ptr) },
    )?;
    report("tiled transpose 8192^2 f32", 8.0 * m as f64, rs, cpp);
    Ok(())
}

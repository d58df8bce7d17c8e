//! A bf16 Hopper GEMM from CUTLASS 3.x's sm90 collectives (TMA + wgmma, warp-specialized,
//! persistent, clusters of 2) through `cuda_kernel!`, checked against cuBLAS.
//!
//! ```sh
//! scripts/with-cuda --with-cutlass cargo run --release --features cutlass --example cutlass_gemm
//! ```
//!
//! The kernel is examples/cutlass/gemm_sm90.cu: a thin `extern "C" __global__` wrapper taking
//! CUTLASS's own `Params` as a `__grid_constant__`. Its Rust twin is [`GemmParams`] (size and
//! alignment checked against the C++ struct at build time); examples/cutlass/params.rs fills it.

#[path = "cutlass/gemm.rs"]
mod gemm;

use gemm::{fill, gelu, Result};
use half::bf16;

/// The largest difference, and whether it is within bf16 rounding of both results (each output
/// is rounded to bf16 once: 2^-8 of the largest magnitude, twice).
fn compare(ours: &[bf16], reference: &[f32]) -> (f32, f32, bool) {
    let scale = reference.iter().map(|x| x.abs()).fold(0.0f32, f32::max);
    let err = ours.iter().zip(reference).map(|(x, y)| (x.to_f32() - y).abs()).fold(0.0f32, f32::max);
    (err, scale, err <= scale * 2.0 / 256.0)
}

fn main() -> Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let blas = cudarc::cublas::CudaBlas::new(stream.clone()).map_err(|e| format!("cuBLAS: {e:?}"))?;
    let mut failed = false;
    // 1000 x 1496 is not a multiple of the 128 x 256 tile.
    for (m, n, k) in [(4096, 4096, 4096), (1000, 1496, 3000), (8192, 1024, 8192)] {
        let a = stream.clone_htod(&fill(m * k, 1))?;
        let b = stream.clone_htod(&fill(n * k, 2))?;
        let c = stream.clone_htod(&fill(m * n, 3))?;
        let bias = stream.clone_htod(&fill(n, 4))?;
        let mut d = stream.alloc_zeros::<bf16>(m * n)?;
        let mut fused = stream.alloc_zeros::<bf16>(m * n)?;
        let mnk = (m as u32, n as u32, k as u32);
        gemm::gemm(&stream, mnk, 1.5, &a, &b, 0.5, &c, &mut d)?;
        gemm::gemm_bias_gelu(&stream, mnk, 1.5, &a, &b, &bias, 0.5, &c, &mut fused)?;
        // cuBLAS is column-major: D^T (n x m) = 1.5 * op(B) A + 0.5 * C^T, with B (n x k
        // row-major) read as k x n column-major and transposed, A (m x k row-major) as k x m.
        let mut r = stream.clone_htod(&fill(m * n, 3))?;
        let cfg = cudarc::cublas::GemmConfig {
            transa: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T,
            transb: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
            m: n as i32,
            n: m as i32,
            k: k as i32,
            alpha: bf16::from_f32(1.5),
            lda: k as i32,
            ldb: k as i32,
            beta: bf16::from_f32(0.5),
            ldc: n as i32,
        };
        // SAFETY: the extents match the configuration (b: n*k, a: m*k, r: m*n).
        unsafe { cudarc::cublas::Gemm::gemm(&blas, cfg, &b, &a, &mut r) }.map_err(|e| format!("cuBLAS gemm: {e:?}"))?;
        let reference: Vec<f32> = stream.clone_dtoh(&r)?.iter().map(|x| x.to_f32()).collect();
        let (err, scale, ok) = compare(&stream.clone_dtoh(&d)?, &reference);
        println!("cutlass_gemm_bf16 {m}x{n}x{k}: max |ours - cuBLAS| = {err:.4} (max |D| {scale:.1}) {}", verdict(ok));
        let host_bias: Vec<f32> = fill(n, 4).iter().map(|x| x.to_f32()).collect();
        let reference: Vec<f32> = reference.iter().enumerate().map(|(i, x)| gelu(x + host_bias[i % n])).collect();
        let (err, scale, ok_fused) = compare(&stream.clone_dtoh(&fused)?, &reference);
        println!(
            "cutlass_gemm_bias_gelu_bf16 {m}x{n}x{k}: max |ours - GELU(cuBLAS + bias)| = {err:.4} (max |D| {scale:.1}) {}",
            verdict(ok_fused)
        );
        failed |= !ok || !ok_fused;
    }
    if failed {
        return Err("a CUTLASS GEMM differs from cuBLAS by more than bf16 rounding".into());
    }
    Ok(())
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "MISMATCH"
    }
}

//! The CUTLASS sm90 bf16 GEMM of examples/cutlass (through `cuda_kernel!`) against cuBLAS in the
//! same process, on the same buffers: TFLOP/s of `D = A @ B` at square and LLM shapes, and the
//! fused bias + GELU epilogue against cuBLAS followed by a separate `elementwise_kernel!`.
//!
//! ```sh
//! scripts/with-cuda --with-cutlass cargo bench --features cutlass --bench cutlass_gemm
//! ```
//!
//! Paired rounds: in each round both sides run `INNER` back-to-back calls between CUDA events;
//! the ratio is cuBLAS time / ours (above 1: ours is faster), summarized by `common::Paired`.

mod common;
#[path = "../examples/cutlass/gemm.rs"]
mod gemm;

use cuda_embed::elementwise_kernel;
use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{sys, CudaSlice, CudaStream};
use gemm::Result;
use half::bf16;
use std::sync::Arc;

// The unfused epilogue: y = GELU(y + bias[column]) over the m x n result, one pass.
elementwise_kernel!(
    bias_gelu,
    inputs = "raw T bias, scalar long long cols",
    outputs = "T y",
    operation = "float v = (float)y + (float)bias[i % cols]; \
                 y = T(0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))))",
    types = ["__nv_bfloat16"],
);

const ROUNDS: usize = 9;
/// The tile swizzles compared (CUTLASS's `max_swizzle_size`), and the one of the fused runs.
const SWIZZLES: [u32; 2] = [1, 8];
const FUSED_SWIZZLE: u32 = 8;
const INNER: usize = 10;

/// Milliseconds per call of `f` over `INNER` calls between two events.
fn ms(stream: &Arc<CudaStream>, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let ctx = stream.context();
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (a, b) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
    a.record(stream)?;
    for _ in 0..INNER {
        f()?;
    }
    b.record(stream)?;
    b.synchronize()?;
    Ok(f64::from(a.elapsed_ms(&b)?) / INNER as f64)
}

/// Paired rounds of `ours` and `reference` (3 warm-up calls each first): per-round times.
fn paired(
    stream: &Arc<CudaStream>,
    ours: &mut dyn FnMut() -> Result<()>,
    reference: &mut dyn FnMut() -> Result<()>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    for _ in 0..3 {
        ours()?;
        reference()?;
    }
    let (mut o, mut r) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        o.push(ms(stream, ours)?);
        r.push(ms(stream, reference)?);
    }
    Ok((o, r))
}

fn random(len: usize, seed: u64) -> Vec<bf16> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            bf16::from_f32((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0)
        })
        .collect()
}

/// cuBLAS `D = A @ B` for row-major A (m x k), B (n x k), D (m x n): column-major D^T = B^T-op.
fn cublas(
    blas: &CudaBlas,
    (m, n, k): (usize, usize, usize),
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    d: &mut CudaSlice<bf16>,
) -> Result<()> {
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_T,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: bf16::ONE,
        lda: k as i32,
        ldb: k as i32,
        beta: bf16::ZERO,
        ldc: n as i32,
    };
    // SAFETY: the extents match the configuration (b: n*k, a: m*k, d: m*n).
    unsafe { blas.gemm(cfg, b, a, d) }.map_err(|e| format!("cuBLAS: {e:?}"))?;
    Ok(())
}

fn tflops((m, n, k): (usize, usize, usize), ms: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12
}

fn main() -> Result<()> {
    let ctx = match cuda_embed::context(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cutlass_gemm bench: {e}");
            std::process::exit(2);
        }
    };
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone()).map_err(|e| format!("cuBLAS: {e:?}"))?;
    println!("## CUTLASS sm90 bf16 GEMM (cuda_kernel!) vs cuBLAS, D = A @ B, bf16 in/out, fp32 accumulate\n");
    println!("| m x n x k | swizzle | ours TFLOP/s | cuBLAS TFLOP/s | ours / cuBLAS (paired: median, IQR, 95% CI) |");
    println!("|---|---|---|---|---|");
    let shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 1024, 8192), (4096, 14336, 4096), (16384, 4096, 4096)];
    let mut csv = Vec::new();
    for &(m, n, k) in &shapes {
        let a = stream.clone_htod(&random(m * k, 1))?;
        let b = stream.clone_htod(&random(n * k, 2))?;
        let c = stream.alloc_zeros::<bf16>(m * n)?;
        let mut d = stream.alloc_zeros::<bf16>(m * n)?;
        let mut r = stream.alloc_zeros::<bf16>(m * n)?;
        let mnk = (m as u32, n as u32, k as u32);
        for swizzle in SWIZZLES {
            gemm::set_swizzle(swizzle);
            let (o, rr) = paired(&stream, &mut || gemm::gemm(&stream, mnk, 1.0, &a, &b, 0.0, &c, &mut d), &mut || {
                cublas(&blas, (m, n, k), &a, &b, &mut r)
            })?;
            let p = common::Paired::new(&rr, &o);
            let (to, tr) = (tflops((m, n, k), common::median(o)), tflops((m, n, k), common::median(rr)));
            println!("| {m}x{n}x{k} | {swizzle} | {to:.0} | {tr:.0} | {} |", p.cell());
            csv.push(format!("cutlass,gemm {m}x{n}x{k} swizzle {swizzle},{:.4},{to:.1},{tr:.1}", p.median));
        }
    }
    gemm::set_swizzle(FUSED_SWIZZLE);
    println!("\n## Fused bias + GELU epilogue vs cuBLAS GEMM + elementwise_kernel! bias + GELU\n");
    println!(
        "| m x n x k | fused TFLOP/s | cuBLAS + elementwise TFLOP/s | fused / unfused (paired: median, IQR, 95% CI) |"
    );
    println!("|---|---|---|---|");
    for &(m, n, k) in &[(8192, 8192, 8192), (8192, 1024, 8192)] {
        let a = stream.clone_htod(&random(m * k, 1))?;
        let b = stream.clone_htod(&random(n * k, 2))?;
        let bias = stream.clone_htod(&random(n, 3))?;
        let c = stream.alloc_zeros::<bf16>(m * n)?;
        let mut d = stream.alloc_zeros::<bf16>(m * n)?;
        let mut r = stream.alloc_zeros::<bf16>(m * n)?;
        let mnk = (m as u32, n as u32, k as u32);
        let (o, rr) = paired(
            &stream,
            &mut || gemm::gemm_bias_gelu(&stream, mnk, 1.0, &a, &b, &bias, 0.0, &c, &mut d),
            &mut || {
                cublas(&blas, (m, n, k), &a, &b, &mut r)?;
                // SAFETY: `bias[i % cols]` stays within the n-element bias.
                unsafe { bias_gelu::launch(&stream, &bias, n as i64, &mut r)? };
                Ok(())
            },
        )?;
        let p = common::Paired::new(&rr, &o);
        let (to, tr) = (tflops((m, n, k), common::median(o)), tflops((m, n, k), common::median(rr)));
        println!("| {m}x{n}x{k} | {to:.0} | {tr:.0} | {} |", p.cell());
        csv.push(format!("cutlass,bias+gelu {m}x{n}x{k},{:.4},{to:.1},{tr:.1}", p.median));
        // The two agree (both round once to bf16; tanh GELU on both sides).
        let (x, y) = (stream.clone_dtoh(&d)?, stream.clone_dtoh(&r)?);
        let scale = y.iter().map(|v| v.to_f32().abs()).fold(0.0f32, f32::max);
        let err = x.iter().zip(&y).map(|(p, q)| (p.to_f32() - q.to_f32()).abs()).fold(0.0f32, f32::max);
        println!("<!-- {m}x{n}x{k}: max |fused - unfused| = {err:.4} of max {scale:.2} -->");
    }
    println!("\ncsv (chart,case,ratio,ours_tflops,reference_tflops):");
    for line in csv {
        println!("{line}");
    }
    Ok(())
}

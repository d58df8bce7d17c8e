//! The CUTLASS sm90 GEMMs of examples/cutlass through `cuda_kernel!`, on a GPU: against cuBLAS at
//! three shapes (one not a multiple of the 128 x 256 tile), the fused bias + GELU epilogue
//! against cuBLAS plus the same epilogue on the host, and the bad inputs. Needs an sm_90 GPU
//! (`cutlass` feature; `scripts/with-cuda --with-cutlass`).

#[path = "../examples/cutlass/gemm.rs"]
mod gemm;

use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig};
use gemm::{fill, gelu};
use half::bf16;

/// Max |ours - reference| relative to the largest |reference|: both sides round each output to
/// bf16 once (2^-8 relative), and accumulate in fp32 in different orders.
fn relative_error(ours: &[bf16], reference: &[f32]) -> f32 {
    let scale = reference.iter().map(|x| x.abs()).fold(0.0f32, f32::max);
    ours.iter().zip(reference).map(|(x, y)| (x.to_f32() - y).abs()).fold(0.0f32, f32::max) / scale
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cutlass_gemm_matches_cublas() {
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let blas = CudaBlas::new(stream.clone()).unwrap();
    // CUTLASS_GEMM_SMALL=1: small shapes of the same kinds, for compute-sanitizer runs.
    let shapes = if std::env::var_os("CUTLASS_GEMM_SMALL").is_some() {
        [(512, 512, 512), (200, 264, 136), (384, 1024, 256)]
    } else {
        [(4096, 4096, 4096), (1000, 1496, 3000), (384, 8192, 1024)]
    };
    for (m, n, k) in shapes {
        let a = stream.clone_htod(&fill(m * k, 1)).unwrap();
        let b = stream.clone_htod(&fill(n * k, 2)).unwrap();
        let c = stream.clone_htod(&fill(m * n, 3)).unwrap();
        let bias = stream.clone_htod(&fill(n, 4)).unwrap();
        let mut d = stream.alloc_zeros::<bf16>(m * n).unwrap();
        let mut fused = stream.alloc_zeros::<bf16>(m * n).unwrap();
        let mnk = (m as u32, n as u32, k as u32);
        gemm::gemm(&stream, mnk, 1.5, &a, &b, 0.5, &c, &mut d).unwrap();
        gemm::gemm_bias_gelu(&stream, mnk, 1.5, &a, &b, &bias, 0.5, &c, &mut fused).unwrap();
        let mut r = stream.clone_htod(&fill(m * n, 3)).unwrap();
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_T,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: n as i32,
            n: m as i32,
            k: k as i32,
            alpha: bf16::from_f32(1.5),
            lda: k as i32,
            ldb: k as i32,
            beta: bf16::from_f32(0.5),
            ldc: n as i32,
        };
        // SAFETY: the extents match the configuration.
        unsafe { blas.gemm(cfg, &b, &a, &mut r) }.unwrap();
        let reference: Vec<f32> = stream.clone_dtoh(&r).unwrap().iter().map(|x| x.to_f32()).collect();
        let e = relative_error(&stream.clone_dtoh(&d).unwrap(), &reference);
        assert!(e <= 2.0 / 256.0, "{m}x{n}x{k}: relative error {e} against cuBLAS");
        let host_bias: Vec<f32> = fill(n, 4).iter().map(|x| x.to_f32()).collect();
        let reference: Vec<f32> = reference.iter().enumerate().map(|(i, x)| gelu(x + host_bias[i % n])).collect();
        let e = relative_error(&stream.clone_dtoh(&fused).unwrap(), &reference);
        assert!(e <= 2.0 / 256.0, "{m}x{n}x{k}: fused relative error {e} against GELU(cuBLAS + bias)");
        // The output is exactly m x n: nothing past it is written.
        let mut big = stream.alloc_zeros::<bf16>(m * n + 4096).unwrap();
        gemm::gemm(&stream, mnk, 1.5, &a, &b, 0.0, &c, &mut big).unwrap();
        let tail = stream.clone_dtoh(&big).unwrap();
        assert!(tail[m * n..].iter().all(|x| x.to_f32() == 0.0), "{m}x{n}x{k}: wrote past D");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_inputs_are_errors_before_the_launch() {
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let a = stream.alloc_zeros::<bf16>(256 * 256).unwrap();
    let b = stream.alloc_zeros::<bf16>(256 * 256).unwrap();
    let c = stream.alloc_zeros::<bf16>(256 * 256).unwrap();
    let mut d = stream.alloc_zeros::<bf16>(256 * 256).unwrap();
    // A buffer shorter than the shape says.
    let e = gemm::gemm(&stream, (512, 256, 256), 1.0, &a, &b, 0.0, &c, &mut d).unwrap_err().to_string();
    assert!(e.contains("`a` holds 65536 elements, needs 131072"), "{e}");
    // Rows TMA cannot address (k not a multiple of 8).
    let e = gemm::gemm(&stream, (256, 256, 250), 1.0, &a, &b, 0.0, &c, &mut d).unwrap_err().to_string();
    assert!(e.contains("multiples of 8"), "{e}");
    // More dynamic shared memory than the device lets a block opt in to: an Error naming the limit.
    let e = gemm::cutlass_gemm_bf16::set_max_dynamic_shared_memory(&ctx, 1 << 20).unwrap_err().to_string();
    assert!(e.contains("cutlass_gemm_bf16"), "{e}");
    stream.synchronize().unwrap();
}

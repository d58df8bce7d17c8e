//! Helpers shared by the elementwise and reduction GPU tests (each test file is its own crate and
//! uses only some of them).
#![allow(dead_code)]

pub mod nd;

use cuda_embed::CudaStream;
use std::sync::Arc;

/// The default stream of GPU 0 (the tests that call it are ignored without a GPU).
pub fn gpu() -> Arc<CudaStream> {
    cuda_embed::context(0).expect("a CUDA GPU").default_stream()
}

/// Deterministic pseudo-random values in [-1, 1) (an LCG), for the reductions.
pub fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Pseudo-random values in [-2, 2) (xorshift), never zeros, for the elementwise kernels.
pub fn data_pm2(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect()
}

/// Asserts `got` is within relative error `tol` of `want` (absolute below 1), naming `what`.
pub fn close(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs() / want.abs().max(1.0);
    assert!(err <= tol, "{what}: got {got}, want {want} (relative error {err:e} > {tol:e})");
}

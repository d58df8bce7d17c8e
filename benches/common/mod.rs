//! Timing shared by the bench binaries (each includes this file as `mod common;`).
#![allow(dead_code)]

use cuda_embed::cudarc::driver::{sys, CudaStream};
use std::sync::Arc;

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median GPU milliseconds per call of `f`: `warmup` calls first, then `reps` repetitions of CUDA
/// events around `inner` back-to-back calls.
pub fn gpu_ms(
    stream: &Arc<CudaStream>,
    (warmup, reps, inner): (usize, usize, usize),
    mut f: impl FnMut() -> cuda_embed::Result<()>,
) -> cuda_embed::Result<f64> {
    for _ in 0..warmup {
        f()?;
    }
    let ctx = stream.context();
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let (a, b) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
        a.record(stream)?;
        for _ in 0..inner {
            f()?;
        }
        b.record(stream)?;
        b.synchronize()?;
        v.push(a.elapsed_ms(&b)? as f64 / inner as f64);
    }
    Ok(median(v))
}

//! Watcher streams: streams of this crate's own on which a watch's wait for its event and its
//! completion callback are queued, so that neither sits in the work's own stream (a callback
//! blocks its stream until it returns).
//!
//! They are made with the driver (cudarc does not know them, so they do not switch its contexts
//! into multi-stream event tracking), non-blocking, and kept for the rest of the process. An idle
//! watcher (`cuStreamQuery`) is reused; otherwise another is made, up to [`WATCHERS`] per
//! context, after which they are taken in turn (a callback may then also wait for an earlier
//! watch's event on the same watcher).

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Watcher streams per context at most.
pub const WATCHERS: usize = 32;

struct Watchers {
    ctx: Weak<CudaContext>,
    streams: Vec<usize>,
    next: usize,
}

/// Every context's watcher streams, keyed by the address of its `CudaContext` (kept allocated by
/// the `Weak`, so never another context's; an entry whose context is gone is never used).
static STREAMS: Mutex<Option<HashMap<usize, Watchers>>> = Mutex::new(None);

/// A watcher stream of `ctx` for one more wait, with `ctx` made current.
pub(crate) fn stream(ctx: &Arc<CudaContext>) -> Result<sys::CUstream> {
    crate::driver::bind(ctx)?;
    let mut all = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    let map = all.get_or_insert_with(HashMap::new);
    if map.len() > 16 {
        map.retain(|_, w| w.ctx.strong_count() > 0);
    }
    let w = map.entry(Arc::as_ptr(ctx) as usize).or_insert_with(|| Watchers {
        ctx: Arc::downgrade(ctx),
        streams: Vec::new(),
        next: 0,
    });
    // SAFETY (of each query): the watcher streams live as long as their context, which is live.
    let idle = |s: &&usize| unsafe { sys::cuStreamQuery(**s as sys::CUstream) } == sys::CUresult::CUDA_SUCCESS;
    if let Some(&s) = w.streams.iter().find(idle) {
        return Ok(s as sys::CUstream);
    }
    if w.streams.len() < WATCHERS {
        let mut s: sys::CUstream = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the context is current.
        let r = unsafe { sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver {
                call: "cuStreamCreate (a watcher stream of cuda_embed::future)",
                device: ctx.ordinal(),
                cause: DriverCode(r),
            });
        }
        w.streams.push(s as usize);
        return Ok(s);
    }
    w.next = (w.next + 1) % w.streams.len();
    Ok(w.streams[w.next] as sys::CUstream)
}

//! Awaiting a CUDA event: the work recorded in it, wherever it was queued.
//!
//! An event is not a stream, so nothing can be queued behind it directly. The wait goes on a
//! *watcher stream* of the event's context (`cuStreamWaitEvent`, then the watch): streams of this
//! crate's own, made with the driver (cudarc does not know them, so they do not switch its
//! contexts into multi-stream event tracking), kept for the rest of the process. A watcher that
//! is idle (`cuStreamQuery`) is reused; otherwise another is made, up to [`WATCHERS`] per context,
//! after which they are taken in turn (a wait then may also wait for an earlier one's event).

use super::completion::Watch;
use super::GpuFuture;
use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext, CudaEvent};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Watcher streams per context at most.
pub const WATCHERS: usize = 8;

const CALL: &str = "cuStreamWaitEvent (future::event)";

/// The work recorded in `event` (by its latest `record` before this call), as a future: what
/// `event.synchronize()` waits for, parking the task instead of the thread. An event never
/// recorded resolves at once. Resolves to the work's result.
///
/// ```no_run
/// # async fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
/// let done = stream.record_event(None)?;
/// cuda_embed_runtime::future::event(&done).await?;
/// # Ok(()) }
/// ```
pub fn event(event: &CudaEvent) -> GpuFuture<'static> {
    let ctx = event.context();
    let watched = watcher(ctx).and_then(|stream| {
        // SAFETY: both handles are live (the watcher for the process, the event borrowed) and of
        // the context made current by `watcher`.
        let r = unsafe { sys::cuStreamWaitEvent(stream, event.cu_event(), 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver { call: CALL, device: ctx.ordinal(), cause: DriverCode(r) });
        }
        Watch::queue_raw(ctx, stream)
    });
    GpuFuture::watching(ctx.ordinal(), watched, CALL)
}

struct Watchers {
    ctx: Weak<CudaContext>,
    streams: Vec<usize>,
    next: usize,
}

/// Every context's watcher streams, keyed by the address of its `CudaContext` (kept allocated by
/// the `Weak`, so never another context's; an entry whose context is gone is never used).
static STREAMS: Mutex<Option<HashMap<usize, Watchers>>> = Mutex::new(None);

/// A watcher stream of `ctx` for one more wait, with `ctx` current.
fn watcher(ctx: &Arc<CudaContext>) -> Result<sys::CUstream> {
    crate::launch::limits::bind(ctx)?;
    let mut all = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    let map = all.get_or_insert_with(HashMap::new);
    map.retain(|_, w| w.ctx.strong_count() > 0);
    let w = map.entry(Arc::as_ptr(ctx) as usize).or_insert_with(|| Watchers {
        ctx: Arc::downgrade(ctx),
        streams: Vec::new(),
        next: 0,
    });
    // SAFETY (of each query): the watcher streams live as long as their context, which is live.
    if let Some(&idle) =
        w.streams.iter().find(|&&s| unsafe { sys::cuStreamQuery(s as sys::CUstream) } == sys::CUresult::CUDA_SUCCESS)
    {
        return Ok(idle as sys::CUstream);
    }
    if w.streams.len() < WATCHERS {
        let mut s: sys::CUstream = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the context is current.
        let r = unsafe { sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver {
                call: "cuStreamCreate (future::event)",
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

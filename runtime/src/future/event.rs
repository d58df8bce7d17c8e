//! Awaiting a CUDA event: the work recorded in it, wherever it was queued.
//!
//! An event is not a stream, so nothing can be queued behind it directly. The wait goes on a
//! watcher stream of the event's context (see `watcher.rs`): `cuStreamWaitEvent`, then the watch's
//! own event, watched like any other work.

use super::completion::Watch;
use super::GpuFuture;
use crate::error::{DriverCode, Error};
use cudarc::driver::{sys, CudaEvent};

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
    let watched = super::watcher::stream(ctx, event.cu_event() as usize).and_then(|stream| {
        // SAFETY: both handles are live (the watcher for the process, the event borrowed) and of
        // the event's context (both named, so the current context does not matter).
        let r = unsafe { sys::cuStreamWaitEvent(stream, event.cu_event(), 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver { call: CALL, device: ctx.ordinal(), cause: DriverCode(r) });
        }
        Watch::record_raw(ctx, stream)
    });
    GpuFuture::watching(ctx.ordinal(), watched, CALL)
}

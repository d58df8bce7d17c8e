//! Watcher streams: streams of this crate's own on which a watch's wait for its event and its
//! completion callback are queued, so that neither sits in the work's own stream (a callback
//! blocks its stream until it returns).
//!
//! They are made with the driver (cudarc does not know them, so they do not switch its contexts
//! into multi-stream event tracking), non-blocking, and kept for the rest of the process. Each
//! work stream (a *lane*: the stream an event is recorded on) gets a watcher of its own, up to
//! [`WATCHERS`] per context, after which lanes share them in turn. The watches of one lane
//! finish in order anyway, so queuing them on one watcher delays none of them; two lanes on one
//! watcher may delay a callback until the other lane's earlier work is done (never a wrong
//! answer: only a later wake-up). Choosing costs no driver call.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext};
use std::sync::{Arc, Mutex, Weak};

/// Watcher streams per context at most.
pub const WATCHERS: usize = 32;

/// Lanes remembered per context; more start the assignment afresh (streams come and go).
const LANES: usize = 256;

struct Watchers {
    /// The address of the `CudaContext` (kept allocated by `ctx`, so never another's).
    key: usize,
    ctx: Weak<CudaContext>,
    /// The watcher streams made so far.
    streams: Vec<usize>,
    /// Each lane seen and the watcher it was given.
    lanes: Vec<(usize, usize)>,
    /// The watcher the next new lane gets once all are made.
    next: usize,
}

/// Every context's watcher streams: a list, not a map (a process has a context or a few).
static STREAMS: Mutex<Vec<Watchers>> = Mutex::new(Vec::new());

/// The watcher stream of `ctx` for a wait of work queued on `lane`, with `ctx` made current.
pub(crate) fn stream(ctx: &Arc<CudaContext>, lane: usize) -> Result<sys::CUstream> {
    // Trusted as launches trust it (the waits and callbacks name their streams and events, and
    // do not depend on the current context); a new watcher stream binds for certain below.
    if !crate::driver::bound_here(ctx) {
        crate::driver::bind(ctx)?;
    }
    let key = Arc::as_ptr(ctx) as usize;
    let mut all = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    let at = match all.iter().position(|w| w.key == key) {
        Some(at) => at,
        None => {
            all.retain(|w| w.ctx.strong_count() > 0);
            all.push(Watchers { key, ctx: Arc::downgrade(ctx), streams: Vec::new(), lanes: Vec::new(), next: 0 });
            all.len() - 1
        }
    };
    let w = &mut all[at];
    if let Some(&(_, s)) = w.lanes.iter().find(|(l, _)| *l == lane) {
        return Ok(s as sys::CUstream);
    }
    if w.lanes.len() >= LANES {
        w.lanes.clear();
    }
    let s = if w.streams.len() < WATCHERS {
        crate::driver::bind(ctx)?;
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
        s as usize
    } else {
        w.next = (w.next + 1) % w.streams.len();
        w.streams[w.next]
    };
    w.lanes.push((lane, s));
    Ok(s as sys::CUstream)
}

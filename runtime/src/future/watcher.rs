//! Watcher streams: streams of this crate's own on which a watch's wait for its event and its
//! completion callback are queued, so that neither sits in the work's own stream (a callback
//! blocks its stream until it returns).
//!
//! They are made with the driver (cudarc does not know them, so they do not switch its contexts
//! into multi-stream event tracking), non-blocking, and kept for the life of their context
//! (never destroyed by this crate, so never one of a context that is gone). Each work stream
//! (a *lane*: the stream an event is recorded on) gets a watcher of its own, up to
//! [`WATCHERS`] per context, after which lanes share them in turn. The watches of one lane
//! finish in order anyway, so queuing them on one watcher delays none of them; two lanes on one
//! watcher may delay a callback until the other lane's earlier work is done (never a wrong
//! answer: only a later wake-up). Choosing costs no driver call.
//!
//! They are kept in the futures' [`PerContext`] table: keyed by the context, not by one handle
//! of it, so every handle of a context shares them (see `per_context.rs`); the table holds no
//! context alive. The streams of a context that no handle proves alive any more are dropped from
//! the table without a driver call: they went with their context, or, if it lives on through a
//! handle the table never saw, stay until it goes.

use super::per_context::{about, PerContext};
use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Watcher streams per context at most.
pub const WATCHERS: usize = 32;

/// Lanes remembered per context; more start the assignment afresh (streams come and go).
const LANES: usize = 256;

/// One context's watcher streams.
#[derive(Default)]
struct Watchers {
    /// The watcher streams made so far.
    streams: Vec<usize>,
    /// Each lane seen and the watcher it was given.
    lanes: Vec<(usize, usize)>,
    /// The watcher the next new lane gets once all are made.
    next: usize,
}

impl Drop for Watchers {
    fn drop(&mut self) {
        // Only ever dropped by the table, when no handle proves the context alive.
        ABANDONED.fetch_add(self.streams.len(), Ordering::Relaxed);
    }
}

/// Every context's watcher streams.
static STREAMS: Mutex<PerContext<CudaContext, Watchers>> = Mutex::new(PerContext::new());

/// Watcher streams made, and dropped with their context's entry (see [`counts`]).
static CREATED: AtomicUsize = AtomicUsize::new(0);
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// Fills in the watcher streams' counts (see [`super::PoolStats`]).
pub(crate) fn counts(stats: &mut super::PoolStats) {
    let all = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    stats.watcher_streams = all.values().map(|w| w.streams.len()).sum();
    drop(all);
    stats.streams_created = CREATED.load(Ordering::Relaxed);
    stats.streams_abandoned = ABANDONED.load(Ordering::Relaxed);
}

/// The watcher stream of `ctx` for a wait of work queued on `lane`, with `ctx` made current.
pub(crate) fn stream(ctx: &Arc<CudaContext>, lane: usize) -> Result<sys::CUstream> {
    // Trusted as launches trust it (the waits and callbacks name their streams and events, and
    // do not depend on the current context); a new watcher stream binds for certain below.
    if !crate::driver::bound_here(ctx) {
        crate::driver::bind(ctx)?;
    }
    let mut all = STREAMS.lock().unwrap_or_else(|e| e.into_inner());
    let w = all.get(ctx, || about(ctx));
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
        CREATED.fetch_add(1, Ordering::Relaxed);
        s as usize
    } else {
        w.next = (w.next + 1) % w.streams.len();
        w.streams[w.next]
    };
    w.lanes.push((lane, s));
    Ok(s as sys::CUstream)
}

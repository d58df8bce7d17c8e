//! Stream ordering between a module's [`Global`](crate::Global) copies and its kernels, the way
//! cudarc orders a `CudaSlice` between streams.
//!
//! A kernel reaches the module's `__device__`/`__constant__` variables by name, not through its
//! arguments, so any kernel of a module with globals may read or write any of them. When cudarc
//! manages stream synchronisation for the context (more than one stream exists and event tracking
//! is on, `CudaContext::is_managing_stream_synchronization`), then, per module and device:
//!
//! - a launch of one of the module's kernels first waits for the last copy *into* a global
//!   (cross-stream write-then-launch), and records its own completion event afterwards;
//! - a global copy (write or read) first waits for the module's last launch on each stream and for
//!   the last copy into a global (launch-then-copy, write-then-write), and a write records its
//!   completion event afterwards.
//!
//! Launches on different streams are not ordered with each other (they may run concurrently), so
//! the module keeps the completion event of its last launch *on each stream* that launched one,
//! and a copy waits for all of them: for every launch made before it, on any stream (the launches
//! of one stream complete in order). Events that have completed are dropped at each copy, so the
//! list holds only the streams with work in flight. Copies into globals are chained (each waits
//! for the previous one), so one event suffices for them. With a single stream (cudarc's default)
//! nothing is recorded and a launch pays one branch.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaEvent, CudaStream};
use std::sync::Mutex;

/// The events of one module on one device (see the module docs).
#[derive(Default)]
pub(crate) struct GlobalOrder {
    /// Completion of the last copy into one of the module's globals.
    write: Mutex<Option<CudaEvent>>,
    /// Completion of the last launch of one of the module's kernels, per stream that launched.
    launches: Mutex<Vec<(sys::CUstream, CudaEvent)>>,
}

fn driver(stream: &CudaStream, call: &'static str, e: cudarc::driver::DriverError) -> Error {
    Error::Driver { call, device: stream.context().ordinal(), cause: DriverCode(e.0) }
}

/// Makes `stream` wait for `slot`'s event, if one was recorded.
fn wait(stream: &CudaStream, slot: &Mutex<Option<CudaEvent>>) -> Result<()> {
    let event = slot.lock().unwrap_or_else(|p| p.into_inner());
    match event.as_ref() {
        Some(e) => stream.wait(e).map_err(|e| driver(stream, "cuStreamWaitEvent", e)),
        None => Ok(()),
    }
}

/// A new event without timing, in `stream`'s context.
fn new_event(stream: &CudaStream) -> Result<CudaEvent> {
    let flags = Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
    stream.context().new_event(flags).map_err(|e| driver(stream, "cuEventCreate", e))
}

/// Records `stream`'s current work into `slot`'s event, making the event on first use.
fn record(stream: &CudaStream, slot: &Mutex<Option<CudaEvent>>) -> Result<()> {
    let mut event = slot.lock().unwrap_or_else(|p| p.into_inner());
    if event.is_none() {
        *event = Some(new_event(stream)?);
    }
    match event.as_ref() {
        Some(e) => e.record(stream).map_err(|e| driver(stream, "cuEventRecord", e)),
        None => Ok(()),
    }
}

/// Whether cudarc orders buffers between streams in `stream`'s context (so must we).
#[inline(always)]
pub(crate) fn tracking(stream: &CudaStream) -> bool {
    stream.context().is_managing_stream_synchronization()
}

impl GlobalOrder {
    /// Before a launch of one of the module's kernels on `stream`.
    #[cold]
    pub(crate) fn before_launch(&self, stream: &CudaStream) -> Result<()> {
        wait(stream, &self.write)
    }

    /// After a launch of one of the module's kernels on `stream`.
    #[cold]
    pub(crate) fn after_launch(&self, stream: &CudaStream) -> Result<()> {
        let mut launches = self.launches.lock().unwrap_or_else(|p| p.into_inner());
        let cu = stream.cu_stream();
        let event = match launches.iter().position(|(s, _)| *s == cu) {
            Some(i) => {
                // A destroyed stream's handle may be reused by a new stream while the old one's
                // work runs: chain it, so re-recording the event loses nothing (a no-op when it
                // is the same stream).
                let event = &launches[i].1;
                stream.wait(event).map_err(|e| driver(stream, "cuStreamWaitEvent", e))?;
                event
            }
            None => {
                launches.push((cu, new_event(stream)?));
                &launches[launches.len() - 1].1
            }
        };
        event.record(stream).map_err(|e| driver(stream, "cuEventRecord", e))
    }

    /// Before a copy into or out of one of the module's globals on `stream`: waits for the last
    /// launch on every stream (dropping the events that have completed) and for the last write.
    pub(crate) fn before_copy(&self, stream: &CudaStream) -> Result<()> {
        let mut launches = self.launches.lock().unwrap_or_else(|p| p.into_inner());
        // Waiting on `stream`'s own event is redundant but harmless (and covers a reused handle).
        launches.retain(|(_, e)| !e.is_complete());
        for (_, e) in launches.iter() {
            stream.wait(e).map_err(|e| driver(stream, "cuStreamWaitEvent", e))?;
        }
        drop(launches);
        wait(stream, &self.write)
    }

    /// After a copy into one of the module's globals on `stream`.
    pub(crate) fn after_write(&self, stream: &CudaStream) -> Result<()> {
        record(stream, &self.write)
    }
}

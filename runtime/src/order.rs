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
//! - a global copy (write or read) first waits for the last launch of the module's kernels and for
//!   the last copy into a global (launch-then-copy, write-then-write), and a write records its
//!   completion event afterwards.
//!
//! Like cudarc's buffer events, each event holds only the most recent use: a copy waits for the
//! last launch of the module, on whichever stream, not for every earlier launch on other
//! streams. With a single stream (cudarc's default) nothing is recorded and a launch pays one
//! branch.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{CudaEvent, CudaStream};
use std::sync::Mutex;

/// The events of one module on one device (see the module docs).
#[derive(Default)]
pub(crate) struct GlobalOrder {
    /// Completion of the last copy into one of the module's globals.
    write: Mutex<Option<CudaEvent>>,
    /// Completion of the last launch of one of the module's kernels.
    launch: Mutex<Option<CudaEvent>>,
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

/// Records `stream`'s current work into `slot`'s event, making the event on first use.
fn record(stream: &CudaStream, slot: &Mutex<Option<CudaEvent>>) -> Result<()> {
    let mut event = slot.lock().unwrap_or_else(|p| p.into_inner());
    if event.is_none() {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING);
        *event = Some(stream.context().new_event(flags).map_err(|e| driver(stream, "cuEventCreate", e))?);
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
        record(stream, &self.launch)
    }

    /// Before a copy into or out of one of the module's globals on `stream`.
    pub(crate) fn before_copy(&self, stream: &CudaStream) -> Result<()> {
        wait(stream, &self.launch)?;
        wait(stream, &self.write)
    }

    /// After a copy into one of the module's globals on `stream`.
    pub(crate) fn after_write(&self, stream: &CudaStream) -> Result<()> {
        record(stream, &self.write)
    }
}

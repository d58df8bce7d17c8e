//! Launches inside stream capture while cudarc's event tracking is on (its default).
//!
//! cudarc orders each buffer's uses across streams with events: taking a buffer's pointer makes
//! the launch stream wait on the buffer's last write (and, for a write, its reads), and the
//! launch is recorded on the buffer's events afterwards. A stream that is being captured must not
//! wait on an event recorded outside the capture: the driver invalidates the whole capture
//! (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` at the end), so a buffer allocated before
//! `begin_capture` could not be used in it.
//!
//! So while the launch stream is capturing, buffers are bound on a side stream of the context
//! instead ([`binding`]): the waits and records happen there, outside the capture, where they are
//! legal, and the kernel is still launched (captured) on the caller's stream. Nothing is lost:
//! the captured graph runs when it is launched, long after, and cudarc does not track graph
//! launches anyway; order a replay with other work the way graphs always are (launch it on the
//! stream that uses the results, or synchronise).
//!
//! Only when tracking is on is the stream asked whether it is capturing (one driver call); with
//! tracking off, launches are as before.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext, CudaStream, SyncOnDrop};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

/// The stream buffers are bound on for one launch: the launch stream itself, or, while it is
/// being captured with event tracking on, the context's side stream. `Copy`, references only:
/// a launch keeps it in registers and has nothing to drop.
#[derive(Clone, Copy)]
pub enum Binding<'a> {
    /// The launch stream, in a context that did not manage stream synchronisation when the
    /// launch asked (event tracking off, or a single stream): cudarc's buffer guards have nothing
    /// to record, and the binds of [`crate::bind`] forget them without asking again.
    Untracked(&'a CudaStream),
    /// The launch stream, in a context that manages stream synchronisation.
    Stream(&'a CudaStream),
    /// The context's side stream (the launch stream is capturing); side streams live for the
    /// rest of the process.
    Side(&'static CudaStream),
}

impl Deref for Binding<'_> {
    type Target = CudaStream;
    #[inline(always)]
    fn deref(&self) -> &CudaStream {
        match self {
            Binding::Untracked(s) | Binding::Stream(s) => s,
            Binding::Side(s) => s,
        }
    }
}

/// The stream to take buffer pointers on for a launch on `stream` (see the module docs).
#[inline(always)]
pub fn binding(stream: &CudaStream) -> Result<Binding<'_>> {
    if !stream.context().is_managing_stream_synchronization() {
        return Ok(Binding::Untracked(stream));
    }
    binding_tracked(stream)
}

/// `binding` for a launch of `kernel`: a failure (creating the side stream) is an
/// [`Error::Launch`] naming the kernel and where it comes from. Support for generated code.
#[inline(always)]
pub fn kernel_binding(stream: &CudaStream, kernel: crate::KernelRef) -> Result<Binding<'_>> {
    match binding(stream) {
        Ok(b) => Ok(b),
        Err(e) => Err(crate::error::of_kernel(e, kernel.name(), kernel.module().origin())),
    }
}

/// The guard cudarc's `device_ptr` returned on `binding`, if dropping it after the launch can do
/// anything.
///
/// Dropping a guard of cudarc's `Record` kind asks, an out-of-line call each, whether the binding
/// stream's context manages stream synchronisation (event tracking on and several streams), and
/// only then records the buffer's event on the binding stream. [`binding`] already asked that
/// context, before the buffer's pointer was taken: when it did not manage synchronisation then
/// ([`Binding::Untracked`]), the `Record` guard is forgotten here. It holds references only, so
/// nothing leaks, and not recording is what its drop does when the answer is the same. Were the
/// answer to change during the launch (another thread making the context's first stream, or
/// turning event tracking on), the launch is ordered as if the change came just after it, as
/// cudarc's own drop does for any change after the drop (a `device_ptr` that saw the change
/// only adds a wait). In every other case, and for any other kind of guard (`Sync`, which
/// synchronises the stream whatever the context says, from a buffer type of someone else's),
/// the guard is kept and its drop does what it always does.
#[inline(always)]
pub(crate) fn keep<'a>(binding: &Binding<'_>, guard: SyncOnDrop<'a>) -> Option<SyncOnDrop<'a>> {
    if matches!(binding, Binding::Untracked(_)) && matches!(guard, SyncOnDrop::Record(_)) {
        // Not recording is what the drop would do (see above); the guard owns nothing.
        std::mem::forget(guard);
        None
    } else {
        Some(guard)
    }
}

#[cold]
#[inline(never)]
fn binding_tracked(stream: &CudaStream) -> Result<Binding<'_>> {
    if !is_capturing(stream) {
        return Ok(Binding::Stream(stream));
    }
    Ok(Binding::Side(side_stream_ref(stream.context())?))
}

/// Whether `stream` is being captured (an invalidated capture counts: it has not ended). A
/// stream the driver cannot answer for (the legacy stream while another stream captures in
/// global mode) counts as not capturing: the launch then gets the driver's own error.
pub fn is_capturing(stream: &CudaStream) -> bool {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: the stream handle is live (borrowed); `status` is a valid out-pointer.
    let r = unsafe { sys::cuStreamIsCapturing(stream.cu_stream(), &mut status) };
    r == sys::CUresult::CUDA_SUCCESS && status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
}

type Sides = HashMap<usize, &'static Arc<CudaStream>>;
static SIDES: Mutex<Option<Sides>> = Mutex::new(None);

/// The side stream of `ctx`, created the first time a launch is captured on the context
/// (creating a stream is allowed during capture; nothing else pays for it).
pub(crate) fn side_stream(ctx: &Arc<CudaContext>) -> Result<Arc<CudaStream>> {
    side_stream_ref(ctx).cloned()
}

/// [`side_stream`] as a reference: each side stream is kept for the rest of the process (one
/// per context a capture launched on), so it can be lent for as long as anyone likes.
fn side_stream_ref(ctx: &Arc<CudaContext>) -> Result<&'static Arc<CudaStream>> {
    let mut guard = SIDES.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(s) = map.get(&(ctx.cu_ctx() as usize)) {
        return Ok(s);
    }
    let s = ctx.new_stream().map_err(|e| Error::Driver {
        call: "cuStreamCreate (the side stream for launches under capture)",
        device: ctx.ordinal(),
        cause: DriverCode(e.0),
    })?;
    // The stream holds its context, so the key cannot be reused by another context; it is never
    // removed (leaked on purpose: one small box per context).
    let s: &'static Arc<CudaStream> = Box::leak(Box::new(s));
    map.insert(ctx.cu_ctx() as usize, s);
    Ok(s)
}

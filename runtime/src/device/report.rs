//! The bounds-check reports of Rust-syntax kernels: each kernel built with bounds checks has a
//! `__device__` slot (`[Rust line, index, length]`, line 0 while nothing went wrong) that the
//! first out-of-range index of a launch fills.
//!
//! Two ways read it: the kernel's own `NAME::check_errors(&stream)` ([`check_bounds`]), and
//! [`synchronize`], which waits for a stream and then reads the slot of every checked kernel
//! launched so far in the stream's context (the launchers register their kernel here on their
//! first call, [`watch_once`]; a later launch costs one relaxed atomic load). `GraphExec::synchronize`
//! does the same after a graph's launch.
//!
//! cudarc's own `CudaStream::synchronize` cannot report these: it is cudarc's method, and the
//! driver knows nothing of the slots. Nor can a later launcher check them without waiting for
//! the GPU, which would make every launch synchronous. So the report comes at the
//! synchronisations cuda-embed performs.

use crate::error::DriverCode;
use crate::{CudaStream, Error, Global, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A checked kernel that has been launched: its slot and the names its report gives.
#[derive(Clone, Copy)]
struct Watched {
    slot: &'static Global<u64>,
    kernel: &'static str,
    file: &'static str,
}

/// Every checked kernel launched so far, in the order of their first launch.
static WATCHED: Mutex<Vec<Watched>> = Mutex::new(Vec::new());

/// Registers a checked kernel for [`synchronize`] on its first launch (`flag` is the kernel's
/// own, so later launches only load it). Support for generated launchers.
#[doc(hidden)]
#[inline]
pub fn watch_once(flag: &'static AtomicBool, slot: &'static Global<u64>, kernel: &'static str, file: &'static str) {
    if !flag.load(Ordering::Relaxed) {
        watch(flag, slot, kernel, file);
    }
}

#[cold]
#[inline(never)]
fn watch(flag: &'static AtomicBool, slot: &'static Global<u64>, kernel: &'static str, file: &'static str) {
    let mut w = WATCHED.lock().unwrap_or_else(|p| p.into_inner());
    if !w.iter().any(|x| std::ptr::eq(x.slot, slot)) {
        w.push(Watched { slot, kernel, file });
    }
    flag.store(true, Ordering::Relaxed);
}

/// Waits for `stream`, then reports the first out-of-range index recorded by any bounds-checked
/// Rust-syntax kernel (`#[cuda_embed::kernel]`) launched in the stream's context, as
/// [`Error::IndexOutOfBounds`] naming the kernel, the Rust file and line, the index and the
/// length; the report is cleared. `Ok(())` when none is recorded.
///
/// This is `stream.synchronize()` plus one small device-to-host read per checked kernel
/// launched so far in the context (kernels with `bounds_checks = false` are not read). Use it
/// where you would call `stream.synchronize()`; `NAME::check_errors(&stream)` checks one
/// kernel. A kernel's report is cleared by whichever of the two reads it first; when several
/// kernels recorded one, each call reports the next.
///
/// ```no_run
/// # fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
/// // unsafe { saxpy::launch(&stream, cfg, 2.0, &x, &mut y)? };  a #[cuda_embed::kernel]
/// cuda_embed_runtime::synchronize(stream)?; // Err(IndexOutOfBounds { kernel: "saxpy", .. }) if y is short
/// # Ok(()) }
/// ```
pub fn synchronize(stream: &CudaStream) -> Result<()> {
    stream.synchronize().map_err(|e| Error::Driver {
        call: "cuStreamSynchronize",
        device: stream.context().ordinal(),
        cause: DriverCode(e.0),
    })?;
    check_launched(stream)
}

/// Reads the slots of the checked kernels launched in `stream`'s context (after waiting for
/// it), reporting and clearing the first recorded index. Never loads a module.
pub(crate) fn check_launched(stream: &CudaStream) -> Result<()> {
    let watched: Vec<Watched> = WATCHED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let ctx = stream.context();
    for w in watched {
        if w.slot.is_loaded(ctx) {
            check_bounds(w.slot, stream, w.kernel, w.file)?;
        }
    }
    Ok(())
}

/// Reads kernel `kernel`'s out-of-bounds slot (`[Rust line, index, length]`, line 0 when
/// nothing went wrong) after waiting for `stream`, clears it, and reports the recorded index.
/// Support for generated code (`NAME::check_errors`).
#[doc(hidden)]
pub fn check_bounds(slot: &Global<u64>, stream: &CudaStream, kernel: &str, file: &str) -> Result<()> {
    let v = slot.read(stream)?;
    match v.as_slice() {
        [0, ..] => Ok(()),
        [line, index, len] => {
            slot.write(stream, &[0, 0, 0])?;
            Err(Error::IndexOutOfBounds {
                kernel: kernel.to_string(),
                location: format!("{file}:{line}"),
                index: *index,
                len: *len,
            })
        }
        other => Err(Error::Global {
            name: "__ce_oob",
            origin: "a #[cuda_embed::kernel]",
            device: stream.context().ordinal(),
            cause: format!("the bounds-check slot of kernel `{kernel}` holds {} words, expected 3", other.len()),
            fix: None,
        }),
    }
}

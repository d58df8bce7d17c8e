//! The binding of a dynamic argument list ([`Arg`]s, the run-time twins' launches): the device
//! check of every buffer, then each buffer bound on the binding stream, its guard held while the
//! kernel is queued.

use crate::args::dynamic::{Arg, ArgKind};
use crate::error::Result;
use cudarc::driver::{sys, CudaStream};
use std::ffi::c_void;

/// The first buffer argument that is not memory of `stream`'s context: its index and its device
/// ordinal (the device check of [`crate::bind`]: `placement`).
pub(crate) fn misplaced(args: &[Arg<'_>], stream: &CudaStream) -> Option<(usize, usize)> {
    let placements = args.iter().map(|a| match a.kind {
        // SAFETY: `a` borrows the buffer `object` points at for as long as `args` lives.
        ArgKind::Buffer { object, placement, .. } => Some(unsafe { placement(object) }),
        ArgKind::Value(_) => None,
    });
    super::placement(placements, stream)
}

/// The kernel parameter pointers of `args` once bound, one per argument: a value's bytes, or the
/// slot of `pointers` (as [`bind_buffers`] passes them) holding a buffer's device address. They
/// point into `args` and `pointers`, which must outlive the launch they are passed to.
pub(crate) fn param_pointers(args: &[Arg<'_>], pointers: &[sys::CUdeviceptr]) -> Vec<*mut c_void> {
    args.iter()
        .zip(pointers)
        .map(|(a, p)| match a.kind {
            ArgKind::Value(v) => v as *mut c_void,
            ArgKind::Buffer { .. } => p as *const sys::CUdeviceptr as *mut c_void,
        })
        .collect()
}

/// Binds the buffer arguments for a launch of kernel `kernel` of `origin` on `stream` (each
/// buffer's cudarc ordering guard stays alive on this call stack), then runs `launch` with every
/// device pointer, then releases the guards, so cudarc records each buffer's use after the launch
/// — as its own launches do.
///
/// # Safety
/// Every buffer argument's object must be alive and borrowed (shared or exclusive, as its `Arg`
/// says) for the duration of the call.
pub(crate) unsafe fn bind_buffers(
    args: &[Arg<'_>],
    stream: &CudaStream,
    (kernel, origin): (&str, &str),
    pointers: &mut [sys::CUdeviceptr],
    launch: &mut dyn FnMut(&[sys::CUdeviceptr]) -> Result<Option<f32>>,
) -> Result<Option<f32>> {
    // Under capture with event tracking, buffers are bound on the side stream; a failure there
    // names the kernel being launched.
    let binding = super::capture::binding(stream).map_err(|e| crate::error::of_kernel(e, kernel, origin))?;
    // SAFETY: forwarded from the caller.
    unsafe { bind_from(args, 0, &binding, pointers, launch) }
}

/// # Safety
/// As for [`bind_buffers`].
unsafe fn bind_from(
    args: &[Arg<'_>],
    i: usize,
    stream: &CudaStream,
    pointers: &mut [sys::CUdeviceptr],
    launch: &mut dyn FnMut(&[sys::CUdeviceptr]) -> Result<Option<f32>>,
) -> Result<Option<f32>> {
    let Some(arg) = args.get(i) else { return launch(pointers) };
    match arg.kind {
        // SAFETY: forwarded from the caller.
        ArgKind::Value(_) => unsafe { bind_from(args, i + 1, stream, pointers, launch) },
        ArgKind::Buffer { object, bind, .. } => {
            let offset = arg.byte_offset;
            let mut then = |p: sys::CUdeviceptr| {
                pointers[i] = p + offset;
                // SAFETY: forwarded from the caller.
                unsafe { bind_from(args, i + 1, stream, pointers, launch) }
            };
            // SAFETY: `bind` was made for `object`'s type by the `Arg` constructor; the object is
            // alive and borrowed (caller's contract).
            unsafe { bind(object, stream, &mut then) }
        }
    }
}

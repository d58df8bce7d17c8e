//! Thin checked wrappers over the driver calls every capability makes: making a context current
//! (and remembering which one this thread made current), reading function and device attributes,
//! and waits that cudarc's deferred errors do not cut short ([`sync`]). The bottom of the
//! runtime: it imports nothing but the error type, so loading, launching, graphs and programs
//! can all use it.

pub(crate) mod shared; // one handle per device: what `crate::context` hands out
pub(crate) mod sync; // waits that cudarc's deferred errors do not cut short

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext};

/// `cuFuncGetAttribute`, as a non-negative number.
pub(crate) fn func_attr(f: sys::CUfunction, a: sys::CUfunction_attribute) -> std::result::Result<u32, sys::CUresult> {
    let mut v = 0i32;
    // SAFETY: `f` is a live function handle; `v` is a valid out-pointer.
    let r = unsafe { sys::cuFuncGetAttribute(&mut v, a, f) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(v.max(0) as u32)
    } else {
        Err(r)
    }
}

/// A device attribute, as a non-negative number; a failure is an [`Error::Driver`] naming the device.
pub(crate) fn device_attr(ctx: &CudaContext, a: sys::CUdevice_attribute) -> Result<u32> {
    ctx.attribute(a).map(|v| v.max(0) as u32).map_err(|e| Error::Driver {
        call: "cuDeviceGetAttribute",
        device: ctx.ordinal(),
        cause: DriverCode(e.0),
    })
}

thread_local! {
    /// The context this thread last made current through [`bind`] (0: none yet).
    pub(crate) static BOUND: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Makes `ctx` current on this thread; a failure is an [`Error::Driver`] naming the device.
#[inline(always)]
pub(crate) fn bind(ctx: &CudaContext) -> Result<()> {
    match ctx.bind_to_thread() {
        Ok(()) => {
            BOUND.with(|b| b.set(ctx.cu_ctx() as usize));
            Ok(())
        }
        Err(e) => {
            BOUND.with(|b| b.set(0));
            Err(bind_error(ctx, e))
        }
    }
}

#[cold]
#[inline(never)]
fn bind_error(ctx: &CudaContext, e: cudarc::driver::DriverError) -> Error {
    Error::Driver { call: "cuCtxSetCurrent", device: ctx.ordinal(), cause: DriverCode(e.0) }
}

/// Whether this thread last made `ctx` current through [`bind`]: then a plain or cluster launch skips
/// cudarc's `bind_to_thread` (a `cuCtxGetCurrent` per launch, the largest part of what a launch
/// costs over a raw `cuLaunchKernel`). Code that makes another context current behind our back
/// (cudarc itself for another device, other libraries) makes the launch fail with a context or
/// handle error, on which the launch binds and tries once more; deferred errors cudarc recorded
/// surface at its next call instead of this launch.
#[inline(always)]
pub(crate) fn bound_here(ctx: &CudaContext) -> bool {
    crate::driver::BOUND.with(|b| b.get() == ctx.cu_ctx() as usize)
}

/// Launch results that can mean the current context is not the kernel's.
#[cold]
pub(crate) fn wrong_context(r: sys::CUresult) -> bool {
    use sys::CUresult::*;
    matches!(r, CUDA_ERROR_INVALID_CONTEXT | CUDA_ERROR_INVALID_HANDLE | CUDA_ERROR_CONTEXT_IS_DESTROYED)
}

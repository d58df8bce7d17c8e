//! Waiting for queued work without being cut short by cudarc's deferred errors.
//!
//! cudarc records the errors of some calls that cannot return one (an event record or a free in
//! a drop) in its context, and hands them to the next call that checks: `CudaContext::synchronize`
//! and `CudaStream::synchronize` check first and return such an error *before* waiting. Code that
//! frees or hands back memory after a wait (a drop destroying a texture or an array, a copy into
//! the caller's host memory) must not be cut short that way, or the GPU still uses what is freed.
//! These waits call the driver directly: they leave cudarc's recorded error where it is (the next
//! cudarc call still reports it) and return only the wait's own result.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext, CudaStream};

/// How often a wait is repeated while it fails with a new error: an error of one piece of work
/// may end the driver's wait before later work has run; the same error twice is sticky (the
/// context is lost and nothing more will run).
const TRIES: usize = 4;

/// Runs `wait` until it succeeds or fails twice with the same result.
fn settle(mut wait: impl FnMut() -> sys::CUresult) -> std::result::Result<(), sys::CUresult> {
    let mut last = None;
    for _ in 0..TRIES {
        let r = wait();
        if r == sys::CUresult::CUDA_SUCCESS {
            return Ok(());
        }
        if last == Some(r) {
            break;
        }
        last = Some(r);
    }
    Err(last.unwrap_or(sys::CUresult::CUDA_ERROR_UNKNOWN))
}

/// Waits until all work queued in `ctx` has finished (`cuCtxSynchronize` with `ctx` pushed
/// current, and popped after, so the thread's current context is unchanged), then runs `then`
/// with `ctx` still current: a drop destroys its handle there. `Err` is the driver's code when
/// the work cannot finish (a sticky error: nothing of the context runs any more); `then` is not
/// run then, and what it would have destroyed is leaked rather than destroyed under work that
/// may still hold it.
pub(crate) fn context_then(ctx: &CudaContext, then: impl FnOnce()) -> std::result::Result<(), sys::CUresult> {
    // SAFETY: `ctx` holds its context alive for the call; it is pushed and popped once.
    let pushed = unsafe { sys::cuCtxPushCurrent_v2(ctx.cu_ctx()) };
    if pushed != sys::CUresult::CUDA_SUCCESS {
        return Err(pushed);
    }
    // SAFETY: the context is current on this thread.
    let r = settle(|| unsafe { sys::cuCtxSynchronize() });
    if r.is_ok() {
        then();
    }
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops what was pushed above; a valid out-pointer.
    unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
    r
}

/// Waits until all work queued on `stream` has finished (`cuStreamSynchronize`), as
/// [`context_then`] waits for a context. A failure is an [`Error::Driver`] naming the call.
///
/// The stream's context is made current first (and stays current): the null, legacy and
/// per-thread stream handles name a stream of whatever context is current, so with another
/// context current (or none) the wait would be for another context's stream, or fail. It binds
/// every time rather than trusting [`crate::driver::bound_here`]: a wait costs far more than
/// the `cuCtxGetCurrent` it takes, and a wrong answer here is silent.
pub(crate) fn stream(stream: &CudaStream) -> Result<()> {
    crate::driver::bind(stream.context())?;
    // SAFETY: the stream is live (borrowed) for the call.
    settle(|| unsafe { sys::cuStreamSynchronize(stream.cu_stream()) }).map_err(|r| Error::Driver {
        call: "cuStreamSynchronize",
        device: stream.context().ordinal(),
        cause: DriverCode(r),
    })
}

#[cfg(test)]
mod tests {
    use super::settle;
    use cudarc::driver::sys::CUresult::*;

    /// A wait that fails once and then succeeds is repeated; one that fails the same way twice
    /// (a sticky error) stops.
    #[test]
    fn waits_are_repeated_until_they_settle() {
        let mut answers = [CUDA_ERROR_LAUNCH_FAILED, CUDA_SUCCESS].into_iter();
        assert_eq!(settle(|| answers.next().unwrap_or(CUDA_SUCCESS)), Ok(()));
        let mut calls = 0;
        assert_eq!(
            settle(|| {
                calls += 1;
                CUDA_ERROR_ILLEGAL_ADDRESS
            }),
            Err(CUDA_ERROR_ILLEGAL_ADDRESS)
        );
        assert_eq!(calls, 2);
    }
}

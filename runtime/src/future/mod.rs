//! GPU work as Rust futures: launches, copies, stream synchronisation and events that can be
//! `.await`ed under any executor (tokio, smol, `futures::executor::block_on`, or [`block_on`]
//! here), with no runtime of this crate's own and no thread per future.
//!
//! Every generated launcher family has an async form that checks and binds its operands exactly
//! as the blocking one does (it *is* the blocking launch, followed by a watch of its completion):
//! `NAME::launch_async` (`cuda_kernel!`, Rust-syntax kernels, `elementwise_kernel!`,
//! `reduction_kernel!`, `fuse!`), `launch_nd_async`, `launch_axes_async`, `tuned_async`,
//! [`Kernel::launch_async`](crate::Kernel::launch_async),
//! [`GraphExec::launch_async`](crate::GraphExec::launch_async) and the run-time twins'
//! [`ElementwiseKernel::launch_async`](crate::ElementwiseKernel::launch_async),
//! [`Reduction::launch_async`](crate::Reduction::launch_async) and
//! [`ProgramKernel::launch_async`](crate::ProgramKernel::launch_async).
//!
//! ```no_run
//! # use cuda_embed_runtime::{future, CudaSlice};
//! # async fn f(stream: std::sync::Arc<cuda_embed_runtime::CudaStream>, x: CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
//! let ctx = stream.context();
//! // SAFETY (of the allocation): the buffer is written by the copy before it is read. Not
//! // write-combined (`alloc_pinned`'s default), since the host reads it.
//! let host = unsafe { ctx.alloc_pinned_with_flags::<f32>(x.len(), 0) }?;
//! let host = future::copy_to_host(&stream, &x, host).await?; // the pinned buffer, handed back
//! println!("{:?}", &host.as_slice()?[..4]);
//! future::synchronize(&stream).await?;
//! # Ok(()) }
//! ```
//!
//! # How completion reaches a task
//!
//! Queuing awaited work also records an event right behind it on its stream: one cheap stream
//! operation, nothing that holds the stream up (the event comes from a pool, with the rest of the
//! watch). A future polled after the GPU finished sees it through the event (`cuEventQuery`) and
//! costs nothing more; [`block_on`] polls that way while it spins. A future found unfinished by a
//! poll that will wait arms its watch: a watcher stream of this crate's own (one per work stream,
//! up to [`WATCHERS`]) waits for the event and then runs a driver stream callback
//! (`cuStreamAddCallback`), off the work's own stream (a callback blocks its stream until it
//! returns, which there would hold every later launch behind a host round trip). The driver
//! calls the callback on its own thread with the context's status; the callback records it and
//! wakes the task (by reference: nothing is dropped there), and hands the watch and the waker to
//! one process-wide completion thread (blocked on a channel, never spinning), which drops them
//! and whatever a dropped future left. No thread per future, no spinning. The result is the
//! work's: `Ok`, or the error the driver reports for it (a sticky error such as an illegal
//! address included), named after the kernel or call.
//!
//! # Soundness: the future observes, it never guards
//!
//! A [`GpuFuture`] is returned *after* its work is queued: a launch, copy or wait is on the
//! stream exactly as its synchronous form puts it there, whether or not the future is ever polled.
//! The future only observes when that work is done. So what the host may do to the memory the
//! work uses must not depend on the future being polled, dropped or forgotten, and it does not:
//!
//! - **Device memory** (kernel operands, copy sources and destinations) is never touched by the
//!   host directly. Every safe use of a buffer after the work — reading it back, writing it,
//!   launching on it, freeing it (cudarc frees with `cuMemFreeAsync` on the buffer's stream) — is
//!   itself stream work, ordered after this work by the stream (same stream) or by cudarc's
//!   buffer events, which the launch recorded through [`bind`](crate::bind) as every synchronous
//!   launch does (other streams). That is the same argument that makes it sound to drop a buffer
//!   right after a synchronous `launch` returns; an async launch adds nothing to it. The future
//!   keeps the operands borrowed (`GpuFuture<'a>`) only so that the types say what is in flight:
//!   reading an output while its future is pending is a compile error, not a hazard.
//! - **Host memory** is the memory the host *does* touch directly, so the futures of copies
//!   *own* it: [`copy_to_device`] and [`copy_to_host`] take cudarc's page-locked
//!   [`PinnedHostSlice`](cudarc::driver::PinnedHostSlice) by value and hand it back from the
//!   future once the copy is done (as io_uring APIs take their buffers). Until then no safe code
//!   can reach it. A future **dropped** mid-flight gives what it owns to its watch, and the
//!   completion thread releases it after the GPU has finished: the drop does not block, and the
//!   memory is not freed under the copy. A future **forgotten** (`mem::forget`) never releases
//!   it: the pinned memory leaks, which is the one thing `forget` may do, and is still
//!   unreachable. Pageable host memory (`&mut [T]`) is not accepted for exactly this reason: a
//!   forgotten borrow would end while the copy still writes. Only two signals end the work for
//!   this purpose: the stream callback (run once the stream has reached it, also after a device
//!   error) and the event reporting completion. An error the event reports is the future's result
//!   at once, but it may be another piece of work's (the driver reports earlier asynchronous
//!   errors through any call), so the host memory then stays with the watch until the callback.
//!
//! Cancelling a task (dropping its future at an `.await`) therefore never frees or exposes memory
//! the GPU still uses, and never blocks the executor's thread.
//!
//! # What is kept per context, and who keeps the context alive
//!
//! Two things outlive the futures that use them: idle watches (each with its event, reused by
//! the next awaited work instead of an allocation and a `cuEventCreate` per launch) and the
//! watcher streams. Both belong to a CUDA context, so they are kept per context, keyed by the
//! driver's context handle (`CUcontext`), not per `Arc<CudaContext>`: cudarc makes a new `Arc`
//! for the same primary context at every `CudaContext::new`, and objects kept per `Arc` were made
//! again for each one and stranded when it was dropped while the context lived on.
//! [`crate::context`] hands out one `Arc` per device besides (while any clone lives).
//!
//! - **The events of pending work are always valid.** A watch in flight holds its context's
//!   handle, so the context lives until the watch is idle again; a future (which holds its
//!   watch) therefore never outlives its context, however many of the user's handles are gone.
//! - **The pool keeps no context alive.** It holds only `Weak` handles: every `Arc` that reached
//!   a context's entry is one of its *anchors*, and so is the handle [`crate::context`] hands
//!   out for that context, if one lives. An anchor alive now has retained the context, without a
//!   break, since it joined, so what the entry holds is still the live context's, and any new
//!   handle of that context (same `CUcontext`, some anchor alive) reuses it.
//! - **No driver call on a context that may be gone.** When no anchor is alive the context may
//!   have been released (and a new one made under the same `CUcontext`): the entry's idle events
//!   and watcher streams are dropped from the table with no `cuEventDestroy` or
//!   `cuStreamDestroy`. If the context was destroyed they went with it. Only a context that lives
//!   on solely through handles that never reached the pool (made by `CudaContext::new` or another
//!   library, never used for awaited work) while every anchor is gone keeps them allocated,
//!   unused, until it goes: at most one pool and [`WATCHERS`] streams each time that happens,
//!   never a growth per handle or per call. (A `cuda_kernel!` launch holds the handle it loaded
//!   its module with for the rest of the process, so a context that ran one never gets there
//!   when that handle came from [`crate::context`].) An event is destroyed by this crate only while its watch holds its context
//!   (a watch the full pool cannot take).
//!
//! # Bad input
//!
//! Awaiting on a stream that is being captured is an error (a capture runs nothing to wait for):
//! the future's result, returned at its first poll (a launch is captured, as its blocking form's
//! is; a copy is refused before anything is queued). No event is recorded into a capture:
//! querying one would invalidate it.
//! A future holds its context alive (through its event), so it cannot outlive it; a context
//! lost to a sticky error is reported by every future that observes it, as an error, never a
//! panic. An error found before anything was queued (a device check, a launch limit) is the
//! future's result, returned at its first poll.

pub(crate) mod completion;
mod copy;
mod event;
mod executor;
mod launchers; // the async forms of Kernel, GraphExec, ProgramKernel and Reduction
mod per_context; // what is kept per CUDA context, found from any live handle of it
mod pool;
#[cfg(test)]
mod tests;
mod watcher;

pub use copy::{copy_to_device, copy_to_host, synchronize};
pub use event::event;
pub use executor::{block_on, block_on_with, SPIN};
pub use pool::retain_freed_memory;
pub use watcher::WATCHERS;

use crate::error::{DriverCode, Error, Result};
use crate::module::kernel::KernelRef;
use completion::{Polled, Watch};
use cudarc::driver::{sys, CudaStream};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// What the futures keep per context and have made so far, process-wide: for tests that check
/// that it stays bounded. Not a stable API.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Contexts with an entry in the idle-watch pool.
    pub contexts: usize,
    /// Handles (`Arc<CudaContext>`) anchoring those entries, live or not yet pruned.
    pub anchors: usize,
    /// Idle watches in the pool, each with an event.
    pub idle_watches: usize,
    /// Events made for watches (`cuEventCreate`).
    pub events_created: usize,
    /// Events destroyed by this crate (`cuEventDestroy`, while the watch holds its context): a
    /// watch the full pool could not take, or one whose last two handles were released at once.
    pub events_destroyed: usize,
    /// Idle events dropped from the pool with no driver call, because no handle proved their
    /// context alive.
    pub events_abandoned: usize,
    /// Watcher streams held (all contexts).
    pub watcher_streams: usize,
    /// Watcher streams made (`cuStreamCreate`).
    pub streams_created: usize,
    /// Watcher streams dropped from the table with no driver call (as `events_abandoned`).
    pub streams_abandoned: usize,
}

/// The counts of [`PoolStats`] now. Not a stable API.
#[doc(hidden)]
pub fn pool_stats() -> PoolStats {
    let mut stats = PoolStats::default();
    completion::pool_counts(&mut stats);
    watcher::counts(&mut stats);
    stats
}

/// GPU work queued on a stream, as a future: it resolves when the GPU has finished the work and
/// returns its result, and `T` (a buffer the work used, handed back; `()` for launches).
///
/// The work is queued when the future is made, not when it is first polled, and runs whether or
/// not the future is polled, dropped or forgotten (see the [module docs](self) for why each of
/// those is sound). `'a` is the borrow of the device buffers the work uses.
///
/// ```no_run
/// # async fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
/// let done = cuda_embed_runtime::future::synchronize(stream);
/// assert!(!done.is_terminated());
/// done.await?;
/// # Ok(()) }
/// ```
#[must_use = "the work is queued already; the future only tells when it is done"]
pub struct GpuFuture<'a, T: Send + 'static = ()> {
    inner: Inner<T>,
    what: What,
    device: usize,
    _borrows: PhantomData<&'a ()>,
}

enum Inner<T> {
    /// Queued and watched; `T` is handed back when the work is done.
    Watching(Arc<Watch>, Option<T>),
    /// Decided without watching: an error before anything was queued (boxed: the future is
    /// moved around on every launch, the error is rare).
    Ready(Box<Error>),
    /// Returned its result.
    Finished,
}

/// What the work is, for its errors.
enum What {
    /// A launch: the kernel (or generated launcher) and where it was declared.
    Kernel { name: &'static str, origin: &'static str },
    /// A launch of a kernel built at run time (a `ProgramKernel`, an `ElementwiseKernel`, a
    /// `Reduction`): its name and origin, known only then.
    Program { name: Box<str>, origin: Box<str> },
    /// A copy or a wait: the driver call.
    Call(&'static str),
}

// The future never pins `T` (it is only moved out whole), so it may move freely.
impl<T: Send + 'static> Unpin for GpuFuture<'_, T> {}

impl<'a, T: Send + 'static> GpuFuture<'a, T> {
    /// The future of the work `queued` (the result of queuing it on `stream`), handing back
    /// `value` when it is done. A failed `queued` is the future's result, and nothing is watched.
    ///
    /// `value` is what the work uses on the host side: if watching fails after the work was
    /// queued, the stream is waited for before `value` is released, and leaked when even that
    /// fails.
    fn after(stream: &CudaStream, queued: Result<()>, what: What, value: T) -> Self {
        let device = stream.context().ordinal();
        let inner = match queued {
            // Nothing was queued: nothing uses `value`.
            Err(e) => Inner::Ready(Box::new(e)),
            Ok(()) => match Watch::record(stream) {
                Ok(watch) => Inner::Watching(watch, Some(value)),
                // Queued but not watched (the driver refused the event): host
                // memory the work uses is released only after a wait for the stream, and leaked
                // when even that fails. Work that owns none (launches, waits) has nothing to keep.
                Err(e) => {
                    if std::mem::needs_drop::<T>() {
                        match crate::driver::sync::stream(stream) {
                            Ok(()) => drop(value),
                            Err(_) => std::mem::forget(value),
                        }
                    }
                    Inner::Ready(Box::new(e))
                }
            },
        };
        GpuFuture { inner, what, device, _borrows: PhantomData }
    }

    /// A future over `watch` handing back `value` (or, with no watch, resolved to `Err(error)`),
    /// made without a driver: for the tests of the state machine.
    #[cfg(test)]
    pub(crate) fn detached(watch: std::result::Result<Arc<Watch>, Error>, value: T, call: &'static str) -> Self {
        let inner = match watch {
            Ok(w) => Inner::Watching(w, Some(value)),
            Err(e) => Inner::Ready(Box::new(e)),
        };
        GpuFuture { inner, what: What::Call(call), device: 0, _borrows: PhantomData }
    }

    /// The future of a copy or wait `call` queued on `stream` (`queued` its result).
    pub(crate) fn after_call(stream: &CudaStream, queued: Result<()>, call: &'static str, value: T) -> Self {
        Self::after(stream, queued, What::Call(call), value)
    }

    /// Whether the future has returned its result (polling it again would panic).
    pub fn is_terminated(&self) -> bool {
        matches!(self.inner, Inner::Finished)
    }

    /// Whether the work is done, without waiting and without a task: `Ok(true)` once the GPU
    /// has finished it (with whatever result; `.await` returns it), `Ok(false)` while it runs.
    ///
    /// ```no_run
    /// # fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
    /// let done = cuda_embed_runtime::future::synchronize(stream);
    /// while !done.is_done() { /* other work */ }
    /// # Ok(()) }
    /// ```
    pub fn is_done(&self) -> bool {
        match &self.inner {
            Inner::Watching(watch, _) => watch.finished(),
            Inner::Ready(_) | Inner::Finished => true,
        }
    }

    /// The error of work that finished with driver status `r`.
    #[cold]
    fn failed(&self, r: sys::CUresult) -> Error {
        let (name, origin) = match &self.what {
            What::Kernel { name, origin } => (*name, *origin),
            What::Program { name, origin } => (&**name, &**origin),
            What::Call(call) => return Error::Driver { call, device: self.device, cause: DriverCode(r) },
        };
        Error::Launch {
            kernel: name.to_string(),
            origin: origin.to_string(),
            device: self.device,
            cause: format!(
                "the work queued up to and including this launch failed on the GPU: {} (reported by the first \
                 future to observe it: the driver does not say which kernel raised it)",
                DriverCode(r)
            ),
            fix: Some(
                "an illegal address or a trap is sticky: the context can run nothing more; find the kernel with \
                 `SANITIZE=memcheck` (compute-sanitizer) or by awaiting each launch"
                    .into(),
            ),
        }
    }
}

impl<'a> GpuFuture<'a, ()> {
    /// The future of the launch of kernel `name` built at run time (`origin`: the program) on
    /// `stream`.
    pub(crate) fn after_program(stream: &CudaStream, queued: Result<()>, name: &str, origin: &str) -> Self {
        Self::after(stream, queued, What::Program { name: name.into(), origin: origin.into() }, ())
    }

    /// The future of `watched` work on device `device` (an event wait on a watcher stream),
    /// which owns nothing.
    pub(crate) fn watching(device: usize, watched: Result<Arc<Watch>>, call: &'static str) -> Self {
        let inner = match watched {
            Ok(watch) => Inner::Watching(watch, Some(())),
            Err(e) => Inner::Ready(Box::new(e)),
        };
        GpuFuture { inner, what: What::Call(call), device, _borrows: PhantomData }
    }

    /// The future of a launch of `kernel` on `stream` (`queued` the launch's result).
    #[doc(hidden)]
    pub fn after_launch(stream: &CudaStream, queued: Result<()>, kernel: KernelRef) -> Self {
        Self::after_named(stream, queued, kernel.name(), kernel.module().origin())
    }

    /// The future of the launches of a generated launcher `name` declared at `origin` (a
    /// reduction's, which may run one of several kernels) on `stream`.
    #[doc(hidden)]
    pub fn after_named(stream: &CudaStream, queued: Result<()>, name: &'static str, origin: &'static str) -> Self {
        Self::after(stream, queued, What::Kernel { name, origin }, ())
    }
}

impl<T: Send + 'static> Future for GpuFuture<'_, T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let this = self.get_mut();
        let polled = match &this.inner {
            Inner::Watching(watch, _) => watch.poll(cx.waker()),
            Inner::Ready(_) => Polled::Done(sys::CUresult::CUDA_SUCCESS),
            Inner::Finished => panic!("a GpuFuture was polled after it returned its result"),
        };
        if let Polled::Waiting = polled {
            return Poll::Pending;
        }
        let (watch, value) = match std::mem::replace(&mut this.inner, Inner::Finished) {
            Inner::Ready(e) => return Poll::Ready(Err(*e)),
            Inner::Watching(watch, value) => (watch, value),
            Inner::Finished => unreachable!("matched above"),
        };
        let result = match (value, polled) {
            (Some(value), Polled::Done(sys::CUresult::CUDA_SUCCESS)) => Ok(value),
            // The work is over (failed): what it used can go.
            (_, Polled::Done(r)) => Err(this.failed(r)),
            // An error observed while the work may still run: reported now, and what the work
            // uses is left to the watch, released when the stream callback runs.
            (value, Polled::Failed(r)) => {
                if let Some(value) = value.filter(|_| std::mem::needs_drop::<T>()) {
                    watch.keep_until_done(Box::new(value));
                }
                Err(this.failed(r))
            }
            _ => Err(this.failed(sys::CUresult::CUDA_ERROR_UNKNOWN)),
        };
        Watch::release(watch);
        Poll::Ready(result)
    }
}

impl<T: Send + 'static> Drop for GpuFuture<'_, T> {
    fn drop(&mut self) {
        // A future dropped mid-flight leaves what it owns to its watch, released once the GPU is
        // done with it (see the module docs); nothing waits here.
        // What needs no drop (a launch's `()`) needs no keeping, nor a callback to release it.
        if let Inner::Watching(watch, value) = std::mem::replace(&mut self.inner, Inner::Finished) {
            if let Some(value) = value.filter(|_| std::mem::needs_drop::<T>()) {
                watch.keep_until_done(Box::new(value));
            }
            Watch::release(watch);
        }
    }
}

impl<T: Send + 'static> std::fmt::Debug for GpuFuture<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match &self.what {
            What::Kernel { name, .. } => name,
            What::Program { name, .. } => &**name,
            What::Call(c) => c,
        };
        let state = match &self.inner {
            Inner::Watching(..) => "watching",
            Inner::Ready(_) => "ready",
            Inner::Finished => "finished",
        };
        f.debug_struct("GpuFuture").field("work", &what).field("device", &self.device).field("state", &state).finish()
    }
}

//! The shared completion mechanism: an event behind each piece of watched work, a driver
//! callback only for work a task is actually waiting for, one process-wide thread that turns the
//! callbacks into wake-ups.
//!
//! Queuing watched work records an event right behind it on its stream ([`Watch::record`]): one
//! cheap stream operation, nothing that holds the stream up. A future polled after the GPU finished
//! sees it through the event (`cuEventQuery`, non-blocking) and needs nothing more. Only a future
//! found unfinished *arms* its watch ([`Watch::poll`]): a watcher stream of this crate's own waits
//! for the event (`cuStreamWaitEvent`) and then runs a stream callback (`cuStreamAddCallback`). The
//! callback is not queued on the work's own stream because a callback blocks its stream until it
//! returns: there it would hold every later launch behind a host round trip.
//!
//! The driver runs each stream callback exactly once, on a thread of its own, once everything
//! before it has run, and passes it `CUDA_SUCCESS` or the error of the context (a sticky error
//! included: unlike `cuLaunchHostFunc`'s function, which is not called at all once the context
//! has failed, a stream callback is still called, with the error). That thread must make no CUDA
//! call, and user code run there could (a waker that drops the last handle of a task drops the
//! task's buffers, and a buffer's drop frees memory), so the callback only sends its [`Watch`] to
//! the completion thread: one thread for the whole process, blocked on a channel, never spinning.
//! That thread records the status, wakes the task and releases what a dropped future left behind.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext, CudaStream};
use std::any::Any;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::Waker;

/// What the watcher of one piece of work knows so far.
#[derive(Default)]
pub(crate) struct State {
    /// The work's result once it is known to be finished: `CUDA_SUCCESS` or the error the driver
    /// reported for it.
    pub(crate) done: Option<sys::CUresult>,
    /// The task to wake when it finishes.
    waker: Option<Waker>,
    /// What a future dropped before the work finished still owned (pinned host memory a copy
    /// reads or writes): released by whoever sees the work finish, never before. Only ever set
    /// on an armed watch, whose callback will come.
    keep: Option<Box<dyn Any + Send>>,
    /// Whether the callback that completes the watch is queued (on a watcher stream).
    armed: bool,
}

/// One piece of watched work: its state, the event recorded after it, and the context the event
/// belongs to (held alive, so the event can always be asked and destroyed).
pub(crate) struct Watch {
    state: Mutex<State>,
    event: Option<(sys::CUevent, Arc<CudaContext>)>,
    /// What the event answers, set by tests.
    #[cfg(test)]
    answer: Mutex<Option<sys::CUresult>>,
}

// SAFETY: the raw event handle is only used through driver calls, which are thread-safe, and is
// destroyed once, in `Drop`; everything else is `Send + Sync` on its own.
unsafe impl Send for Watch {}
// SAFETY: as above.
unsafe impl Sync for Watch {}

impl Drop for Watch {
    fn drop(&mut self) {
        // Never reached with host memory kept for unfinished work (an armed watch's last handle
        // is its callback's, dropped after `complete` released it); should it be, leaking is the
        // safe answer.
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if state.done.is_none() {
            if let Some(keep) = state.keep.take() {
                std::mem::forget(keep);
            }
        }
        if let Some((event, ctx)) = self.event.take() {
            // The event goes back to the pool for the next watch (a later record replaces
            // whatever it recorded). The last handle goes on a thread of the user's or on the
            // completion thread, never on the driver's callback thread (the callback hands its
            // handle on), so the driver call below is allowed.
            if !pool::give(&ctx, event) && crate::driver::bind(&ctx).is_ok() {
                // SAFETY: created for this watch (or taken from the pool), destroyed once, here;
                // a failure to bind leaves it to the context.
                unsafe { sys::cuEventDestroy_v2(event) };
            }
        }
    }
}

/// Idle events, per context, for later watches: an event per future made and destroyed each
/// time would cost two more driver calls per launch. Each context's entry holds a `Weak`
/// reference to its `CudaContext`: the allocation stays, so its address (the key) cannot be
/// reused by another context, and an entry whose context is gone (its events with it) is never
/// handed out.
mod pool {
    use cudarc::driver::{sys, CudaContext};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, Weak};

    /// Idle events kept per context; more are destroyed.
    const CAP: usize = 16_384;

    struct Idle {
        ctx: Weak<CudaContext>,
        events: Vec<usize>,
    }

    static POOL: Mutex<Option<HashMap<usize, Idle>>> = Mutex::new(None);

    fn key(ctx: &Arc<CudaContext>) -> usize {
        Arc::as_ptr(ctx) as usize
    }

    /// An idle event of `ctx`, if the pool has one.
    pub(super) fn take(ctx: &Arc<CudaContext>) -> Option<sys::CUevent> {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let idle = pool.as_mut()?.get_mut(&key(ctx))?;
        idle.events.pop().map(|e| e as sys::CUevent)
    }

    /// Keeps `event` of `ctx` for a later watch; `false` when the pool is full (destroy it).
    pub(super) fn give(ctx: &Arc<CudaContext>, event: sys::CUevent) -> bool {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let map = pool.get_or_insert_with(HashMap::new);
        // Entries of contexts that are gone hold dead handles only: forget them.
        if map.len() > 16 {
            map.retain(|_, idle| idle.ctx.strong_count() > 0);
        }
        let idle = map.entry(key(ctx)).or_insert_with(|| Idle { ctx: Arc::downgrade(ctx), events: Vec::new() });
        if idle.events.len() >= CAP {
            return false;
        }
        idle.events.push(event as usize);
        true
    }
}

/// The answer of [`Watch::poll`].
pub(crate) enum Polled {
    /// The work is over, with this result: the stream callback ran (it runs once the stream has
    /// reached it, with the stream's status), or the event reports the work complete.
    Done(sys::CUresult),
    /// The event reported this error. It may be another piece of work's (the driver reports
    /// asynchronous errors of earlier work through any call) and does not say that this work is
    /// over: what the work uses must stay alive until the callback runs.
    Failed(sys::CUresult),
    /// Not yet; the waker is parked and will be woken.
    Waiting,
}

/// What the event says.
enum Query {
    Complete,
    Running,
    Error(sys::CUresult),
}

impl Watch {
    /// A watch with no event and no driver, completed by [`Watch::complete`] alone (its event
    /// answers "running" until the test sets [`Watch::answer`]): for the tests of the state
    /// machine, which run without a GPU.
    #[cfg(test)]
    pub(crate) fn detached() -> Arc<Watch> {
        Arc::new(Watch { state: Mutex::new(State::default()), event: None, answer: Mutex::new(None) })
    }

    /// What a detached watch's event answers from now on (`CUDA_ERROR_NOT_READY`: running).
    #[cfg(test)]
    pub(crate) fn answer(&self, r: sys::CUresult) {
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held (a waker's `will_wake`) leaves a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches everything queued on `stream` so far: records an event behind it. Fails, having
    /// queued nothing, when the stream is being captured (a capture queues nothing to watch) or
    /// the driver refuses.
    pub(crate) fn record(stream: &CudaStream) -> Result<Arc<Watch>> {
        crate::driver::bind(stream.context())?;
        if crate::launch::capture::is_capturing(stream) {
            return Err(capturing(stream.context().ordinal()));
        }
        Watch::record_raw(stream.context(), stream.cu_stream())
    }

    /// [`Watch::record`] on a stream of `ctx` that is never captured, known by its handle (a
    /// watcher stream, for event waits), with `ctx` current.
    pub(crate) fn record_raw(ctx: &Arc<CudaContext>, stream: sys::CUstream) -> Result<Arc<Watch>> {
        let device = ctx.ordinal();
        let event = match pool::take(ctx) {
            Some(event) => event,
            None => {
                let mut event: sys::CUevent = std::ptr::null_mut();
                // SAFETY: a valid out-pointer; the stream's context is current.
                let r = unsafe { sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32) };
                if r != sys::CUresult::CUDA_SUCCESS {
                    return Err(Error::Driver { call: "cuEventCreate", device, cause: DriverCode(r) });
                }
                event
            }
        };
        // From here the event is the watch's, pooled or destroyed by its drop whatever happens.
        let watch = Arc::new(Watch {
            state: Mutex::new(State::default()),
            event: Some((event, ctx.clone())),
            #[cfg(test)]
            answer: Mutex::new(None),
        });
        // SAFETY: the event and the stream are live and of the same context.
        let r = unsafe { sys::cuEventRecord(event, stream) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Driver { call: "cuEventRecord", device, cause: DriverCode(r) });
        }
        Ok(watch)
    }

    /// Queues the callback that completes the watch, on a watcher stream that first waits for the
    /// event; once. Under `state`'s lock, so the callback's `complete` waits for the caller to
    /// have parked its waker or kept its memory. A watch without an event (the tests') counts as
    /// armed: the test completes it.
    fn arm(self: &Arc<Self>, state: &mut State) -> std::result::Result<(), sys::CUresult> {
        if state.armed {
            return Ok(());
        }
        let Some((event, ctx)) = self.event.as_ref() else {
            state.armed = true;
            return Ok(());
        };
        completion_thread().map_err(|_| sys::CUresult::CUDA_ERROR_OPERATING_SYSTEM)?;
        let watcher =
            super::watcher::stream(ctx).map_err(|e| e.driver_code().unwrap_or(sys::CUresult::CUDA_ERROR_UNKNOWN))?;
        // SAFETY: the watcher stream and the event are live and of one context, made current by
        // `watcher::stream`; the wait captures the event's record of this watch's work.
        let r = unsafe { sys::cuStreamWaitEvent(watcher, *event, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(r);
        }
        let raw = Arc::into_raw(self.clone());
        // SAFETY: `raw` is an `Arc` handle given to the callback, which takes it back exactly once
        // (see `on_complete`): the driver runs each added callback exactly once, after a device
        // error too (`cuStreamAddCallback`'s contract); the watcher stream is live.
        let r = unsafe { sys::cuStreamAddCallback(watcher, Some(on_complete), raw as *mut c_void, 0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            // SAFETY: the driver refused the callback, so it will never take the handle back.
            drop(unsafe { Arc::from_raw(raw) });
            return Err(r);
        }
        state.armed = true;
        Ok(())
    }

    /// Whether the work is over, asking the event when the callback has not said so yet; arms
    /// the watch and parks `waker` to be woken when it is otherwise. No lost wake-up: the
    /// completion takes the waker under the same lock that parks it.
    pub(crate) fn poll(self: &Arc<Self>, waker: &Waker) -> Polled {
        let mut state = self.lock();
        if let Some(r) = state.done {
            return Polled::Done(r);
        }
        match self.query() {
            Query::Complete => {
                state.done = Some(sys::CUresult::CUDA_SUCCESS);
                Polled::Done(sys::CUresult::CUDA_SUCCESS)
            }
            Query::Error(r) => Polled::Failed(r),
            Query::Running => {
                if let Err(r) = self.arm(&mut state) {
                    // Nothing would wake the task: the failure is the result.
                    return Polled::Failed(r);
                }
                match &state.waker {
                    Some(w) if w.will_wake(waker) => {}
                    _ => state.waker = Some(waker.clone()),
                }
                Polled::Waiting
            }
        }
    }

    /// The event's answer (a watch without one: running, or what a test set).
    fn query(&self) -> Query {
        #[cfg(test)]
        if let Some(r) = *self.answer.lock().unwrap_or_else(|e| e.into_inner()) {
            return Query::from(r);
        }
        let Some((event, ctx)) = self.event.as_ref() else { return Query::Running };
        // Through the crate's own bind, so its record of the thread's context stays true.
        if let Err(e) = crate::driver::bind(ctx) {
            return Query::Error(e.driver_code().unwrap_or(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
        }
        // SAFETY: the event is live until the watch drops.
        Query::from(unsafe { sys::cuEventQuery(*event) })
    }

    /// Records that the work is over with `status` (the stream callback's), wakes the parked
    /// task and releases what a dropped future left. Runs on the completion thread (or a
    /// test's); a panicking waker or drop is contained, so the thread keeps serving every other
    /// future.
    pub(crate) fn complete(&self, status: sys::CUresult) {
        let (waker, keep) = {
            let mut state = self.lock();
            state.done.get_or_insert(status);
            (state.waker.take(), state.keep.take())
        };
        if let Some(w) = waker {
            let _ = catch_unwind(AssertUnwindSafe(|| w.wake()));
        }
        if keep.is_some() {
            let _ = catch_unwind(AssertUnwindSafe(|| drop(keep)));
        }
    }

    /// Leaves `value` to be released when the work is over: at once if it is (the callback ran,
    /// or the event reports it complete), else by the completion thread when the callback runs
    /// (never on an error the event reports, which may be another work's), arming the watch for
    /// that; leaked if it cannot be armed. What a future drops mid-flight, or could not hand
    /// back, goes here.
    pub(crate) fn keep_until_done(self: &Arc<Self>, value: Box<dyn Any + Send>) {
        let mut state = self.lock();
        state.waker = None;
        if state.done.is_none() {
            if let Query::Complete = self.query() {
                state.done = Some(sys::CUresult::CUDA_SUCCESS);
            } else if self.arm(&mut state).is_ok() {
                state.keep = Some(value);
                return;
            } else {
                // Nothing will say when the work is over: the memory is leaked, never freed
                // under it.
                std::mem::forget(value);
                return;
            }
        }
        drop(state);
        drop(value);
    }

    /// Whether the future would be ready: the work is over, or the event reports an error.
    pub(crate) fn finished(&self) -> bool {
        let mut state = self.lock();
        if state.done.is_some() {
            return true;
        }
        match self.query() {
            Query::Complete => {
                state.done = Some(sys::CUresult::CUDA_SUCCESS);
                true
            }
            Query::Error(_) => true,
            Query::Running => false,
        }
    }
}

impl From<sys::CUresult> for Query {
    fn from(r: sys::CUresult) -> Query {
        match r {
            sys::CUresult::CUDA_SUCCESS => Query::Complete,
            sys::CUresult::CUDA_ERROR_NOT_READY => Query::Running,
            r => Query::Error(r),
        }
    }
}

/// The driver's callback: hands the watch to the completion thread. No driver call, no user
/// code, no unwinding.
unsafe extern "C" fn on_complete(_stream: sys::CUstream, status: sys::CUresult, data: *mut c_void) {
    // SAFETY: `data` is the handle `Watch::arm` made with `Arc::into_raw`, taken back once.
    let watch = unsafe { Arc::from_raw(data as *const Watch) };
    match COMPLETIONS.get() {
        Some(tx) => {
            if let Err(unsent) = tx.send((watch, status)) {
                // The completion thread is gone (the process is ending): dropping the handle here
                // could destroy the event on the driver's thread, so it is leaked instead.
                std::mem::forget(unsent.0);
            }
        }
        None => std::mem::forget(watch),
    }
}

type Message = (Arc<Watch>, sys::CUresult);

/// The sender of the completion thread; set once, when the first watch is armed.
static COMPLETIONS: OnceLock<Sender<Message>> = OnceLock::new();
static START: Mutex<()> = Mutex::new(());

/// The completion thread's channel, starting the thread the first time.
fn completion_thread() -> Result<&'static Sender<Message>> {
    if let Some(tx) = COMPLETIONS.get() {
        return Ok(tx);
    }
    let _once = START.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(tx) = COMPLETIONS.get() {
        return Ok(tx);
    }
    let (tx, rx) = channel::<Message>();
    std::thread::Builder::new()
        .name("cuda-embed-completion".into())
        .spawn(move || {
            // Blocks in `recv` between completions: no spinning, no timer.
            for (watch, status) in rx {
                watch.complete(status);
                // The last handle may go here, destroying the event: a driver call on this
                // thread, which is allowed (it is not the driver's callback thread).
                let _ = catch_unwind(AssertUnwindSafe(|| drop(watch)));
            }
        })
        .map_err(|e| Error::Driver {
            call: "std::thread::spawn (the completion thread of awaited work)",
            device: 0,
            cause: DriverCode(if e.kind() == std::io::ErrorKind::OutOfMemory {
                sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY
            } else {
                sys::CUresult::CUDA_ERROR_OPERATING_SYSTEM
            }),
        })?;
    Ok(COMPLETIONS.get_or_init(|| tx))
}

#[cold]
fn capturing(device: usize) -> Error {
    Error::Driver {
        call: "cuStreamAddCallback (awaiting work on a stream that is being captured)",
        device,
        cause: DriverCode(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
    }
}

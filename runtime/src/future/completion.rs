//! The shared completion mechanism: an event behind each piece of watched work, a driver
//! callback only for work a task is actually waiting for, one process-wide thread that drops
//! what the callbacks may not.
//!
//! Queuing watched work records an event right behind it on its stream ([`Watch::record`]): one
//! cheap stream operation, nothing that holds the stream up. The watch comes from a pool (with its
//! event and allocation), so that costs no allocation and no event creation. A future polled
//! after the GPU finished sees it through the event (`cuEventQuery`, non-blocking) and needs
//! nothing more; `block_on` polls that way while it spins. Only a future found unfinished by a
//! poll that will wait *arms* its watch ([`Watch::poll`]): a watcher stream of this crate's own
//! waits for the event (`cuStreamWaitEvent`) and then runs a stream callback
//! (`cuStreamAddCallback`). The callback is not queued on the work's own stream because a
//! callback blocks its stream until it returns: there it would hold every later launch behind a
//! host round trip.
//!
//! The driver runs each stream callback exactly once, on a thread of its own, once everything
//! before it has run, and passes it `CUDA_SUCCESS` or the error of the context (a sticky error
//! included: unlike `cuLaunchHostFunc`'s function, which is not called at all once the context
//! has failed, a stream callback is still called, with the error). That thread must make no CUDA
//! call. The callback records the status and wakes the task by reference (`wake_by_ref`, which
//! drops nothing), so the wake-up takes no second thread hop; then it sends the [`Watch`] and the
//! waker to the completion thread (one for the whole process, blocked on a channel, never
//! spinning), which drops them and releases what a dropped future left behind: dropping a task's
//! last waker may drop the task and its buffers, and a buffer's drop frees memory.

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
///
/// Watches are reused: the last handle of a finished watch gives it, event and allocation, to
/// the pool of its context ([`Watch::release`]), and the next awaited launch takes it from there
/// (an allocation, an event and a context handle per launch would cost more than the launch's own
/// host code). An idle watch holds no context handle, so the pool keeps no context alive.
pub(crate) struct Watch {
    state: Mutex<State>,
    /// The event (null: a test's watch, which has none).
    event: sys::CUevent,
    /// The event's context: `None` only while the watch idles in the pool (or has no event).
    ctx: Option<Arc<CudaContext>>,
    /// The stream the event is recorded on (its handle, as a number): which watcher stream the
    /// watch arms on (see `watcher.rs`).
    lane: usize,
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
        forget_unfinished(self.state.get_mut().unwrap_or_else(|e| e.into_inner()));
        // A watch that could not be pooled (its handles dropped at once on two threads, or the
        // pool full). The last handle goes on a thread of the user's or on the completion
        // thread, never on the driver's callback thread (the callback hands its handle on), so
        // the driver call below is allowed. An idle watch's context may be gone, and its event
        // with it: only a live watch destroys its event.
        if let Some(ctx) = self.ctx.take() {
            if !self.event.is_null() && crate::driver::bind(&ctx).is_ok() {
                // SAFETY: created for this watch, destroyed once, here, while the watch holds its
                // context; a failure to bind leaves it to the context.
                unsafe { sys::cuEventDestroy_v2(self.event) };
                DESTROYED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// What a watch kept for work not known to be over is leaked, never freed under it.
fn forget_unfinished(state: &mut State) {
    if state.done.is_none() {
        if let Some(keep) = state.keep.take() {
            std::mem::forget(keep);
        }
    }
}

/// Idle watches, per context, for later work: kept in the futures' [`PerContext`] table (keyed
/// by the context, proved alive by the handles that reached it; see `per_context.rs`), which
/// holds no context alive. The watches of a context that no handle proves alive any more are
/// dropped without destroying their events (idle watches hold no context, so their drop makes
/// no driver call): the events went with their context, or, if it lives on through a handle the
/// table never saw, stay allocated until it goes.
mod pool {
    use super::super::per_context::{about, PerContext};
    use super::Watch;
    use cudarc::driver::CudaContext;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// Idle watches kept per context; more are dropped (their events destroyed).
    const CAP: usize = 16_384;

    /// One context's idle watches.
    #[derive(Default)]
    pub(super) struct Idle(pub(super) Vec<Arc<Watch>>);

    /// Events dropped with an entry that no handle proved alive (see [`Idle`]'s `Drop`).
    pub(super) static ABANDONED: AtomicUsize = AtomicUsize::new(0);

    impl Drop for Idle {
        fn drop(&mut self) {
            // Only ever dropped by the table, when no handle proves the context alive.
            let events = self.0.iter().filter(|w| !w.event.is_null()).count();
            ABANDONED.fetch_add(events, Ordering::Relaxed);
        }
    }

    pub(super) static POOL: Mutex<PerContext<CudaContext, Idle>> = Mutex::new(PerContext::new());

    /// An idle watch of `ctx`'s context (the only handle to it), if the pool has one.
    #[inline]
    pub(super) fn take(ctx: &Arc<CudaContext>) -> Option<Arc<Watch>> {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.with(ctx, || about(ctx), |idle| idle.0.pop())
    }

    /// Keeps idle `watch` (the only handle to it) of `ctx`'s context for later work; handed back
    /// when the pool is full.
    pub(super) fn give(ctx: &Arc<CudaContext>, watch: Arc<Watch>) -> Result<(), Arc<Watch>> {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.with(
            ctx,
            || about(ctx),
            |idle| {
                if idle.0.len() >= CAP {
                    return Err(watch);
                }
                idle.0.push(watch);
                Ok(())
            },
        )
    }
}

/// Fills in what the watches hold (see [`super::PoolStats`]).
pub(crate) fn pool_counts(stats: &mut super::PoolStats) {
    use std::sync::atomic::Ordering::Relaxed;
    let pool = pool::POOL.lock().unwrap_or_else(|e| e.into_inner());
    stats.contexts = pool.values().count();
    stats.anchors = pool.anchors();
    stats.idle_watches = pool.values().map(|i| i.0.len()).sum();
    drop(pool);
    stats.events_created = CREATED.load(Relaxed);
    stats.events_destroyed = DESTROYED.load(Relaxed);
    stats.events_abandoned = pool::ABANDONED.load(Relaxed);
}

/// Events made for watches, and destroyed (see [`pool_counts`]).
static CREATED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static DESTROYED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The answer of [`Watch::poll`].
pub(crate) enum Polled {
    /// The work is over, with this result: the stream callback ran (it runs once the stream has
    /// reached it, with the stream's status), or the event reports the work complete.
    Done(sys::CUresult),
    /// The event reported this error. It may be another piece of work's (the driver reports
    /// asynchronous errors of earlier work through any call) and does not say that this work is
    /// over: what the work uses must stay alive until the callback runs.
    Failed(sys::CUresult),
    /// Not yet; the waker is parked and will be woken (or, polled from `block_on`'s spin,
    /// nothing is parked: it polls again).
    Waiting,
}

const CONTEXT_LOST: sys::CUresult = sys::CUresult::CUDA_ERROR_INVALID_CONTEXT;

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
        Arc::new(Watch {
            state: Mutex::new(State::default()),
            event: std::ptr::null_mut(),
            ctx: None,
            lane: 0,
            answer: Mutex::new(None),
        })
    }

    /// What a detached watch's event answers from now on (`CUDA_ERROR_NOT_READY`: running).
    #[cfg(test)]
    pub(crate) fn answer(&self, r: sys::CUresult) {
        *self.answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    }

    /// Whether the completing callback is queued (for the tests).
    #[cfg(test)]
    pub(crate) fn armed(&self) -> bool {
        self.lock().armed
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held (a waker's `will_wake`) leaves a consistent state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Watches everything queued on `stream` so far: records an event behind it. Fails, having
    /// queued nothing, when the stream is being captured (a capture queues nothing to watch; and
    /// querying an event recorded into a capture invalidates the capture, as the H200 run of
    /// 2026-11-28 showed) or the driver refuses.
    ///
    /// Right after a launch on `stream`, which made its context current through the crate's
    /// bind: the record trusts that (as the launch does) and binds only when the driver answers
    /// with a context error (another context made current behind the crate's back).
    #[inline]
    pub(crate) fn record(stream: &CudaStream) -> Result<Arc<Watch>> {
        let ctx = stream.context();
        if !crate::driver::bound_here(ctx) {
            crate::driver::bind(ctx)?;
        }
        match Watch::try_record(ctx, stream) {
            Err(Recorded::Failed(r)) if crate::driver::wrong_context(r) => {
                crate::driver::bind(ctx)?;
                Watch::try_record(ctx, stream).map_err(|e| e.error(ctx.ordinal()))
            }
            r => r.map_err(|e| e.error(ctx.ordinal())),
        }
    }

    /// [`Watch::record`] with the context current (or believed so).
    #[inline]
    fn try_record(ctx: &Arc<CudaContext>, stream: &CudaStream) -> std::result::Result<Arc<Watch>, Recorded> {
        if crate::bind::capture::is_capturing(stream) {
            return Err(Recorded::Capturing);
        }
        Watch::record_on(ctx, stream.cu_stream())
    }

    /// [`Watch::record`] on a stream of `ctx` that is never captured, known by its handle (a
    /// watcher stream, for event waits), with `ctx` current.
    pub(crate) fn record_raw(ctx: &Arc<CudaContext>, stream: sys::CUstream) -> Result<Arc<Watch>> {
        Watch::record_on(ctx, stream).map_err(|e| e.error(ctx.ordinal()))
    }

    #[inline]
    fn record_on(ctx: &Arc<CudaContext>, stream: sys::CUstream) -> std::result::Result<Arc<Watch>, Recorded> {
        let watch = match pool::take(ctx) {
            Some(mut watch) => {
                // The pool holds the only handle (and no `Weak`): `get_mut` cannot fail.
                if let Some(w) = Arc::get_mut(&mut watch) {
                    w.ctx = Some(ctx.clone());
                    w.lane = stream as usize;
                }
                watch
            }
            // A new event is made in the current context: bound for certain first (the pool's
            // events must be the context's).
            None => {
                crate::driver::bind(ctx).map_err(Recorded::Bind)?;
                Arc::new(Watch {
                    state: Mutex::new(State::default()),
                    event: new_event()?,
                    ctx: Some(ctx.clone()),
                    lane: stream as usize,
                    #[cfg(test)]
                    answer: Mutex::new(None),
                })
            }
        };
        // SAFETY: the event and the stream are live and of the same context.
        let r = unsafe { sys::cuEventRecord(watch.event, stream) };
        if r != sys::CUresult::CUDA_SUCCESS {
            Watch::release(watch);
            return Err(Recorded::Failed(r));
        }
        Ok(watch)
    }

    /// The event and its context, unless the watch has no event (a test's).
    #[inline]
    fn live(&self) -> Option<(sys::CUevent, &Arc<CudaContext>)> {
        self.ctx.as_ref().filter(|_| !self.event.is_null()).map(|ctx| (self.event, ctx))
    }

    /// Drops a handle to `watch`; the last one gives the watch to its context's pool, for later
    /// work (see [`Watch`]). Every holder of a handle releases it this way; one dropped plainly
    /// (two holders releasing at the same moment, each seeing the other's handle) only costs the
    /// event's reuse.
    pub(crate) fn release(mut watch: Arc<Watch>) {
        let Some(w) = Arc::get_mut(&mut watch) else { return };
        let Some(ctx) = w.ctx.take() else { return };
        let state = w.state.get_mut().unwrap_or_else(|e| e.into_inner());
        forget_unfinished(state);
        // Leaves no waker or kept value behind (what is left is dropped here, after the work).
        let old = std::mem::take(state);
        if let Err(mut watch) = pool::give(&ctx, watch) {
            // The pool is full: the watch is dropped, destroying its event.
            if let Some(w) = Arc::get_mut(&mut watch) {
                w.ctx = Some(ctx);
            }
        }
        drop(old);
    }

    /// Queues the callback that completes the watch, on a watcher stream that first waits for the
    /// event; once. Under `state`'s lock, so the callback's `signal` waits for the caller to
    /// have parked its waker or kept its memory. A watch without an event (the tests') counts as
    /// armed: the test completes it.
    fn arm(self: &Arc<Self>, state: &mut State) -> std::result::Result<(), sys::CUresult> {
        if state.armed {
            return Ok(());
        }
        let Some((event, ctx)) = self.live() else {
            state.armed = true;
            return Ok(());
        };
        completion_thread().map_err(|_| sys::CUresult::CUDA_ERROR_OPERATING_SYSTEM)?;
        let watcher = super::watcher::stream(ctx, self.lane)
            .map_err(|e| e.driver_code().unwrap_or(sys::CUresult::CUDA_ERROR_UNKNOWN))?;
        // SAFETY: the watcher stream and the event are live and of one context (both named, so
        // the current context does not matter); the wait captures the event's record of this
        // watch's work.
        let r = unsafe { sys::cuStreamWaitEvent(watcher, event, 0) };
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
            // Polled again at once by `block_on`'s spin: nothing to arm yet (its last poll before
            // it parks arms).
            Query::Running if super::executor::spinning() => Polled::Waiting,
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
        let Some((event, ctx)) = self.live() else { return Query::Running };
        // Through the crate's own bind, so its record of the thread's context stays true; a
        // thread that made the context current through it already is trusted (as launches trust
        // it), and binds again only on a context error.
        let bind = || crate::driver::bind(ctx).map_err(|e| e.driver_code().unwrap_or(CONTEXT_LOST));
        if !crate::driver::bound_here(ctx) {
            if let Err(r) = bind() {
                return Query::Error(r);
            }
        }
        // SAFETY: the event is live until the watch drops.
        let r = unsafe { sys::cuEventQuery(event) };
        if r != sys::CUresult::CUDA_SUCCESS
            && r != sys::CUresult::CUDA_ERROR_NOT_READY
            && crate::driver::wrong_context(r)
        {
            if let Err(r) = bind() {
                return Query::Error(r);
            }
            // SAFETY: as above.
            return Query::from(unsafe { sys::cuEventQuery(event) });
        }
        Query::from(r)
    }

    /// Records that the work is over with `status` (the stream callback's), wakes the parked
    /// task and releases what a dropped future left: [`Watch::signal`] and
    /// [`Watch::finish`] on one thread (a test's).
    #[cfg(test)]
    pub(crate) fn complete(&self, status: sys::CUresult) {
        let waker = self.signal(status);
        self.finish(waker);
    }

    /// Records that the work is over with `status` and wakes the parked task by reference: on
    /// the driver's callback thread, so that the wake-up costs no second thread hop. Nothing
    /// here makes a driver call or drops anything a user owns: the waker itself is returned, to
    /// be dropped on the completion thread with what a dropped future left ([`Watch::finish`])
    /// (dropping a task's last waker may drop the task, and with it buffers whose drop calls the
    /// driver). A panicking waker is contained.
    pub(crate) fn signal(&self, status: sys::CUresult) -> Option<Waker> {
        let waker = {
            let mut state = self.lock();
            state.done.get_or_insert(status);
            state.waker.take()
        };
        if let Some(w) = &waker {
            let _ = catch_unwind(AssertUnwindSafe(|| w.wake_by_ref()));
        }
        waker
    }

    /// The second half of the completion, on the completion thread: drops `waker` (taken by
    /// [`Watch::signal`]) and releases what a dropped future left. A panicking drop is
    /// contained, so the thread keeps serving every other future.
    pub(crate) fn finish(&self, waker: Option<Waker>) {
        let keep = self.lock().keep.take();
        if waker.is_some() {
            let _ = catch_unwind(AssertUnwindSafe(|| drop(waker)));
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
        if state.done.is_none() && state.armed {
            // The callback is coming: no driver call here (a future dropped by a cancelled task
            // makes none).
            state.keep = Some(value);
            return;
        }
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

/// The driver's callback: records the result and wakes the task ([`Watch::signal`]: no driver
/// call, no drop of anything the user owns, no unwinding), then hands the watch and the waker to
/// the completion thread, which drops them and what a dropped future left.
unsafe extern "C" fn on_complete(_stream: sys::CUstream, status: sys::CUresult, data: *mut c_void) {
    // SAFETY: `data` is the handle `Watch::arm` made with `Arc::into_raw`, taken back once.
    let watch = unsafe { Arc::from_raw(data as *const Watch) };
    let Some(tx) = COMPLETIONS.get() else {
        // Never: the thread is started before any callback is queued. Leaked, not dropped here.
        std::mem::forget(watch);
        return;
    };
    let waker = watch.signal(status);
    if let Err(unsent) = tx.send((watch, waker)) {
        // The completion thread is gone (the process is ending): dropping the handle or the
        // waker here could call the driver on its own thread, so they are leaked instead.
        std::mem::forget(unsent.0);
    }
}

type Message = (Arc<Watch>, Option<Waker>);

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
            for (watch, waker) in rx {
                watch.finish(waker);
                // The last handle may go here, pooling the watch (or destroying its event: a
                // driver call on this thread, which is allowed: it is not the driver's callback
                // thread).
                let _ = catch_unwind(AssertUnwindSafe(|| Watch::release(watch)));
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

/// The error of awaiting work queued on a stream under capture.
#[cold]
fn capturing(device: usize) -> Error {
    Error::Driver {
        call: "cuStreamAddCallback (awaiting work on a stream that is being captured)",
        device,
        cause: DriverCode(sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
    }
}

/// Why a watch could not be recorded.
enum Recorded {
    /// The stream is being captured.
    Capturing,
    /// The context could not be made current.
    Bind(Error),
    /// `cuEventCreate` refused.
    Create(sys::CUresult),
    /// `cuEventRecord` refused.
    Failed(sys::CUresult),
}

impl Recorded {
    #[cold]
    fn error(self, device: usize) -> Error {
        match self {
            Recorded::Capturing => capturing(device),
            Recorded::Bind(e) => e,
            Recorded::Create(r) => Error::Driver { call: "cuEventCreate", device, cause: DriverCode(r) },
            Recorded::Failed(r) => Error::Driver { call: "cuEventRecord", device, cause: DriverCode(r) },
        }
    }
}

/// A new event for the pool's watches (the context current).
#[cold]
#[inline(never)]
fn new_event() -> std::result::Result<sys::CUevent, Recorded> {
    let mut event: sys::CUevent = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; the stream's context is current.
    let r = unsafe { sys::cuEventCreate(&mut event, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Recorded::Create(r));
    }
    CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(event)
}

//! The smallest executor: for synchronous code, tests and examples that have no async runtime.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Wakes a thread parked in [`block_on`].
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// How long [`block_on`] polls a pending future again before it parks the thread: about what a
/// short kernel takes, and what the driver's own default wait (`CU_CTX_SCHED_AUTO`) spins for
/// before it yields. Longer waits cost no CPU.
pub const SPIN: Duration = Duration::from_micros(20);

/// Runs `future` to completion on this thread: `futures::executor::block_on` without the
/// dependency. Any executor works with this crate's futures; this one is for code that has none.
///
/// A pending future is polled again for up to [`SPIN`] (a poll of GPU work is a non-blocking
/// `cuEventQuery`, and arms no wake-up while spinning), so short work is seen as soon as it is
/// done, as `stream.synchronize()` sees it; then a last poll arms the wake-up and the thread
/// parks until the completion thread wakes it, using no CPU while it waits.
///
/// ```no_run
/// # fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
/// use cuda_embed_runtime::future;
/// future::block_on(future::synchronize(stream))?;
/// # Ok(()) }
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    block_on_with(future, SPIN)
}

/// [`block_on`] polling a pending future again for up to `spin` before each park;
/// `Duration::ZERO` parks at once, so every wake-up comes through the completion thread (what
/// any other executor sees).
///
/// ```no_run
/// # fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
/// use cuda_embed_runtime::future;
/// future::block_on_with(future::synchronize(stream), std::time::Duration::ZERO)?;
/// # Ok(()) }
/// ```
pub fn block_on_with<F: Future>(future: F, spin: Duration) -> F::Output {
    let mut future = pin!(future);
    // One waker per thread, made once: a `block_on` of a short launch costs no allocation.
    let waker = WAKER.with(Waker::clone);
    let mut cx = Context::from_waker(&waker);
    loop {
        if !spin.is_zero() {
            // Polls while spinning only ask the events: a watch is armed (a wait and a callback
            // queued on a watcher stream, a driver round trip later) only by the poll before the
            // thread parks, so work that finishes within the spin costs no more than the launch.
            let start = Instant::now();
            let _spinning = Spinning::enter();
            loop {
                if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                    return out;
                }
                if start.elapsed() >= spin {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        // A wake-up between the poll and here leaves the token set: `park` returns at once.
        std::thread::park();
    }
}

thread_local! {
    /// The waker of [`block_on`] on this thread: unparks it.
    static WAKER: Waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    /// Whether this thread is in [`block_on`]'s spin, which polls again without parking.
    static SPINNING: Cell<bool> = const { Cell::new(false) };
}

/// Whether a poll on this thread comes from [`block_on`]'s spin: a pending GPU future then
/// needs no wake-up (the spin polls it again, and the last poll before parking is not a spin's).
#[inline]
pub(crate) fn spinning() -> bool {
    SPINNING.with(Cell::get)
}

/// The spin of one [`block_on_with`] on this thread; restores what was there before when it ends
/// (a `block_on` nested in a poll, a panic).
pub(crate) struct Spinning(bool);

impl Spinning {
    pub(crate) fn enter() -> Spinning {
        Spinning(SPINNING.with(|s| s.replace(true)))
    }
}

impl Drop for Spinning {
    fn drop(&mut self) {
        SPINNING.with(|s| s.set(self.0));
    }
}

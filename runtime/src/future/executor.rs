//! The smallest executor: for synchronous code, tests and examples that have no async runtime.

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
/// `cuEventQuery`), so short work is seen as soon as it is done, as `stream.synchronize()` sees
/// it; then the thread parks until the completion thread wakes it, using no CPU while it waits.
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
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        let start = Instant::now();
        loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
            if start.elapsed() >= spin {
                break;
            }
            std::hint::spin_loop();
        }
        // A wake-up between the poll and here leaves the token set: `park` returns at once.
        std::thread::park();
    }
}

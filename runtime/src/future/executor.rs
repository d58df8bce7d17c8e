//! The smallest executor: for synchronous code, tests and examples that have no async runtime.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

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

/// Runs `future` to completion on this thread, parking the thread (not spinning) while it is
/// pending: `futures::executor::block_on` without the dependency. Any executor works with this
/// crate's futures; this one is for code that has none.
///
/// ```no_run
/// # fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
/// use cuda_embed_runtime::future;
/// future::block_on(future::synchronize(stream))?;
/// # Ok(()) }
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        // A wake-up between the poll and here leaves the token set: `park` returns at once.
        std::thread::park();
    }
}

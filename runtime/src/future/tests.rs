//! The state machine of [`GpuFuture`] and its watch, without a GPU: completions come from test
//! threads instead of the driver's callback, with the statuses the driver would pass.

use super::completion::Watch;
use super::GpuFuture;
use crate::error::Error;
use cudarc::driver::sys::CUresult;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// A waker that counts its wake-ups.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count::default());
    (c.clone(), Waker::from(c))
}

/// Host memory a copy would own: counts its drops.
struct Owned(Arc<AtomicUsize>);

impl Drop for Owned {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll<T: Send + 'static>(f: &mut GpuFuture<'_, T>, waker: &Waker) -> Poll<crate::Result<T>> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// The smallest executor: parks the thread until woken.
fn block_on<F: Future + Unpin>(mut f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    loop {
        if let Poll::Ready(v) = Pin::new(&mut f).poll(&mut Context::from_waker(&waker)) {
            return v;
        }
        let parked = std::time::Instant::now();
        std::thread::park_timeout(Duration::from_secs(5));
        assert!(parked.elapsed() < Duration::from_secs(5), "a wake-up was lost");
    }
}

#[test]
fn pending_until_the_work_completes_then_hands_the_value_back() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    let (count, waker) = counting();
    assert!(poll(&mut f, &waker).is_pending());
    assert!(!f.is_done());
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
    watch.complete(CUresult::CUDA_SUCCESS);
    assert_eq!(count.0.load(Ordering::SeqCst), 1, "completion wakes the parked task once");
    assert!(f.is_done());
    match poll(&mut f, &waker) {
        Poll::Ready(Ok(value)) => {
            assert_eq!(drops.load(Ordering::SeqCst), 0, "handed back, not released");
            drop(value);
        }
        other => panic!("expected the value back, got {:?}", other.map(|r| r.map(|_| ()))),
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(f.is_terminated());
}

#[test]
fn a_device_error_is_the_futures_result() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "cuMemcpyDtoHAsync");
    watch.complete(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    let (_, waker) = counting();
    match poll(&mut f, &waker) {
        Poll::Ready(Err(Error::Driver { call, cause, .. })) => {
            assert_eq!(call, "cuMemcpyDtoHAsync");
            assert_eq!(cause.0, CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
        }
        other => panic!("expected the driver's error, got {:?}", other.map(|r| r.map(|_| ()))),
    }
    // The work is over (it failed): what it used is released, not handed back.
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn dropped_mid_flight_releases_what_it_owns_only_after_completion() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    let (count, waker) = counting();
    assert!(poll(&mut f, &waker).is_pending());
    drop(f);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "released while the GPU could still use it");
    let completer = std::thread::spawn(move || watch.complete(CUresult::CUDA_SUCCESS));
    completer.join().expect("completion thread");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "released by the completion");
    assert_eq!(count.0.load(Ordering::SeqCst), 0, "a dropped future's task is not woken");
}

#[test]
fn dropped_after_completion_releases_at_once() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    watch.complete(CUresult::CUDA_SUCCESS);
    drop(f);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn forgotten_never_releases_what_it_owns() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    std::mem::forget(f);
    watch.complete(CUresult::CUDA_SUCCESS);
    // The value is leaked with the future: never freed, and no safe code can reach it.
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    assert!(watch.finished());
}

#[test]
fn only_the_latest_waker_is_woken() {
    let watch = Watch::detached();
    let mut f = GpuFuture::detached(Ok(watch.clone()), (), "test");
    let (first, a) = counting();
    let (second, b) = counting();
    assert!(poll(&mut f, &a).is_pending());
    assert!(poll(&mut f, &b).is_pending());
    watch.complete(CUresult::CUDA_SUCCESS);
    assert_eq!(first.0.load(Ordering::SeqCst), 0);
    assert_eq!(second.0.load(Ordering::SeqCst), 1);
    assert!(matches!(poll(&mut f, &b), Poll::Ready(Ok(()))));
}

#[test]
fn a_panicking_waker_does_not_stop_the_completion() {
    struct Panics;
    impl Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("a waker of someone else's panics");
        }
    }
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    let waker = Waker::from(Arc::new(Panics));
    assert!(poll(&mut f, &waker).is_pending());
    let keep = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    watch.complete(CUresult::CUDA_SUCCESS);
    std::panic::set_hook(keep);
    assert!(watch.finished(), "recorded although the waker panicked");
    let (_, fine) = counting();
    assert!(matches!(poll(&mut f, &fine), Poll::Ready(Ok(Owned(_)))));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_refused_launch_is_the_first_polls_result() {
    let err = Error::Shape { op: "future::copy_to_host".into(), detail: "too short".into() };
    let mut f = GpuFuture::detached(Err(err), (), "test");
    assert!(f.is_done());
    let (count, waker) = counting();
    assert!(matches!(poll(&mut f, &waker), Poll::Ready(Err(Error::Shape { .. }))));
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
    assert!(f.is_terminated());
}

#[test]
#[should_panic(expected = "polled after it returned its result")]
fn polling_after_the_result_panics() {
    let watch = Watch::detached();
    let mut f = GpuFuture::detached(Ok(watch.clone()), (), "test");
    watch.complete(CUresult::CUDA_SUCCESS);
    let (_, waker) = counting();
    assert!(poll(&mut f, &waker).is_ready());
    let _ = poll(&mut f, &waker);
}

/// Completions racing with polls on another thread: every future resolves (no lost wake-up
/// between "not done yet" and parking the waker), each exactly once.
#[test]
fn no_wake_up_is_lost_under_races() {
    for round in 0..2000 {
        let watch = Watch::detached();
        let f = GpuFuture::detached(Ok(watch.clone()), round, "test");
        let completer = std::thread::spawn(move || {
            if round % 3 == 0 {
                std::thread::yield_now();
            }
            watch.complete(CUresult::CUDA_SUCCESS);
        });
        assert_eq!(block_on(f).expect("completed"), round);
        completer.join().expect("completer");
    }
}

/// The future is `Send` when what it hands back is, so executors can move it between threads.
#[test]
fn futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let f = GpuFuture::detached(Ok(Watch::detached()), vec![1u8], "test");
    send(&f);
}

/// An error the event reports may be another work's: the future returns it, but what the work
/// uses stays alive until the stream callback says the work is over.
#[test]
fn an_observed_error_keeps_the_host_memory_until_the_callback() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "cuMemcpyDtoHAsync");
    watch.answer(CUresult::CUDA_ERROR_LAUNCH_FAILED);
    assert!(f.is_done(), "the future would be ready");
    let (_, waker) = counting();
    assert!(matches!(poll(&mut f, &waker), Poll::Ready(Err(Error::Driver { .. }))));
    assert_eq!(drops.load(Ordering::SeqCst), 0, "released while the copy could still run");
    watch.complete(CUresult::CUDA_ERROR_LAUNCH_FAILED);
    assert_eq!(drops.load(Ordering::SeqCst), 1, "released by the callback");
}

/// The event reporting the work complete is as good as the callback: the value is handed back
/// without waiting for it, and a later callback changes nothing.
#[test]
fn the_event_completes_before_the_callback() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    let (count, waker) = counting();
    assert!(poll(&mut f, &waker).is_pending());
    watch.answer(CUresult::CUDA_SUCCESS);
    assert!(matches!(poll(&mut f, &waker), Poll::Ready(Ok(Owned(_)))));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    watch.complete(CUresult::CUDA_SUCCESS);
    assert_eq!(count.0.load(Ordering::SeqCst), 1, "the parked waker is still woken once (harmless)");
}

/// A future dropped after the event reported completion releases at once, without the callback.
#[test]
fn dropped_after_the_event_completed_releases_at_once() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    watch.answer(CUresult::CUDA_SUCCESS);
    drop(f);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_poll_from_block_on_s_spin_arms_nothing() {
    let watch = Watch::detached();
    let mut f = GpuFuture::detached(Ok(watch.clone()), (), "test");
    let (count, waker) = counting();
    {
        let _spin = super::executor::Spinning::enter();
        assert!(poll(&mut f, &waker).is_pending());
        assert!(!watch.armed(), "a spinning poll queued a callback");
    }
    assert!(poll(&mut f, &waker).is_pending());
    assert!(watch.armed(), "the poll before parking arms the watch");
    watch.complete(CUresult::CUDA_SUCCESS);
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    assert!(poll(&mut f, &waker).is_ready());
}

#[test]
fn block_on_sees_work_done_during_its_spin_and_after_it() {
    for spin in [Duration::from_secs(5), Duration::ZERO] {
        let watch = Watch::detached();
        let f = GpuFuture::detached(Ok(watch.clone()), 7u32, "test");
        let completer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            watch.complete(CUresult::CUDA_SUCCESS);
        });
        assert_eq!(super::block_on_with(f, spin).unwrap(), 7);
        completer.join().unwrap();
    }
}

#[test]
fn the_callback_wakes_by_reference_and_the_completion_thread_drops() {
    let watch = Watch::detached();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut f = GpuFuture::detached(Ok(watch.clone()), Owned(drops.clone()), "test");
    let (count, waker) = counting();
    assert!(poll(&mut f, &waker).is_pending());
    drop(waker);
    drop(f); // mid-flight: the watch keeps the host memory
    let (count2, waker2) = counting();
    let mut g = GpuFuture::detached(Ok(watch.clone()), (), "test");
    assert!(poll(&mut g, &waker2).is_pending());
    drop(waker2);
    // The driver's thread: the task is woken, nothing is dropped there.
    let taken = watch.signal(CUresult::CUDA_SUCCESS);
    assert_eq!(count2.0.load(Ordering::SeqCst), 1);
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
    assert_eq!(Arc::strong_count(&count2), 2, "the waker is still held, for the completion thread");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    // The completion thread: drops the waker and the kept memory.
    watch.finish(taken);
    assert_eq!(Arc::strong_count(&count2), 1);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert!(poll(&mut g, Waker::noop()).is_ready());
}

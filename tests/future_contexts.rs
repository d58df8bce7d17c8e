//! Awaited work over many handles of one context, and after the user's handles are gone: what
//! the futures keep per context (pooled events, watcher streams) is keyed by the CUDA context,
//! not by one `Arc<CudaContext>`, stays bounded however many handles come and go, is never used
//! or destroyed once its context may be gone, and keeps no context alive. Run under
//! compute-sanitizer too (`SANITIZE=memcheck bash .gpu/run tests -- future_contexts`, the whole
//! file): none may report an error.

use cuda_embed::cudarc::driver::{sys, CudaContext};
use cuda_embed::future::{self, block_on, block_on_with, PoolStats};
use cuda_embed::{cuda_kernel, LaunchConfig};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

cuda_kernel!(file = "tests/kernels/fill.cu");

const N: usize = 1 << 16;
/// About 10 ms of spinning on a 2 GHz GPU: long enough that the futures below are still pending
/// when the test drops its handles.
const SLOW: i64 = 20_000_000;

/// The tests of this file compare process-wide counts ([`future::pool_stats`]): one at a time.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn gpu() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("this test needs a CUDA GPU")
}

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_num_elems(n as u32)
}

/// Events made by the pool and not destroyed (by this crate or with their context), between
/// two counts.
fn held(before: &PoolStats, after: &PoolStats) -> isize {
    let net = |s: &PoolStats| s.events_created as isize - s.events_destroyed as isize - s.events_abandoned as isize;
    net(after) - net(before)
}

/// `cuda_embed::context` hands out one handle per device (a loop of calls makes no new one) and
/// leaves the context current on the calling thread, as a new handle does.
#[test]
#[ignore = "needs a CUDA GPU"]
fn context_hands_out_one_handle_per_device() {
    let _one = one_at_a_time();
    let ctx = gpu();
    for _ in 0..1000 {
        assert!(Arc::ptr_eq(&ctx, &gpu()), "a second handle of device 0");
    }
    let raw = ctx.cu_ctx() as usize;
    let (same, current) = std::thread::spawn(move || {
        let c = gpu();
        let mut cur: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { sys::cuCtxGetCurrent(&mut cur) }, sys::CUresult::CUDA_SUCCESS);
        (c.cu_ctx() as usize == raw, cur as usize == raw)
    })
    .join()
    .unwrap();
    assert!(same, "another thread gets the same context");
    assert!(current, "context() made the context current on the new thread");
}

/// Hundreds of handles of one primary context (cudarc's `CudaContext::new` and
/// `cuda_embed::context`, alternately), each used for awaited launches, waits and event waits
/// and then dropped while the context lives on: the pool's events and the watcher streams are
/// reused across them, none is stranded, and the counts stay bounded.
#[test]
#[ignore = "needs a CUDA GPU"]
fn many_handles_of_one_context_share_one_pool() {
    let _one = one_at_a_time();
    let keep = gpu();
    let s = keep.new_stream().unwrap();
    let mut y = s.alloc_zeros::<f32>(1024).unwrap();
    // The pool of the context has a watch and a watcher stream before the count starts.
    block_on_with(unsafe { fill::launch_async(&s, cfg(1024), &mut y, 1.0, 1024) }, Duration::ZERO).unwrap();
    let before = future::pool_stats();
    const HANDLES: usize = 300;
    for i in 0..HANDLES {
        let ctx = if i % 2 == 0 { CudaContext::new(0).unwrap() } else { gpu() };
        let s = ctx.new_stream().unwrap();
        let mut y = s.alloc_zeros::<f32>(1024).unwrap();
        let v = i as f32;
        // Parked at once (the wake-up comes through a watcher stream), then seen done by a poll.
        block_on_with(unsafe { fill::launch_async(&s, cfg(1024), &mut y, v, 1024) }, Duration::ZERO).unwrap();
        block_on(future::synchronize(&s)).unwrap();
        let ev = s.record_event(None).unwrap();
        block_on(future::event(&ev)).unwrap();
        assert!(s.clone_dtoh(&y).unwrap().iter().all(|&e| e == v), "handle {i}");
    }
    let after = future::pool_stats();
    println!("{HANDLES} handles: before {before:?}\n after {after:?}");
    let held = held(&before, &after);
    assert!(held <= 16, "{held} more events held after {HANDLES} handles: kept per handle, not per context");
    assert_eq!(after.events_abandoned, before.events_abandoned, "the context lived throughout: nothing abandoned");
    assert_eq!(after.streams_abandoned, before.streams_abandoned);
    let streams = after.streams_created - before.streams_created;
    assert!(streams <= future::WATCHERS, "{streams} watcher streams made for {HANDLES} handles of one context");
    assert!(after.watcher_streams <= 2 * future::WATCHERS, "{after:?}");
    assert!(after.idle_watches <= before.idle_watches + 16, "{after:?}");
    assert!(after.contexts <= 3, "one entry for the context (and a destroyed one not yet pruned): {after:?}");
    assert!(after.anchors <= 8, "dead handles are pruned: {after:?}");
    drop(keep);
}

/// Futures polled after the user dropped every handle of their own (the context, the stream,
/// the event) still resolve with the work's result: a watch holds its context while its work is
/// in flight. A non-primary context, which nothing else holds, is then destroyed with its last
/// handle; the pool drops what it kept for it without a driver call (never a `cuEventDestroy` on
/// a destroyed context), and a new context (the driver may hand out the same `CUcontext` value)
/// gets fresh events and watcher streams.
#[test]
#[ignore = "needs a CUDA GPU"]
fn futures_outlive_the_user_s_handles_and_a_gone_context_s_objects_are_never_used() {
    let _one = one_at_a_time();
    let _primary = gpu();
    let before = future::pool_stats();

    // The primary context, through a handle of the test's own: a launch, a copy, an event wait
    // and a stream wait, all pending when every handle the test holds goes.
    let ctx = CudaContext::new(0).unwrap();
    let s = ctx.new_stream().unwrap();
    let src = s.clone_htod(&vec![2.5f32; N]).unwrap();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    s.synchronize().unwrap();
    let launched = unsafe { slow_fill::launch_async(&s, cfg(N), &mut y, 4.0, SLOW, N as i32) };
    // SAFETY: written by the copy before it is read; not write-combined (the host reads it).
    let host = unsafe { ctx.alloc_pinned_with_flags::<f32>(N, 0) }.unwrap();
    let copied = future::copy_to_host(&s, &src, host);
    let ev = s.record_event(None).unwrap();
    let waited = future::event(&ev);
    let synced = future::synchronize(&s);
    drop((ev, s, ctx));
    block_on_with(launched, Duration::ZERO).unwrap();
    let host = block_on_with(copied, Duration::ZERO).unwrap();
    assert!(host.as_slice().unwrap().iter().all(|&v| v == 2.5));
    block_on(waited).unwrap();
    block_on(synced).unwrap();
    let ys = y.stream().clone();
    assert!(ys.clone_dtoh(&y).unwrap().iter().all(|&v| v == 4.0));

    // A non-primary context used for awaited waits and copies only (a launch would load a module,
    // which holds its context for the rest of the process), then dropped with everything in it.
    let abandoned_before = future::pool_stats().events_abandoned;
    {
        let other = CudaContext::new_non_primary(0, 0).unwrap();
        let s = other.new_stream().unwrap();
        let x = s.clone_htod(&vec![1.5f32; N]).unwrap();
        // SAFETY: as above.
        let host = unsafe { other.alloc_pinned_with_flags::<f32>(N, 0) }.unwrap();
        let copied = future::copy_to_host(&s, &x, host);
        let ev = s.record_event(None).unwrap();
        let waited = future::event(&ev);
        drop((ev, other));
        let host = block_on_with(copied, Duration::ZERO).unwrap();
        assert!(host.as_slice().unwrap().iter().all(|&v| v == 1.5));
        block_on_with(waited, Duration::ZERO).unwrap();
        block_on(future::synchronize(&s)).unwrap();
    }
    // The context goes with its last handle: here, or on the completion thread a moment later
    // (its last watch's release). Each new context reaches the pool; once the old one is gone
    // its entry is dropped without a driver call, and the new one's work resolves.
    let mut abandoned = false;
    for _ in 0..50 {
        let other = CudaContext::new_non_primary(0, 0).unwrap();
        let s = other.new_stream().unwrap();
        let x = s.clone_htod(&vec![0.5f32; 1024]).unwrap();
        // SAFETY: as above.
        let host = unsafe { other.alloc_pinned_with_flags::<f32>(1024, 0) }.unwrap();
        let host = block_on_with(future::copy_to_host(&s, &x, host), Duration::ZERO).unwrap();
        assert!(host.as_slice().unwrap().iter().all(|&v| v == 0.5));
        let ev = s.record_event(None).unwrap();
        block_on_with(future::event(&ev), Duration::ZERO).unwrap();
        drop((host, x, ev, s));
        if future::pool_stats().events_abandoned > abandoned_before {
            abandoned = true;
            break;
        }
        drop(other);
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = future::pool_stats();
    println!("before {before:?}\n after {after:?}");
    assert!(abandoned, "the destroyed context's pooled events were never dropped from the pool: {after:?}");
    assert!(after.contexts <= 3, "entries of destroyed contexts are dropped: {after:?}");
}

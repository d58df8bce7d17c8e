//! The scratch buffers reductions keep per stream (`reduction/mod.rs`): one per context and
//! stream, per thread on the shared stream handles, at most 64, and an evicted buffer freed
//! only after the reductions that used it, even when another thread evicts it while they are
//! still queued on the owner's per-thread stream. No stream of this process is made with
//! `new_stream`, so cudarc's event tracking (which would order some frees on its own) stays off.
//! GPU tests are ignored without a GPU.

use cuda_embed::__private::reduce;
use cuda_embed::{cuda_kernel, reduction_kernel, CudaContext, LaunchConfig};
use std::sync::{Arc, Barrier, Mutex};

reduction_kernel!(sum, inputs = "T x", outputs = "T y", map = "x", reduce = "a + b", identity = "0", types = ["float"]);

cuda_kernel!(
    r#"
    // Busy for `cycles` clock ticks, then sets the flag.
    extern "C" __global__ void spin(int* flag, long long cycles) {
        long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
        *flag = 1;
    }
"#
);

/// The scratch buffers are process-wide: one test at a time.
static LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("a CUDA GPU")
}

/// A float array of ones: its sum is exact up to 2^24.
const N: usize = 1 << 20;

/// The scratch kept for another thread's per-thread stream is evicted (by a 65th stream) while
/// that thread's reduction is still queued behind a one-second kernel; the evicting thread then
/// allocates on its own per-thread stream, where the buffer is freed, and fills what it gets
/// with 0xFF. Before the fix the free was not ordered after the owner's reduction, the memory
/// was handed out again at once and the reduction ran on garbage counters: no block finds
/// itself the last, and the sum is never written (it stays 0). The reduction needs several
/// blocks for its one segment (it does for 2^20 elements on any GPU with more than a couple of
/// multiprocessors), or it uses no scratch and the test checks nothing.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_scratch_evicted_by_another_thread_is_freed_after_its_reduction() {
    let _g = lock();
    let ctx = ctx();
    let setup = ctx.per_thread_stream();
    let x = setup.clone_htod(&vec![1.0f32; N]).unwrap();
    let small = setup.clone_htod(&[1.0f32; 1000]).unwrap();
    setup.synchronize().unwrap();
    let plan = reduce::plan(&setup, reduce::Shape::Full, 1, N as u64, &[4]).unwrap();
    assert!(plan.aux > 1 && plan.counters > 0, "the test needs a reduction that uses its scratch: {plan:?}");
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let cycles: i64 = 1 << 31;
    for round in 0..2 {
        let queued = Barrier::new(2);
        let evicted = Barrier::new(2);
        std::thread::scope(|s| {
            let owner = s.spawn(|| {
                let stream = ctx.per_thread_stream();
                let mut flag = stream.alloc_zeros::<i32>(1).unwrap();
                let (mut first, mut y) = (stream.alloc_zeros::<f32>(1).unwrap(), stream.alloc_zeros::<f32>(1).unwrap());
                // The owner's scratch is made (allocated and zeroed) before the long kernel, so
                // the reduction queued behind it uses that buffer: a new one would be zeroed
                // behind the kernel too, after anything written into freed memory.
                sum::launch(&stream, &x, &mut first).unwrap();
                stream.synchronize().unwrap();
                // SAFETY: the kernel writes its one-element flag only.
                unsafe { spin::launch(&stream, one, &mut flag, cycles).unwrap() };
                sum::launch(&stream, &x, &mut y).unwrap();
                queued.wait();
                evicted.wait();
                stream.clone_dtoh(&y).unwrap()[0]
            });
            queued.wait();
            // 70 threads, one after the other, each reducing on its own per-thread stream: the
            // owner's buffer is the least recently used one by the 64th at the latest.
            let mut junk = Vec::new();
            for _ in 0..70 {
                junk.push(
                    s.spawn(|| {
                        let stream = ctx.per_thread_stream();
                        let mut y = stream.alloc_zeros::<f32>(1).unwrap();
                        sum::launch(&stream, &small, &mut y).unwrap();
                        // What this thread's stream hands out next may be a buffer it freed.
                        let junk: Vec<_> = [4352usize, 4352, 8192, 65536]
                            .iter()
                            .map(|&b| stream.clone_htod(&vec![0xFFu8; b]).unwrap())
                            .collect();
                        assert_eq!(stream.clone_dtoh(&y).unwrap()[0], 1000.0);
                        junk
                    })
                    .join()
                    .unwrap(),
                );
            }
            assert!(reduce::scratch_buffers() <= 64, "{} scratch buffers kept", reduce::scratch_buffers());
            evicted.wait();
            assert_eq!(owner.join().unwrap(), N as f32, "round {round}: the owner's reduction lost its scratch");
            drop(junk);
        });
    }
}

/// Many threads reducing at once, each on its own per-thread stream, more threads than buffers
/// are kept: every result is right and at most 64 buffers are kept.
#[test]
#[ignore = "needs a CUDA GPU"]
fn more_threads_than_kept_buffers_each_on_its_per_thread_stream() {
    let _g = lock();
    let ctx = ctx();
    let setup = ctx.per_thread_stream();
    let x = setup.clone_htod(&vec![1.0f32; N]).unwrap();
    setup.synchronize().unwrap();
    let threads = 96;
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let stream = ctx.per_thread_stream();
                    let mut ys: Vec<_> = (0..8).map(|_| stream.alloc_zeros::<f32>(1).unwrap()).collect();
                    start.wait();
                    for y in &mut ys {
                        sum::launch(&stream, &x, y).unwrap();
                    }
                    ys.iter().map(|y| stream.clone_dtoh(y).unwrap()[0]).collect::<Vec<f32>>()
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), vec![N as f32; 8]);
        }
    });
    assert!(reduce::scratch_buffers() <= 64, "{} scratch buffers kept", reduce::scratch_buffers());
}

/// The shared stream handles (null, per-thread) are one handle in every context and every
/// thread: the scratch is kept per context and per thread. A second context on the same GPU
/// (non-primary) reduces with its own buffer; releasing one context's buffer leaves the other's;
/// another thread's per-thread buffer is not this thread's to release.
#[test]
#[ignore = "needs a CUDA GPU"]
fn scratch_is_kept_per_context_and_per_thread() {
    let _g = lock();
    let ctx = ctx();
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let reduce_on = |stream: &Arc<cuda_embed::CudaStream>| {
        let x = stream.clone_htod(&vec![1.0f32; N]).unwrap();
        let mut y = stream.alloc_zeros::<f32>(1).unwrap();
        sum::launch(stream, &x, &mut y).unwrap();
        stream.clone_dtoh(&y).unwrap()[0]
    };
    let (mine, theirs) = (ctx.default_stream(), other.default_stream());
    // Each context its own buffer for the same (null) handle, here and in another thread.
    reduce::release_scratch(&mine);
    reduce::release_scratch(&theirs);
    assert_eq!(reduce_on(&mine), N as f32);
    assert_eq!(reduce_on(&theirs), N as f32);
    assert!(reduce::release_scratch(&theirs), "the second context had no buffer of its own");
    assert!(!reduce::release_scratch(&theirs));
    assert!(reduce::release_scratch(&mine), "releasing the other context's buffer took this one's");
    assert_eq!(reduce_on(&mine), N as f32);
    let per_thread = ctx.per_thread_stream();
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(reduce_on(&ctx.per_thread_stream()), N as f32);
        })
        .join()
        .unwrap();
    });
    // The other thread's per-thread buffer is not this thread's.
    assert!(!reduce::release_scratch(&per_thread));
    assert_eq!(reduce_on(&per_thread), N as f32);
    assert!(reduce::release_scratch(&per_thread));
    // And one context's stream still reduces after the other's buffers were released.
    assert_eq!(reduce_on(&theirs), N as f32);
    assert!(reduce::release_scratch(&theirs));
    ctx.bind_to_thread().unwrap();
}

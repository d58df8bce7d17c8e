//! Awaited GPU work (`cuda_embed::future`, `NAME::launch_async`): results, the four soundness
//! cases of issue 35 (a forgotten future, a future dropped mid-flight, a buffer reused after
//! completion, two futures on two streams over one input), device errors, copies through pinned
//! memory. Run the `soundness_*` tests under compute-sanitizer too (`SANITIZE=memcheck bash
//! .gpu/run tests -- future soundness`): none may report an error. (Not the whole file:
//! `a_device_error_is_the_future_s_result` faults on purpose, in a child process.)

use cuda_embed::device::*;
use cuda_embed::future::{self, block_on};
use cuda_embed::{
    cuda_kernel, elementwise_kernel, fuse, reduction_kernel, CudaSlice, CudaStream, Error, GpuFuture, Kernel,
    LaunchConfig,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

cuda_kernel!(file = "tests/kernels/fill.cu");
cuda_kernel!(
    r#"
    extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i];
    }
    extern "C" __global__ void fault(float* p) {
        p[threadIdx.x + (1ll << 40)] = 1.0f;
    }
"#
);

elementwise_kernel!(
    axpb,
    inputs = "float x, scalar float a, scalar float b",
    outputs = "float y",
    operation = "y = a * x + b"
);

cuda_kernel!(
    r#"
    template <int BLOCK>
    __global__ void tfill(float* y, float v, size_t n) {
        size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x;
        if (i < n) y[i] = v;
    }
"#,
    tune = { params = ["BLOCK: 64, 128"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }
);

reduction_kernel!(total, inputs = "float x", outputs = "float y", map = "x", reduce = "a + b", identity = "0");

fuse!(sumsq, inputs = "float x", steps = ["float v = x * x"], outputs = "float s", reduce = "a + b", identity = "0");

/// A Rust-syntax kernel that reads one element past its input when asked to.
#[cuda_embed::kernel]
pub fn shifted(x: &[f32], y: &mut [f32], shift: u32) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = x[i + shift as usize];
    }
}

const N: usize = 1 << 20;

/// Held by the tests that raise or read bounds-check records (a Rust-syntax kernel's index out of
/// range, `GraphExec::launch_async`'s check of every launched kernel), which run on threads of one
/// process and would otherwise read each other's records.
static BOUNDS: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// About 100 ms of spinning on a 2 GHz GPU.
const SLOW: i64 = 200_000_000;
/// About 200 ms per wave of blocks (a launch of `cfg(N)` runs four): the kernels of the tests
/// that assert that work is still pending after some driver calls. Those tests run alone, in a
/// child process (see [`alone`]).
const LONG: i64 = 400_000_000;

/// Runs the calling test `name` alone in a child process of this binary (where this returns
/// `true` and the test's body runs) and checks that it passed there (here it returns `false`).
///
/// For the tests that assert that GPU work is still pending after a launch and a few driver
/// calls: while the other tests of this binary ran on other threads, such a call of this thread
/// was apparently held until the device was idle (on the H200, 2026-11-28, in three tests at
/// once: a future, then a stream, found done right after a ~4 s kernel was launched on a stream
/// of the test's own; the soundness tests passed when only the five of them ran, under memcheck),
/// which no kernel length can outlast. A process of its own has no other threads making driver
/// calls. (compute-sanitizer follows child processes.)
fn alone(name: &str) -> bool {
    if std::env::var_os("CUDA_EMBED_ALONE").is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", name, "--nocapture", "--test-threads", "1"])
        .env("CUDA_EMBED_ALONE", "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{name}, run alone, failed:\n{text}");
    assert!(text.contains("1 passed"), "{name} did not run alone:\n{text}");
    false
}

/// Whether `s` still has work to do (`cuStreamQuery`: NOT_READY).
fn busy(s: &CudaStream) -> bool {
    let r = unsafe { cuda_embed::cudarc::driver::sys::cuStreamQuery(s.cu_stream()) };
    r == cuda_embed::cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY
}

/// A stream of the test's own: what is queued on it is that test's alone.
fn own_stream() -> Arc<CudaStream> {
    cuda_embed::context(0).expect("this test needs a CUDA GPU").new_stream().unwrap()
}

fn stream() -> Arc<CudaStream> {
    cuda_embed::context(0).expect("this test needs a CUDA GPU").default_stream()
}

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_num_elems(n as u32)
}

fn all(s: &Arc<CudaStream>, y: &CudaSlice<f32>, v: f32) -> bool {
    s.clone_dtoh(y).unwrap().iter().all(|&e| e == v)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_awaited_launch_has_finished_when_it_resolves() {
    if !alone("an_awaited_launch_has_finished_when_it_resolves") {
        return;
    }
    // A stream of the test's own: the default stream is shared with the other tests of this
    // binary, which run at the same time and keep it busy with kernels of their own (with it,
    // this test saw CUDA_ERROR_NOT_READY below: their work, not this launch's).
    let s = own_stream();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    s.synchronize().unwrap();
    for spin in [future::SPIN, Duration::ZERO] {
        let f = unsafe { slow_fill::launch_async(&s, cfg(N), &mut y, 3.0, LONG, N as i32) };
        assert!(!f.is_done(), "the kernel spins for ~1 s: {f:?}");
        future::block_on_with(f, spin).unwrap();
        // Nothing is left on the stream: the launch's completion was what the future waited for.
        assert!(!busy(&s), "spin {spin:?}");
    }
    assert!(all(&s, &y, 3.0));
}

/// A launch on a stream under capture is captured (as its blocking form's is), and its future
/// reports that there is nothing to await; the capture still ends in a graph that runs (no event
/// was recorded into it and queried, which would have invalidated it).
#[test]
#[ignore = "needs a CUDA GPU"]
fn an_awaited_launch_under_capture_is_an_error() {
    let ctx = cuda_embed::context(0).unwrap();
    let c = ctx.new_stream().unwrap();
    let mut y = c.alloc_zeros::<f32>(1024).unwrap();
    c.synchronize().unwrap();
    ctx.bind_to_thread().unwrap();
    c.begin_capture(cuda_embed::cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).unwrap();
    let f = unsafe { fill::launch_async(&c, cfg(1024), &mut y, 5.0, 1024) };
    let e = block_on(f).unwrap_err();
    assert!(e.to_string().contains("captur"), "{e}");
    let graph = c
        .end_capture(
            cuda_embed::cudarc::driver::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
        )
        .unwrap()
        .expect("the capture holds the launch");
    graph.launch().unwrap();
    c.synchronize().unwrap();
    assert!(all(&c, &y, 5.0), "the captured launch ran when the graph did");
    block_on(unsafe { fill::launch_async(&c, cfg(1024), &mut y, 6.0, 1024) }).unwrap();
    assert!(all(&c, &y, 6.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_family_s_async_form_computes() {
    let s = stream();
    let x = s.clone_htod(&vec![2.0f32; N]).unwrap();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    block_on(unsafe { scale::launch_async(&s, cfg(N), &x, &mut y, 3.0, N as i32) }).unwrap();
    assert!(all(&s, &y, 6.0), "cuda_kernel! launch_async");
    let k: Kernel<_> = fill::KERNEL;
    block_on(unsafe { k.launch_async(&s, cfg(N), (&mut y, 5.0f32, N as i32)) }).unwrap();
    assert!(all(&s, &y, 5.0), "Kernel::launch_async");
    block_on(axpb::launch_async(&s, &x, 2.0, 1.0, &mut y)).unwrap();
    assert!(all(&s, &y, 5.0), "elementwise_kernel! launch_async");
    let mut r = s.alloc_zeros::<f32>(1).unwrap();
    block_on(total::launch_async(&s, &x, &mut r)).unwrap();
    assert_eq!(s.clone_dtoh(&r).unwrap(), [2.0 * N as f32], "reduction_kernel! launch_async");
    block_on(sumsq::launch_async(&s, &x, &mut r)).unwrap();
    assert_eq!(s.clone_dtoh(&r).unwrap(), [4.0 * N as f32], "fuse! (reduction) launch_async");
    {
        let xv = cuda_embed::NdView::new(&x, &[1024, N / 1024]).unwrap();
        let mut yv = cuda_embed::NdViewMut::new(&mut y, &[N / 1024, 1024]).unwrap();
        block_on(axpb::launch_nd_async(&s, &xv.transpose(), 3.0, 0.0, &mut yv)).unwrap();
    }
    assert!(all(&s, &y, 6.0), "elementwise_kernel! launch_nd_async");
    {
        let xv = cuda_embed::NdView::new(&x, &[1024, N / 1024]).unwrap();
        let mut rows = s.alloc_zeros::<f32>(1024).unwrap();
        let mut rv = cuda_embed::NdViewMut::new(&mut rows, &[1024]).unwrap();
        block_on(total::launch_axes_async(&s, &xv, &[1], &mut rv)).unwrap();
        let want = 2.0 * (N / 1024) as f32;
        assert!(all(&s, &rows, want), "reduction_kernel! launch_axes_async");
    }
    block_on(unsafe { tfill::tuned_async(&s, &mut y, 8.0, N) }).unwrap();
    assert!(all(&s, &y, 8.0), "tuned_async");
    let mut g = cuda_embed::Graph::new(s.context()).unwrap();
    fill::node(&mut g, cfg(N), &y, 9.0, N as i32).unwrap();
    let exec = g.instantiate().unwrap();
    let _records = BOUNDS.lock().unwrap_or_else(|e| e.into_inner());
    block_on(unsafe { exec.launch_async(&s) }).unwrap();
    assert!(all(&s, &y, 9.0), "GraphExec::launch_async");
}

/// The run-time twins' async forms (NVRTC at run time: skipped without libnvrtc).
#[test]
#[ignore = "needs a CUDA GPU"]
fn run_time_twins_async_forms_compute() {
    use cuda_embed::{Arg, ElementwiseProgram, Program, ReductionProgram, TypedArg};
    if !cuda_embed::nvrtc::is_available() {
        eprintln!("libnvrtc not found: the run-time twins were not checked");
        return;
    }
    let s = stream();
    let x = s.clone_htod(&vec![2.0f32; N]).unwrap();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    let ek =
        ElementwiseProgram::new("twice_rt", "float x", "float y", "y = 2 * x").unwrap().build(s.context(), "").unwrap();
    block_on(ek.launch_async(&s, &mut [Arg::slice(&x), Arg::slice_mut(&mut y)])).unwrap();
    assert!(all(&s, &y, 4.0), "ElementwiseKernel::launch_async");
    let rk = ReductionProgram::new("sum_rt", "float x", "float y")
        .map("x")
        .reduce("a + b")
        .identity("0")
        .load(s.context())
        .unwrap();
    let mut r = s.alloc_zeros::<f32>(1).unwrap();
    block_on(rk.launch_async(&s, &mut [TypedArg::slice(&y), TypedArg::slice_mut(&mut r)])).unwrap();
    assert_eq!(s.clone_dtoh(&r).unwrap(), [4.0 * N as f32], "Reduction::launch_async");
    let src = r#"extern "C" __global__ void set(float* y, float v, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = v;
    }"#;
    let m = Program::new(src).name("future_rt.cu").load(s.context()).unwrap();
    let k = m.kernel("set").unwrap();
    let n = N as i32;
    block_on(unsafe { k.launch_async(&s, cfg(N), &mut [Arg::slice_mut(&mut y), Arg::value(&7.0f32), Arg::value(&n)]) })
        .unwrap();
    assert!(all(&s, &y, 7.0), "ProgramKernel::launch_async");
}

/// The Rust-syntax form reports the bounds flag its launch raised, as the future's result.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_rust_kernel_s_future_reports_an_index_out_of_bounds() {
    let _records = BOUNDS.lock().unwrap_or_else(|e| e.into_inner());
    let s = stream();
    let x = s.clone_htod(&vec![1.0f32; 64]).unwrap();
    let mut y = s.alloc_zeros::<f32>(64).unwrap();
    block_on(unsafe { shifted::launch_async(&s, cfg(64), &x, &mut y, 0) }).unwrap();
    assert!(all(&s, &y, 1.0));
    match block_on(unsafe { shifted::launch_async(&s, cfg(64), &x, &mut y, 1) }) {
        Err(Error::IndexOutOfBounds { kernel, index, len, .. }) => {
            assert_eq!((kernel.as_str(), index, len), ("shifted", 64, 64));
        }
        other => panic!("expected the out-of-range index, got {other:?}"),
    }
    // Reported once: the next launch is clean.
    block_on(unsafe { shifted::launch_async(&s, cfg(64), &x, &mut y, 0) }).unwrap();
}

/// Stream-ordered temporaries with the pool keeping freed memory: a loop of allocate, fill,
/// drop, await computes right, and the threshold goes back to the driver's default.
#[test]
#[ignore = "needs a CUDA GPU"]
fn temporaries_freed_in_stream_order() {
    let ctx = cuda_embed::context(0).unwrap();
    if !ctx.has_async_alloc() {
        eprintln!("no memory pools on this device: nothing to test");
        return;
    }
    let s = ctx.default_stream();
    future::retain_freed_memory(&ctx, u64::MAX).unwrap();
    let mut sum = s.alloc_zeros::<f32>(1).unwrap();
    for step in 0..100 {
        let mut tmp = s.alloc_zeros::<f32>(1 << 16).unwrap();
        block_on(unsafe { fill::launch_async(&s, cfg(1 << 16), &mut tmp, step as f32, 1 << 16) }).unwrap();
        block_on(total::launch_async(&s, &tmp, &mut sum)).unwrap();
        drop(tmp);
        assert_eq!(s.clone_dtoh(&sum).unwrap(), [step as f32 * 65536.0]);
    }
    future::retain_freed_memory(&ctx, 0).unwrap();
}

/// Soundness case 1: a forgotten future. The launch stays queued and runs; its buffers, no longer
/// borrowed, can be read (the read is ordered after the kernel) and freed (the free too) at once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn soundness_forgotten_future() {
    if !alone("soundness_forgotten_future") {
        return;
    }
    let s = stream();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    let f = unsafe { slow_fill::launch_async(&s, cfg(N), &mut y, 7.0, LONG, N as i32) };
    assert!(!f.is_done(), "{f:?}");
    std::mem::forget(f);
    // The read waits for the kernel (same stream): it sees the kernel's values, never zeros.
    assert!(all(&s, &y, 7.0), "a read after forgetting is ordered after the kernel");
    // Again, freeing right after forgetting: the free is ordered after the kernel.
    let mut z = s.alloc_zeros::<f32>(N).unwrap();
    std::mem::forget(unsafe { slow_fill::launch_async(&s, cfg(N), &mut z, 1.0, SLOW, N as i32) });
    drop(z);
    let w = s.clone_htod(&vec![4.0f32; N]).unwrap();
    assert!(all(&s, &w, 4.0));
    // A forgotten copy leaks its pinned host memory: never freed while the GPU writes it.
    let host = unsafe { s.context().alloc_pinned_with_flags::<f32>(N, 0) }.unwrap();
    std::mem::forget(future::copy_to_host(&s, &w, host));
    future::block_on(future::synchronize(&s)).unwrap();
}

/// Soundness case 2: futures dropped mid-flight. A launch's drop neither blocks nor frees; a
/// copy's drop leaves the pinned memory to the completion thread, freed after the copy.
#[test]
#[ignore = "needs a CUDA GPU"]
fn soundness_dropped_mid_flight() {
    if !alone("soundness_dropped_mid_flight") {
        return;
    }
    // Drops that waited for the GPU would find the stream idle: the checks below ask it (a
    // stream of the test's own, so the work on it is this test's).
    let s = own_stream();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    let f = unsafe { slow_fill::launch_async(&s, cfg(N), &mut y, 2.0, LONG, N as i32) };
    drop(f);
    assert!(busy(&s), "dropping a pending future did not wait");
    assert!(all(&s, &y, 2.0));
    // A copy behind a slow kernel, dropped while pending: its host memory outlives the copy.
    let mut z = s.alloc_zeros::<f32>(N).unwrap();
    unsafe { slow_fill::launch(&s, cfg(N), &mut z, 9.0, LONG, N as i32) }.unwrap();
    let host = unsafe { s.context().alloc_pinned_with_flags::<f32>(N, 0) }.unwrap();
    let copy = future::copy_to_host(&s, &z, host);
    assert!(!copy.is_done(), "{copy:?}");
    drop(copy);
    assert!(busy(&s), "dropping a pending copy did not wait");
    // Work after it still runs and is correct; memcheck sees no access to freed host memory.
    let host = unsafe { s.context().alloc_pinned_with_flags::<f32>(N, 0) }.unwrap();
    let host = block_on(future::copy_to_host(&s, &z, host)).unwrap();
    assert!(host.as_slice().unwrap().iter().all(|&v| v == 9.0));
}

/// Soundness case 3: a buffer used again after its future resolved, by a second awaited launch
/// and by awaited copies in both directions.
#[test]
#[ignore = "needs a CUDA GPU"]
fn soundness_buffer_reused_after_completion() {
    let s = stream();
    let ctx = s.context();
    let mut host = unsafe { ctx.alloc_pinned_with_flags::<f32>(N, 0) }.unwrap();
    host.as_mut_slice().unwrap().iter_mut().enumerate().for_each(|(i, v)| *v = i as f32);
    let mut x = s.alloc_zeros::<f32>(N).unwrap();
    let host = block_on(future::copy_to_device(&s, host, &mut x)).unwrap();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    block_on(unsafe { scale::launch_async(&s, cfg(N), &x, &mut y, 2.0, N as i32) }).unwrap();
    // `y` again, as the input now, and `x` as the output.
    block_on(unsafe { scale::launch_async(&s, cfg(N), &y, &mut x, 0.5, N as i32) }).unwrap();
    let host = block_on(future::copy_to_host(&s, &x, host)).unwrap();
    assert!(host.as_slice().unwrap().iter().enumerate().all(|(i, &v)| v == i as f32));
    let back = block_on(future::copy_to_host(&s, &y, host)).unwrap();
    assert!(back.as_slice().unwrap().iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32));
}

/// Soundness case 4: two futures on two streams reading one input (shared borrows), each writing
/// its own output; awaited in either order.
#[test]
#[ignore = "needs a CUDA GPU"]
fn soundness_two_streams_one_input() {
    let ctx = cuda_embed::context(0).unwrap();
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let x = s1.clone_htod(&vec![1.5f32; N]).unwrap();
    let (mut y1, mut y2) = (s1.alloc_zeros::<f32>(N).unwrap(), s2.alloc_zeros::<f32>(N).unwrap());
    let f1 = unsafe { scale::launch_async(&s1, cfg(N), &x, &mut y1, 2.0, N as i32) };
    let f2 = unsafe { scale::launch_async(&s2, cfg(N), &x, &mut y2, 4.0, N as i32) };
    block_on(f2).unwrap();
    block_on(f1).unwrap();
    assert!(all(&s1, &y1, 3.0));
    assert!(all(&s2, &y2, 6.0));
    // Both pending at once, one polled from another thread.
    let f1 = unsafe { slow_fill::launch_async(&s1, cfg(N), &mut y1, 1.0, SLOW / 10, N as i32) };
    let f2 = unsafe { scale::launch_async(&s2, cfg(N), &x, &mut y2, 1.0, N as i32) };
    std::thread::scope(|t| {
        t.spawn(move || block_on(f1).unwrap());
        block_on(f2).unwrap();
    });
    assert!(all(&s1, &y1, 1.0) && all(&s2, &y2, 1.5));
}

/// Many futures in flight on several streams, awaited out of order: every one resolves, each
/// after the work queued before it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn thousands_of_futures_resolve() {
    let ctx = cuda_embed::context(0).unwrap();
    let streams: Vec<_> = (0..8).map(|_| ctx.new_stream().unwrap()).collect();
    let mut ys: Vec<_> = streams.iter().map(|s| s.alloc_zeros::<f32>(1024).unwrap()).collect();
    let mut pending: Vec<GpuFuture<'static>> = Vec::new();
    for round in 0..1250 {
        for (s, y) in streams.iter().zip(ys.iter_mut()) {
            // SAFETY: `fill` stays within `n` elements of `y`.
            unsafe { fill::launch(s, cfg(1024), y, round as f32, 1024) }.unwrap();
            pending.push(future::synchronize(s));
        }
    }
    assert_eq!(pending.len(), 10_000);
    for f in pending.into_iter().rev() {
        block_on(f).unwrap();
    }
    for (s, y) in streams.iter().zip(&ys) {
        assert!(all(s, y, 1249.0));
    }
}

/// A device error raised by a kernel is the result of the future that observes it. The fault
/// ends the context, so it runs in a child process (this test binary, filtered to the child).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_device_error_is_the_future_s_result() {
    if std::env::var_os("CUDA_EMBED_FAULT_CHILD").is_some() {
        let s = stream();
        let mut y = s.alloc_zeros::<f32>(32).unwrap();
        let r = block_on(unsafe { fault::launch_async(&s, cfg(32), &mut y) });
        match r {
            Err(Error::Launch { kernel, cause, .. }) => {
                assert_eq!(kernel, "fault");
                assert!(cause.contains("failed on the GPU"), "{cause}");
                println!("FAULT REPORTED: {cause}");
            }
            other => panic!("expected the kernel's device error, got {other:?}"),
        }
        // Later futures observe the sticky error too, as errors.
        assert!(block_on(future::synchronize(&s)).is_err());
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args(["--ignored", "--exact", "a_device_error_is_the_future_s_result", "--nocapture"])
        .env("CUDA_EMBED_FAULT_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("the future of a faulting kernel never resolved");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(status.success(), "child failed:\n{out}");
    assert!(out.contains("FAULT REPORTED"), "{out}");
}

/// Bad input: copies of mismatched lengths or another context's memory are the future's error,
/// and nothing is queued; a capturing stream cannot be awaited.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_copies_and_captures_are_errors() {
    let s = stream();
    let y = s.alloc_zeros::<f32>(16).unwrap();
    let short = unsafe { s.context().alloc_pinned::<f32>(8) }.unwrap();
    assert!(matches!(block_on(future::copy_to_host(&s, &y, short)), Err(Error::Shape { .. })));
    let other = cuda_embed::CudaContext::new_non_primary(0, 0).unwrap();
    let foreign = other.default_stream().alloc_zeros::<f32>(16).unwrap();
    let host = unsafe { s.context().alloc_pinned::<f32>(16) }.unwrap();
    let e = block_on(future::copy_to_host(&s, &foreign, host)).unwrap_err();
    assert!(e.to_string().contains("device buffer is memory of"), "{e}");
    s.context().bind_to_thread().unwrap();
    let c = s.context().new_stream().unwrap();
    c.begin_capture(cuda_embed::cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).unwrap();
    assert!(block_on(future::synchronize(&c)).is_err(), "a capturing stream has nothing to await");
    let _ = c.end_capture(
        cuda_embed::cudarc::driver::sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH,
    );
    block_on(future::synchronize(&s)).unwrap();
}

/// Under tokio's multi-threaded runtime: tasks on their own streams, each owning its buffers,
/// awaiting launches and copies; results checked on the host.
#[test]
#[ignore = "needs a CUDA GPU"]
fn tasks_under_tokio() {
    let ctx = cuda_embed::context(0).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).build().unwrap();
    let results = rt.block_on(async {
        let tasks: Vec<_> = (0..16)
            .map(|t| {
                let s = ctx.new_stream().unwrap();
                tokio::spawn(async move {
                    let mut host = unsafe { s.context().alloc_pinned_with_flags::<f32>(N, 0) }?;
                    host.as_mut_slice()?.fill(t as f32);
                    let mut x = s.alloc_zeros::<f32>(N)?;
                    let host = future::copy_to_device(&s, host, &mut x).await?;
                    let mut y = s.alloc_zeros::<f32>(N)?;
                    unsafe { scale::launch_async(&s, cfg(N), &x, &mut y, 2.0, N as i32) }.await?;
                    axpb::launch_async(&s, &y, 1.0, 1.0, &mut x).await?;
                    let host = future::copy_to_host(&s, &x, host).await?;
                    let ok = host.as_slice()?.iter().all(|&v| v == 2.0 * t as f32 + 1.0);
                    Ok::<bool, Error>(ok)
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.push(t.await.expect("task panicked"));
        }
        all
    });
    for (t, r) in results.into_iter().enumerate() {
        assert!(r.unwrap(), "task {t} computed wrong values");
    }
}

/// Cancelling a tokio task at an `.await` of a copy drops the future mid-flight: the pinned
/// memory goes to the completion thread and is freed after the copy (memcheck: no error), and the
/// runtime is not blocked meanwhile.
#[test]
#[ignore = "needs a CUDA GPU"]
fn soundness_cancelled_tokio_task() {
    if !alone("soundness_cancelled_tokio_task") {
        return;
    }
    let s = own_stream();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let z = rt.block_on(async {
        let mut z = s.alloc_zeros::<f32>(N).unwrap();
        unsafe { slow_fill::launch(&s, cfg(N), &mut z, 4.0, LONG, N as i32) }.unwrap();
        let z = Arc::new(z);
        let (s2, z2) = (s.clone(), z.clone());
        let task = tokio::spawn(async move {
            let host = unsafe { s2.context().alloc_pinned_with_flags::<f32>(N, 0) }.unwrap();
            let host = future::copy_to_host(&s2, &*z2, host).await.unwrap();
            host.as_slice().unwrap()[0]
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        // Cancelled while the copy still waits behind the ~1 s kernel: the cancellation did not
        // wait for the GPU (nothing else is queued on this stream). (A 20 ms bound on the time it
        // took failed on the H200 while the other tests of the binary ran.)
        assert!(busy(&s), "cancelling waited for the GPU");
        future::synchronize(&s).await.unwrap();
        z
    });
    assert!(all(&s, &z, 4.0));
}

/// Awaiting events: the work recorded in each, on any stream; more waits at once than there are
/// watcher streams; an event never recorded resolves at once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn events_are_awaitable() {
    let ctx = cuda_embed::context(0).unwrap();
    let fresh = ctx.new_event(None).unwrap();
    block_on(future::event(&fresh)).unwrap();
    let streams: Vec<_> = (0..future::WATCHERS + 8).map(|_| ctx.new_stream().unwrap()).collect();
    let mut ys: Vec<_> = streams.iter().map(|s| s.alloc_zeros::<f32>(N).unwrap()).collect();
    let mut waits = Vec::new();
    for (k, (s, y)) in streams.iter().zip(ys.iter_mut()).enumerate() {
        unsafe { slow_fill::launch(s, cfg(N), y, k as f32, SLOW / 20, N as i32) }.unwrap();
        let recorded = s.record_event(None).unwrap();
        waits.push((future::event(&recorded), recorded));
    }
    assert!(waits.len() > future::WATCHERS);
    for (k, (wait, recorded)) in waits.into_iter().enumerate().rev() {
        block_on(wait).unwrap();
        assert!(recorded.is_complete(), "event {k} resolved before its work");
    }
    for (k, (s, y)) in streams.iter().zip(&ys).enumerate() {
        assert!(all(s, y, k as f32));
    }
}

//! Stream capture with cudarc's event tracking on (its default), for every launch kind: generated
//! launchers, `Kernel` values, `elementwise_kernel!` (flat and N-D), `reduction_kernel!` and
//! run-time `ProgramKernel`s, with buffers allocated before the capture on another stream. Captured in
//! global mode (the strictest), replayed, checked; the buffers stay usable afterwards. Its own
//! binary: it must not share the context's tracking state with tests that turn tracking off.

use cuda_embed::cudarc::driver::sys;
use cuda_embed::{cuda_kernel, elementwise_kernel, reduction_kernel, Arg, LaunchConfig, Program};

cuda_kernel!(
    r#"
    extern "C" __global__ void add_one(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 1.0f; }
    extern "C" __global__ void copy_scaled(const float* x, float* y, float s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = s * x[i]; }
"#
);

elementwise_kernel!(ew_axpy, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x + y");

reduction_kernel!(
    red_sum,
    inputs = "float x",
    outputs = "float y",
    map = "x",
    reduce = "a + b",
    post_map = "y = a",
    identity = "0",
);

const PROGRAM: &str = r#"
extern "C" __global__ void twice(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= 2.0f; }
"#;

/// A capture in global mode makes every other thread's unsafe driver call (an allocation, say)
/// fail and invalidate it, so the tests of this binary, which run on parallel threads, take turns
/// (under compute-sanitizer, which slows each test, the reduction test's allocations fell inside
/// the other test's global capture).
static CAPTURES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_capture_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    CAPTURES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_launch_kind_is_capturable_with_event_tracking_on() {
    let _turn = one_capture_at_a_time();
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    assert!(ctx.is_event_tracking(), "cudarc's default: tracking on");
    let n = 4096usize;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    // Buffers made before the capture, on the default stream (their events recorded there).
    let alloc_stream = ctx.default_stream();
    let mut y = alloc_stream.alloc_zeros::<f32>(n).unwrap();
    let x = alloc_stream.clone_htod(&vec![1.0f32; n]).unwrap();
    let mut z = alloc_stream.alloc_zeros::<f32>(n).unwrap();
    let mut total = alloc_stream.alloc_zeros::<f32>(1).unwrap();
    let program = Program::new(PROGRAM).load(&ctx).expect("NVRTC at run time");
    let twice = program.kernel("twice").unwrap();
    // A first launch of each kind outside the capture loads every module (a load inside a global
    // capture would be an unsafe call).
    let stream = ctx.new_stream().unwrap();
    unsafe {
        add_one::launch(&stream, cfg, &mut z, 0).unwrap();
        ew_axpy::launch(&stream, &x, 0.0, &mut z).unwrap();
        red_sum::launch(&stream, &x, &mut total).unwrap();
        twice.launch(&stream, cfg, &mut [Arg::slice_mut(&mut z), Arg::value(&0i32)]).unwrap();
    }
    stream.synchronize().unwrap();
    let zeros = vec![0.0f32; n];
    stream.memcpy_htod(&zeros, &mut z).unwrap();
    stream.synchronize().unwrap();

    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL).unwrap();
    // SAFETY: every kernel stays within n elements.
    unsafe {
        for _ in 0..100 {
            add_one::launch(&stream, cfg, &mut y, n as i32).unwrap(); // y += 1 (100 times)
        }
        add_one::KERNEL.launch(&stream, cfg, (&mut y, n as i32)).unwrap(); // y = 101
        copy_scaled::launch(&stream, cfg, &y, &mut z, 0.5, n as i32).unwrap(); // z = 50.5
                                                                               // An N-D launch through a transposed view (the strided kernel): z = 51.
        let xt = cuda_embed::NdView::new(&x, &[64, 64]).unwrap().transpose();
        ew_axpy::launch_nd(&stream, &xt, 0.5, &mut cuda_embed::NdViewMut::new(&mut z, &[64, 64]).unwrap()).unwrap();
        twice.launch(&stream, cfg, &mut [Arg::slice_mut(&mut z), Arg::value(&(n as i32))]).unwrap(); // z = 102
        red_sum::launch(&stream, &z, &mut total).unwrap(); // total = 102 n
    }
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .expect("the capture is valid")
        .expect("a captured graph");
    stream.synchronize().unwrap();
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 0.0), "nothing ran during capture");

    graph.launch().unwrap();
    stream.synchronize().unwrap();
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 101.0));
    assert!(stream.clone_dtoh(&z).unwrap().iter().all(|&v| v == 102.0));
    assert_eq!(stream.clone_dtoh(&total).unwrap(), [102.0 * n as f32]);
    // A second replay: the reduction's captured scratch starts from zeroed counters again.
    graph.launch().unwrap();
    stream.synchronize().unwrap();
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 202.0));
    let z_now = 2.0 * (0.5 * 202.0 + 0.5);
    assert!(stream.clone_dtoh(&z).unwrap().iter().all(|&v| v == z_now));
    assert_eq!(stream.clone_dtoh(&total).unwrap(), [z_now * n as f32]);

    // The buffers and the context are fine afterwards, on any stream, with tracking.
    unsafe { add_one::launch(&alloc_stream, cfg, &mut y, n as i32).unwrap() };
    red_sum::launch(&alloc_stream, &y, &mut total).unwrap();
    assert_eq!(alloc_stream.clone_dtoh(&total).unwrap(), [203.0 * n as f32]);
    drop(graph);
    ctx.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_reduction_captured_twice_in_one_graph_gets_two_scratch_buffers() {
    let _turn = one_capture_at_a_time();
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    let stream = ctx.new_stream().unwrap();
    let n = 1 << 20;
    let x = stream.clone_htod(&vec![1.0f32; n]).unwrap();
    let w = stream.clone_htod(&vec![2.0f32; n]).unwrap();
    let mut a = stream.alloc_zeros::<f32>(1).unwrap();
    let mut b = stream.alloc_zeros::<f32>(1).unwrap();
    red_sum::launch(&stream, &x, &mut a).unwrap();
    stream.synchronize().unwrap();
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    red_sum::launch(&stream, &x, &mut a).unwrap();
    red_sum::launch(&stream, &w, &mut b).unwrap();
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .unwrap();
    for _ in 0..5 {
        graph.launch().unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(stream.clone_dtoh(&a).unwrap(), [n as f32]);
    assert_eq!(stream.clone_dtoh(&b).unwrap(), [2.0 * n as f32]);
    // The plain (uncaptured) path still works on the same stream.
    red_sum::launch(&stream, &w, &mut a).unwrap();
    assert_eq!(stream.clone_dtoh(&a).unwrap(), [2.0 * n as f32]);
}

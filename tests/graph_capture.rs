//! Generated launchers inside cudarc's stream capture: the captured graph replays the launches.
//! Its own test binary, because capture needs cudarc's per-buffer event tracking off for the
//! context (an event recorded outside the capture cannot be waited on inside it), which would
//! change the behaviour of other tests sharing the process.

use cuda_embed::cudarc::driver::sys;
use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(
    r#"
    extern "C" __global__ void axpb(float* y, float a, float b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * y[i] + b; }
    extern "C" __global__ void copy_from(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_launchers_inside_stream_capture() {
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    // SAFETY: every buffer below is used on one stream only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap(); // the legacy default stream cannot be captured
    let n = 4096usize;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let mut x = stream.alloc_zeros::<f32>(n).unwrap();
    let mut y = stream.alloc_zeros::<f32>(n).unwrap();
    stream.synchronize().unwrap();
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL).unwrap();
    // SAFETY: both kernels stay within n elements.
    unsafe {
        axpb::launch(&stream, cfg, &mut x, 1.0, 1.0, n as i32).unwrap(); // x += 1
        copy_from::launch(&stream, cfg, &x, &mut y, n as i32).unwrap(); // y = x
        axpb::launch(&stream, cfg, &mut y, 2.0, 0.0, n as i32).unwrap(); // y *= 2
    }
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .expect("a captured graph");
    // Nothing ran during capture.
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 0.0));
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    stream.synchronize().unwrap();
    assert!(stream.clone_dtoh(&x).unwrap().iter().all(|&v| v == 3.0));
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 6.0));
}

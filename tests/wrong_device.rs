//! Device memory of another GPU (or another context) passed to a launch: an `Error` naming the
//! kernel, the parameter and both devices, before the driver is called — never a kernel that
//! faults with the sticky `CUDA_ERROR_ILLEGAL_ADDRESS` and leaves the context unusable.
//!
//! The two-GPU test skips with a message on fewer than 2 devices (and fails then only when
//! CUDA_EMBED_REQUIRE_MULTI_GPU is set); the one-GPU test uses a second, non-primary context on
//! device 0, whose memory the primary context may not use either.

use cuda_embed::args::{In, Out};
use cuda_embed::{
    cuda_kernel, elementwise_kernel, Arg, CudaContext, CudaStream, ElementwiseProgram, Error, Kernel, LaunchConfig,
    Program,
};
use std::sync::Arc;

cuda_kernel!(
    r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#
);

elementwise_kernel!(ew_saxpy, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x + y");

const N: usize = 1024;

/// The launch error's cause, for messages that must name the parameter and both devices.
fn launch_cause(e: Error, kernel: &str) -> String {
    match e {
        Error::Launch { kernel: k, cause, fix, .. } => {
            assert_eq!(k, kernel);
            assert!(fix.is_some_and(|f| f.contains("copy the buffer")), "a fix is offered");
            cause
        }
        other => panic!("expected Error::Launch, got {other:?}"),
    }
}

/// Every launch path refuses `foreign` memory on `stream`; `what` says what the message must name.
fn refuses_foreign_memory(stream: &Arc<CudaStream>, foreign: &Arc<CudaStream>, expect: &[&str]) {
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let x_foreign = foreign.clone_htod(&vec![1.0f32; N]).unwrap();
    let mut y_foreign = foreign.alloc_zeros::<f32>(N).unwrap();
    let x = stream.clone_htod(&vec![1.0f32; N]).unwrap();
    let mut y = stream.alloc_zeros::<f32>(N).unwrap();

    // The generated launcher: the read-only input, then the written output.
    let e = unsafe { saxpy::launch(stream, cfg, 2.0, &x_foreign, &mut y, N as i32) }.unwrap_err();
    let cause = launch_cause(e, "saxpy");
    assert!(cause.contains("parameter `x`"), "{cause}");
    expect.iter().for_each(|w| assert!(cause.contains(w), "`{w}` in: {cause}"));
    let e = unsafe { saxpy::launch(stream, cfg, 2.0, &x, &mut y_foreign, N as i32) }.unwrap_err();
    assert!(launch_cause(e, "saxpy").contains("parameter `y`"));
    // A view of foreign memory.
    let e = unsafe { saxpy::launch(stream, cfg, 2.0, &x_foreign.slice(..), &mut y, N as i32) }.unwrap_err();
    assert!(launch_cause(e, "saxpy").contains("parameter `x`"));

    // The typed kernel value.
    let k: Kernel<(f32, In<f32>, Out<f32>, i32)> = saxpy::KERNEL;
    let e = unsafe { k.launch(stream, cfg, (2.0f32, &x, &mut y_foreign, N as i32)) }.unwrap_err();
    let cause = launch_cause(e, "saxpy");
    assert!(cause.contains("parameter #2"), "{cause}");

    // The safe elementwise launchers, automatic and with the caller's configuration.
    let e = ew_saxpy::launch(stream, &x_foreign, 2.0, &mut y).unwrap_err();
    let cause = launch_cause(e, "ew_saxpy");
    assert!(cause.contains("parameter `x`"), "{cause}");
    expect.iter().for_each(|w| assert!(cause.contains(w), "`{w}` in: {cause}"));
    let e = ew_saxpy::launch_with(stream, cfg, &x, 2.0, &mut y_foreign).unwrap_err();
    assert!(launch_cause(e, "ew_saxpy").contains("parameter `y`"));

    // A run-time program's dynamic argument list (needs NVRTC on the machine).
    if cuda_embed::nvrtc::is_available() {
        let ew = ElementwiseProgram::new("ew_axpy", "float x, scalar float a", "float y", "y = a * x + y")
            .unwrap()
            .build(stream.context(), "")
            .unwrap();
        let a = 2.0f32;
        let e = ew.launch(stream, &mut [Arg::slice(&x_foreign), Arg::value(&a), Arg::slice_mut(&mut y)]).unwrap_err();
        let Error::Launch { kernel, cause, .. } = e else { panic!("expected Error::Launch, got {e:?}") };
        assert!(kernel.contains("ew_axpy") && cause.contains("parameter `x`"), "{kernel}: {cause}");
        let program = Program::new(
            r#"extern "C" __global__ void fill(float* y, float v, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = v;
            }"#,
        )
        .name("wrong_device.cu");
        let module = program.load(stream.context()).unwrap();
        let fill = module.kernel("fill").unwrap();
        let (v, n) = (3.0f32, N as i32);
        let e =
            unsafe { fill.launch(stream, cfg, &mut [Arg::slice_mut(&mut y_foreign), Arg::value(&v), Arg::value(&n)]) }
                .unwrap_err();
        let cause = launch_cause(e, "fill");
        assert!(cause.contains("parameter #0"), "{cause}");
        unsafe { fill.launch(stream, cfg, &mut [Arg::slice_mut(&mut y), Arg::value(&v), Arg::value(&n)]) }.unwrap();
        assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 3.0));
    } else {
        eprintln!("wrong_device: libnvrtc not found, Program launch not checked");
    }

    // Nothing reached the driver: the stream's context is fine, launches and copies work.
    stream.memset_zeros(&mut y).unwrap();
    unsafe { saxpy::launch(stream, cfg, 2.0, &x, &mut y, N as i32) }.unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().all(|&v| v == 2.0), "saxpy after the refused launches");
    let more = stream.alloc_zeros::<f32>(N).unwrap();
    assert_eq!(stream.clone_dtoh(&more).unwrap().len(), N);
    stream.synchronize().unwrap();
    // The other context is fine too, and its own launches work there.
    unsafe { saxpy::launch(foreign, cfg, 1.0, &x_foreign, &mut y_foreign, N as i32) }.unwrap();
    assert!(foreign.clone_dtoh(&y_foreign).unwrap().iter().all(|&v| v == 1.0));
}

#[test]
#[ignore = "needs 2 CUDA GPUs"]
fn a_buffer_of_another_gpu_is_an_error_and_the_context_stays_usable() {
    let devices = CudaContext::device_count().unwrap_or(0) as usize;
    if devices < 2 {
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_MULTI_GPU").is_none(), "{devices} GPU(s), 2 required");
        eprintln!("wrong_device: {devices} GPU(s); the two-GPU test needs 2 — not run");
        return;
    }
    let (ctx0, ctx1) = (cuda_embed::context(0).unwrap(), cuda_embed::context(1).unwrap());
    refuses_foreign_memory(&ctx0.default_stream(), &ctx1.default_stream(), &["device 1", "device 0"]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn memory_of_another_context_on_the_same_gpu_is_an_error() {
    let primary = cuda_embed::context(0).expect("this test needs a CUDA GPU");
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    refuses_foreign_memory(&primary.default_stream(), &other.default_stream(), &["another CUDA context on device 0"]);
    // Rebind the primary context for whatever runs next on this thread.
    primary.bind_to_thread().unwrap();
}

/// Two `CudaContext` handles of the same primary context (`context(0)` hands out one per device;
/// each cudarc `CudaContext::new` makes another) are the same context: memory of either is taken
/// by launches on the other's streams. The launch compares the handles first and, when they
/// differ, the driver's contexts.
#[test]
#[ignore = "needs a CUDA GPU"]
fn memory_of_another_handle_of_the_same_context_is_taken() {
    let (a, b) = (cuda_embed::context(0).unwrap(), CudaContext::new(0).unwrap());
    assert!(!Arc::ptr_eq(&a, &b) && a.cu_ctx() == b.cu_ctx(), "two handles of the primary context");
    let (sa, sb) = (a.default_stream(), b.default_stream());
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let x = sb.clone_htod(&vec![1.0f32; N]).unwrap();
    let mut y = sb.alloc_zeros::<f32>(N).unwrap();
    sb.synchronize().unwrap();
    unsafe { saxpy::launch(&sa, cfg, 2.0, &x, &mut y, N as i32) }.unwrap();
    let k: Kernel<(f32, In<f32>, Out<f32>, i32)> = saxpy::KERNEL;
    unsafe { k.launch(&sa, cfg, (2.0f32, &x, &mut y, N as i32)) }.unwrap();
    assert!(sa.clone_dtoh(&y).unwrap().iter().all(|&v| v == 4.0));
}

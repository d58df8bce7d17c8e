//! A launch skips making its context current when this thread last did so; code that changes the
//! current context behind its back (another library, cudarc for another device) must not break
//! it: the launch binds and tries again. The same for the automatic launches of elementwise
//! kernels, which skip the limit checks (their configuration is valid by construction) but not
//! this.

use cuda_embed::cudarc::driver::sys;
use cuda_embed::{cuda_kernel, elementwise_kernel, LaunchConfig};

cuda_kernel!(
    r#"
    extern "C" __global__ void bump(int* y) { y[threadIdx.x] += 1; }
"#
);

cuda_kernel!(
    r#"
    extern "C" __global__ void count_blocks(int* y) { if (threadIdx.x == 0) atomicAdd(&y[blockIdx.x], 1); }
"#,
    archs = [90]
);

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

elementwise_kernel!(accumulate, inputs = "T x", outputs = "T y", operation = "y = y + x", types = ["int"]);

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_launch_after_someone_else_changed_the_current_context() {
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    let stream = ctx.default_stream();
    let mut y = stream.alloc_zeros::<i32>(32).unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    unsafe { bump::launch(&stream, cfg, &mut y).unwrap() };
    for _ in 0..3 {
        // Another library leaves no context current on this thread.
        // SAFETY: a null context is a valid argument (unbinds).
        assert_eq!(unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) }, sys::CUresult::CUDA_SUCCESS);
        unsafe { bump::launch(&stream, cfg, &mut y).unwrap() };
        // And from another thread, where nothing is current yet.
        std::thread::scope(|s| {
            s.spawn(|| unsafe { bump::launch(&stream, cfg, &mut y).unwrap() });
        });
    }
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [7; 32]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_elementwise_launch_after_someone_else_changed_the_current_context() {
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    let stream = ctx.default_stream();
    let n = 1000;
    let x = stream.clone_htod(&vec![1i32; n]).unwrap();
    let mut y = stream.alloc_zeros::<i32>(n).unwrap();
    accumulate::launch(&stream, &x, &mut y).unwrap();
    for _ in 0..3 {
        // Another library leaves no context current on this thread.
        // SAFETY: a null context is a valid argument (unbinds).
        assert_eq!(unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) }, sys::CUresult::CUDA_SUCCESS);
        accumulate::launch(&stream, &x, &mut y).unwrap();
        // And from another thread, where nothing is current yet.
        std::thread::scope(|s| {
            s.spawn(|| accumulate::launch(&stream, &x, &mut y).unwrap());
        });
    }
    assert_eq!(stream.clone_dtoh(&y).unwrap(), vec![7; n]);
}

/// Cluster launches skip the bind like plain ones (thread-block clusters need sm_90; the test says
/// so and returns on an older GPU).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_cluster_launch_after_someone_else_changed_the_current_context() {
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    if ctx.compute_capability().unwrap().0 < 9 {
        eprintln!("thread-block clusters need compute capability 9.0: skipped on this GPU");
        return;
    }
    let stream = ctx.default_stream();
    let mut y = stream.alloc_zeros::<i32>(4).unwrap();
    let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    unsafe { count_blocks::launch_cluster(&stream, cfg, (2, 1, 1), &mut y).unwrap() };
    for _ in 0..3 {
        // SAFETY: a null context is a valid argument (unbinds).
        assert_eq!(unsafe { sys::cuCtxSetCurrent(std::ptr::null_mut()) }, sys::CUresult::CUDA_SUCCESS);
        unsafe { count_blocks::launch_cluster(&stream, cfg, (2, 1, 1), &mut y).unwrap() };
        std::thread::scope(|s| {
            s.spawn(|| unsafe { count_blocks::launch_cluster(&stream, cfg, (2, 1, 1), &mut y).unwrap() });
        });
    }
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [7; 4]);
    // A grid that is not a whole number of clusters is still refused before the driver.
    let odd = LaunchConfig { grid_dim: (3, 1, 1), ..cfg };
    let e = unsafe { count_blocks::launch_cluster(&stream, odd, (2, 1, 1), &mut y) }.unwrap_err();
    assert!(e.to_string().contains("whole number of clusters"), "{e}");
}

/// `GraphExec::synchronize` on a per-thread stream waits for that stream of the *stream's*
/// context, whatever context (or none) this thread has current: the handle names a stream of the
/// current context, so the wait must bind the stream's first. Before the fix it waited for the
/// other context's per-thread stream (returning at once, the graph still running) or failed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_wait_binds_the_streams_context() {
    use cuda_embed::{CudaContext, Graph};
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let stream = ctx.per_thread_stream();
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // About half a second at 2 GHz: far longer than the host takes to reach the wait.
    let cycles: i64 = 1 << 30;
    for someone_else in [Some(&other), None] {
        ctx.bind_to_thread().unwrap();
        let flag = stream.alloc_zeros::<i32>(1).unwrap();
        stream.synchronize().unwrap();
        let mut g = Graph::new(&ctx).unwrap();
        spin::node(&mut g, one, &flag, cycles).unwrap();
        let exec = g.instantiate().unwrap();
        // SAFETY: the kernel writes its one-element flag only.
        unsafe { exec.launch(&stream).unwrap() };
        // Another library makes another context current on this thread, or none.
        let current = someone_else.map_or(std::ptr::null_mut(), |c| c.cu_ctx());
        // SAFETY: a live context, or null (unbinds).
        assert_eq!(unsafe { sys::cuCtxSetCurrent(current) }, sys::CUresult::CUDA_SUCCESS);
        exec.synchronize(&stream).unwrap();
        // The graph's work on `ctx`'s per-thread stream is done: asked with `ctx` current.
        ctx.bind_to_thread().unwrap();
        // SAFETY: `ctx` is current; the per-thread handle names its stream on this thread.
        let done = unsafe { sys::cuStreamQuery(stream.cu_stream()) };
        assert_eq!(done, sys::CUresult::CUDA_SUCCESS, "the wait returned before the graph finished");
        assert_eq!(stream.clone_dtoh(&flag).unwrap(), [1]);
    }
}

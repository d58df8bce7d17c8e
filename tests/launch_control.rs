//! Launch control on a GPU: grids, shared memory limits, cooperative and cluster launches, kernel
//! attributes, timed launches, occupancy. `#[ignore]`d without a GPU.

use cuda_embed::{cuda_kernel, CudaContext, Error, LaunchConfig};
use std::sync::Arc;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

fn cfg(grid: (u32, u32, u32), block: (u32, u32, u32), smem: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: smem }
}

cuda_kernel!(
    r#"
    extern "C" __global__ void where3(unsigned* out) {
        unsigned bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
        unsigned tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
        unsigned x = bx * blockDim.x + tx, y = by * blockDim.y + ty, z = bz * blockDim.z + tz;
        unsigned w = gridDim.x * blockDim.x, h = gridDim.y * blockDim.y;
        out[(z * h + y) * w + x] = (x << 20) | (y << 10) | z;
    }
    extern "C" __global__ void reverse(const float* in, float* out, int n) {
        extern __shared__ float tile[];
        int i = threadIdx.x;
        if (i < n) tile[i] = in[i];
        __syncthreads();
        if (i < n) out[i] = tile[n - 1 - i];
    }
    extern "C" __global__ void __launch_bounds__(128) bounded(int* out) { out[threadIdx.x] = threadIdx.x; }
    extern "C" __global__ void spin(long long cycles, int* out) {
        long long start = clock64();
        while (clock64() - start < cycles) {}
        out[0] = 1;
    }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_and_three_d_grids_compute_the_right_indices() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    for (grid, block) in [((4, 3, 1), (8, 4, 1)), ((2, 3, 4), (4, 2, 2))] {
        let (w, h, d) = (grid.0 * block.0, grid.1 * block.1, grid.2 * block.2);
        let mut out = stream.alloc_zeros::<u32>((w * h * d) as usize).unwrap();
        unsafe { where3::launch(&stream, cfg(grid, block, 0), &mut out).unwrap() };
        let got = stream.clone_dtoh(&out).unwrap();
        for z in 0..d {
            for y in 0..h {
                for x in 0..w {
                    assert_eq!(got[((z * h + y) * w + x) as usize], (x << 20) | (y << 10) | z, "({x},{y},{z})");
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dynamic_shared_memory_and_its_limit() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 1000usize;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = stream.clone_htod(&input).unwrap();
    let mut y = stream.alloc_zeros::<f32>(n).unwrap();
    let smem = (n * 4) as u32;
    unsafe { reverse::launch(&stream, cfg((1, 1, 1), (1024, 1, 1), smem), &x, &mut y, n as i32).unwrap() };
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().enumerate().all(|(i, v)| *v == input[n - 1 - i]));

    // 100 KiB is above the default 48 KiB limit: an Error naming the limit and the fix ...
    let big = 100 * 1024;
    let err = unsafe { reverse::launch(&stream, cfg((1, 1, 1), (1024, 1, 1), big), &x, &mut y, n as i32) }.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Launch { .. }), "{msg}");
    assert!(msg.contains("102400") && msg.contains("set_max_dynamic_shared_memory"), "{msg}");
    // ... until the kernel's limit is raised.
    reverse::set_max_dynamic_shared_memory(&ctx, big).unwrap();
    assert_eq!(reverse::attributes(&ctx).unwrap().max_dynamic_shared_bytes, big);
    unsafe { reverse::launch(&stream, cfg((1, 1, 1), (1024, 1, 1), big), &x, &mut y, n as i32).unwrap() };
    stream.synchronize().unwrap();
    // More than the device can ever give is refused with the device's number.
    let msg = reverse::set_max_dynamic_shared_memory(&ctx, 1 << 20).unwrap_err().to_string();
    assert!(msg.contains("1048576") && msg.contains("at most"), "{msg}");
    reverse::set_preferred_shared_carveout(&ctx, 100).unwrap();
    assert!(reverse::set_preferred_shared_carveout(&ctx, 101).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn attributes_match_launch_bounds() {
    let ctx = ctx();
    let a = bounded::attributes(&ctx).unwrap();
    assert_eq!(a.max_threads_per_block, 128, "{a:?}");
    assert!(a.registers > 0 && a.registers <= 255, "{a:?}");
    let (major, minor) = ctx.compute_capability().unwrap();
    assert_eq!(a.binary_version, (major * 10 + minor) as u32, "{a:?}");
    assert!(a.ptx_version >= 80, "{a:?}");
    let r = reverse::attributes(&ctx).unwrap();
    assert_eq!(r.static_shared_bytes, 0, "extern shared memory is dynamic");
    assert_eq!(where3::attributes(&ctx).unwrap().max_threads_per_block, 1024);
}

/// Kernels whose block limits come from different places: the device (1024), registers,
/// `__launch_bounds__`, both, `__maxnreg__`.
mod limits {
    cuda_embed::cuda_kernel!(
        r#"
        #include "kernels/heavy.cuh"
        extern "C" __global__ void small(float* y) { y[threadIdx.x] = 1.0f; }
        extern "C" __global__ void __launch_bounds__(256, 2) bounded_min(float* y) { y[threadIdx.x] = 2.0f; }
        extern "C" __global__ void __maxnreg__(32) few_registers(float* y) { y[threadIdx.x] = 3.0f; }
        extern "C" __global__ void heavy(float* y, int n) { y[threadIdx.x] = heavy_sum(y, n); }
        // As many live values as registers can hold, within a bound of 256 threads.
        extern "C" __global__ void __launch_bounds__(256) heavier(float* y, int n) {
            float acc[192];
            #pragma unroll
            for (int j = 0; j < 192; j++) acc[j] = y[threadIdx.x + j * n];
            #pragma unroll
            for (int k = 0; k < 4; k++) {
                #pragma unroll
                for (int j = 0; j < 192; j++) acc[j] = acc[j] * acc[(j + k) % 192] + 1.0f;
            }
            float s = 0.0f;
            #pragma unroll
            for (int j = 0; j < 192; j++) s += acc[j];
            y[threadIdx.x] = s;
        }
    "#
    );
}

/// The same kernels compiled by NVRTC at first use: their limits are read from the compiled cubin.
mod limits_nvrtc {
    cuda_embed::cuda_kernel!(
        r#"
        #include "kernels/heavy.cuh"
        extern "C" __global__ void small_rt(float* y) { y[threadIdx.x] = 1.0f; }
        extern "C" __global__ void __launch_bounds__(256, 2) bounded_min_rt(float* y) { y[threadIdx.x] = 2.0f; }
        extern "C" __global__ void heavy_rt(float* y, int n) { y[threadIdx.x] = heavy_sum(y, n); }
    "#,
        compiler = "nvrtc"
    );
}

/// The same heavy kernel built for sm_80 only: on a newer GPU no cubin is for its architecture,
/// so its limit is not known before the load and the driver is asked.
mod older {
    cuda_embed::cuda_kernel!(
        r#"
        #include "kernels/heavy.cuh"
        extern "C" __global__ void heavy_old(float* y, int n) { y[threadIdx.x] = heavy_sum(y, n); }
    "#,
        archs = [80]
    );
}

/// The block limits read from cubins (what a first launch trusts instead of asking the driver:
/// the build's, from the fatbin's cubins; NVRTC's, from the cubin compiled at first use) are the
/// driver's own `MAX_THREADS_PER_BLOCK`, for every kind of limit.
#[test]
#[ignore = "needs a CUDA GPU"]
fn known_block_limits_are_the_drivers() {
    let ctx = ctx();
    let (major, minor) = ctx.compute_capability().unwrap();
    let arch = (major * 10 + minor) as u32;
    let module = limits::small::module();
    let spec = module.spec();
    let here: Vec<&(u32, &[u32])> = spec.image.block_limits().iter().filter(|(a, _)| *a == arch).collect();
    if here.is_empty() {
        eprintln!("this sm_{arch} GPU has no cubin of its own in the fatbin (archs 80, 90): no build-time limits");
    }
    let attrs = [
        limits::small::attributes(&ctx),
        limits::bounded_min::attributes(&ctx),
        limits::few_registers::attributes(&ctx),
        limits::heavy::attributes(&ctx),
        limits::heavier::attributes(&ctx),
    ];
    for (target, threads) in here {
        assert_eq!(threads.len(), spec.kernels.len(), "sm_{target}: {threads:?}");
        for (k, kernel) in spec.kernels.iter().enumerate() {
            // Kernels are listed in source order, as `attrs` is.
            let a = attrs[k].as_ref().unwrap();
            println!(
                "sm_{target} {}: {} registers, read at build time {} threads, driver {}",
                kernel.name, a.registers, threads[k], a.max_threads_per_block
            );
            assert_eq!(threads[k], a.max_threads_per_block, "sm_{target} {}: {a:?}", kernel.name);
        }
    }
    // What the launch checks hold, before any launch: the build's limit where it is known,
    // else the driver's; a module compiled by NVRTC, from its cubin; a module with no cubin for
    // this GPU (sm_80 only), from the driver.
    let known = [
        (limits::small::KERNEL.known_block_limit(&ctx), &attrs[0]),
        (limits::bounded_min::KERNEL.known_block_limit(&ctx), &attrs[1]),
        (limits::few_registers::KERNEL.known_block_limit(&ctx), &attrs[2]),
        (limits::heavy::KERNEL.known_block_limit(&ctx), &attrs[3]),
        (limits::heavier::KERNEL.known_block_limit(&ctx), &attrs[4]),
        (limits_nvrtc::small_rt::KERNEL.known_block_limit(&ctx), &limits_nvrtc::small_rt::attributes(&ctx)),
        (limits_nvrtc::bounded_min_rt::KERNEL.known_block_limit(&ctx), &limits_nvrtc::bounded_min_rt::attributes(&ctx)),
        (limits_nvrtc::heavy_rt::KERNEL.known_block_limit(&ctx), &limits_nvrtc::heavy_rt::attributes(&ctx)),
        (older::heavy_old::KERNEL.known_block_limit(&ctx), &older::heavy_old::attributes(&ctx)),
    ];
    for (i, (limit, driver)) in known.iter().enumerate() {
        let (limit, driver) = (*limit.as_ref().unwrap(), driver.as_ref().unwrap());
        println!("kernel #{i}: checked against {limit} threads, driver {}", driver.max_threads_per_block);
        assert_eq!(limit, driver.max_threads_per_block, "kernel #{i}: {driver:?}");
    }
    assert!(limits_nvrtc::heavy_rt::attributes(&ctx).unwrap().max_threads_per_block < 1024);
    // The kernels this test means to cover: a register-bound one under 1024, a bound one.
    let heavy = attrs[3].as_ref().unwrap();
    assert!(heavy.registers > 64 && heavy.max_threads_per_block < 1024, "{heavy:?}");
    assert_eq!(attrs[1].as_ref().unwrap().max_threads_per_block, 256);
}

/// A block over a kernel's limit is refused before the driver is called, whether the limit
/// was read at build time or (no cubin for this GPU) from the driver; a block at the limit runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_block_over_the_limit_is_refused_with_the_limit() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 1024i32;
    let mut y = stream.alloc_zeros::<f32>(64 * n as usize).unwrap();
    let max = limits::heavy::attributes(&ctx).unwrap().max_threads_per_block;
    let max_old = older::heavy_old::attributes(&ctx).unwrap().max_threads_per_block;
    for over in [max + 32, 1024] {
        if over <= max {
            continue;
        }
        let err = unsafe { limits::heavy::launch(&stream, cfg((1, 1, 1), (over, 1, 1), 0), &mut y, n) }.unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Launch { .. }) && msg.contains(&format!("limit of {max} threads")), "{msg}");
    }
    unsafe { limits::heavy::launch(&stream, cfg((1, 1, 1), (max, 1, 1), 0), &mut y, n).unwrap() };
    if max_old < 1024 {
        let err = unsafe { older::heavy_old::launch(&stream, cfg((1, 1, 1), (max_old + 32, 1, 1), 0), &mut y, n) }
            .unwrap_err();
        assert!(err.to_string().contains(&format!("limit of {max_old} threads")), "{err}");
    }
    unsafe { older::heavy_old::launch(&stream, cfg((1, 1, 1), (max_old, 1, 1), 0), &mut y, n).unwrap() };
    stream.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn timed_launch_agrees_with_an_event_pair() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut out = stream.alloc_zeros::<i32>(1).unwrap();
    let cycles = 20_000_000i64; // ~10 ms at ~2 GHz
    let one = cfg((1, 1, 1), (1, 1, 1), 0);
    unsafe { spin::launch(&stream, one, cycles / 100, &mut out).unwrap() }; // warm up
    let timed = unsafe { spin::launch_timed(&stream, one, cycles, &mut out).unwrap() };
    let flags = Some(cuda_embed::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = stream.record_event(flags).unwrap();
    unsafe { spin::launch(&stream, one, cycles, &mut out).unwrap() };
    let end = stream.record_event(flags).unwrap();
    end.synchronize().unwrap();
    let by_hand = start.elapsed_ms(&end).unwrap();
    assert!(timed > 0.0 && by_hand > 0.0);
    let ratio = timed / by_hand;
    assert!((0.5..=2.0).contains(&ratio), "timed {timed} ms vs by hand {by_hand} ms");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn occupancy_config_covers_the_elements() {
    let ctx = ctx();
    let c = bounded::occupancy_config(&ctx, 10_000, 0).unwrap();
    assert!(c.block_dim.0 > 0 && c.block_dim.0 <= 128, "{c:?}");
    assert!(c.grid_dim.0 * c.block_dim.0 >= 10_000, "{c:?}");
    let c = where3::occupancy_config(&ctx, 1, 0).unwrap();
    assert_eq!(c.grid_dim.0, 1);
    // More dynamic shared memory than any block may have: an error that says what is wrong
    // (the driver may answer "success, no block size"), never "CUDA_SUCCESS" as the cause.
    let e = bounded::occupancy_config(&ctx, 10_000, 64 << 20).unwrap_err();
    let text = e.to_string();
    assert!(!text.contains("CUDA_SUCCESS"), "{text}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn grid_limits_are_checked_before_launch() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut out = stream.alloc_zeros::<u32>(1).unwrap();
    let msg = unsafe { where3::launch(&stream, cfg((1, 70_000, 1), (1, 1, 1), 0), &mut out) }.unwrap_err().to_string();
    assert!(msg.contains("70000") && msg.contains("65535"), "{msg}");
    let msg = unsafe { where3::launch(&stream, cfg((0, 1, 1), (1, 1, 1), 0), &mut out) }.unwrap_err().to_string();
    assert!(msg.contains("at least 1"), "{msg}");
}

cuda_kernel!(
    r#"
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    // Every block writes its id, the whole grid syncs, then each block sums what all blocks wrote.
    extern "C" __global__ void grid_sum(int* slots, int* sums) {
        cg::grid_group grid = cg::this_grid();
        if (threadIdx.x == 0) slots[blockIdx.x] = blockIdx.x + 1;
        grid.sync();
        if (threadIdx.x == 0) {
            int s = 0;
            for (int b = 0; b < gridDim.x; ++b) s += slots[b];
            sums[blockIdx.x] = s;
        }
    }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn cooperative_launch_syncs_the_grid_and_rejects_oversized_grids() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let sms = ctx
        .attribute(cuda_embed::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap() as u32;
    let blocks = sms; // one block per SM always fits
    let mut slots = stream.alloc_zeros::<i32>(blocks as usize).unwrap();
    let mut sums = stream.alloc_zeros::<i32>(blocks as usize).unwrap();
    unsafe {
        grid_sum::launch_cooperative(&stream, cfg((blocks, 1, 1), (256, 1, 1), 0), &mut slots, &mut sums).unwrap()
    };
    let want = (blocks * (blocks + 1) / 2) as i32;
    assert_eq!(stream.clone_dtoh(&sums).unwrap(), vec![want; blocks as usize]);

    let too_many = sms * 64; // at most 2048 threads (8 blocks of 256) fit per SM
    let mut slots = stream.alloc_zeros::<i32>(too_many as usize).unwrap();
    let mut sums = stream.alloc_zeros::<i32>(too_many as usize).unwrap();
    let err =
        unsafe { grid_sum::launch_cooperative(&stream, cfg((too_many, 1, 1), (256, 1, 1), 0), &mut slots, &mut sums) }
            .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("cooperative grid") && msg.contains(&too_many.to_string()), "{msg}");
}

cuda_kernel!(
    r#"
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    extern "C" __global__ void cluster_rank(unsigned* out) {
        cg::cluster_group cluster = cg::this_cluster();
        if (threadIdx.x == 0) out[blockIdx.x] = cluster.block_rank() | (cluster.num_blocks() << 8);
    }
"#,
    archs = [90]
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn cluster_launch_on_hopper() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut out = stream.alloc_zeros::<u32>(8).unwrap();
    let (major, _) = ctx.compute_capability().unwrap();
    let result = unsafe { cluster_rank::launch_cluster(&stream, cfg((8, 1, 1), (32, 1, 1), 0), (4, 1, 1), &mut out) };
    if major < 9 {
        assert!(result.unwrap_err().to_string().contains("compute capability 9.0"));
        return;
    }
    result.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    assert_eq!(got, [0, 1, 2, 3, 0, 1, 2, 3].map(|r| r | (4 << 8)));
    // A grid that is not a whole number of clusters is refused before the driver.
    let msg = unsafe { cluster_rank::launch_cluster(&stream, cfg((6, 1, 1), (32, 1, 1), 0), (4, 1, 1), &mut out) }
        .unwrap_err()
        .to_string();
    assert!(msg.contains("whole number of clusters"), "{msg}");
}

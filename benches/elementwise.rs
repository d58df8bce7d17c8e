//! `elementwise_kernel!` against a hand-written C++ kernel of the same operation (one element per
//! thread, 256 threads, through `cuda_kernel!`) and device-to-device copy bandwidth, in one process
//! on one GPU; plus the host cost of a launch on a small array against a generated `cuda_kernel!`
//! launch of an equivalent kernel. CuPy's `ElementwiseKernel` is timed by `benches/elementwise.py`
//! in the same device call. First, misaligned views: saxpy on 2^26 f32 through views at element offsets
//! (x, y) against the aligned launch, in the same process.
//!
//! GPU time: CUDA events around 20 launches, median of 15 repetitions, after warm-up; bandwidth
//! counts each input read once and each output written once (saxpy: 12 bytes per f32 element).
//!
//! Run: `cargo bench --bench elementwise` (or `bash .gpu/run bench elementwise`).

mod common;

use cuda_embed::cudarc::driver::{CudaSlice, CudaStream};
use cuda_embed::{bf16, cuda_kernel, elementwise_kernel, f16, LaunchConfig};
use std::sync::Arc;
use std::time::Instant;

elementwise_kernel!(
    ew_saxpy,
    inputs = "T x, scalar T a",
    outputs = "T y",
    operation = "y = a * x + y",
    types = ["float", "__half", "__nv_bfloat16"],
    preamble = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>",
    archs = [90],
);

cuda_kernel!(
    r#"
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    template<typename T>
    __global__ void cxx_saxpy(T a, const T* __restrict__ x, T* __restrict__ y, long long n) {
        long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    extern "C" __global__ void cxx_saxpy_small(float a, const float* __restrict__ x, float* __restrict__ y, long long n) {
        long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#,
    instances = ["cxx_saxpy<float>", "cxx_saxpy<__half>", "cxx_saxpy<__nv_bfloat16>"],
    archs = [90]
);

const REPS: usize = 15;
const INNER: usize = 20;

/// Median milliseconds per call of `f` (events around INNER calls).
fn time_gpu(stream: &Arc<CudaStream>, f: impl FnMut() -> cuda_embed::Result<()>) -> cuda_embed::Result<f64> {
    common::gpu_ms(stream, (3, REPS, INNER), f)
}

fn gbs(bytes: f64, ms: f64) -> f64 {
    bytes / (ms * 1e-3) / 1e9
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

fn cxx_cfg(n: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (n.div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("elementwise bench: {e}");
        std::process::exit(2);
    }
}

/// f32 saxpy on 2^26 elements through views of `x` and `y` starting at element offsets `(x, y)`,
/// against the aligned launch (offsets 0, 0) of the same length in the same process: three rounds
/// over the cases in turn, each case's figure the median of its rounds. Prints one row per case
/// with its ratio to the aligned speed (the target for misaligned views is at least 0.95x).
fn misaligned(stream: &Arc<CudaStream>, name: &str) -> cuda_embed::Result<()> {
    let n: usize = 1 << 26;
    let x = stream.clone_htod(&random(n + 4, 5))?;
    let mut y = stream.clone_htod(&random(n + 4, 6))?;
    let cases = [(0usize, 0usize), (1, 0), (1, 1), (1, 2), (0, 1), (3, 1)];
    let mut times = vec![Vec::new(); cases.len()];
    for _round in 0..3 {
        for (c, &(ox, oy)) in cases.iter().enumerate() {
            let (xv, mut yv) = (x.slice(ox..ox + n), y.slice_mut(oy..oy + n));
            times[c].push(time_gpu(stream, || ew_saxpy::launch(stream, &xv, 2.0f32, &mut yv))?);
        }
    }
    let ms: Vec<f64> = times.into_iter().map(common::median).collect();
    println!("misaligned views on {name}: f32 saxpy, 2^26 elements, x and y views at element offsets");
    println!("{:<44} {:>9} {:>9} {:>11}", "offsets (x, y)", "ms", "GB/s", "vs aligned");
    for (&(ox, oy), t) in cases.iter().zip(&ms) {
        let label =
            if ox == 0 && oy == 0 { "(0, 0) aligned: vector path".to_string() } else { format!("({ox}, {oy})") };
        println!("{label:<44} {t:>9.4} {:>9.0} {:>10.3}x", gbs(12.0 * n as f64, *t), ms[0] / t);
    }
    println!();
    Ok(())
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let name = ctx.name()?;
    misaligned(&stream, &name)?;
    let n: usize = 1 << 28;
    let host = random(n, 42);
    let x = stream.clone_htod(&host)?;
    let mut y = stream.clone_htod(&random(n, 7))?;
    let mut rows: Vec<(String, f64, f64)> = Vec::new();

    // Copy bandwidth (read + write), the ceiling.
    let mut copy_dst: CudaSlice<f32> = stream.alloc_zeros(n)?;
    let copy_ms = time_gpu(&stream, || Ok(stream.memcpy_dtod(&x, &mut copy_dst)?))?;
    let copy = gbs(2.0 * 4.0 * n as f64, copy_ms);
    drop(copy_dst);

    let bytes32 = 12.0 * n as f64;
    let cxx =
        time_gpu(&stream, || unsafe { cxx_saxpy::launch::<f32>(&stream, cxx_cfg(n), 2.0, &x, &mut y, n as i64) })?;
    let ew = time_gpu(&stream, || ew_saxpy::launch(&stream, &x, 2.0f32, &mut y))?;
    let (cxx_g, ew_g) = (gbs(bytes32, cxx), gbs(bytes32, ew));
    rows.push(("f32 saxpy 2^28: C++ one/thread".into(), cxx, cxx_g));
    rows.push(("f32 saxpy 2^28: elementwise_kernel!".into(), ew, ew_g));
    // Configurations around the automatic one, for the record.
    let occ = ew_saxpy::kernel_ref::<f32>().occupancy_config(&ctx, 1, 0)?;
    let block = occ.block_dim.0;
    for blocks_per_sm_x in [1u32, 4, 16] {
        let sms = ctx
            .attribute(cuda_embed::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            as u32;
        let cfg = LaunchConfig {
            grid_dim: (sms * blocks_per_sm_x * (2048 / block).max(1) / 2, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let t = time_gpu(&stream, || ew_saxpy::launch_with(&stream, cfg, &x, 2.0f32, &mut y))?;
        rows.push((format!("  elementwise, grid {} x {block}", cfg.grid_dim.0), t, gbs(bytes32, t)));
    }
    let full =
        LaunchConfig { grid_dim: ((n / 4).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let t = time_gpu(&stream, || ew_saxpy::launch_with(&stream, full, &x, 2.0f32, &mut y))?;
    rows.push((format!("  elementwise, grid {} x 256 (one vector/thread)", full.grid_dim.0), t, gbs(bytes32, t)));
    // Misaligned views: the unrolled scalar path (see `misaligned` for the 2^26 comparison).
    let t = time_gpu(&stream, || ew_saxpy::launch(&stream, &x.slice(1..), 2.0f32, &mut y.slice_mut(1..)))?;
    rows.push(("  elementwise, views at element 1 (unrolled path)".into(), t, gbs(12.0 * (n - 1) as f64, t)));
    drop((x, y));

    // Half precision: 6 bytes per element.
    let mut half_rows = Vec::new();
    {
        let xs: Vec<f16> = host.iter().map(|&v| f16::from_f32(v)).collect();
        let x = stream.clone_htod(&xs)?;
        let mut y = stream.clone_htod(&xs)?;
        let a = f16::from_f32(0.5);
        let c =
            time_gpu(&stream, || unsafe { cxx_saxpy::launch::<f16>(&stream, cxx_cfg(n), a, &x, &mut y, n as i64) })?;
        let e = time_gpu(&stream, || ew_saxpy::launch(&stream, &x, a, &mut y))?;
        half_rows.push(("f16", c, e));
    }
    {
        let xs: Vec<bf16> = host.iter().map(|&v| bf16::from_f32(v)).collect();
        let x = stream.clone_htod(&xs)?;
        let mut y = stream.clone_htod(&xs)?;
        let a = bf16::from_f32(0.5);
        let c =
            time_gpu(&stream, || unsafe { cxx_saxpy::launch::<bf16>(&stream, cxx_cfg(n), a, &x, &mut y, n as i64) })?;
        let e = time_gpu(&stream, || ew_saxpy::launch(&stream, &x, a, &mut y))?;
        half_rows.push(("bf16", c, e));
    }

    // Host cost at n = 1024: launch calls only, batches of 500 with an untimed sync between.
    let small = 1024usize;
    let xs = stream.clone_htod(&random(small, 3))?;
    let mut ys = stream.clone_htod(&random(small, 4))?;
    let cfg = cxx_cfg(small);
    let mut host_ew = Vec::new();
    let mut host_cxx = Vec::new();
    for round in 0..24 {
        for pass in 0..2 {
            stream.synchronize()?;
            let t = Instant::now();
            for _ in 0..500 {
                if (round + pass) % 2 == 0 {
                    ew_saxpy::launch(&stream, &xs, 1.0f32, &mut ys)?;
                } else {
                    unsafe { cxx_saxpy_small::launch(&stream, cfg, 1.0, &xs, &mut ys, small as i64)? };
                }
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / 500.0;
            if round >= 4 {
                if (round + pass) % 2 == 0 {
                    host_ew.push(us)
                } else {
                    host_cxx.push(us)
                }
            }
        }
    }
    stream.synchronize()?;
    // Round by round, the two passes ran back to back: the paired ratio (see benches/common).
    let host_paired = common::Paired::new(&host_ew, &host_cxx);
    let (h_ew, h_cxx) = (common::median(host_ew), common::median(host_cxx));

    println!("elementwise bench on {name} (device 0), 2^28 elements");
    println!("{:<52} {:>9} {:>9}", "case", "ms", "GB/s");
    println!("{:<52} {:>9.4} {:>9.0}", "device-to-device copy (read + write)", copy_ms, copy);
    for (label, ms, g) in &rows {
        println!("{label:<52} {ms:>9.4} {g:>9.0}");
    }
    println!();
    println!("f32 saxpy: elementwise / C++ = {:.3}x, elementwise / copy bandwidth = {:.3}x", ew_g / cxx_g, ew_g / copy);
    for (t, c, e) in &half_rows {
        let b = 6.0 * n as f64;
        println!(
            "{t} saxpy: C++ {:.0} GB/s, elementwise {:.0} GB/s, elementwise / C++ = {:.3}x",
            gbs(b, *c),
            gbs(b, *e),
            c / e
        );
    }
    println!(
        "host cost per launch at n = 1024: elementwise {h_ew:.3} us, cuda_kernel! {h_cxx:.3} us, ratio {:.3}",
        h_ew / h_cxx
    );
    println!("{}", common::paired_header("host cost per launch at n = 1024", host_paired.rounds));
    println!("| elementwise / cuda_kernel! | {} |", host_paired.cell());
    println!("EW_F32_GBS {ew_g:.1}");
    Ok(())
}

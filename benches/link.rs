//! Separate compilation, measured on one GPU in one process; every figure is a ratio against a
//! reference measured here too.
//!
//! 1. Cross-file calls: `poly_loop` calls `axpb`, a small `__device__` function, `iters` times per
//!    element. Reference: the same code in one file (`tests/kernels/link/one_file.cu`); against
//!    it `link = ["math.cu"]` with `lto = true` (target: at least 0.98x its speed) and without LTO
//!    (a real call per iteration).
//! 2. Dynamic parallelism: a parent grid whose 1,000 threads each launch one child grid, against
//!    1,000 host launches of the same child (wall time from a synchronised stream to the last
//!    child's completion).
//! 3. Run-time `Linker`: linking PTX objects (`main` calling `sq` of `math`) with the driver's
//!    linker and with nvJitLink (where found), cold (empty cache) and as a disk-cache hit, against
//!    loading an already linked cubin (`cuModuleLoadData` alone). The cuda.core side of the same
//!    link is `benches/link_cuda_core.py`.
//!
//! Run: `cargo bench --bench link`. The build-time figure (rdc + link against one plain compile)
//! comes from `macros/core/examples/link_build_time.rs`, which needs nvcc, not a GPU.

use cuda_embed::link::{CodeKind, Linker, LinkerKind};
use cuda_embed::{cuda_kernel, LaunchConfig, Program};
use std::time::Instant;

mod one_file {
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/one_file.cu");
}
mod linked {
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/main.cu", link = ["tests/kernels/link/math.cu"]);
}
mod linked_lto {
    cuda_embed::cuda_kernel!(file = "tests/kernels/link/main.cu", link = ["tests/kernels/link/math.cu"], lto = true);
}

cuda_kernel!(
    r#"
    __global__ void bump(float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] += 1.f;
    }
    // Thread c launches the child for slice c of y.
    extern "C" __global__ void spawn(float* y, int n, int count) {
        int c = blockIdx.x * blockDim.x + threadIdx.x;
        if (c < count) bump<<<(n + 255) / 256, 256>>>(y + (size_t)c * n, n);
    }
"#,
    rdc = true,
);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

const MAIN: &str = r#"
    __device__ float sq(float x);
    extern "C" __global__ void squares(float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = sq(y[i]);
    }
"#;
const MATH: &str = "__device__ float sq(float x) { return x * x; }\n";

fn main() -> cuda_embed::Result<()> {
    let ctx = match cuda_embed::context(0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("link bench: {e}");
            std::process::exit(2);
        }
    };
    let stream = ctx.default_stream();
    println!("GPU: {}", ctx.name().unwrap_or_default());

    // 1. Cross-file calls in a tight loop.
    let n = 1usize << 20;
    let iters = 512i32;
    let x = stream.clone_htod(&vec![0.5f32; n])?;
    let mut y = stream.alloc_zeros::<f32>(n)?;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    type Launch<'a> = Box<dyn Fn(&mut cuda_embed::CudaSlice<f32>) -> cuda_embed::Result<f32> + 'a>;
    // SAFETY (each closure): x and y hold n elements.
    let variants: Vec<(&str, Launch)> = vec![
        ("one file", Box::new(|y| unsafe { one_file::poly_loop::launch_timed(&stream, cfg, &x, y, n as i32, iters) })),
        (
            "link, lto",
            Box::new(|y| unsafe { linked_lto::poly_loop::launch_timed(&stream, cfg, &x, y, n as i32, iters) }),
        ),
        (
            "link, no lto",
            Box::new(|y| unsafe { linked::poly_loop::launch_timed(&stream, cfg, &x, y, n as i32, iters) }),
        ),
    ];
    const REPS: usize = 31;
    let mut times = vec![Vec::new(); variants.len()];
    for _ in 0..3 {
        for (_, f) in &variants {
            f(&mut y)?;
        }
    }
    // Interleaved, so drift (clocks, temperature) hits every variant alike.
    for _ in 0..REPS {
        for (i, (_, f)) in variants.iter().enumerate() {
            times[i].push(f64::from(f(&mut y)?));
        }
    }
    let meds: Vec<f64> = times.into_iter().map(median).collect();
    println!("\n| cross-file `__device__` call, {n} elements x {iters} calls | median ms | speed vs one file |");
    println!("|---|---|---|");
    for ((name, _), ms) in variants.iter().zip(&meds) {
        println!("| {name} | {ms:.4} | {:.3}x |", meds[0] / ms);
    }

    // 2. Dynamic parallelism: 1,000 children from the device vs from the host.
    let count = 1000usize;
    let len = 1024usize;
    let mut buf = stream.alloc_zeros::<f32>(count * len)?;
    let child_cfg =
        LaunchConfig { grid_dim: (len.div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let parent_cfg =
        LaunchConfig { grid_dim: (count.div_ceil(128) as u32, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
    let device = |buf: &mut cuda_embed::CudaSlice<f32>| -> cuda_embed::Result<f64> {
        stream.synchronize()?;
        let t0 = Instant::now();
        // SAFETY: count children of len elements each, inside buf.
        unsafe { spawn::launch(&stream, parent_cfg, buf, len as i32, count as i32)? };
        stream.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    };
    let host = |buf: &mut cuda_embed::CudaSlice<f32>| -> cuda_embed::Result<f64> {
        stream.synchronize()?;
        let t0 = Instant::now();
        for c in 0..count {
            let mut part = buf.slice_mut(c * len..(c + 1) * len);
            // SAFETY: the child covers len elements of its slice.
            unsafe { bump::launch(&stream, child_cfg, &mut part, len as i32)? };
        }
        stream.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    };
    for _ in 0..3 {
        device(&mut buf)?;
        host(&mut buf)?;
    }
    let (mut d, mut h) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        d.push(device(&mut buf)?);
        h.push(host(&mut buf)?);
    }
    let (d, h) = (median(d), median(h));
    let total = stream.clone_dtoh(&buf)?;
    let want = (2 * (3 + 15)) as f32;
    assert!(total.iter().all(|v| *v == want), "every child ran: {} != {want}", total[0]);
    println!("\n| {count} child grids of {len} elements | median ms | host time / this |");
    println!("|---|---|---|");
    println!("| launched by a parent kernel (device) | {d:.3} | {:.2}x |", h / d);
    println!("| launched from the host, one by one | {h:.3} | 1.00x |");

    // 3. Run-time Linker.
    let (major, minor) = ctx.compute_capability()?;
    let arch = (major * 10 + minor) as u32;
    let main = Program::new(MAIN).name("main.cu").compile_to(CodeKind::Ptx, arch)?;
    let math = Program::new(MATH).name("math.cu").compile_to(CodeKind::Ptx, arch)?;
    let objects = || Linker::new("bench").object(main.clone()).object(math.clone());
    let cubin = objects().cache_dir(tempfile::tempdir().unwrap().path()).link(&ctx)?;
    // The reference: loading the already linked cubin as a module (no link, no cache lookup).
    let load_only = || -> cuda_embed::Result<f64> {
        let t0 = Instant::now();
        let m = ctx.load_module(cuda_embed::cudarc::nvrtc::Ptx::from_binary(cubin.bytes().to_vec())).map_err(|e| {
            cuda_embed::Error::Driver { call: "cuModuleLoadData", device: 0, cause: cuda_embed::DriverCode(e.0) }
        })?;
        let t = t0.elapsed().as_secs_f64() * 1e3;
        drop(m);
        Ok(t)
    };
    // Median ms of `load` with a cold cache (a fresh directory each time) or a warm one; `None`
    // when nvJitLink is not there.
    let timed = |kind: LinkerKind, cold: bool, cache: bool| -> cuda_embed::Result<Option<f64>> {
        let warm = tempfile::tempdir().unwrap();
        let mut v = Vec::new();
        // 3 rounds of warm-up, left out as `benches/link_cuda_core.py` leaves out its first 3
        // (the first links of a process pay the linker's own start-up), then 9 timed.
        for round in 0..12 {
            let fresh = tempfile::tempdir().unwrap();
            let mut l = objects().with_linker(kind).cache_dir(if cold { fresh.path() } else { warm.path() });
            if !cache {
                l = l.without_cache();
            }
            let attempt = if cold { Ok(()) } else { l.load(&ctx).map(drop) };
            let t0 = Instant::now();
            let m = match attempt.and_then(|()| l.load(&ctx)) {
                Ok(m) => m,
                Err(e) if kind == LinkerKind::NvJitLink => {
                    println!("(nvJitLink: {e})");
                    return Ok(None);
                }
                Err(e) => return Err(e),
            };
            if round >= 3 {
                v.push(t0.elapsed().as_secs_f64() * 1e3);
            }
            assert_eq!(m.from_cache(), !cold && cache);
        }
        Ok(Some(median(v)))
    };
    let reference = median((0..9).map(|_| load_only()).collect::<cuda_embed::Result<Vec<_>>>()?);
    println!("\n| run-time `Linker`, 2 PTX objects (`main` calls `sq` of `math`) | median ms | vs loading the linked cubin |");
    println!("|---|---|---|");
    println!("| load of the linked cubin alone (reference) | {reference:.3} | 1.00x |");
    for (name, kind, cold, cache) in [
        ("driver linker (cuLink), no cache: link + load", LinkerKind::Driver, true, false),
        ("driver linker, cold cache: link + cache write + load", LinkerKind::Driver, true, true),
        ("driver linker, disk-cache hit: key + read + load", LinkerKind::Driver, false, true),
        ("nvJitLink, no cache: link + load", LinkerKind::NvJitLink, true, false),
        ("nvJitLink, cold cache: link + cache write + load", LinkerKind::NvJitLink, true, true),
        ("nvJitLink, disk-cache hit", LinkerKind::NvJitLink, false, true),
    ] {
        match timed(kind, cold, cache)? {
            Some(ms) => println!("| {name} | {ms:.3} | {:.2}x |", ms / reference),
            None => println!("| {name} | n/a (nvJitLink not found) | |"),
        }
    }
    Ok(())
}

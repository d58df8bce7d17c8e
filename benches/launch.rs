//! Host cost per launch: an empty kernel with 4 arguments, launched 100k times each by
//! (1) raw `cuLaunchKernel` through cudarc's sys layer, (2) the generated `launch`, and
//! (3) cudarc's `launch_builder`, interleaved in one process on one stream.
//!
//! Only the launch calls are timed: launches go in batches of 500 with a stream sync between
//! batches (not timed), so the GPU queue never fills and the figure is host cost.
//!
//! Run: `cargo bench --bench launch` (or `bash .gpu/run bench launch` on the GPU machine).

use cuda_embed::cudarc::driver::{sys, DevicePtr, DevicePtrMut, PushKernelArg};
use cuda_embed::cudarc::nvrtc::Ptx;
use cuda_embed::{cuda_kernel, LaunchConfig};
use std::ffi::c_void;
use std::time::Instant;

cuda_kernel!(
    r#"
    extern "C" __global__ void empty4(const float* a, float* b, int n, float s) {}
"#
);

cuda_kernel!(
    r#"
    extern "C" __global__ void empty4_sm90(const float* a, float* b, int n, float s) {}
"#,
    archs = [90]
);

const BATCH: usize = 500;
const ROUNDS: usize = 20;
const PER_ROUND: usize = 5_000; // 20 x 5k = 100k launches per method

fn main() {
    if let Err(e) = run() {
        eprintln!("launch bench: {e}");
        std::process::exit(2);
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let a = stream.alloc_zeros::<f32>(1024)?;
    let mut b = stream.alloc_zeros::<f32>(1024)?;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let (n, s) = (1024i32, 1.0f32);

    // Load through the registry, then take the raw handle for the reference.
    unsafe { empty4::launch(&stream, cfg, &a, &mut b, n, s)? };
    let f = empty4::KERNEL.function(&ctx)?.cu_function();
    // cudarc loads the very same fatbin for its builder.
    let Some(bytes) = empty4::module().spec().image.fatbin_bytes() else {
        eprintln!("launch bench: built without nvcc; the comparison needs the fatbin");
        std::process::exit(2);
    };
    let cudarc_fn = ctx.load_module(Ptx::from_binary(bytes.to_vec()))?.load_function("empty4")?;
    stream.synchronize()?;

    let (pa, _ga) = a.device_ptr(&stream);
    let (pb, _gb) = b.device_ptr(&stream);
    let (pa, pb) = (pa, pb);
    drop((_ga, _gb));
    let cu_stream = stream.cu_stream();

    let mut raw = Vec::new();
    let mut ours = Vec::new();
    let mut builder = Vec::new();
    let mut unchecked = Vec::new();
    for round in 0..ROUNDS + 2 {
        // Rotate the order so no method always runs first.
        for m in 0..4 {
            let method = (m + round) % 4;
            let mut elapsed = 0.0f64;
            for _ in 0..PER_ROUND / BATCH {
                let t0 = Instant::now();
                match method {
                    0 => {
                        for _ in 0..BATCH {
                            let mut args: [*mut c_void; 4] = [
                                &pa as *const u64 as *mut c_void,
                                &pb as *const u64 as *mut c_void,
                                &n as *const i32 as *mut c_void,
                                &s as *const f32 as *mut c_void,
                            ];
                            // SAFETY: `f` is empty4 on this context; args match its parameters.
                            let r = unsafe {
                                sys::cuLaunchKernel(
                                    f,
                                    1,
                                    1,
                                    1,
                                    32,
                                    1,
                                    1,
                                    0,
                                    cu_stream,
                                    args.as_mut_ptr(),
                                    std::ptr::null_mut(),
                                )
                            };
                            assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
                        }
                    }
                    1 => {
                        for _ in 0..BATCH {
                            unsafe { empty4::launch(&stream, cfg, &a, &mut b, n, s)? };
                        }
                    }
                    3 => {
                        // The generated launcher's body with the limit checks left out: what
                        // `launch` costs minus what the checks cost.
                        for _ in 0..BATCH {
                            let (pa, _sa) = a.device_ptr(&stream);
                            let (pb, _sb) = b.device_ptr_mut(&stream);
                            let mut args: [*mut c_void; 4] = [
                                &pa as *const u64 as *mut c_void,
                                &pb as *const u64 as *mut c_void,
                                &n as *const i32 as *mut c_void,
                                &s as *const f32 as *mut c_void,
                            ];
                            // SAFETY: kernel 0 of the module is empty4; args match its parameters.
                            unsafe {
                                cuda_embed::__private::launch_unchecked(*empty4::KERNEL, &stream, &cfg, &mut args)?
                            };
                        }
                    }
                    _ => {
                        for _ in 0..BATCH {
                            let mut l = stream.launch_builder(&cudarc_fn);
                            l.arg(&a).arg(&mut b).arg(&n).arg(&s);
                            unsafe { l.launch(cfg)? };
                        }
                    }
                }
                elapsed += t0.elapsed().as_secs_f64();
                stream.synchronize()?;
            }
            if round >= 2 {
                // The first two rounds are warm-up.
                let ns = elapsed * 1e9 / PER_ROUND as f64;
                [&mut raw, &mut ours, &mut builder, &mut unchecked][method].push(ns);
            }
        }
    }
    let _ = b.device_ptr_mut(&stream);
    let (major, _) = ctx.compute_capability()?;
    let cluster_rows = if major >= 9 { cluster_compare(&stream, &a, &mut b)? } else { None };
    let (r, o, bl, u) = (median(&mut raw), median(&mut ours), median(&mut builder), median(&mut unchecked));
    println!("GPU: {}  launches per method: {}", ctx.name()?, ROUNDS * PER_ROUND);
    println!("| method | ns/launch (median of {ROUNDS} rounds) | vs raw |");
    println!("|---|---|---|");
    println!("| raw cuLaunchKernel (cudarc sys) | {r:.0} | 1.000x |");
    println!("| cuda-embed generated launch (limits checked) | {o:.0} | {:.3}x |", o / r);
    println!("| same launcher, limit checks left out | {u:.0} | {:.3}x |", u / r);
    println!("| cudarc launch_builder | {bl:.0} | {:.3}x |", bl / r);
    println!();
    println!("limit checks: checked / unchecked = {:.3}x", o / u);
    if let Some((plain, ex)) = cluster_rows {
        println!();
        println!("| sm_90 kernel, grid 2 | ns/launch (median) | vs plain |");
        println!("|---|---|---|");
        println!("| launch (cuLaunchKernel) | {plain:.0} | 1.000x |");
        println!("| launch_cluster (2,1,1) (cuLaunchKernelEx) | {ex:.0} | {:.3}x |", ex / plain);
    }
    Ok(())
}

/// Plain launch vs a cluster launch of the same sm_90 kernel, interleaved like above.
fn cluster_compare(
    stream: &std::sync::Arc<cuda_embed::CudaStream>,
    a: &cuda_embed::CudaSlice<f32>,
    b: &mut cuda_embed::CudaSlice<f32>,
) -> cuda_embed::Result<Option<(f64, f64)>> {
    let cfg = LaunchConfig { grid_dim: (2, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let (n, s) = (1024i32, 1.0f32);
    let (mut plain, mut ex) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS + 2 {
        for m in 0..2 {
            let method = (m + round) % 2;
            let mut elapsed = 0.0f64;
            for _ in 0..PER_ROUND / BATCH {
                let t0 = Instant::now();
                for _ in 0..BATCH {
                    if method == 0 {
                        unsafe { empty4_sm90::launch(stream, cfg, a, b, n, s)? };
                    } else {
                        unsafe { empty4_sm90::launch_cluster(stream, cfg, (2, 1, 1), a, b, n, s)? };
                    }
                }
                elapsed += t0.elapsed().as_secs_f64();
                stream.synchronize()?;
            }
            if round >= 2 {
                [&mut plain, &mut ex][method].push(elapsed * 1e9 / PER_ROUND as f64);
            }
        }
    }
    Ok(Some((median(&mut plain), median(&mut ex))))
}

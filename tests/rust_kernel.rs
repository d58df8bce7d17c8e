//! Rust-syntax kernels (`#[cuda_embed::kernel]`): each against a CPU reference, the bounds check
//! reported as an `Error`, a C++ `__device__` function called from Rust syntax. GPU tests are
//! `#[ignore]`d; the CPU tests check what the macro generated.

mod common;

include!("kernels/rust_kernels.rs");

use common::{close, data, gpu};
use cuda_embed::cudarc::driver::DeviceRepr;
use cuda_embed::{CudaSlice, CudaStream, Error, LaunchConfig};
use std::fmt::Debug;
use std::sync::Arc;

/// Out-of-range reports are kept per context: `cuda_embed::synchronize` and
/// `GraphExec::synchronize` return (and clear) the first one of any checked kernel, and
/// `NAME::check_errors` that kernel's. The tests that cause a report or read the context-wide one
/// hold this lock, so a report made by one test is not taken by another test running in parallel
/// on the same context (seen on an H200: the graph test was handed `off_by_one`'s report).
static REPORTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn reports() -> std::sync::MutexGuard<'static, ()> {
    REPORTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Copies `v` to the device.
fn up<T: DeviceRepr>(stream: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    stream.clone_htod(v).expect("copy to the device")
}

/// Copies `d` back to the host.
fn down<T: DeviceRepr>(stream: &Arc<CudaStream>, d: &CudaSlice<T>) -> Vec<T> {
    stream.clone_dtoh(d).expect("copy to the host")
}

/// Runs `launch`, then the kernel's `check_errors`: the launch and no out-of-range index.
fn launch_checked(
    stream: &CudaStream,
    launch: impl FnOnce() -> cuda_embed::Result<()>,
    check: impl FnOnce(&CudaStream) -> cuda_embed::Result<()>,
) {
    launch().expect("launch");
    check(stream).expect("no out-of-range index");
}

/// Asserts `got[i] == want(i)` for each element, naming `what` and the index.
fn assert_each<T: PartialEq + Debug>(got: &[T], what: &str, want: impl Fn(usize) -> T) {
    for (i, g) in got.iter().enumerate() {
        assert_eq!(*g, want(i), "{what} {i}");
    }
}

/// Asserts `ok(&got[i], &want(i))` for each element, naming `what`, the index and both values.
fn assert_each_near<T: Debug, W: Debug>(got: &[T], what: &str, want: impl Fn(usize) -> W, ok: impl Fn(&T, &W) -> bool) {
    for (i, g) in got.iter().enumerate() {
        let w = want(i);
        assert!(ok(g, &w), "{what} {i}: {g:?} vs {w:?}");
    }
}

/// Explicit mantissa bits of `f16`, for [`within_ulps`].
const F16_BITS: i32 = 10;
/// Explicit mantissa bits of `bf16`, for [`within_ulps`].
const BF16_BITS: i32 = 7;

/// Whether `got` is within `ulps` units in the last place of `scale` (the largest magnitude the
/// computation passed through) of `want`, in a float of `bits` mantissa bits: a fused
/// multiply-add on the GPU (one rounding where the CPU rounds twice) moves the product's rounding
/// error (half an ulp of it) into the sum, which may then round the other way (one ulp of it).
fn within_ulps(got: f32, want: f32, scale: f32, bits: i32, ulps: f32) -> bool {
    (got - want).abs() <= ulps * scale.abs().max(f32::MIN_POSITIVE) * 2f32.powi(-bits)
}

/// Doubles each element; the `<=` lets the last thread index one past the end.
#[cuda_embed::kernel]
pub fn off_by_one(x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i <= y.len() {
        y[i] = x[i] * 2.0;
    }
}

/// A CUDA C++ `__device__` function called from Rust syntax.
#[cuda_embed::kernel(cpp = "__device__ float cube(float v) { return v * v * v; }")]
pub fn cubes(x: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < x.len() {
        let c: f32 = cube(x[i]);
        x[i] = c;
    }
}

/// Integer arithmetic that overflows: wraps as in Rust's release builds.
#[cuda_embed::kernel]
pub fn lcg(seed: i32, out: &mut [i32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < out.len() {
        let mut h = seed ^ (i as i32);
        for k in 0..4 {
            h = h * 1103515245 + 12345 + k;
        }
        out[i] = if h < 0 { h >> 3 } else { h << 1 };
    }
}

/// Float methods, an `if` expression, `mul_add`.
#[cuda_embed::kernel]
pub fn gelu(x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < x.len() {
        let v = x[i];
        let t = (0.797_884_6 * v.mul_add(0.044715 * v * v, v)).tanh();
        y[i] = if v.abs() > 10.0 { v.max(0.0) } else { 0.5 * v * (1.0 + t) };
    }
}

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig::for_num_elems(n as u32)
}

#[test]
fn the_generated_source_can_be_read() {
    assert!(
        saxpy_rs::CUDA_SOURCE.contains("extern \"C\" __global__ void saxpy_rs(float a, const float* __restrict__ x")
    );
    assert!(saxpy_checked::CUDA_SOURCE.contains("__ce_at(y, y__len, i"));
    assert!(!saxpy_rs::CUDA_SOURCE.contains("__ce_at("));
    assert!(cubes::CUDA_SOURCE.contains("__device__ float cube(float v)"));
    assert!(saxpy_rs::CUDA_SOURCE.contains(&format!("#line {} \"tests/kernels/rust_kernels.rs\"", 20)));
    assert_eq!(saxpy_rs::NAME, "saxpy_rs");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn saxpy_matches_cpu_checked_and_unchecked() {
    let stream = gpu();
    let n = 1_000_003;
    let (xs, ys) = (data(n, 1), data(n, 2));
    let x = up(&stream, &xs);
    for checked in [true, false] {
        let mut y = up(&stream, &ys);
        if checked {
            launch_checked(
                &stream,
                || unsafe { saxpy_checked::launch(&stream, cfg(n), 2.0, &x, &mut y) },
                saxpy_checked::check_errors,
            );
        } else {
            unsafe { saxpy_rs::launch(&stream, cfg(n), 2.0, &x, &mut y).unwrap() };
        }
        assert_each(&down(&stream, &y), &format!("element (checked: {checked})"), |i| 2.0f32.mul_add(xs[i], ys[i]));
    }
    // Views, like a cuda_kernel! launcher.
    let mut y = up(&stream, &ys);
    let xv = x.slice(10..20);
    let mut yv = y.slice_mut(0..10);
    unsafe { saxpy_rs::launch(&stream, cfg(10), 1.0, &xv, &mut yv).unwrap() };
    let out = down(&stream, &y);
    assert_eq!(out[0], xs[10] + ys[0]);
    assert_eq!(out[10], ys[10]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reductions_match_cpu() {
    let stream = gpu();
    let n = (1 << 22) + 17;
    let xs = data(n, 3);
    let want: f64 = xs.iter().map(|&v| v as f64).sum();
    let x = up(&stream, &xs);
    let config = LaunchConfig { grid_dim: (264, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    for which in ["block", "warp"] {
        let mut out = up(&stream, &[0.0f32]);
        unsafe {
            match which {
                "block" => block_sum_rs::launch(&stream, config, &x, &mut out).unwrap(),
                _ => warp_sum_rs::launch(&stream, config, &x, &mut out).unwrap(),
            }
        }
        close(down(&stream, &out)[0] as f64, want, 1e-3, which);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stencil_and_transpose_match_cpu() {
    let stream = gpu();
    let (w, h) = (1000usize, 517usize);
    let a = data(w * h, 4);
    let da = up(&stream, &a);
    let mut db = up(&stream, &vec![0.0f32; w * h]);
    let grid = |bx: usize, by: usize| ((w.div_ceil(bx)) as u32, (h.div_ceil(by)) as u32, 1);
    let c = LaunchConfig { grid_dim: grid(32, 8), block_dim: (32, 8, 1), shared_mem_bytes: 0 };
    unsafe { stencil_rs::launch(&stream, c, w as u32, h as u32, &da, &mut db).unwrap() };
    let b = down(&stream, &db);
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let i = y * w + x;
            let want = 0.25 * (a[i - 1] + a[i + 1] + a[i - w] + a[i + w]) - a[i];
            assert!((b[i] - want).abs() <= 1e-6, "stencil ({x}, {y}): {} vs {want}", b[i]);
        }
    }
    let c = LaunchConfig { grid_dim: grid(32, 32), block_dim: (32, 8, 1), shared_mem_bytes: 0 };
    let mut dt = up(&stream, &vec![0.0f32; w * h]);
    unsafe { transpose_rs::launch(&stream, c, w as u32, h as u32, &da, &mut dt).unwrap() };
    // Element x * h + y of the transpose is element y * w + x of `a`.
    assert_each(&down(&stream, &dt), "transpose", |i| a[(i % h) * w + i / h]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn out_of_bounds_index_is_an_error_and_the_context_stays_usable() {
    let _reports = reports();
    let stream = gpu();
    let n = 1000;
    let x = up(&stream, &vec![1.0f32; n]);
    let mut y = up(&stream, &vec![0.0f32; n]);
    unsafe { off_by_one::launch(&stream, cfg(n + 1), &x, &mut y).unwrap() };
    let e = off_by_one::check_errors(&stream).expect_err("thread 1000 indexes one past the end");
    match &e {
        Error::IndexOutOfBounds { kernel, location, index, len } => {
            assert_eq!(kernel, "off_by_one");
            assert!(location.starts_with("tests/rust_kernel.rs:"), "{location}");
            assert_eq!((*index, *len), (1000, 1000));
        }
        other => panic!("expected IndexOutOfBounds, got {other}"),
    }
    println!("reported: {e}");
    // Cleared after the report; the in-range elements were written; the context still works.
    off_by_one::check_errors(&stream).unwrap();
    assert!(down(&stream, &y).iter().all(|&v| v == 2.0));
    let mut z = up(&stream, &vec![1.0f32; n]);
    unsafe { saxpy_checked::launch(&stream, cfg(n), 1.0, &x, &mut z).unwrap() };
    saxpy_checked::check_errors(&stream).unwrap();
    assert!(down(&stream, &z).iter().all(|&v| v == 2.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cpp_device_function_wrapping_integers_and_float_methods() {
    let stream = gpu();
    let n = 4099;
    let xs = data(n, 5);
    let mut x = up(&stream, &xs);
    unsafe { cubes::launch(&stream, cfg(n), &mut x).unwrap() };
    assert_each_near(&down(&stream, &x), "cube", |i| xs[i] * xs[i] * xs[i], |g, w| (g - w).abs() <= 1e-6);

    let mut out = up(&stream, &vec![0i32; n]);
    launch_checked(&stream, || unsafe { lcg::launch(&stream, cfg(n), 0x1234_5678, &mut out) }, lcg::check_errors);
    assert_each(&down(&stream, &out), "lcg", |i| {
        let mut h = 0x1234_5678i32 ^ i as i32;
        for k in 0..4 {
            h = h.wrapping_mul(1103515245).wrapping_add(12345).wrapping_add(k);
        }
        if h < 0 {
            h >> 3
        } else {
            h << 1
        }
    });

    let xd = up(&stream, &xs);
    let mut y = up(&stream, &vec![0.0f32; n]);
    unsafe { gelu::launch(&stream, cfg(n), &xd, &mut y).unwrap() };
    let want = |i: usize| {
        let v = xs[i];
        let t = (0.797_884_6_f32 * v.mul_add(0.044715 * v * v, v)).tanh();
        if v.abs() > 10.0 {
            v.max(0.0)
        } else {
            0.5 * v * (1.0 + t)
        }
    };
    assert_each_near(&down(&stream, &y), "gelu", want, |g, w| (g - w).abs() <= 1e-5);
}

/// Kernels and the Rust device functions they call, one CUDA module.
#[cuda_embed::kernels]
mod gpu {
    use cuda_embed::device::*;

    /// Squared norm of the 3-vector at `x[3 * i..]`.
    #[device]
    fn norm2(x: &[f32], i: usize) -> f32 {
        let a = x[3 * i];
        let b = x[3 * i + 1];
        let c = x[3 * i + 2];
        a * a + b * b + c * c
    }

    #[device]
    fn clamp01(v: f32) -> f32 {
        if v < 0.0 {
            return 0.0;
        }
        v.min(1.0)
    }

    /// `out[i]` = the clamped squared norm of vector `i` of `x`.
    #[kernel]
    pub fn norms(x: &[f32], out: &mut [f32]) {
        let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
        if i < out.len() {
            out[i] = clamp01(norm2(x, i));
        }
    }
}

/// Compiled by NVRTC at run time (no build-time compiler).
#[cuda_embed::kernel(compiler = "nvrtc")]
pub fn saxpy_runtime_nvrtc(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

/// Compiled by libnvrtc at build time.
#[cuda_embed::kernel(compiler = "nvrtc-build")]
pub fn saxpy_build_nvrtc(a: f32, x: &[f32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_functions_and_their_bounds_checks() {
    let _reports = reports();
    let stream = gpu();
    let n = 3001;
    let xs = data(3 * n, 6);
    let x = up(&stream, &xs);
    let mut out = up(&stream, &vec![0.0f32; n]);
    launch_checked(&stream, || unsafe { gpu::norms::launch(&stream, cfg(n), &x, &mut out) }, gpu::norms::check_errors);
    let want = |i: usize| {
        let (a, b, c) = (xs[3 * i], xs[3 * i + 1], xs[3 * i + 2]);
        (a * a + b * b + c * c).min(1.0)
    };
    assert_each_near(&down(&stream, &out), "norm", want, |g, w| (g - w).abs() <= 1e-6);
    // One element short: the last vector's third component is out of range, inside `norm2`.
    let short = x.slice(0..3 * n - 1);
    unsafe { gpu::norms::launch(&stream, cfg(n), &short, &mut out).unwrap() };
    let e = gpu::norms::check_errors(&stream).expect_err("x[3 * 3000 + 2] is out of range");
    println!("reported: {e}");
    match e {
        Error::IndexOutOfBounds { index, len, .. } => assert_eq!((index, len), (3 * n as u64 - 1, 3 * n as u64 - 1)),
        other => panic!("expected IndexOutOfBounds, got {other}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nvrtc_paths_match_cpu() {
    let stream = gpu();
    let n = 10_007;
    let (xs, ys) = (data(n, 7), data(n, 8));
    let x = up(&stream, &xs);
    for build in [false, true] {
        let mut y = up(&stream, &ys);
        unsafe {
            if build {
                saxpy_build_nvrtc::launch(&stream, cfg(n), 3.0, &x, &mut y).unwrap();
            } else {
                saxpy_runtime_nvrtc::launch(&stream, cfg(n), 3.0, &x, &mut y).unwrap();
            }
        }
        assert_each(&down(&stream, &y), &format!("element (build-time NVRTC: {build})"), |i| {
            3.0f32.mul_add(xs[i], ys[i])
        });
    }
}

#[test]
fn each_compiler_path_was_taken() {
    assert!(matches!(saxpy_runtime_nvrtc::module().build_info(), cuda_embed::BuildPath::Nvrtc { .. }));
    assert!(matches!(saxpy_build_nvrtc::module().build_info(), cuda_embed::BuildPath::NvrtcBuild { .. }));
    assert!(gpu::norms::CUDA_SOURCE.contains("static __device__ __forceinline__ float norm2(const float* x, size_t x__len, size_t i, bool& __ce_bad, unsigned long long* __ce_slot)"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn rust_kernels_as_graph_nodes() {
    let _reports = reports();
    let stream = gpu();
    let ctx = stream.context().clone();
    let n = 5000;
    let xs = data(n, 9);
    let x = up(&stream, &xs);
    let y = up(&stream, &vec![1.0f32; n]);
    let mut g = cuda_embed::Graph::new(&ctx).unwrap();
    let a = saxpy_rs::node(&mut g, cfg(n), 2.0, &x, &y).unwrap();
    let b = saxpy_checked::node(&mut g, cfg(n), 1.0, &x, &y).unwrap();
    assert_eq!(g.edges(), vec![(*a, *b)], "the second node writes what the first wrote");
    let exec = g.instantiate().unwrap();
    // SAFETY: both kernels check their index against the slices' lengths.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    saxpy_checked::check_errors(&stream).unwrap();
    assert_each(&down(&stream, &y), "element", |i| 1.0f32.mul_add(xs[i], 2.0f32.mul_add(xs[i], 1.0)));
}

/// A generic kernel, built for the listed types.
#[cuda_embed::kernel(instances = ["f32", "f64"])]
pub fn axpby<T>(a: T, x: &[T], b: T, y: &mut [T]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = a * x[i] + b * y[i] + (1.0 as T).sqrt();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generic_kernel_over_f32_and_f64() {
    let stream = gpu();
    let n = 7777;
    let (xs, ys) = (data(n, 10), data(n, 11));
    let x = up(&stream, &xs);
    let mut y = up(&stream, &ys);
    launch_checked(
        &stream,
        || unsafe { axpby::launch::<f32>(&stream, cfg(n), 2.0, &x, 0.5, &mut y) },
        axpby::check_errors::<f32>,
    );
    let want = |i: usize| 2.0 * xs[i] + 0.5 * ys[i] + 1.0;
    assert_each_near(&down(&stream, &y), "f32", want, |g, w| (g - w).abs() <= 1e-6);
    let xd: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
    let yd: Vec<f64> = ys.iter().map(|&v| v as f64).collect();
    let x = up(&stream, &xd);
    let mut y = up(&stream, &yd);
    unsafe { axpby::launch::<f64>(&stream, cfg(n), 2.0, &x, 0.5, &mut y).unwrap() };
    assert_each(&down(&stream, &y), "f64", |i| 2.0 * xd[i] + 0.5 * yd[i] + 1.0);
}

/// A struct passed by value: declared in C++ (`cpp`) and in Rust (`DeviceSafe`), checked
/// against each other by the pipeline.
#[repr(C)]
#[derive(Clone, Copy, cuda_embed::DeviceSafe)]
pub struct Affine {
    pub scale: f32,
    pub shift: f32,
    pub n: u32,
}

#[cuda_embed::kernel(cpp = "struct Affine { float scale; float shift; unsigned int n; };")]
pub fn affine(p: Affine, x: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    let n: u32 = p.n;
    if i < x.len() && (i as u32) < n {
        let s: f32 = p.scale;
        let t: f32 = p.shift;
        x[i] = x[i].mul_add(s, t);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn struct_parameter_by_value() {
    let stream = gpu();
    let n = 3000;
    let xs = data(n, 12);
    let mut x = up(&stream, &xs);
    let p = Affine { scale: 3.0, shift: -1.0, n: 2000 };
    launch_checked(&stream, || unsafe { affine::launch(&stream, cfg(n), p, &mut x) }, affine::check_errors);
    assert_each(&down(&stream, &x), "element", |i| if i < 2000 { xs[i].mul_add(3.0, -1.0) } else { xs[i] });
}

/// Half precision: `f16` and `bf16` arithmetic, methods computed in `f32`.
#[cuda_embed::kernel(instances = ["f16", "bf16"])]
pub fn half_axpy<T>(a: T, x: &[T], y: &mut [T]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < y.len() {
        y[i] = (a * x[i] + y[i]).max(0.0);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_kernels() {
    use cuda_embed::{bf16, f16};
    let stream = gpu();
    let n = 1000;
    let xs = data(n, 13);
    let x: Vec<f16> = xs.iter().map(|&v| f16::from_f32(v)).collect();
    let dx = up(&stream, &x);
    let mut dy = up(&stream, &vec![f16::from_f32(0.5); n]);
    unsafe { half_axpy::launch::<f16>(&stream, cfg(n), f16::from_f32(2.0), &dx, &mut dy).unwrap() };
    let want = |i: usize| (2.0 * x[i].to_f32() + 0.5).max(0.0);
    assert_each_near(&down(&stream, &dy), "f16", want, |g, w| (g.to_f32() - w).abs() <= 4e-3 * w.abs().max(1.0));
    let xb: Vec<bf16> = xs.iter().map(|&v| bf16::from_f32(v)).collect();
    let dx = up(&stream, &xb);
    let mut dy = up(&stream, &vec![bf16::from_f32(0.5); n]);
    unsafe { half_axpy::launch::<bf16>(&stream, cfg(n), bf16::from_f32(2.0), &dx, &mut dy).unwrap() };
    let want = |i: usize| (2.0 * xb[i].to_f32() + 0.5).max(0.0);
    assert_each_near(&down(&stream, &dy), "bf16", want, |g, w| (g.to_f32() - w).abs() <= 3e-2 * w.abs().max(1.0));
}

#[test]
fn a_kernel_inside_a_function_body() {
    #[cuda_embed::kernel(bounds_checks = false)]
    fn local_fill(v: f32, x: &mut [f32]) {
        let i = thread_idx().x as usize;
        if i < x.len() {
            x[i] = v;
        }
    }
    assert!(local_fill::CUDA_SOURCE.contains("void local_fill(float v"));
    assert_eq!(local_fill::NAME, "local_fill");
}

/// `match` on an integer, as a value and as a statement.
#[cuda_embed::kernel]
pub fn classify(x: &[i32], y: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < x.len() {
        let v = match x[i] {
            0 => 1.0f32,
            1 | 2 => 2.0,
            3..=9 => x[i] as f32 * 0.5,
            _ => -1.0,
        };
        match i % 2 {
            0 => y[i] = v,
            _ => y[i] = -v,
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn match_matches_cpu() {
    let stream = gpu();
    let xs: Vec<i32> = (0..1000).map(|i| i % 13 - 1).collect();
    let x = up(&stream, &xs);
    let mut y = up(&stream, &vec![0.0f32; xs.len()]);
    launch_checked(&stream, || unsafe { classify::launch(&stream, cfg(xs.len()), &x, &mut y) }, classify::check_errors);
    assert_each(&down(&stream, &y), "element", |i| {
        let v = xs[i];
        let c = match v {
            0 => 1.0,
            1 | 2 => 2.0,
            3..=9 => v as f32 * 0.5,
            _ => -1.0,
        };
        if i % 2 == 0 {
            c
        } else {
            -c
        }
    });
}

/// Tuple lets and a tuple swap.
#[cuda_embed::kernel]
pub fn swap_pairs(x: &mut [f32]) {
    let i = 2 * (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i + 1 < x.len() {
        let (mut a, mut b) = (x[i], x[i + 1]);
        (a, b) = (b, a);
        let (lo, hi): (f32, f32) = (a.min(b), a.max(b));
        let ordered = lo <= hi;
        x[i] = if ordered { a } else { b };
        x[i + 1] = if ordered { b } else { a };
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuples_match_cpu() {
    let stream = gpu();
    let xs = data(2000, 14);
    let mut x = up(&stream, &xs);
    launch_checked(&stream, || unsafe { swap_pairs::launch(&stream, cfg(1000), &mut x) }, swap_pairs::check_errors);
    let got = down(&stream, &x);
    assert_each(&got.chunks(2).map(|c| (c[0], c[1])).collect::<Vec<_>>(), "pair", |k| (xs[2 * k + 1], xs[2 * k]));
}

/// CUDA vector types: by value, slices of them, fields read and written, `Float4::new`
/// (`make_float4`), a shared array of them, and a `#[device]` function returning one.
#[cuda_embed::kernels]
mod vectors {
    use cuda_embed::device::*;
    use cuda_embed::{Double2, Float4, Int2};

    #[device]
    fn scaled(v: Float4, s: Float4) -> Float4 {
        Float4::new(v.x * s.x, v.y * s.y, v.z * s.z, v.w * s.w)
    }

    /// `y[i]` = `x[i]` scaled by `s`, `.w` plus one, `.x` clamped at zero; `idx[i]` = `(i, -i)`;
    /// `d[i]` = the components' sum and product in `f64`, through shared memory.
    #[kernel]
    pub fn vec_ops(s: Float4, x: &[Float4], y: &mut [Float4], idx: &mut [Int2], d: &mut [Double2]) {
        let t = thread_idx().x as usize;
        let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
        let tile = shared::<Double2, 256>();
        if i < y.len() {
            let v = x[i];
            let mut w = scaled(v, s);
            w.w += 1.0;
            y[i] = w;
            y[i].x = w.x.max(0.0);
            idx[i] = Int2::new(i as i32, 0);
            idx[i].y = -(i as i32);
            let sum = (v.x + v.y + v.z + v.w) as f64;
            let prod = v.x as f64 * v.y as f64;
            tile[t] = Double2::new(sum, prod);
            d[i] = tile[t];
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn vector_types_match_cpu() {
    use cuda_embed::{Double2, Float4, Int2};
    let stream = gpu();
    let n = 5003;
    let raw = data(4 * n, 15);
    let xs: Vec<Float4> = raw.chunks(4).map(|c| Float4::new(c[0], c[1], c[2], c[3])).collect();
    let s = Float4::new(2.0, -1.0, 0.5, 3.0);
    let x = up(&stream, &xs);
    let mut y = up(&stream, &vec![Float4::default(); n]);
    let mut idx = up(&stream, &vec![Int2::default(); n]);
    let mut d = up(&stream, &vec![Double2::default(); n]);
    let config = LaunchConfig { grid_dim: (n.div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    launch_checked(
        &stream,
        || unsafe { vectors::vec_ops::launch(&stream, config, s, &x, &mut y, &mut idx, &mut d) },
        vectors::vec_ops::check_errors,
    );
    // nvcc contracts `a * b + c` into one fused multiply-add: within an ulp of the CPU's two roundings.
    let near = |a: f32, b: f32| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    let want = |i: usize| {
        let v = xs[i];
        Float4::new((v.x * s.x).max(0.0), v.y * s.y, v.z * s.z, v.w * s.w + 1.0)
    };
    assert_each_near(&down(&stream, &y), "y", want, |g, w| {
        near(g.x, w.x) && near(g.y, w.y) && near(g.z, w.z) && near(g.w, w.w)
    });
    assert_each(&down(&stream, &idx), "idx", |i| Int2::new(i as i32, -(i as i32)));
    assert_each(&down(&stream, &d), "d", |i| {
        let v = xs[i];
        Double2::new((v.x + v.y + v.z + v.w) as f64, v.x as f64 * v.y as f64)
    });
}

/// A const generic: `N` sizes the shared tile and bounds the loop; one kernel per listed value.
#[cuda_embed::kernel(instances = [64, 256])]
pub fn tile_sum<const N: usize>(x: &[f32], out: &mut [f32]) {
    let tile = shared::<f32, N>();
    let t = thread_idx().x as usize;
    let i = block_idx().x as usize * N + t;
    tile[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    if t == 0 {
        let mut acc = 0.0f32;
        for k in 0..N {
            acc += tile[k];
        }
        out[block_idx().x as usize] = acc;
    }
}

/// A type and a const parameter: `x[i] * K + K`, in `T`.
#[cuda_embed::kernel(instances = [("f32", 3), ("f64", -2)])]
pub fn scale_by<T, const K: i32>(x: &mut [T]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < x.len() {
        x[i] = x[i] * K as T + K as T;
    }
}

#[test]
fn const_generic_instances_are_named_by_value() {
    assert!(tile_sum::CUDA_SOURCE.contains("__shared__ float tile[64];"));
    assert!(tile_sum::CUDA_SOURCE.contains("__shared__ float tile[256];"));
    assert_eq!(tile_sum::tile_sum__64::NAME, "tile_sum__64");
    assert_eq!(scale_by::scale_by__f64__m2::NAME, "scale_by__f64__m2");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn const_generic_kernels_match_cpu() {
    let stream = gpu();
    let n = 10_000;
    let xs = data(n, 16);
    let x = up(&stream, &xs);
    for block in [64usize, 256] {
        let blocks = n.div_ceil(block);
        let mut out = up(&stream, &vec![0.0f32; blocks]);
        let config =
            LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (block as u32, 1, 1), shared_mem_bytes: 0 };
        if block == 64 {
            launch_checked(
                &stream,
                || unsafe { tile_sum::launch::<64>(&stream, config, &x, &mut out) },
                tile_sum::check_errors::<64>,
            );
        } else {
            launch_checked(
                &stream,
                || unsafe { tile_sum::launch::<256>(&stream, config, &x, &mut out) },
                tile_sum::check_errors::<256>,
            );
        }
        for (b, g) in down(&stream, &out).iter().enumerate() {
            let want: f64 = xs[b * block..((b + 1) * block).min(n)].iter().map(|&v| v as f64).sum();
            close(*g as f64, want, 1e-4, &format!("block {b} of {block}"));
        }
    }
    let mut y = up(&stream, &xs);
    launch_checked(
        &stream,
        || unsafe { scale_by::launch::<f32, 3>(&stream, cfg(n), &mut y) },
        scale_by::check_errors::<f32, 3>,
    );
    // A fused multiply-add on the GPU: within an ulp of the CPU's two roundings.
    assert_each_near(
        &down(&stream, &y),
        "f32, K = 3",
        |i| xs[i] * 3.0 + 3.0,
        |g, w| (g - w).abs() <= 1e-6 * w.abs().max(1.0),
    );
    let xd: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
    let mut y = up(&stream, &xd);
    unsafe { scale_by::launch::<f64, -2>(&stream, cfg(n), &mut y).unwrap() };
    assert_each(&down(&stream, &y), "f64, K = -2", |i| xd[i] * -2.0 - 2.0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn synchronize_reports_an_out_of_bounds_index() {
    let _reports = reports();
    let stream = gpu();
    let n = 1000;
    let x = up(&stream, &vec![1.0f32; n]);
    let mut y = up(&stream, &vec![0.0f32; n]);
    // Nothing recorded yet: a plain wait.
    unsafe { saxpy_checked::launch(&stream, cfg(n), 1.0, &x, &mut y).unwrap() };
    cuda_embed::synchronize(&stream).unwrap();
    // The next synchronisation reports the kernel's out-of-range index, then it is cleared.
    unsafe { off_by_one::launch(&stream, cfg(n + 1), &x, &mut y).unwrap() };
    let e = cuda_embed::synchronize(&stream).expect_err("thread 1000 indexes one past the end");
    println!("reported: {e}");
    match &e {
        Error::IndexOutOfBounds { kernel, location, index, len } => {
            assert_eq!(kernel, "off_by_one");
            assert!(location.starts_with("tests/rust_kernel.rs:"), "{location}");
            assert_eq!((*index, *len), (1000, 1000));
        }
        other => panic!("expected IndexOutOfBounds, got {other}"),
    }
    cuda_embed::synchronize(&stream).unwrap();
    off_by_one::check_errors(&stream).unwrap();
    // The same through a graph's synchronize.
    let ctx = stream.context().clone();
    let mut g = cuda_embed::Graph::new(&ctx).unwrap();
    off_by_one::node(&mut g, cfg(n + 1), &x, &y).unwrap();
    let exec = g.instantiate().unwrap();
    // SAFETY: the out-of-range index is caught by the bounds check, not performed.
    unsafe { exec.launch(&stream).unwrap() };
    match exec.synchronize(&stream) {
        Err(Error::IndexOutOfBounds { kernel, index, .. }) => {
            assert_eq!((kernel.as_str(), index), ("off_by_one", 1000))
        }
        other => panic!("expected IndexOutOfBounds from the graph, got {other:?}"),
    }
    exec.synchronize(&stream).unwrap();
}

/// `f16`/`bf16` parameters (not through a generic), their operators, comparisons, casts and
/// methods (computed in `f32`).
#[cuda_embed::kernel]
pub fn half_mix(a: f16, x: &[f16], y: &mut [bf16], z: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < x.len() {
        let v = a * x[i] + 1.0;
        let big = v > a;
        y[i] = (v.abs().sqrt().max(0.5) as f32 * 2.0) as bf16;
        z[i] = y[i].mul_add(y[i], 0.25) as f32 + v as f32 + if big { 1.0 } else { 0.0 };
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_parameters_and_arithmetic_match_cpu() {
    use cuda_embed::{bf16, f16};
    let stream = gpu();
    let n = 2048;
    let xs: Vec<f16> = data(n, 17).iter().map(|&v| f16::from_f32(4.0 * v)).collect();
    let a = f16::from_f32(1.5);
    let dx = up(&stream, &xs);
    let mut dy = up(&stream, &vec![bf16::ZERO; n]);
    let mut dz = up(&stream, &vec![0.0f32; n]);
    launch_checked(
        &stream,
        || unsafe { half_mix::launch(&stream, cfg(n), a, &dx, &mut dy, &mut dz) },
        half_mix::check_errors,
    );
    let (y, z) = (down(&stream, &dy), down(&stream, &dz));
    for i in 0..n {
        // Each `f16` operation rounds to `f16`, as CUDA's `__hmul`/`__hadd` do.
        let v = a * xs[i] + f16::ONE;
        let big = v > a;
        let yw = bf16::from_f32(f16::from_f32(f16::from_f32(v.to_f32().abs().sqrt()).to_f32().max(0.5)).to_f32() * 2.0);
        // CUDA's half square root may differ from the correctly rounded one by an ulp: within
        // one bf16 ulp (2^-7 relative) of the result.
        assert!((y[i].to_f32() - yw.to_f32()).abs() <= yw.to_f32().abs() / 128.0, "y {i}: v = {v}: {} vs {yw}", y[i]);
        let m = bf16::from_f32(y[i].to_f32().mul_add(y[i].to_f32(), 0.25)).to_f32();
        let zw = m + v.to_f32() + if big { 1.0 } else { 0.0 };
        // `m` is a bf16 result, which the GPU may round once (fused) where the CPU rounds twice:
        // one bf16 ulp (2^-8 relative) of `m`.
        assert!((z[i] - zw).abs() <= m.abs().max(1.0) / 128.0, "z {i}: {} vs {zw}", z[i]);
    }
}

/// `match` on `u32` with `|`, inclusive and exclusive ranges, and on `bool`, as values.
#[cuda_embed::kernel]
pub fn bucket(x: &[u32], y: &mut [u8]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < x.len() {
        let v = x[i];
        let b: u8 = match v % 16 {
            0 => 0,
            1 | 2 | 3 => 1,
            4..=7 => 2,
            8..15 => 3,
            _ => 4,
        };
        y[i] = match v > 100 {
            true => b + 10,
            false => b,
        };
    }
}

/// Tuples of scalars of different types, a tuple assignment into slice elements.
#[cuda_embed::kernel]
pub fn tuple_mix(x: &mut [f32], k: &mut [u32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < k.len() {
        let (mut s, c): (f32, u32) = (x[2 * i] + x[2 * i + 1], k[i] * 3);
        s *= 0.5;
        (x[2 * i], x[2 * i + 1]) = (x[2 * i + 1], s);
        let (lo, hi) = (c.min(c ^ 1), c.max(c ^ 1));
        k[i] = lo * 1000 + hi;
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn match_and_tuples_of_several_types_match_cpu() {
    let stream = gpu();
    let xs: Vec<u32> = (0..3000u32).map(|i| i.wrapping_mul(2_654_435_761) % 300).collect();
    let x = up(&stream, &xs);
    let mut y = up(&stream, &vec![0u8; xs.len()]);
    launch_checked(&stream, || unsafe { bucket::launch(&stream, cfg(xs.len()), &x, &mut y) }, bucket::check_errors);
    assert_each(&down(&stream, &y), "bucket", |i| {
        let v = xs[i];
        let b: u8 = match v % 16 {
            0 => 0,
            1..=3 => 1,
            4..=7 => 2,
            8..15 => 3,
            _ => 4,
        };
        if v > 100 {
            b + 10
        } else {
            b
        }
    });

    let n = 1500;
    let fs = data(2 * n, 18);
    let ks: Vec<u32> = (0..n as u32).collect();
    let mut dx = up(&stream, &fs);
    let mut dk = up(&stream, &ks);
    launch_checked(
        &stream,
        || unsafe { tuple_mix::launch(&stream, cfg(n), &mut dx, &mut dk) },
        tuple_mix::check_errors,
    );
    let gx = down(&stream, &dx);
    assert_each(&gx.chunks(2).map(|c| (c[0], c[1])).collect::<Vec<_>>(), "pair", |i| {
        (fs[2 * i + 1], (fs[2 * i] + fs[2 * i + 1]) * 0.5)
    });
    assert_each(&down(&stream, &dk), "k", |i| {
        let c = ks[i] * 3;
        let (lo, hi) = (c.min(c ^ 1), c.max(c ^ 1));
        lo * 1000 + hi
    });
}

/// Device functions returning tuples, bound by `let (a, b) = ...`, read by `.0`, and an `if`
/// choosing between tuples.
#[cuda_embed::kernels]
mod tuple_fns {
    use cuda_embed::device::*;

    #[device]
    fn min_max(a: f32, b: f32) -> (f32, f32) {
        if a < b {
            return (a, b);
        }
        (b, a)
    }

    #[device]
    fn div_rem(v: u32, d: u32) -> (u32, u32) {
        (v / d, v % d)
    }

    /// Sorts each pair of `x`; `q[i]` becomes `q[i] / 7 + 100 * (q[i] % 7)` or, for quotients
    /// above 50, the remainder.
    #[kernel]
    pub fn sort_pairs(x: &mut [f32], q: &mut [u32]) {
        let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
        if i < q.len() {
            let (lo, hi) = min_max(x[2 * i], x[2 * i + 1]);
            x[2 * i] = lo;
            x[2 * i + 1] = hi;
            let qr = div_rem(q[i], 7);
            let (a, b): (u32, u32) = if qr.0 > 50 { (0, qr.1) } else { (qr.0, 100 * qr.1) };
            q[i] = a + b;
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tuple_results_of_device_functions_match_cpu() {
    let stream = gpu();
    let n = 2500;
    let fs = data(2 * n, 19);
    let qs: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(40_503) % 1000).collect();
    let mut dx = up(&stream, &fs);
    let mut dq = up(&stream, &qs);
    launch_checked(
        &stream,
        || unsafe { tuple_fns::sort_pairs::launch(&stream, cfg(n), &mut dx, &mut dq) },
        tuple_fns::sort_pairs::check_errors,
    );
    let gx = down(&stream, &dx);
    assert_each(&gx.chunks(2).map(|c| (c[0], c[1])).collect::<Vec<_>>(), "pair", |i| {
        let (a, b) = (fs[2 * i], fs[2 * i + 1]);
        if a < b {
            (a, b)
        } else {
            (b, a)
        }
    });
    assert_each(&down(&stream, &dq), "q", |i| {
        let (d, r) = (qs[i] / 7, qs[i] % 7);
        let (a, b) = if d > 50 { (0, r) } else { (d, 100 * r) };
        a + b
    });
}

/// `Half2`/`Bf162` (CUDA `__half2`, `__nv_bfloat162`): by value and in slices, `+ - * /` and
/// unary `-` (CUDA's `__hadd2` ... `__hneg2`), fields read and written, `Half2::new`
/// (`__halves2half2`), a shared array of them and a `#[device]` function taking and returning them.
#[cuda_embed::kernels]
mod halves {
    use cuda_embed::device::*;
    use cuda_embed::{Bf162, Half2};

    #[device]
    fn axpy2(a: Half2, x: Half2, y: Half2) -> Half2 {
        a * x + y
    }

    /// `y[i]` = `(a * x[i] + y[i] - (0.5, -0.25)) / (2, 4)`; `q[i]` = `(p.x - p.x * p.y, p.x)`.
    #[kernel]
    pub fn half2_ops(a: Half2, x: &[Half2], y: &mut [Half2], p: &[Bf162], q: &mut [Bf162]) {
        let t = thread_idx().x as usize;
        let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
        let tile = shared::<Bf162, 256>();
        if i < y.len() {
            let mut w = axpy2(a, x[i], y[i]);
            w -= Half2::new(0.5, -0.25);
            y[i] = w / Half2::new(2.0, 4.0);
            let b = p[i];
            tile[t] = -b * Bf162::new(b.y, b.x);
            q[i] = tile[t] + b;
            q[i].y = b.x;
        }
    }
}

#[test]
fn half2_and_nested_tuples_translate_to_cuda_types() {
    let h = halves::half2_ops::CUDA_SOURCE;
    assert!(h.contains("__half2 a, const __half2* __restrict__ x, size_t x__len"), "{h}");
    assert!(h.contains("return __hadd2(__hmul2(a, x), y);"), "{h}");
    assert!(h.contains("__shared__ __nv_bfloat162 tile[256];"), "{h}");
    let t = nested::nested_tuples::CUDA_SOURCE;
    assert!(
        t.contains(
            "struct __ce_tuple_T2_f32_f32_T2_bool_Float2 { __ce_tuple_f32_f32 _0; __ce_tuple_bool_Float2 _1; };"
        ),
        "{t}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half2_and_bf162_match_cpu() {
    use cuda_embed::{bf16, f16, Bf162, Half2};
    let stream = gpu();
    let n = 3001;
    let (xs, ys, ps) = (data(2 * n, 20), data(2 * n, 21), data(2 * n, 22));
    let h = |v: &[f32]| -> Vec<Half2> {
        v.chunks(2).map(|c| Half2::new(f16::from_f32(c[0]), f16::from_f32(c[1]))).collect()
    };
    let (x, y0) = (h(&xs), h(&ys));
    let p: Vec<Bf162> =
        ps.chunks(2).map(|c| Bf162::new(bf16::from_f32(4.0 * c[0]), bf16::from_f32(4.0 * c[1]))).collect();
    let a = Half2::new(f16::from_f32(1.5), f16::from_f32(-0.75));
    let (dx, mut dy, dp) = (up(&stream, &x), up(&stream, &y0), up(&stream, &p));
    let mut dq = up(&stream, &vec![Bf162::default(); n]);
    let config = LaunchConfig { grid_dim: (n.div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    launch_checked(
        &stream,
        || unsafe { halves::half2_ops::launch(&stream, config, a, &dx, &mut dy, &dp, &mut dq) },
        halves::half2_ops::check_errors,
    );
    // Each lane as CUDA computes it in f16 (`__hmul2` then `__hadd2`: ptxas may fuse the two
    // into one `fma.f16x2`: the product's half ulp moves into the sum, and the sum and the
    // subtraction after it may each round the other way, so within three f16 ulps of the terms'
    // magnitude), then the exact division by a power of two.
    let lane = |a: f16, x: f16, y: f16, c: f32, d: f32| {
        let m = f16::from_f32(a.to_f32() * x.to_f32());
        let s = f16::from_f32(m.to_f32() + y.to_f32());
        let w = f16::from_f32(s.to_f32() - c);
        let scale = (a.to_f32() * x.to_f32()).abs() + y.to_f32().abs() + c.abs();
        (f16::from_f32(w.to_f32() / d).to_f32(), scale / d)
    };
    assert_each_near(
        &down(&stream, &dy),
        "y",
        |i| {
            let (wx, sx) = lane(a.x, x[i].x, y0[i].x, 0.5, 2.0);
            let (wy, sy) = lane(a.y, x[i].y, y0[i].y, -0.25, 4.0);
            ((wx, sx), (wy, sy))
        },
        |g: &Half2, ((wx, sx), (wy, sy))| {
            within_ulps(g.x.to_f32(), *wx, *sx, F16_BITS, 3.0) && within_ulps(g.y.to_f32(), *wy, *sy, F16_BITS, 3.0)
        },
    );
    // bf16: `-p * (p.y, p.x) + p`, also possibly fused.
    assert_each_near(
        &down(&stream, &dq),
        "q",
        |i| {
            let (bx, by) = (p[i].x.to_f32(), p[i].y.to_f32());
            let m = bf16::from_f32(-bx * by).to_f32();
            (bf16::from_f32(m + bx).to_f32(), (bx * by).abs() + bx.abs(), bx)
        },
        |g: &Bf162, (want, scale, bx)| within_ulps(g.x.to_f32(), *want, *scale, BF16_BITS, 2.0) && g.y.to_f32() == *bx,
    );
}

/// Nested tuples: a `#[device]` function returning `((f32, f32), (bool, Float2))`, bound by a
/// nested pattern, read by `r.0.1` and `r.1.1`, a typed nested local written by `acc.0.1 = ..`,
/// and a nested tuple assignment into slice elements with `_`.
#[cuda_embed::kernels]
mod nested {
    use cuda_embed::device::*;
    use cuda_embed::Float2;

    /// The pair sorted, whether it was swapped, and its sum and product.
    #[device]
    fn sort2(a: f32, b: f32) -> ((f32, f32), (bool, Float2)) {
        let sp = Float2::new(a + b, a * b);
        if a <= b {
            return ((a, b), (false, sp));
        }
        ((b, a), (true, sp))
    }

    /// Sorts each pair of `x` and doubles its larger element; `flags[i]` = 100, plus 1 if the
    /// pair was swapped, plus 10 if its elements differ (sorting the sorted pair as `(hi, lo)`
    /// swaps it back); `sp[i]` = the pair's sum and product.
    #[kernel]
    pub fn nested_tuples(x: &mut [f32], flags: &mut [u32], sp: &mut [Float2]) {
        let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
        if i < flags.len() {
            let ((lo, hi), (swapped, s)) = sort2(x[2 * i], x[2 * i + 1]);
            let r = sort2(hi, lo);
            let mut acc: ((f32, f32), u32) = ((r.0 .0, r.0 .1), swapped as u32);
            acc.1 += if r.1 .0 { 10 } else { 0 };
            acc.0 .1 = acc.0 .1 * 2.0;
            ((x[2 * i], x[2 * i + 1]), _) = ((acc.0 .0, acc.0 .1), 0);
            flags[i] = acc.1 + 100 * (lo <= hi) as u32;
            sp[i] = r.1 .1;
            sp[i].y = s.y;
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_tuples_match_cpu() {
    use cuda_embed::Float2;
    let stream = gpu();
    let n = 2711;
    let xs = data(2 * n, 23);
    let mut dx = up(&stream, &xs);
    let mut dflags = up(&stream, &vec![0u32; n]);
    let mut dsp = up(&stream, &vec![Float2::default(); n]);
    launch_checked(
        &stream,
        || unsafe { nested::nested_tuples::launch(&stream, cfg(n), &mut dx, &mut dflags, &mut dsp) },
        nested::nested_tuples::check_errors,
    );
    let (gx, flags, sp) = (down(&stream, &dx), down(&stream, &dflags), down(&stream, &dsp));
    assert_each(&gx.chunks(2).map(|c| (c[0], c[1])).collect::<Vec<_>>(), "pair", |i| {
        let (a, b) = (xs[2 * i], xs[2 * i + 1]);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        (lo, hi * 2.0)
    });
    assert_each(&flags, "flags", |i| {
        let (a, b) = (xs[2 * i], xs[2 * i + 1]);
        100 + u32::from(a > b) + 10 * u32::from(a != b)
    });
    assert_each(&sp, "sum and product", |i| {
        let (a, b) = (xs[2 * i], xs[2 * i + 1]);
        Float2::new(a + b, a * b)
    });
}

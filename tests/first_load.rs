//! The compiler paths besides nvcc, on the GPU:
//!
//! - a module built with no compiler at all (`compiler = "nvrtc"`) carries the type probe to its
//!   first load: when the source text misled the macro (typedefs behind `#ifdef __CUDACC_RTC__`), the load
//!   is an `Error` naming the kernel, the parameter, the C++ and the Rust types, before anything
//!   runs; when it did not, the module loads and runs;
//! - a module built by NVRTC at build time (`compiler = "nvrtc-build"`) embeds cubins and PTX:
//!   the device runs its cubin, or JIT-compiles the PTX when no cubin fits.

use cuda_embed::{cuda_kernel, BuildPath, CudaContext, Error, LaunchConfig};
use std::sync::Arc;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

mod misread {
    // The macro has no compiler here and cannot tell what `__CUDACC_RTC__` (NVRTC defines it)
    // selects, so it reads both typedefs and keeps the last (`float`); NVRTC compiles `double`.
    cuda_embed::cuda_kernel!(
        r#"
        #ifdef __CUDACC_RTC__
        typedef double real;
        #else
        typedef float real;
        #endif
        extern "C" __global__ void scale(real* x, real a, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) x[i] *= a;
        }
    "#,
        compiler = "nvrtc"
    );
}

mod read_right {
    // With the user's define, the macro reads the branch the compiler takes.
    cuda_embed::cuda_kernel!(
        r#"
        #ifdef USE_FLOAT
        typedef float real;
        #else
        typedef double real;
        #endif
        extern "C" __global__ void scale(real* x, real a, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) x[i] *= a;
        }
    "#,
        compiler = "nvrtc",
        defines = ["USE_FLOAT"]
    );
}

mod nvcc_only {
    // Compiles with nvcc (the macro's check at build time) and fails under NVRTC at first use.
    cuda_embed::cuda_kernel!(
        r#"
        #ifdef __CUDACC_RTC__
        #error this kernel is for nvcc only
        #endif
        extern "C" __global__ void touch(float* x) { x[threadIdx.x] = 1.0f; }
    "#,
        compiler = "nvrtc"
    );
}

cuda_kernel!(
    r#"
    extern "C" __global__ void add_one(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] += 1.0f;
    }
"#,
    compiler = "nvrtc-build",
    archs = [80, 90]
);

mod templates_and_globals {
    // Kernels by address (a template instance), a global: every kind of name expression.
    cuda_embed::cuda_kernel!(
        r#"
        __device__ float bias;
        __constant__ int table[4];
        template <typename T> __global__ void shift(T* x, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) x[i] += (T)bias + (T)table[i % 4];
        }
        extern "C" __global__ void clear(float* x, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) x[i] = 0.0f;
        }
    "#,
        compiler = "nvrtc",
        instances = ["shift<float>", "shift<double>"],
        defines = ["UNUSED=1"]
    );
}

/// The macro embeds the digest of each run-time NVRTC compile's fixed inputs (so a cache hit
/// does not hash the source): it must be the digest of what the runtime compiles, name
/// expressions in the runtime's order included, or the cache key would not follow the source.
#[test]
fn the_embedded_unit_digest_is_that_of_what_the_runtime_compiles() {
    for spec in [
        misread::scale::module().spec(),
        read_right::scale::module().spec(),
        templates_and_globals::clear::module().spec(),
    ] {
        let (embedded, computed) = spec.nvrtc_unit_digests().expect("a module compiled at run time");
        assert_eq!(embedded, computed, "{}", spec.origin);
    }
    assert!(add_one::module().spec().nvrtc_unit_digests().is_none(), "compiled at build time: nothing to digest");
}

/// The macro embeds where the type check it appended starts, so a load neither searches the
/// source for it nor scans it for includes: it must be where the check really starts.
#[test]
fn the_embedded_length_of_the_modules_own_text_is_where_its_check_starts() {
    for spec in [
        misread::scale::module().spec(),
        read_right::scale::module().spec(),
        templates_and_globals::clear::module().spec(),
    ] {
        let (source, ..) = spec.nvrtc_inputs().expect("a module compiled at run time");
        let start = cuda_embed_source::typecode::static_checks_start(source);
        assert!(start.is_some(), "{}: the macro appended a check", spec.origin);
        assert_eq!(spec.nvrtc_own_len(), start, "{}", spec.origin);
    }
    assert!(add_one::module().spec().nvrtc_own_len().is_none(), "compiled at build time");
}

mod ptx_only {
    // sm_75 runs on no GPU of another major version: newer GPUs JIT the compute_75 PTX.
    cuda_embed::cuda_kernel!(
        r#"
        extern "C" __global__ void twice(float* x, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) x[i] *= 2.0f;
        }
    "#,
        compiler = "nvrtc-build",
        archs = [75]
    );
}

#[test]
fn build_paths_are_reported() {
    assert!(matches!(misread::scale::module().build_info(), BuildPath::Nvrtc { .. }));
    match add_one::module().build_info() {
        BuildPath::NvrtcBuild { targets, compiler } => {
            assert_eq!(targets, ["sm_80", "sm_90", "compute_80"]);
            assert!(compiler.starts_with("13."), "{compiler}");
        }
        other => panic!("built by NVRTC at build time: {other:?}"),
    }
}

/// NVRTC's verdict on a `compiler = "nvrtc"` module's source as the runtime compiles it (for
/// sm_80, with `extra` options), in a fresh cache; `None` without libnvrtc.
fn nvrtc_compile(spec: &cuda_embed::__private::ModuleSpec, extra: &[&str]) -> Option<Result<(), String>> {
    if !cuda_embed::nvrtc::is_available() {
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "libnvrtc cannot be loaded");
        return None;
    }
    let (source, options, headers, exprs) = spec.nvrtc_inputs().expect("compiled by NVRTC at run time");
    let cache = tempfile::tempdir().unwrap();
    let mut p = cuda_embed::Program::new(source).cache_dir(cache.path());
    for o in options.iter().chain(extra) {
        p = p.option(*o);
    }
    for (name, text) in headers {
        p = p.header(*name, *text);
    }
    for e in exprs {
        p = p.name_expression(e);
    }
    Some(
        p.compile(80)
            .map(|c| {
                // The check leaves nothing in the cubin: a module with `__device__` variables would
                // allocate them at every load.
                let named = |name: &[u8]| c.cubin.windows(name.len()).any(|w| w == name);
                assert!(!named(b"cuda_embed_probe"), "the cubin holds something of the type check");
            })
            .map_err(|e| e.to_string()),
    )
}

#[test]
fn the_type_check_is_part_of_the_modules_one_compile() {
    // The macro appends the first-load type check to the source as `static_assert`s, so the
    // module's compile is its check: NVRTC refuses the misread module and compiles the other.
    let misread = misread::scale::module().spec();
    let (source, ..) = misread.nvrtc_inputs().unwrap();
    assert!(cuda_embed_source::typecode::has_static_checks(source), "{source}");
    let Some(verdict) = nvrtc_compile(misread, &[]) else { return };
    let log = verdict.expect_err("the launcher takes f32 but NVRTC compiles double");
    assert!(log.contains("cuda-embed first-load type check __cuda_embed_probe_"), "{log}");
    assert_eq!(nvrtc_compile(read_right::scale::module().spec(), &[]), Some(Ok(())));
    // With the asserts left out (what the probe compile that explains a failure does), it compiles.
    let answers = format!("-D{}", cuda_embed_source::typecode::PROBE_ANSWERS);
    assert_eq!(nvrtc_compile(misread, &[&answers]), Some(Ok(())));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn first_load_catches_a_type_the_source_text_got_wrong() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut x = stream.alloc_zeros::<f32>(4).unwrap();
    let r = unsafe { misread::scale::launch(&stream, LaunchConfig::for_num_elems(4), &mut x, 2.0, 4) };
    let e = r.expect_err("the launcher takes f32 but the kernel was compiled for double");
    let text = e.to_string();
    println!("first-load error: {text}");
    assert!(matches!(e, Error::Signature { .. }), "{e:?}");
    for part in ["scale", "parameter `x`", "`real* x`", "`double*`", "DeviceBufferMut<f32>"] {
        assert!(text.contains(part), "missing {part:?} in: {text}");
    }
    // The same error again (nothing was launched, the module is not half-loaded).
    let again = unsafe { misread::scale::launch(&stream, LaunchConfig::for_num_elems(4), &mut x, 2.0, 4) };
    assert!(matches!(again, Err(Error::Signature { .. })), "{again:?}");
    // The context is fine.
    let mut y = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    unsafe { read_right::scale::launch(&stream, LaunchConfig::for_num_elems(4), &mut y, 3.0, 4).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [3.0, 6.0, 9.0, 12.0]);
}

/// A module whose source NVRTC refuses reports NVRTC's log for the source (the compile of its
/// type probe, which explains a failed type check, fails the same way and is not what is shown).
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_source_nvrtc_refuses_reports_its_own_error() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut x = stream.alloc_zeros::<f32>(32).unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    let e = unsafe { nvcc_only::touch::launch(&stream, cfg, &mut x) }.expect_err("NVRTC meets the #error");
    let text = e.to_string();
    assert!(matches!(e, Error::Compile { .. }), "{e:?}");
    assert!(text.contains("this kernel is for nvcc only"), "{text}");
    assert!(!text.contains("first-load type check"), "{text}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn build_time_nvrtc_images_run() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut x = stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
    unsafe { add_one::launch(&stream, LaunchConfig::for_num_elems(3), &mut x, 3).unwrap() };
    unsafe { ptx_only::twice::launch(&stream, LaunchConfig::for_num_elems(3), &mut x, 3).unwrap() };
    assert_eq!(stream.clone_dtoh(&x).unwrap(), [4.0, 6.0, 8.0]);
}

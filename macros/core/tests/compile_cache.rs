//! The build-time compiler driver with the real nvcc: fatbin + PTX, the content-addressed cache,
//! header tracking, `#line` mapping of errors, and the type probe. Skipped without nvcc unless
//! CUDA_EMBED_REQUIRE_TOOLKIT is set (scripts/with-cuda sets it).

use cuda_embed_macros_core::oracle::nvcc::{self, Arch, Request};
use cuda_embed_macros_core::{front::types, oracle::probe, oracle::ptx, signature};
use std::sync::Mutex;

// The cache directory is process-global (an environment variable): one test at a time.
static LOCK: Mutex<()> = Mutex::new(());

fn nvcc() -> Option<nvcc::Nvcc> {
    match nvcc::find_nvcc().unwrap() {
        Ok(n) => Some(n),
        Err(why) => {
            assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
            eprintln!("skipping: {why}");
            None
        }
    }
}

fn archs() -> Vec<Arch> {
    vec![Arch::parse("80").unwrap(), Arch::parse("90").unwrap()]
}

#[test]
fn cache_hits_and_header_changes_recompile() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let Some(nvcc) = nvcc() else { return };
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let inc = tempfile::tempdir().unwrap();
    std::fs::write(inc.path().join("scale.cuh"), "#define SCALE 1.5f\n").unwrap();
    let src = "#include \"scale.cuh\"\nextern \"C\" __global__ void k(float* x) { x[0] *= SCALE; }\n";
    let archs = archs();
    let dirs = [inc.path().to_path_buf()];
    let req =
        Request { source: src, line_directive: "#line 1 \"x.rs\"", options: &[], archs: &archs, include_dirs: &dirs };

    let first = nvcc::compile(&nvcc, &req).unwrap();
    assert!(!first.from_cache);
    assert_eq!(first.targets, ["sm_80", "sm_90", "compute_80"]);
    assert!(first.ptx.contains(".entry k("), "PTX of the lowest arch is kept");
    assert!(first.ptx.contains("0f3FC00000"), "SCALE (1.5f) from the header is compiled in");

    let second = nvcc::compile(&nvcc, &req).unwrap();
    assert!(second.from_cache, "nothing changed: no nvcc run");
    assert_eq!(second.fatbin, first.fatbin);

    // Touching the header's bytes invalidates the entry.
    std::fs::write(inc.path().join("scale.cuh"), "#define SCALE 2.5f\n").unwrap();
    let third = nvcc::compile(&nvcc, &req).unwrap();
    assert!(!third.from_cache, "a changed header must recompile");
    assert!(third.ptx.contains("0f40200000"), "the new SCALE (2.5f) is compiled in");

    // The entry is a `build/` entry under its key; a garbage entry is a miss, rewritten.
    let entry = cache.path().join("build").join(format!("{}.bin", nvcc::key(&nvcc, &req)));
    assert!(entry.is_file(), "{}", entry.display());
    std::fs::write(&entry, b"cuda-embed cache entry v4\ngarbage").unwrap();
    assert!(!nvcc::compile(&nvcc, &req).unwrap().from_cache, "a torn entry recompiles");
    assert!(nvcc::compile(&nvcc, &req).unwrap().from_cache, "and is rewritten");

    // nvcc's environment settings are part of the key.
    let plain = nvcc::key_with_env(&nvcc, &req, &[]);
    assert_ne!(plain, nvcc::key_with_env(&nvcc, &req, &["NVCC_APPEND_FLAGS=-G".to_string()]));
    assert_ne!(
        nvcc::key_with_env(&nvcc, &req, &["NVCC_CCBIN=/a".to_string()]),
        nvcc::key_with_env(&nvcc, &req, &["NVCC_CCBIN=/b".to_string()])
    );

    // Options and archs are part of the key.
    let opts = ["-DUNUSED".to_string()];
    let req2 = Request { options: &opts, ..req.clone() };
    assert!(!nvcc::compile(&nvcc, &req2).unwrap().from_cache);
    let one = [Arch::parse("90").unwrap()];
    let req3 = Request { archs: &one, ..req.clone() };
    let only90 = nvcc::compile(&nvcc, &req3).unwrap();
    assert_eq!(only90.targets, ["sm_90", "compute_90"]);
}

#[test]
fn errors_cite_the_rust_file_and_line() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let Some(nvcc) = nvcc() else { return };
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let src = "\nextern \"C\" __global__ void k(float* x) {\n    x[0] = undefined_name;\n}\n";
    let archs = archs();
    let req = Request {
        source: src,
        line_directive: "#line 40 \"src/kernels.rs\"",
        options: &[],
        archs: &archs,
        include_dirs: &[],
    };
    let log = nvcc::compile(&nvcc, &req).unwrap_err();
    // Line 40 is the literal's first line (empty here); the error is two lines further down.
    assert!(log.contains("src/kernels.rs(42): error"), "{log}");
    assert!(log.contains("undefined_name"), "{log}");
    assert!(std::fs::read_dir(cache.path()).map(|d| d.count()).unwrap_or(0) <= 1, "failures are not cached");
}

#[test]
fn probe_resolves_typedefs_macros_and_structs() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let Some(nvcc) = nvcc() else { return };
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let src = r#"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
struct Node { int v; Node* next; };
struct __align__(16) Params { float a; double b; };
namespace cfg { typedef __nv_bfloat16 floatX; }
using real_t = double;
#define INDEX unsigned short
typedef float4 vec_t;
typedef Node* node_ptr;
extern "C" __global__ void k(cfg::floatX a, const real_t* b, INDEX c, vec_t d, Params p, node_ptr n, const Node* const* nn, uint u) {}
"#;
    let parsed = signature::parse(src).unwrap();
    let k = &parsed.kernels[0];
    let wanted: Vec<probe::Probe> = (0..k.params.len()).map(|p| probe::param(format!("k0_{p}"), "::k", p)).collect();
    let full = format!("{src}\n{}", probe::code(&wanted));
    let archs = [Arch::parse("80").unwrap()];
    let req =
        Request { source: &full, line_directive: "#line 1 \"p.rs\"", options: &[], archs: &archs, include_dirs: &[] };
    let out = nvcc::compile(&nvcc, &req).unwrap();
    let values = probe::read(&out.ptx);
    let mapped: Vec<String> = k
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let probed = probe::number(&values, &format!("k0_{i}")).map(types::decode_probe);
            types::map(p, &parsed, probed.as_ref()).unwrap().describe()
        })
        .collect();
    assert_eq!(
        mapped,
        [
            "bf16",
            "&impl DeviceBuffer<f64>",
            "u16",
            "Float4",
            "Params (your #[repr(C)] type)",
            "&mut impl DeviceBufferMut<T> (any T)",
            "RawDevicePtr",
            "u32",
        ]
    );
    // The probe also learned the struct's layout.
    let p = types::decode_probe(probe::number(&values, "k0_4").unwrap());
    assert_eq!((p.size, p.align), (16, 16));
    // And the PTX agrees with the parameter count.
    let entries = ptx::entries(&out.ptx);
    assert_eq!(ptx::find(&entries, &[], "k", true).unwrap().params.len(), 8);
}

/// Each cubin of the fatbin comes with its kernels' block limits, read from the cubins nvcc kept:
/// the device's 1024, `__launch_bounds__`, or what the registers allow; the cache entry keeps
/// them, and an entry of an older build (without them) is compiled again.
#[test]
fn block_limits_come_with_each_cubin() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let Some(nvcc) = nvcc() else { return };
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let src = r#"
        extern "C" __global__ void plain(float* x) { x[threadIdx.x] = 1.0f; }
        extern "C" __global__ void __launch_bounds__(96) bounded(float* x) { x[threadIdx.x] = 2.0f; }
        template <typename T> __global__ void templated(T* x) { x[threadIdx.x] = T(3); }
        template __global__ void templated<float>(float*);
    "#;
    let archs = [Arch::parse("80").unwrap(), Arch::parse("90a").unwrap()];
    let req =
        Request { source: src, line_directive: "#line 1 \"x.rs\"", options: &[], archs: &archs, include_dirs: &[] };
    let first = nvcc::compile(&nvcc, &req).unwrap();
    let targets: Vec<&str> = first.limits.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(targets, ["sm_80", "sm_90a"], "one entry per cubin: {:?}", first.limits);
    for (target, kernels) in &first.limits {
        let of = |s: &str| kernels.iter().find(|(k, _)| k == s).map(|&(_, n)| n);
        assert_eq!(of("plain"), Some(1024), "{target}: {kernels:?}");
        assert_eq!(of("bounded"), Some(96), "{target}: {kernels:?}");
        // A C++ kernel, by its mangled symbol.
        assert_eq!(of("_Z9templatedIfEvPT_"), Some(1024), "{target}: {kernels:?}");
    }
    let again = nvcc::compile(&nvcc, &req).unwrap();
    assert!(again.from_cache);
    assert_eq!(again.limits, first.limits, "the cache entry keeps them");
    assert_eq!(nvcc::decode_limits(&nvcc::encode_limits(&first.limits)), Some(first.limits.clone()));
    // An entry as builds before the limits wrote it (the fatbin and the PTX only) is compiled again.
    use cuda_embed_source::cache::{build_dir, Entry, Store};
    let old = Entry { blobs: vec![first.fatbin.clone()], strings: vec![first.ptx.clone()], deps: Vec::new() };
    Store::new(build_dir(), "bin").write_or_warn(&nvcc::key(&nvcc, &req), &old).unwrap();
    let rebuilt = nvcc::compile(&nvcc, &req).unwrap();
    assert!(!rebuilt.from_cache, "an entry without limits is compiled again");
    assert_eq!(rebuilt.limits, first.limits);
    assert_eq!(nvcc::decode_limits("sm_90 k"), None, "a symbol without its limit");
    assert_eq!(nvcc::decode_limits("sm_90 k x"), None);
    assert_eq!(nvcc::decode_limits("compute_90 k 1"), None);
    assert_eq!(nvcc::decode_limits(""), Some(Vec::new()));
}

//! The NVRTC fallback's compiler and disk cache, exercised without a GPU (NVRTC itself needs none).
//! Skipped when libnvrtc is absent, unless CUDA_EMBED_REQUIRE_TOOLKIT is set (the test script sets it).

use cuda_embed_runtime::{nvrtc, Error};
use std::sync::Mutex;

// The cache directory is process-global (an environment variable): one test at a time.
static LOCK: Mutex<()> = Mutex::new(());

fn available() -> bool {
    if nvrtc::is_available() {
        return true;
    }
    assert!(
        std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(),
        "CUDA_EMBED_REQUIRE_TOOLKIT is set but libnvrtc cannot be loaded (LD_LIBRARY_PATH?)"
    );
    eprintln!("libnvrtc not found: skipping");
    false
}

const SRC: &str = r#"
#include <cuda_fp16.h>
namespace k { __global__ void scale(__half* x, float by) { x[threadIdx.x] = __float2half(__half2float(x[threadIdx.x]) * by); } }
extern "C" __global__ void plain(int* x) { x[0] = 1; }
"#;

#[test]
fn compiles_resolves_names_and_caches_on_disk() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", dir.path());
    let first = nvrtc::compile("test.rs:1", SRC, &["-DUNUSED=1"], &[], &["&k::scale", "plain"], 80).unwrap();
    assert!(!first.from_cache);
    assert_eq!(first.symbols, ["_ZN1k5scaleEP6__halff", "plain"]);
    assert_eq!(&first.cubin[..4], b"\x7fELF", "a cubin is an ELF image");
    let file = first.cache_file.clone().expect("cache written");
    assert!(file.starts_with(dir.path().join("nvrtc")));

    let second = nvrtc::compile("test.rs:1", SRC, &["-DUNUSED=1"], &[], &["&k::scale", "plain"], 80).unwrap();
    assert!(second.from_cache, "second compile must hit the disk cache");
    assert_eq!(second.cubin, first.cubin);
    assert_eq!(second.symbols, first.symbols);

    // Another architecture or option is another entry.
    let other = nvrtc::compile("test.rs:1", SRC, &["-DUNUSED=2"], &[], &["&k::scale", "plain"], 90).unwrap();
    assert!(!other.from_cache);
    assert_eq!(std::fs::read_dir(dir.path().join("nvrtc")).unwrap().count(), 2);

    // A syntax error is an Error carrying NVRTC's log and the origin.
    let err = nvrtc::compile("lib.rs:7", "#line 7 \"lib.rs\"\n__global__ void k( { }", &[], &[], &[], 80).unwrap_err();
    assert!(matches!(err, Error::Compile { ref origin, arch: 80, .. } if origin == "lib.rs:7"), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("lib.rs(7)") && msg.contains("error"), "{msg}");
}

#[test]
fn embedded_headers_are_keyed_and_garbage_entries_recompile() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", dir.path());
    let src = "#include \"scale.cuh\"\nextern \"C\" __global__ void k(float* x) { x[0] *= SCALE; }\n";
    let compile = |header: &str| nvrtc::compile("h.rs:1", src, &[], &[("scale.cuh", header)], &["k"], 80).unwrap();
    let first = compile("#define SCALE 2.0f\n");
    assert!(!first.from_cache);
    assert!(compile("#define SCALE 2.0f\n").from_cache);
    assert!(!compile("#define SCALE 3.0f\n").from_cache, "a header's bytes changed: a miss");
    // A torn or foreign entry is a miss, recompiled and rewritten.
    let file = first.cache_file.unwrap();
    assert!(file.extension().is_some_and(|e| e == "cubin"), "{}", file.display());
    std::fs::write(&file, b"garbage").unwrap();
    assert!(!compile("#define SCALE 2.0f\n").from_cache);
    assert!(compile("#define SCALE 2.0f\n").from_cache);
}

const HIT_CHILD: &str = "CUDA_EMBED_TEST_NVRTC_HIT_CHILD";

/// Compiles in a fresh process and reports whether libnvrtc got loaded; spawned by
/// `a_cache_hit_does_not_load_nvrtc`.
#[test]
fn hit_child() {
    if std::env::var_os(HIT_CHILD).is_none() {
        return;
    }
    let c = nvrtc::compile("child.rs:1", SRC, &[], &[], &["plain"], 80).unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    println!("FROM_CACHE={} NVRTC_LOADED={}", c.from_cache, maps.contains("libnvrtc"));
}

#[test]
fn a_cache_hit_does_not_load_nvrtc() {
    if !available() || !std::path::Path::new("/proc/self/maps").exists() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let run = || {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["hit_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(HIT_CHILD, "1")
            .env("CUDA_EMBED_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let first = run();
    assert!(first.contains("FROM_CACHE=false NVRTC_LOADED=true"), "{first}");
    let second = run();
    assert!(second.contains("FROM_CACHE=true NVRTC_LOADED=false"), "a hit must not load libnvrtc: {second}");
}

const CACHE_DIR_CHILD: &str = "CUDA_EMBED_TEST_CACHE_DIR_CHILD";

/// Compiles a program with `Program::cache_dir` set to the directory named by
/// [`CACHE_DIR_CHILD`]; spawned by `program_cache_dir_eviction_leaves_other_files` with a size
/// cap of one byte (the cap is an environment variable: a child of its own sets it).
#[test]
fn cache_dir_child() {
    let Some(dir) = std::env::var_os(CACHE_DIR_CHILD) else { return };
    let c = cuda_embed_runtime::Program::new("extern \"C\" __global__ void k(int* x) { x[0] = 3; }")
        .name_expression("k")
        .cache_dir(dir)
        .compile(80)
        .unwrap();
    println!("FROM_CACHE={}", c.from_cache);
}

/// `Program::cache_dir(d)` caps `d/build` together with `d/nvrtc`: with a cap of one byte, a
/// compile evicts every cache entry there, and leaves every other file (`d` is a project
/// directory whose `build/` belongs to another tool).
#[test]
fn program_cache_dir_eviction_leaves_other_files() {
    use cuda_embed_source::cache::{Entry, Store};
    if !available() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let build = d.path().join("build");
    std::fs::create_dir_all(&build).unwrap();
    let foreign = [
        (build.join("my_results.dat"), vec![7u8; 4096]),
        (build.join("CMakeCache.txt"), b"CMAKE_BUILD_TYPE:STRING=Release\n".to_vec()),
        (build.join("0a1b.bin"), vec![0u8; 4096]),
    ];
    for (f, bytes) in &foreign {
        std::fs::write(f, bytes).unwrap();
    }
    // An entry of the cache in `d/build`: evicted, which shows that eviction ran.
    let old = Store::new(&build, "bin").write_atomic("2c3d", &Entry::default()).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["cache_dir_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CACHE_DIR_CHILD, d.path())
        .env(cuda_embed_runtime::cache::MAX_VAR, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("FROM_CACHE=false"), "{text}");
    assert!(!old.exists(), "the cache's own entry in d/build was not evicted: {text}");
    for (f, bytes) in &foreign {
        assert_eq!(std::fs::read(f).ok().as_ref(), Some(bytes), "{} was deleted or changed", f.display());
    }
}

/// A header the options include before the source (`--pre-include`) is part of the cache key:
/// after a change to it, NVRTC compiles again and the cubin holds the new value, where a stale
/// hit would return the old cubin.
#[test]
fn a_changed_pre_included_header_recompiles() {
    if !available() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pre = d.path().join("scale.cuh");
    let program = cuda_embed_runtime::Program::new("extern \"C\" __global__ void k(int* x) { x[0] = SCALE; }")
        .option(format!("--pre-include={}", pre.display()))
        .name_expression("k")
        .cache_dir(d.path().join("cache"));
    std::fs::write(&pre, "#define SCALE 1234567\n").unwrap();
    let first = program.compile(80).unwrap();
    assert!(!first.from_cache);
    assert!(program.compile(80).unwrap().from_cache, "nothing changed: a hit");
    std::fs::write(&pre, "#define SCALE 7654321\n").unwrap();
    let second = program.compile(80).unwrap();
    assert!(!second.from_cache, "the pre-included header changed: a miss");
    assert_ne!(first.cubin, second.cubin);
    assert!(second.cubin.windows(4).any(|w| w == 7654321i32.to_le_bytes()), "the new value is compiled in");
}

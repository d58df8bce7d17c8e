//! The prebuild (issue 38): a package's kernel macro invocations expanded in parallel into the
//! build cache give the macros exactly what a sequential build gives (the same cache entries,
//! the same expansion with the same embedded images), the macros then compile nothing, a kernel
//! edited after the prebuild is compiled afresh, and NVRTC at build time prebuilds too. Skipped
//! without nvcc unless CUDA_EMBED_REQUIRE_TOOLKIT is set (scripts/with-cuda sets it).
#![cfg(unix)] // entries are compared by inode

use cuda_embed_macros_core::oracle::nvcc;
use cuda_embed_macros_core::prebuild::{self, scan};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

// The cache directory and the compiler choice are process-global (environment variables).
static LOCK: Mutex<()> = Mutex::new(());

const LIB: &str = r###"use cuda_embed::{cuda_kernel, elementwise_kernel, reduction_kernel};

cuda_kernel!(r#"
    extern "C" __global__ void scale(float* x, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= a * 2.0f;
    }
"#);

cuda_kernel!(r#"
    template <typename T> __global__ void fill(T* x, T v, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = v;
    }
"#, instances = ["fill<float>", "fill<int>"]);

mod inner {
    cuda_embed::elementwise_kernel!(
        axpy,
        inputs = "T a, T x, T y",
        outputs = "T z",
        operation = "z = a * x + y",
        types = ["float"],
    );
}

reduction_kernel!(
    total,
    inputs = "T x",
    outputs = "T s",
    map = "x",
    reduce = "a + b",
    identity = "0",
    types = ["float"],
);
"###;

/// The two `cuda_kernel!`s of [`LIB`] alone (what the tests that need no other macro build).
fn small() -> String {
    LIB[..LIB.find("mod inner").unwrap()].to_string()
}

fn toolkit() -> bool {
    match nvcc::find_nvcc().unwrap() {
        Ok(_) => true,
        Err(why) => {
            assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
            eprintln!("skipping: {why}");
            false
        }
    }
}

/// A package folder with `src/lib.rs` holding `text`.
fn package(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"p\"\n\n[workspace]\n").unwrap();
    let lib = dir.path().join("src/lib.rs");
    std::fs::write(&lib, text).unwrap();
    (dir, lib)
}

/// What each invocation in `file` expands to, one after another on this thread (as rustc does).
fn expand_all(file: &Path, manifest: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let invocations = scan::scan_text(&text, file, &scan::rustc_name(file, manifest)).unwrap();
    invocations.iter().map(|i| i.expand().to_string()).collect()
}

/// Each entry file of the cache at `cache` with its inode: a rewrite (temporary file renamed into
/// place) changes the inode, so equal lists mean nothing was written.
fn entries(cache: &Path) -> Vec<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out: Vec<(String, u64)> = std::fs::read_dir(cache.join("build"))
        .map(|rd| {
            rd.flatten().map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().unwrap().ino())).collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn names(entries: &[(String, u64)]) -> Vec<&str> {
    entries.iter().map(|e| e.0.as_str()).collect()
}

/// Sequential expansion in one fresh cache; prebuild then expansion in another: the same
/// expansions (images included) and the same entries, and no compile after the prebuild.
fn prebuild_matches_sequential(text: &str, count: usize) {
    let (pkg, lib) = package(text);
    let sequential = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", sequential.path());
    let expected = expand_all(&lib, pkg.path());
    assert_eq!(expected.len(), count);
    for out in &expected {
        assert!(!out.contains("compile_error"), "{out}");
    }

    let prebuilt = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", prebuilt.path());
    let report = prebuild::prebuild(std::slice::from_ref(&lib), pkg.path(), 2);
    assert_eq!((report.found, report.failed, report.jobs), (count, 0, 2), "{report}");
    let after_prebuild = entries(prebuilt.path());
    assert_eq!(names(&after_prebuild), names(&entries(sequential.path())), "the prebuild's keys are the macros'");
    let got = expand_all(&lib, pkg.path());
    assert_eq!(entries(prebuilt.path()), after_prebuild, "the macros compiled nothing after the prebuild");
    assert_eq!(got, expected, "the expansions, embedded images included, are a sequential build's");
}

#[test]
fn prebuild_gives_what_a_sequential_build_gives() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !toolkit() {
        return;
    }
    std::env::remove_var("CUDA_EMBED_NO_NVCC");
    prebuild_matches_sequential(LIB, 4);
}

#[test]
fn nvrtc_at_build_time_prebuilds_too() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !toolkit() {
        return;
    }
    if let Ok(Err(why)) | Err(why) = cuda_embed_macros_core::oracle::nvrtc::find_nvrtc() {
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
        return;
    }
    std::env::set_var("CUDA_EMBED_NO_NVCC", "1");
    prebuild_matches_sequential(&small(), 2);
    std::env::remove_var("CUDA_EMBED_NO_NVCC");
}

#[test]
fn a_kernel_edited_after_the_prebuild_is_compiled_afresh() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !toolkit() {
        return;
    }
    std::env::remove_var("CUDA_EMBED_NO_NVCC");
    let (pkg, lib) = package(&small());
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let report = prebuild::prebuild(std::slice::from_ref(&lib), pkg.path(), 2);
    assert_eq!(report.failed, 0, "{report}");
    let old = expand_all(&lib, pkg.path());
    // Edited between the build script and rustc: the macro sees the new text.
    std::fs::write(&lib, small().replace("a * 2.0f", "a * 3.0f")).unwrap();
    let new = expand_all(&lib, pkg.path());
    assert_ne!(new[0], old[0], "the edited kernel's image is not the prebuilt one");
    assert_eq!(new[1..], old[1..], "the others are unchanged");
    let fresh = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", fresh.path());
    assert_eq!(expand_all(&lib, pkg.path()), new, "what a build from scratch of the edited source gives");
}

#[test]
fn a_file_that_is_not_rust_is_reported_and_the_rest_prebuilt() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !toolkit() {
        return;
    }
    std::env::remove_var("CUDA_EMBED_NO_NVCC");
    let (pkg, lib) = package(&small());
    let broken = pkg.path().join("src/broken.rs");
    std::fs::write(&broken, "cuda_kernel!(r#\"unterminated").unwrap();
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let files = scan::rust_files(&pkg.path().join("src"));
    assert_eq!(files, [broken.clone(), lib.clone()]);
    let report = prebuild::prebuild(&files, pkg.path(), 2);
    assert_eq!((report.found, report.failed), (2, 0), "{report}");
    assert_eq!(report.unreadable.len(), 1);
    assert!(report.unreadable[0].contains("broken.rs"), "{:?}", report.unreadable);
}

#[test]
fn an_invocation_with_an_error_counts_as_failed_and_costs_nothing_else() {
    let _g = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if !toolkit() {
        return;
    }
    std::env::remove_var("CUDA_EMBED_NO_NVCC");
    let bad = "cuda_kernel!(r#\"extern \"C\" __global__ void k(float* x) { x[0] = undefined_name; }\"#);\n\
               macro_rules! m { ($s:literal) => { cuda_kernel!($s); } }\n";
    let (pkg, lib) = package(bad);
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let report = prebuild::prebuild(&[lib], pkg.path(), 2);
    assert_eq!((report.found, report.failed), (2, 2), "{report}");
    assert!(entries(cache.path()).is_empty(), "a failed compile is not cached");
}

#[test]
fn another_toolkit_is_another_key() {
    let Ok(Ok(n)) = nvcc::find_nvcc() else { return };
    let archs = [nvcc::Arch::parse("80").unwrap()];
    let req = nvcc::Request {
        source: "__global__ void k() {}",
        line_directive: "",
        options: &[],
        archs: &archs,
        include_dirs: &[],
    };
    let other = nvcc::Nvcc { version: "12.9.86".into(), ..n.clone() };
    assert_ne!(nvcc::key(&n, &req), nvcc::key(&other, &req), "an entry of another nvcc is a miss");
}

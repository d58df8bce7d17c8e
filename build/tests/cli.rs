//! The `cuda-embed-build` command: prebuild, export and import (issue 38). A cache imported from
//! a bundle serves a prebuild (and the macros) without one compile; a corrupt bundle is refused
//! and changes nothing; with no compiler the prebuild says why and builds nothing. Skipped
//! without nvcc unless CUDA_EMBED_REQUIRE_TOOLKIT is set (scripts/with-cuda sets it).
#![cfg(unix)] // entries are compared by inode

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LIB: &str = r###"cuda_embed::cuda_kernel!(r#"
    extern "C" __global__ void twice(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= 2.0f;
    }
"#);
"###;

fn toolkit() -> bool {
    if !binary() {
        return false;
    }
    match cuda_embed_macros_core::oracle::nvcc::find_nvcc().unwrap() {
        Ok(_) => true,
        Err(why) => {
            assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
            eprintln!("skipping: {why}");
            false
        }
    }
}

fn package() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"p\"\n\n[workspace]\n").unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), LIB).unwrap();
    dir
}

/// Whether the `cuda-embed-build` binary is here: a test binary copied to a machine with no Rust
/// toolchain (the GPU runners, `scripts/gpu-pack`) has no binary beside it.
fn binary() -> bool {
    if std::path::Path::new(env!("CARGO_BIN_EXE_cuda-embed-build")).exists() {
        return true;
    }
    assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "the cuda-embed-build binary is missing");
    eprintln!("cli: the cuda-embed-build binary is not here (a copied test binary): not run");
    false
}

fn cli(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuda-embed-build")).args(args).env("CUDA_EMBED_CACHE_DIR", cache).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The cache's entry files with their inodes (a rewrite changes the inode).
fn entries(cache: &Path) -> Vec<(PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out: Vec<_> = ["build", "nvrtc", "link"]
        .iter()
        .flat_map(|s| std::fs::read_dir(cache.join(s)).into_iter().flatten().flatten())
        .map(|e| (e.path(), e.metadata().unwrap().ino()))
        .collect();
    out.sort();
    out
}

#[test]
fn an_imported_bundle_serves_the_build_without_a_compile() {
    if !toolkit() {
        return;
    }
    let pkg = package();
    let dir = pkg.path().to_str().unwrap();
    let first = tempfile::tempdir().unwrap();
    let built = cli(first.path(), &["prebuild", "--jobs", "2", dir]);
    assert!(built.status.success(), "{}", text(&built));
    assert!(text(&built).contains("prebuilt 1 kernel macro invocations"), "{}", text(&built));
    let bundle = first.path().join("kernels.cache");
    let exported = cli(first.path(), &["export", bundle.to_str().unwrap(), dir]);
    assert!(exported.status.success(), "{}", text(&exported));
    assert!(text(&exported).contains("exported 1 entries"), "{}", text(&exported));

    // Another machine (another cache folder): import, then the build compiles nothing.
    let second = tempfile::tempdir().unwrap();
    let imported = cli(second.path(), &["import", bundle.to_str().unwrap()]);
    assert!(imported.status.success(), "{}", text(&imported));
    assert!(text(&imported).contains("imported 1 entries"), "{}", text(&imported));
    let before = entries(second.path());
    assert_eq!(before.len(), 1);
    // From the package folder with no folder named (`.`): the keys are the same (the include
    // directory in them is absolute, as the macro's), so it is a hit too.
    let again = Command::new(env!("CARGO_BIN_EXE_cuda-embed-build"))
        .arg("prebuild")
        .current_dir(pkg.path())
        .env("CUDA_EMBED_CACHE_DIR", second.path())
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(entries(second.path()), before, "the imported entry was a hit: nothing compiled or written");
}

#[test]
fn a_corrupt_or_foreign_bundle_is_refused_and_changes_nothing() {
    if !binary() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for (bytes, why) in [
        (b"not a bundle at all".to_vec(), "not a cuda-embed cache bundle"),
        (b"cuda-embed cache bundle v1\nentry build k.bin 3\nabc\nend 0000000000000000\n".to_vec(), "checksum"),
    ] {
        let f = dir.path().join("in.cache");
        std::fs::write(&f, bytes).unwrap();
        let out = cli(&cache, &["import", f.to_str().unwrap()]);
        assert!(!out.status.success());
        assert!(text(&out).contains("refused, nothing was imported") && text(&out).contains(why), "{}", text(&out));
        assert!(!cache.exists(), "a refused import created the cache");
    }
    let missing = cli(&cache, &["import", dir.path().join("none.cache").to_str().unwrap()]);
    assert!(!missing.status.success() && text(&missing).contains("cannot read"), "{}", text(&missing));
}

#[test]
fn with_no_compiler_the_prebuild_says_why_and_builds_nothing() {
    if !binary() {
        return;
    }
    let pkg = package();
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuda-embed-build"))
        .args(["prebuild", pkg.path().to_str().unwrap()])
        .env("CUDA_EMBED_CACHE_DIR", cache.path())
        .env("CUDA_EMBED_NO_NVCC", "1")
        .env("CUDA_EMBED_NO_BUILD_NVRTC", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out).contains("prebuild skipped: ") && text(&out).contains("CUDA_EMBED_NO_NVCC"), "{}", text(&out));
    assert!(entries(cache.path()).is_empty());
}

#[test]
fn bad_arguments_print_the_usage() {
    if !binary() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let out = cli(cache.path(), &["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("usage: cuda-embed-build prebuild"));
}

//! A crate outside this workspace that depends on `cuda-embed` by path and uses `cuda_kernel!`,
//! built the way the README's "Use it from your own crate" section tells a user: a plain
//! `Cargo.toml` dependency, and `cargo build` under whatever compiler the environment offers
//! (`scripts/with-cuda` puts the pinned nvcc on PATH for the whole test run).
//!
//! The crate lives in this test binary's scratch folder (`CARGO_TARGET_TMPDIR/downstream`), builds
//! into the target folder all scratch crates share (see `scratch/mod.rs`), reused between runs,
//! and gets this workspace's `Cargo.lock` so that it builds the same dependency versions offline. Its binary is run too: with a GPU it prints the
//! kernel's result; without one, `fn main() -> cuda_embed::Result<()>` must print the readable
//! message (not the `Debug` form of the variant).

mod scratch;

use scratch::{progress, write};
use std::path::PathBuf;
use std::process::Command;

const MANIFEST: &str = r#"[package]
name = "@NAME@"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
cuda-embed = { path = "@PATH@" }

[workspace]
"#;

const MAIN: &str = r##"use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(r#"
    extern "C" __global__ void add_one(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] += 1.0f;
    }
"#);

fn main() -> cuda_embed::Result<()> {
    println!("build: {}", add_one::module().build_info());
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let mut x = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
    // SAFETY: the kernel touches x[0..n) with n = x.len().
    unsafe { add_one::launch(&stream, LaunchConfig::for_num_elems(3), &mut x, 3)? };
    println!("result: {:?}", stream.clone_dtoh(&x)?);
    Ok(())
}
"##;

#[test]
fn a_crate_outside_the_workspace_builds_and_runs() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("downstream");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest =
        MANIFEST.replace("@NAME@", "downstream-user").replace("@PATH@", &repo.display().to_string().replace('\\', "/"));
    write(&dir.join("Cargo.toml"), &manifest);
    write(&dir.join("src/main.rs"), MAIN);
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(repo.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    progress("downstream: cargo build of a crate outside the workspace (about a minute the first time)");
    let build = |offline: bool| {
        let mut c = scratch::cargo(&dir, &["build", "--quiet"]);
        if offline {
            c.arg("--offline");
        }
        c.output().expect("running cargo")
    };
    // Offline first (the workspace build has fetched every dependency); online if that fails.
    let mut out = build(true);
    if !out.status.success() {
        out = build(false);
    }
    assert!(out.status.success(), "the downstream crate did not build:\n{}", String::from_utf8_lossy(&out.stderr));

    let run = Command::new(scratch::target_dir().join("debug/downstream-user"))
        .output()
        .expect("running the downstream binary");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stdout.contains("build: "), "no build info printed: {stdout}{stderr}");
    if std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_some() && std::env::var_os("CUDA_EMBED_FORCE_NVRTC").is_none()
    {
        assert!(stdout.contains("nvcc"), "with a toolkit the downstream crate should be built by nvcc: {stdout}");
    }
    if run.status.success() {
        assert!(stdout.contains("result: [2.0, 3.0, 4.0]"), "wrong result: {stdout}");
    } else {
        // No GPU here: the error from `main` must be the readable message, not a Debug dump.
        assert!(stderr.starts_with("Error: "), "unexpected failure: {stderr}");
        assert!(!stderr.contains("detail:") && !stderr.contains(" {"), "main printed the Debug form: {stderr}");
    }
}

/// With no CUDA compiler at all, `cargo build` still succeeds, but it says so: a warning naming
/// the run-time NVRTC fallback and how to get a compiler (issue: the silent fallback).
///
/// "No compiler" is set up explicitly, the same on every machine: `CUDA_EMBED_NO_NVCC` and
/// `CUDA_EMBED_NO_BUILD_NVRTC` hide nvcc and libnvrtc from the macro. Emptying the search paths
/// would not: a system-wide libnvrtc (`/usr/local/cuda/lib64`, the loader's cache) is still found,
/// and the test used to return before asserting anything on such a machine. The rest of the
/// environment is kept as it is (under `scripts/with-cuda` nvcc is on PATH and the wheel's
/// libnvrtc on LD_LIBRARY_PATH), so the test shows the two variables hide compilers that are there.
#[test]
fn a_build_without_any_cuda_compiler_warns() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("downstream-no-compiler");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    // Its own package name: the binary lands in the shared target folder beside the other one.
    let manifest = MANIFEST
        .replace("@NAME@", "downstream-no-compiler")
        .replace("@PATH@", &repo.display().to_string().replace('\\', "/"));
    write(&dir.join("Cargo.toml"), &manifest);
    // A fresh source each run, so the user crate (and its macro) is rebuilt: cargo does not
    // track the macro's environment.
    let stamp = format!("// {:?}\n", std::time::SystemTime::now());
    std::fs::write(dir.join("src/main.rs"), format!("{stamp}{MAIN}")).unwrap();
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(repo.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    let mut c = scratch::cargo(&dir, &["build", "--offline"]);
    c.env("CUDA_EMBED_NO_NVCC", "1").env("CUDA_EMBED_NO_BUILD_NVRTC", "1");
    // Asking for run-time NVRTC is not "no compiler found" (no warning), and requiring a
    // compiler makes the build fail.
    c.env_remove("CUDA_EMBED_FORCE_NVRTC").env_remove("CUDA_EMBED_REQUIRE_COMPILER");
    progress("downstream: cargo build of a crate with no CUDA compiler (a minute or two the first time)");
    let out = c.output().expect("running cargo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the build without a compiler must still succeed:\n{stderr}");
    let run =
        Command::new(scratch::target_dir().join("debug/downstream-no-compiler")).output().expect("running the binary");
    let info = String::from_utf8_lossy(&run.stdout);
    assert!(info.contains("NVRTC at first use"), "the kernels must be compiled at first use: {info}\n{stderr}");
    assert!(stderr.contains("no CUDA compiler was found while building this crate"), "no warning:\n{stderr}\n{info}");
    // The reason names both variables: the compilers were hidden, whatever the machine has.
    assert!(
        stderr.contains("CUDA_EMBED_NO_NVCC is set") && stderr.contains("CUDA_EMBED_NO_BUILD_NVRTC is set"),
        "{stderr}"
    );
    assert!(stderr.contains("scripts/with-cuda") && stderr.contains("CUDA_EMBED_REQUIRE_COMPILER"), "{stderr}");
    assert_eq!(stderr.matches("no CUDA compiler was found").count(), 1, "once per build:\n{stderr}");
}

//! cuda-embed's choice of cudarc features (linking mode, CUDA version) is its own cargo features,
//! so that a crate can share cudarc with candle, whose `cuda` feature selects `dynamic-linking` and
//! `cuda-version-from-build-system` (cudarc refuses two linking modes).
//!
//! Two crates outside this workspace depend on cuda-embed by path and on cudarc with exactly
//! candle-core 0.11.1's feature set (candle itself is left out: nvcc takes over a quarter of an
//! hour over its kernels; `examples/candle` is the full example). With `default-features = false, features =
//! ["dynamic-linking"]` the crate, a `cuda_kernel!` launcher included, type-checks (`cargo check`:
//! linking needs the CUDA libraries, which this machine may not have); with cuda-embed's defaults
//! cudarc's build script refuses the two linking modes, the error the features exist to avoid.

mod scratch;

use scratch::write;
use std::path::PathBuf;
use std::process::{Command, Output};

const MANIFEST: &str = r#"[package]
name = "@NAME@"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
cuda-embed = { path = "@PATH@"@FEATURES@ }
# candle-core 0.11.1's cudarc dependency with its `cuda` feature on, feature for feature.
cudarc = { version = "=0.19.10", default-features = false, features = ["std", "cublas", "cublaslt", "curand", "driver", "nvrtc", "f16", "f8", "cuda-version-from-build-system", "dynamic-linking"] }

[workspace]
"#;

const MAIN: &str = r##"use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(r#"
    extern "C" __global__ void scale(float* x, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= a;
    }
"#);

fn main() -> cuda_embed::Result<()> {
    // The same cudarc types as the rest of the program (candle's stream and buffers).
    let ctx = cudarc::driver::CudaContext::new(0).expect("a GPU");
    let stream: std::sync::Arc<cudarc::driver::CudaStream> = ctx.default_stream();
    let mut x: cudarc::driver::CudaSlice<f32> = stream.clone_htod(&[1.0f32, 2.0]).expect("copy");
    println!("driver available: {}", cuda_embed::driver_available());
    // SAFETY: the kernel touches x[0..2).
    unsafe { scale::launch(&stream, LaunchConfig::for_num_elems(2), &mut x, 2.0, 2)? };
    Ok(())
}
"##;

/// Writes crate `name` with cuda-embed `features` (a manifest fragment) and runs `cargo check` in it.
fn check(name: &str, features: &str) -> Output {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = MANIFEST
        .replace("@NAME@", name)
        .replace("@PATH@", &repo.display().to_string().replace('\\', "/"))
        .replace("@FEATURES@", features);
    write(&dir.join("Cargo.toml"), &manifest);
    write(&dir.join("src/main.rs"), MAIN);
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(repo.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    scratch::progress(&format!("cudarc_features: cargo check of `{name}` (under a minute the first time)"));
    let run = |offline: bool| {
        let mut c = scratch::cargo(&dir, &["check", "--quiet"]);
        if offline {
            c.arg("--offline");
        }
        c.output().expect("running cargo")
    };
    let out = run(true);
    if out.status.success() || String::from_utf8_lossy(&out.stderr).contains("Both `dynamic-loading`") {
        return out;
    }
    run(false)
}

/// cudarc's `cuda-version-from-build-system` runs `nvcc --version` in its build script.
fn nvcc_found() -> bool {
    let nvcc = std::env::var_os("NVCC").unwrap_or_else(|| "nvcc".into());
    Command::new(nvcc).arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn candles_cudarc_features_with_dynamic_linking() {
    if !nvcc_found() {
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "nvcc is required but was not found");
        eprintln!("skipped: no nvcc on PATH (cudarc's cuda-version-from-build-system needs it)");
        return;
    }
    let out = check("cudarc-features-linked", r#", default-features = false, features = ["dynamic-linking"]"#);
    assert!(
        out.status.success(),
        "candle's cudarc features with cuda-embed's `dynamic-linking` did not type-check:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_default_features_conflict_with_candles() {
    let out = check("cudarc-features-default", "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "cuda-embed's default `dynamic-loading` next to `dynamic-linking` was accepted");
    assert!(stderr.contains("Both `dynamic-loading` and `dynamic-linking` features are active"), "{stderr}");
}

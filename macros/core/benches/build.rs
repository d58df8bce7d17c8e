//! Build cost of `cuda_kernel!`: expanding 20 kernels (one per invocation, as in a crate with 20
//! `cuda_kernel!`s) with an empty build cache, then again with nothing changed, then after a
//! header that 2 of the 20 include was edited (only those 2 may run nvcc again).
//!
//! Runs on the build machine (no GPU): `cargo bench -p cuda-embed-macros-core --bench build`.
//! Needs nvcc (PATH, NVCC or CUDA_PATH).

use cuda_embed_macros_core::{expand, CallSite};
use proc_macro2::{Literal, TokenStream, TokenTree};
use std::time::Instant;

fn source(i: usize) -> String {
    // Kernels 0 and 1 include `shared.cuh` (next to the "Rust file", as `dir` says).
    let include = if i < 2 { "#include \"shared.cuh\"" } else { "" };
    format!(
        r#"
        {include}
        extern "C" __global__ void kernel_{i}(const float* __restrict__ x, float* __restrict__ y, float a, size_t n) {{
            size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
            if (t < n) y[t] = a * x[t] + {i}.0f;
        }}
    "#
    )
}

/// Expands `n` invocations; returns (total ms, ms spent in each invocation).
fn expand_all(n: usize, dir: &std::path::Path) -> (f64, Vec<f64>) {
    let t0 = Instant::now();
    let mut each = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        let tokens: TokenStream = TokenTree::Literal(Literal::string(&source(i))).into();
        let site = CallSite { file: "src/lib.rs".into(), line: 10 + i * 10, dir: Some(dir.to_path_buf()) };
        let out = expand(tokens, site).to_string();
        assert!(!out.contains("compile_error"), "{out}");
        each.push(t.elapsed().as_secs_f64() * 1e3);
    }
    (t0.elapsed().as_secs_f64() * 1e3, each)
}

fn main() {
    if cuda_embed_macros_core::oracle::nvcc::find_nvcc().ok().and_then(|r| r.ok()).is_none() {
        eprintln!("build bench: no nvcc found (set PATH, NVCC or CUDA_PATH)");
        std::process::exit(2);
    }
    let nvrtc = cuda_embed_macros_core::oracle::nvrtc::find_nvrtc().ok().and_then(|r| r.ok()).is_some();
    // The same sequence through nvcc, then (when libnvrtc is found) through NVRTC at build time,
    // in this one process, each with its own empty cache.
    let mut cold_by = Vec::new();
    for compiler in ["nvcc", "NVRTC at build time"].into_iter().take(if nvrtc { 2 } else { 1 }) {
        if compiler != "nvcc" {
            std::env::set_var("CUDA_EMBED_NO_NVCC", "1");
        }
        cold_by.push((compiler, run(compiler)));
    }
    if let [(_, nvcc), (_, nvrtc)] = cold_by[..] {
        println!("\ncold build, NVRTC at build time / nvcc: {:.2}x", nvrtc / nvcc);
    }
}

/// The three phases through whichever compiler the macro finds; returns the cold total (ms).
fn run(compiler: &str) -> f64 {
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    let src_dir = tempfile::tempdir().unwrap();
    let header = src_dir.path().join("shared.cuh");
    std::fs::write(&header, "#define SHARED_SCALE 1.0f\n").unwrap();
    const N: usize = 20;
    let (cold, _) = expand_all(N, src_dir.path());
    let mut warm: Vec<f64> = (0..5).map(|_| expand_all(N, src_dir.path()).0).collect();
    warm.sort_by(|a, b| a.partial_cmp(b).unwrap());
    std::fs::write(&header, "#define SHARED_SCALE 2.0f\n").unwrap();
    let (touched, each) = expand_all(N, src_dir.path());
    // An invocation that ran the compiler takes tens to hundreds of ms; a cache hit well under one.
    let recompiled: Vec<usize> = each.iter().enumerate().filter(|(_, ms)| **ms > 5.0).map(|(i, _)| i).collect();
    println!("\n| {N} kernels, one cuda_kernel! each, {compiler} | total ms |");
    println!("|---|---|");
    println!("| cold cache (the compiler runs {N} times) | {cold:.0} |");
    println!("| warm cache, nothing changed (median of 5) | {:.1} |", warm[2]);
    println!("| after editing a header kernels 0 and 1 include | {touched:.0} (recompiled: {recompiled:?}) |");
    assert_eq!(recompiled, [0, 1], "only the modules that include the header may recompile");
    cold
}

//! Build cost of `cuda_kernel!`: expanding 20 kernels (one per invocation, as in a crate with 20
//! `cuda_kernel!`s) with an empty build cache, then again with nothing changed.
//!
//! Runs on the build machine (no GPU): `cargo bench -p cuda-embed-macros-core --bench build`.
//! Needs nvcc (PATH, NVCC or CUDA_PATH).

use cuda_embed_macros_core::{expand, CallSite};
use proc_macro2::{Literal, TokenStream, TokenTree};
use std::time::Instant;

fn source(i: usize) -> String {
    format!(
        r#"
        extern "C" __global__ void kernel_{i}(const float* __restrict__ x, float* __restrict__ y, float a, size_t n) {{
            size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
            if (t < n) y[t] = a * x[t] + {i}.0f;
        }}
    "#
    )
}

fn expand_all(n: usize) -> f64 {
    let t0 = Instant::now();
    for i in 0..n {
        let tokens: TokenStream = TokenTree::Literal(Literal::string(&source(i))).into();
        let out = expand(tokens, CallSite { file: "src/lib.rs".into(), line: 10 + i * 10, dir: None }).to_string();
        assert!(!out.contains("compile_error"), "{out}");
    }
    t0.elapsed().as_secs_f64() * 1e3
}

fn main() {
    if cuda_embed_macros_core::compile::find_nvcc().ok().and_then(|r| r.ok()).is_none() {
        eprintln!("build bench: no nvcc found (set PATH, NVCC or CUDA_PATH)");
        std::process::exit(2);
    }
    let cache = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
    const N: usize = 20;
    let cold = expand_all(N);
    let mut warm: Vec<f64> = (0..5).map(|_| expand_all(N)).collect();
    warm.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("| {N} kernels, one cuda_kernel! each | total ms |");
    println!("|---|---|");
    println!("| cold cache (nvcc runs {N} times) | {cold:.0} |");
    println!("| warm cache, nothing changed (median of 5) | {:.1} |", warm[2]);
}

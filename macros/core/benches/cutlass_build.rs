//! Build cost of a CUTLASS kernel through `cuda_kernel!`: the example's two sm90 GEMMs
//! (`examples/cutlass/gemm_sm90.cu`, `cutlass = true`) expanded with an empty build cache, against
//! `nvcc -fatbin` of the same file with the same flags, alternately (`ROUNDS` each); then the
//! expansion again with the cache warm (nothing changed: no nvcc run).
//!
//! Runs on the build machine (no GPU), with nvcc and the CUTLASS headers:
//! `scripts/with-cuda --with-cutlass cargo bench -p cuda-embed-macros-core --bench cutlass_build`.

use cuda_embed_macros_core::{expand, oracle::nvcc::find_nvcc, CallSite};
use quote::quote;
use std::path::PathBuf;
use std::time::Instant;

const ROUNDS: usize = 2;

fn main() {
    let Some(nvcc) = find_nvcc().ok().and_then(|r| r.ok()) else {
        eprintln!("cutlass_build bench: no nvcc found");
        std::process::exit(2);
    };
    let Ok(cutlass) = cuda_embed_source::options::cutlass_include_dir() else {
        eprintln!("cutlass_build bench: no CUTLASS headers (scripts/with-cuda --with-cutlass)");
        std::process::exit(2);
    };
    // `file` is relative to the crate root: the workspace's, where the example lives.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    std::env::set_var("CARGO_MANIFEST_DIR", &root);
    let site =
        || CallSite { file: "examples/cutlass/gemm.rs".into(), line: 34, dir: Some(root.join("examples/cutlass")) };
    let tokens = || {
        quote!(
            file = "examples/cutlass/gemm_sm90.cu",
            archs = ["90a"],
            std = "c++17",
            defines = ["NDEBUG"],
            cutlass = true
        )
    };
    let mut cold = Vec::new();
    let mut alone = Vec::new();
    for round in 0..ROUNDS {
        let cache = tempfile::tempdir().unwrap();
        std::env::set_var("CUDA_EMBED_CACHE_DIR", cache.path());
        let t = Instant::now();
        let out = expand(tokens(), site()).to_string();
        cold.push(t.elapsed().as_secs_f64());
        assert!(!out.contains("compile_error"), "{out}");
        let t = Instant::now();
        let status = std::process::Command::new(&nvcc.path)
            .args(["-fatbin", "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]", "-std=c++17", "-DNDEBUG"])
            .arg(format!("-I{}", cutlass.display()))
            .args(["--expt-relaxed-constexpr", "gemm_sm90.cu", "-o"])
            .arg(cache.path().join("alone.fatbin"))
            .current_dir(root.join("examples/cutlass"))
            .status()
            .unwrap();
        alone.push(t.elapsed().as_secs_f64());
        assert!(status.success());
        println!("round {round}: macro, empty cache {:.1} s; nvcc alone {:.1} s", cold[round], alone[round]);
        if round + 1 == ROUNDS {
            let mut warm: Vec<f64> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    let out = expand(tokens(), site()).to_string();
                    assert!(!out.contains("compile_error"));
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            warm.sort_by(f64::total_cmp);
            println!("macro, cache warm: median {:.1} ms (of 5: {warm:.1?})", warm[2]);
        }
    }
    let ratio: Vec<String> = cold.iter().zip(&alone).map(|(c, a)| format!("{:.2}x", c / a)).collect();
    println!("cold macro / nvcc alone, per round: {}", ratio.join(", "));
}

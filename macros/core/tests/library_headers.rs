//! Kernels that include the CUDA libraries' headers (`cublas_v2.h`, `curand_kernel.h`, NVTX, the
//! profiler API): they build through `scripts/with-cuda` when it installed those headers
//! (`CUDA_EMBED_LIBRARY_HEADERS=1`), and a missing one is an error that names that option.
//!
//! Needs nvcc (run under `scripts/with-cuda`); skipped without it unless CUDA_EMBED_REQUIRE_TOOLKIT
//! is set. The build test runs when the headers are there, and must when
//! `CUDA_EMBED_LIBRARY_HEADERS` is set (as `.ci/run` does).

use cuda_embed_macros_core::{expand, oracle::nvcc, CallSite};
use quote::quote;
use std::path::PathBuf;

/// The toolkit include folder of the nvcc the macro uses, or `None` (skipped) without one.
fn toolkit_include() -> Option<PathBuf> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::env::set_var(
            "CUDA_EMBED_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("library-headers-cache"),
        );
    });
    match nvcc::find_nvcc() {
        Ok(Ok(n)) => Some(n.path.parent()?.parent()?.join("include")),
        other => {
            let why = match other {
                Ok(Err(e)) => e.to_string(),
                Err(e) => e,
                Ok(Ok(_)) => unreachable!(),
            };
            assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
            eprintln!("skipping: {why}");
            None
        }
    }
}

fn site() -> CallSite {
    CallSite { file: "src/lib.rs".into(), line: 10, dir: None }
}

#[test]
fn a_kernel_including_the_library_headers_builds() {
    let Some(include) = toolkit_include() else { return };
    let asked = std::env::var("CUDA_EMBED_LIBRARY_HEADERS").is_ok_and(|v| !v.is_empty() && v != "0");
    if !include.join("cublas_v2.h").exists() {
        assert!(!asked, "CUDA_EMBED_LIBRARY_HEADERS is set but {} has no cublas_v2.h", include.display());
        eprintln!("skipping: no library headers in {} (run with CUDA_EMBED_LIBRARY_HEADERS=1)", include.display());
        return;
    }
    let source = r#"
        #include <cublas_v2.h>
        #include <cublasLt.h>
        #include <curand_kernel.h>
        #include <cufft.h>
        #include <cusolverDn.h>
        #include <cusparse.h>
        #include <nvtx3/nvToolsExt.h>
        #include <cuda_profiler_api.h>
        extern "C" __global__ void noise(float* x, unsigned long long seed, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            curandStatePhilox4_32_10_t s;
            curand_init(seed, i, 0, &s);
            x[i] = curand_uniform(&s) + (float)CUBLAS_STATUS_SUCCESS + (float)CUFFT_SUCCESS;
        }
    "#;
    let out = expand(quote!(#source, archs = [80]), site()).to_string();
    assert!(!out.contains("compile_error"), "the kernel did not build:\n{out}");
    assert!(out.contains("noise"), "a launcher for `noise`");
}

#[test]
fn a_missing_library_header_names_the_option() {
    if toolkit_include().is_none() {
        return;
    }
    // A cuBLAS-named header that no release has: missing with or without the library headers.
    let source = "#include <cublas_no_such_header.h>\nextern \"C\" __global__ void k(float* x) { x[0] = 1.0f; }";
    let out = expand(quote!(#source, archs = [80]), site()).to_string();
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.contains("is a header of cuBLAS"), "{out}");
    assert!(out.contains("CUDA_EMBED_LIBRARY_HEADERS=1 scripts/with-cuda"), "{out}");
}

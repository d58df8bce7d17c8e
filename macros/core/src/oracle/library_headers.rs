//! What to do when an `#include` of a CUDA library's header is not found.
//!
//! The pinned compiler wheels that `scripts/with-cuda` installs have the CUDA runtime's headers
//! but not those of the libraries (cuBLAS, cuRAND, cuFFT, cuSOLVER, cuSPARSE, NVTX, the profiler
//! API); `CUDA_EMBED_LIBRARY_HEADERS=1` makes the script install them. A compile log that says
//! such a header is missing ([`missing_library_header`]) gets a line saying so.

use cuda_embed_source::library_headers::{missing_cutlass_header, missing_library_header};

/// The advice for `log` when it reports a CUDA library's or CUTLASS's header as missing; `None`
/// otherwise.
pub fn hint(log: &str) -> Option<String> {
    if let Some(header) = missing_cutlass_header(log) {
        return Some(format!(
            "`{header}` is a CUTLASS/CuTe header: add `cutlass = true` to the macro's options, which puts the \
             headers of {} on the include path (install the pinned ones once with `{}`)",
            cuda_embed_source::options::CUTLASS_DIR_VAR,
            cuda_embed_source::options::CUTLASS_INSTALL
        ));
    }
    let (header, library) = missing_library_header(log)?;
    Some(format!(
        "`{header}` is a header of {library}, which the pinned CUDA compiler wheels do not include: run the build \
         through `CUDA_EMBED_LIBRARY_HEADERS=1 scripts/with-cuda cargo build` (or `scripts/with-cuda \
         --with-library-headers ...`), which installs the headers of cuBLAS, cuRAND, cuFFT, cuSOLVER, cuSPARSE, \
         NVTX and the profiler API once, or use a full CUDA toolkit (`NVCC`, `CUDA_EMBED_TOOLKIT` or `CUDA_PATH`)"
    ))
}

/// `log` with the advice of [`hint`] appended when it applies.
pub fn with_hint(log: String) -> String {
    match hint(&log) {
        Some(h) => format!("{log}\nhelp: {h}"),
        None => log,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_headers_name_the_option() {
        let nvcc = "src/lib.rs:3:10: fatal error: cublas_v2.h: No such file or directory\ncompilation terminated.";
        let h = hint(nvcc).expect("cuBLAS header");
        assert!(h.starts_with("`cublas_v2.h` is a header of cuBLAS"), "{h}");
        assert!(h.contains("CUDA_EMBED_LIBRARY_HEADERS=1 scripts/with-cuda"), "{h}");
        let nvrtc = "src/lib.rs(3): catastrophic error: cannot open source file \"nvtx3/nvToolsExt.h\"";
        assert!(hint(nvrtc).expect("NVTX header").starts_with("`nvtx3/nvToolsExt.h` is a header of NVTX"));
        let profiler = "k.rs:1:10: fatal error: cuda_profiler_api.h: No such file or directory";
        assert!(hint(profiler).expect("profiler").contains("the CUDA profiler API"));
        assert!(with_hint(nvcc.to_string()).ends_with(&format!("\nhelp: {h}")));
    }

    #[test]
    fn missing_cutlass_headers_name_the_option() {
        let nvcc = "src/lib.rs:3:10: fatal error: cutlass/gemm/device/gemm.h: No such file or directory";
        let h = hint(nvcc).expect("CUTLASS header");
        assert!(h.starts_with("`cutlass/gemm/device/gemm.h` is a CUTLASS/CuTe header"), "{h}");
        assert!(h.contains("`cutlass = true`") && h.contains("scripts/with-cuda --with-cutlass"), "{h}");
        let nvrtc = "src/lib.rs(3): catastrophic error: cannot open source file \"cute/tensor.hpp\"";
        assert!(hint(nvrtc).expect("CuTe header").contains("`cutlass = true`"));
    }

    #[test]
    fn other_missing_headers_get_no_hint() {
        let own = "src/lib.rs:3:10: fatal error: my_header.cuh: No such file or directory";
        assert_eq!(hint(own), None);
        assert_eq!(with_hint(own.to_string()), own);
        assert_eq!(hint("src/lib.rs(4): error: identifier \"cublasHandle_t\" is undefined"), None);
    }
}

//! CUDA libraries' headers in a compile log: which `#include` the compiler could not find, and
//! whether it belongs to a CUDA library (cuBLAS, cuRAND, cuFFT, cuSOLVER, cuSPARSE, NVTX, the
//! profiler API) rather than to the user.
//!
//! The pinned compiler wheels that `scripts/with-cuda` installs have the CUDA runtime's headers but
//! not those of the libraries, and neither does a machine with only the driver and NVRTC. The macro
//! (build time) and the runtime (run-time NVRTC) each turn a match into their own advice.

/// The libraries' header names (a prefix of the file name, or of the path for NVTX's folder)
/// and the library each belongs to.
const LIBRARIES: &[(&str, &str)] = &[
    ("cublas", "cuBLAS"),
    ("curand", "cuRAND"),
    ("cufft", "cuFFT"),
    ("cusolver", "cuSOLVER"),
    ("cusparse", "cuSPARSE"),
    ("nvtx3/", "NVTX"),
    ("nvToolsExt", "NVTX"),
    ("cuda_profiler_api", "the CUDA profiler API"),
    ("cudaProfiler.h", "the CUDA profiler API"),
];

/// The headers a compile log says it could not find: nvcc's `fatal error: NAME: No such file or
/// directory`, NVRTC's `cannot open source file "NAME"`.
fn missing_headers(log: &str) -> impl Iterator<Item = &str> {
    log.lines().filter_map(|l| {
        if let Some(rest) = l.split("fatal error: ").nth(1) {
            return rest.strip_suffix(": No such file or directory");
        }
        let rest = l.split("cannot open source file \"").nth(1)?;
        rest.split('"').next()
    })
}

/// The first header `log` reports as missing that belongs to a CUDA library, as
/// `(header as included, library)`; `None` when the log reports no such header.
///
/// ```
/// use cuda_embed_source::library_headers::missing_library_header;
/// let log = "k.cu:3:10: fatal error: cublas_v2.h: No such file or directory";
/// assert_eq!(missing_library_header(log), Some(("cublas_v2.h", "cuBLAS")));
/// assert_eq!(missing_library_header("k.cu:3:10: fatal error: mine.cuh: No such file or directory"), None);
/// ```
pub fn missing_library_header(log: &str) -> Option<(&str, &'static str)> {
    missing_headers(log).find_map(|h| {
        let name = h.trim_start_matches('<').trim_end_matches('>');
        LIBRARIES.iter().find(|(prefix, _)| name.starts_with(prefix)).map(|(_, lib)| (name, *lib))
    })
}

/// The first CUTLASS or CuTe header (`cutlass/...`, `cute/...`) `log` reports as missing: the
/// source includes CUTLASS without `cutlass = true` (or without the headers installed).
///
/// ```
/// use cuda_embed_source::library_headers::missing_cutlass_header;
/// let log = "k.cu:3:10: fatal error: cute/tensor.hpp: No such file or directory";
/// assert_eq!(missing_cutlass_header(log), Some("cute/tensor.hpp"));
/// assert_eq!(missing_cutlass_header("k.cu:3:10: fatal error: cutlass_like.h: No such file or directory"), None);
/// ```
pub fn missing_cutlass_header(log: &str) -> Option<&str> {
    missing_headers(log)
        .map(|h| h.trim_start_matches('<').trim_end_matches('>'))
        .find(|name| name.starts_with("cutlass/") || name.starts_with("cute/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvcc_and_nvrtc_logs_name_the_library() {
        let nvcc = "src/lib.rs:3:10: fatal error: cublas_v2.h: No such file or directory\ncompilation terminated.";
        assert_eq!(missing_library_header(nvcc), Some(("cublas_v2.h", "cuBLAS")));
        let nvrtc = "src/lib.rs(3): catastrophic error: cannot open source file \"nvtx3/nvToolsExt.h\"";
        assert_eq!(missing_library_header(nvrtc), Some(("nvtx3/nvToolsExt.h", "NVTX")));
        let profiler = "k.rs:1:10: fatal error: cuda_profiler_api.h: No such file or directory";
        assert_eq!(missing_library_header(profiler), Some(("cuda_profiler_api.h", "the CUDA profiler API")));
    }

    #[test]
    fn other_logs_name_no_library() {
        assert_eq!(missing_library_header("k.cu:3:10: fatal error: my_header.cuh: No such file or directory"), None);
        assert_eq!(missing_library_header("src/lib.rs(4): error: identifier \"cublasHandle_t\" is undefined"), None);
    }
}

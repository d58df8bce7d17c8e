//! Declarations of the CUDA device runtime that nvcc gives every kernel and NVRTC does not.
//!
//! nvcc includes `cuda_runtime.h`, and with it `cuda_device_runtime_api.h`, in every translation
//! unit; NVRTC's built-in headers leave that header out, so a kernel that nvcc compiles can fail
//! under NVRTC with `identifier "cudaGraphSetConditional" is undefined` (the device call that sets
//! a conditional graph node's condition). Every NVRTC compile of cuda-embed (the macro's at build
//! time, the runtime's for `Program`s and at first use) puts [`nvrtc_prelude`] before the source.

/// `cudaGraphSetConditional` as `cuda_device_runtime_api.h` declares it (inside its `extern "C"`
/// block), with the handle's type written as the `unsigned long long` that
/// `cudaGraphConditionalHandle` names, so that the declaration does not depend on the typedef; a
/// redeclaration of the same function, so a source that includes the header, or declares the
/// function as the header does, still compiles. Then `#line 1`: the source's lines keep their
/// numbers in diagnostics.
const PRELUDE: &str = concat!(
    "extern \"C\" __device__ __cudart_builtin__ void cudaGraphSetConditional(unsigned long long, unsigned int);\n",
    "#line 1\n"
);

/// What NVRTC needs before `source`: the declarations of the device-runtime functions the source
/// names (today `cudaGraphSetConditional`: `PRELUDE`), empty when it names none.
///
/// ```
/// use cuda_embed_source::devrt::nvrtc_prelude;
/// assert_eq!(nvrtc_prelude("__global__ void k(float* x) { x[0] = 1; }"), "");
/// let p = nvrtc_prelude("__global__ void k(cudaGraphConditionalHandle h) { cudaGraphSetConditional(h, 0); }");
/// assert!(p.contains("void cudaGraphSetConditional(unsigned long long, unsigned int);") && p.ends_with("#line 1\n"));
/// ```
pub fn nvrtc_prelude(source: &str) -> &'static str {
    if source.contains("cudaGraphSetConditional") {
        PRELUDE
    } else {
        ""
    }
}

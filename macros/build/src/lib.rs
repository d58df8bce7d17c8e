//! What cuda-embed's build-time side (the `cuda_kernel!` macro core, driving nvcc) and its run-time
//! side (the runtime, driving NVRTC) must agree on, in one place:
//!
//! - [`elementwise`]: the CUDA source of elementwise kernels.
//! - [`cache`]: where compiled code is cached (`CUDA_EMBED_CACHE_DIR`, `$XDG_CACHE_HOME/cuda-embed`,
//!   `~/.cache/cuda-embed`; `build/` for nvcc, `nvrtc/` for run-time compiles) and the one format
//!   of a cache entry (atomic writes, validated reads, dependency hashes).
//! - [`host`]: nvcc's host compiler (`-ccbin`), from the variables the `cc` crate reads.
//! - [`includes`]: the one `#include` scanner (which headers a source reaches, include cycles).
//! - [`key`]: the one content-addressed key scheme (labelled fields hashed in order).
//! - [`signature`]: finding `__global__` functions and reading their declarations.
//! - [`ctypes`]: the C++ type names kernels take and their Rust types.
//! - [`lex`] (with [`pp`], its preprocessing: function-like macros, `#if`), [`cxx`] and [`cparams`]: the C++ lexer, token readers and parameter reader the
//!   macro reads kernel signatures with, and the runtime reads `kernel_with_signature` with.
//! - [`options`]: target architectures and the argument lists given to nvcc and to NVRTC.
//! - [`params`]: the parameter lists (`"T x, raw T y, scalar float a"`) and placeholder instances
//!   (`"T=float, U=int"`) of generated (elementwise, reduction) kernels.
//! - [`typecode`]: the compiler probe's type codes, decoded at build time and at first load.
//!
//! It depends on no CUDA library (no cudarc): the macro core uses it at build time without a
//! driver. It is also the home for the source generators that elementwise and reduction kernels
//! will share between the macro and the runtime.

#![warn(missing_docs)]

pub mod cache;
pub mod cparams;
pub mod ctypes;
pub mod cxx;
pub mod elementwise;
pub mod host;
pub mod includes;
pub mod key;
pub mod lex;
pub mod ndarray;
pub mod options;
pub mod params;
pub mod pp;
pub mod reduction;
pub mod signature;
pub mod typecode;

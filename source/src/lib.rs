//! What cuda-embed's macro core (at build time, driving nvcc) and its runtime (at run time,
//! driving NVRTC) must agree on, in one place: kernel sources, C++ signatures and types, cache
//! keys and entries.
//!
//! - Kernel sources: [`elementwise`] and [`reduction`] (the CUDA source of generated kernels,
//!   compiled by the macro and by the run-time twins alike), [`ndarray`] (their N-D variants),
//!   [`params`] (their parameter lists `"T x, raw T y, scalar float a"` and placeholder instances
//!   `"T=float, U=int"`).
//! - Signatures and types: [`signature`] (finding `__global__` functions and reading their
//!   declarations), [`lex`] (with [`pp`], its preprocessing), [`cxx`] and [`cparams`] (the C++
//!   lexer, token readers and parameter reader the macro and `kernel_with_signature` use),
//!   [`ctypes`] (the C++ type names kernels take and their Rust types), [`typecode`] (the compiler
//!   probe's type codes, decoded at build time and at first load).
//! - Compiled code: [`cubin`] (what a cubin says of its kernels: parameter counts, block limits).
//! - Compiling and caching: [`cache`] (where compiled code is cached, the one entry format, the
//!   size cap, usage and clear), [`key`] (the one content-addressed key scheme), [`includes`]
//!   (the one `#include` scanner), [`options`] (target architectures, nvcc and NVRTC argument
//!   lists), [`host`] (nvcc's host compiler, from the variables the `cc` crate reads).
//!
//! It depends on no CUDA library (no cudarc): the macro core uses it at build time without a
//! driver.

#![warn(missing_docs)]

pub mod cache;
pub mod cparams;
pub mod ctypes;
pub mod cubin;
pub mod cxx;
pub mod devrt;
pub mod elementwise;
pub mod host;
pub mod includes;
pub mod key;
pub mod lex;
pub mod library_headers;
pub mod ndarray;
pub mod options;
pub mod params;
pub mod pp;
pub mod reduction;
pub mod signature;
pub mod typecode;
pub mod typedefs;

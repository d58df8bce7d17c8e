//! The library behind `cuda_kernel!`: everything the macro does, as plain, unit-testable code.
//!
//! One folder per stage, in pipeline order:
//!
//! - [`front`]: macro input to IR: the macro's arguments ([`front::input`]), the headers the
//!   source includes ([`front::includes`]) and the kernels and globals they define
//!   ([`front::headers`]), the typed IR of one module ([`front::ir`]). [`lex`] and [`signature`]
//!   (from the shared crate) find every `__global__` function and global; [`cxx`]: small C++ token
//!   readers they share.
//! - [`oracle`]: the compiler as the authority on types and symbols: [`oracle::nvcc`] (find nvcc,
//!   build a fatbin + PTX, cache it content-addressed), [`oracle::nvrtc`] (the same with libnvrtc
//!   at build time), [`oracle::probe`] (C++ questions appended to the source, answers read back
//!   from PTX), [`oracle::ptx`] (`.entry` parameter lists), [`oracle::structs`] (the members of the
//!   source's C++ structs), [`oracle::firstload`] (the probe a module built with no compiler
//!   carries to its first load).
//! - [`check`]: one pass that maps and checks every kernel, instance and global; [`front::types`]:
//!   the CUDA-to-Rust type tables; [`front::report`]: errors collected and reported together.
//! - [`gen`]: Rust items from the checked IR ([`gen::paths`] names the runtime).
//! - [`expand`](mod@expand): the driver: front end, oracle, checker, generator.
//! - [`elementwise`] and [`reduction`]: `elementwise_kernel!` and `reduction_kernel!` (macro,
//!   generator, graph node), on the same pipeline.
//! - [`link`]: separate compilation (`rdc`, `link`, `lto`): each file its own translation unit,
//!   device-linked with libcudadevrt into one image.
//! - [`tune`]: `tune = { ... }`, autotuned variants of a template kernel.
//! - [`derive`](mod@derive): `#[derive(DeviceSafe)]`.
//! - [`prebuild`]: a crate's kernel macro invocations found and expanded in parallel (from a
//!   build script), so the macros find their modules in the build cache.

#![warn(missing_docs)]

pub mod check;
pub use cuda_embed_source::cxx;
pub mod derive;
pub mod elementwise;
pub mod expand;
pub mod front;
pub mod fuse;
pub mod gen;
pub mod ndarray;
pub use cuda_embed_source::lex;
pub mod link;
pub mod oracle;
pub mod prebuild;
pub mod reduction;
pub mod rust_kernel;
pub use cuda_embed_source::signature;
pub mod tune;

pub use expand::{expand, CallSite};

//! The library behind `cuda_kernel!`: everything the macro does, as plain, unit-testable code.
//!
//! - [`input`]: the macro's arguments.
//! - [`lex`] and [`signature`]: find every `__global__` function and global and read their
//!   declarations ([`cxx`]: small C++ token readers they share); [`includes`]: the headers the source includes;
//!   [`headers`]: the kernels and globals those headers define.
//! - [`ir`]: the typed IR of one module, as read and as checked.
//! - [`front`]: macro input to IR (source, declarations, template instances, includes).
//! - [`types`]: the CUDA-to-Rust type tables and the mapping of one parameter.
//! - [`oracle`]: the compiler as the authority on types and symbols; [`probe`]: the C++ questions
//!   appended to the source and their answers read back from PTX; [`ptx`]: `.entry` parameter
//!   lists for the signature cross-check.
//! - [`check`]: one pass that maps and checks every kernel, instance and global; [`report`]:
//!   errors collected and reported together.
//! - [`gen`]: Rust items from the checked IR ([`gen::paths`] names the runtime).
//! - [`compile`]: find nvcc, build a fatbin + PTX, cache the result content-addressed; [`nvrtc`]:
//!   the same with libnvrtc at build time (cubins + PTX) when there is no nvcc.
//! - [`expand`](mod@expand): the driver: front end, oracle, checker, generator.
//! - [`elementwise`]: `elementwise_kernel!`, on the same pipeline.
//! - [`firstload`]: the type probe and checks a module built with no compiler carries to its
//!   first load.
//! - [`derive`](mod@derive): `#[derive(DeviceSafe)]`; [`structs`]: the members of the source's C++ structs.

#![warn(missing_docs)]

pub mod check;
pub mod compile;
pub use cuda_embed_build::cxx;
pub mod derive;
pub mod elementwise;
pub mod expand;
pub mod firstload;
pub mod front;
pub mod fuse;
pub mod gen;
pub mod headers;
pub mod includes;
pub mod input;
pub mod ir;
pub mod ndarray;
pub use cuda_embed_build::lex;
pub mod nvrtc;
pub mod oracle;
pub mod probe;
pub mod ptx;
pub mod reduction;
pub mod reduction_gen;
pub mod reduction_node;
pub mod report;
pub use cuda_embed_build::signature;
pub mod structs;
pub mod types;

pub use expand::{expand, CallSite};

//! The library behind `cuda_kernel!`: everything the macro does, as plain, unit-testable code.
//!
//! - [`lex`] and [`signature`]: find every `__global__` function and read its parameters.
//! - [`types`]: map CUDA parameter types to Rust types; [`probe`]: ask the compiler about names
//!   the table does not know (typedefs, macros, user structs).
//! - [`compile`]: find nvcc, build a fatbin + PTX, cache the result content-addressed.
//! - [`ptx`]: read `.entry` parameter lists for the signature cross-check and C++ symbols.
//! - [`expand`]: tie it together and generate the typed launchers.

#![warn(missing_docs)]

pub mod compile;
pub mod derive;
pub mod expand;
pub mod includes;
pub mod input;
pub mod lex;
pub mod probe;
pub mod ptx;
pub mod signature;
pub mod structs;
pub mod types;

pub use expand::{expand, CallSite};

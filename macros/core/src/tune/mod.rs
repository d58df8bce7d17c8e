//! `tune = { ... }` of `cuda_kernel!`, the generator: the `tuned` launcher, `tuner()` and the
//! embedded `TuneSpec` of a module whose option the front end read and resolved against the
//! source's templates ([`crate::front::tune`]: the option as data, its variants as template
//! instances, its formulas checked).

pub mod gen;

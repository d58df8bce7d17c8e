//! Collecting errors so the user sees every problem at once, each at its own span.

use proc_macro2::Span;
use std::fmt::Display;

/// Errors found so far.
#[derive(Debug, Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
}

impl Errors {
    /// No errors yet.
    pub fn new() -> Errors {
        Errors::default()
    }

    /// Records `msg` at `span`.
    pub fn error(&mut self, span: Span, msg: impl Display) {
        self.errors.push(syn::Error::new(span, msg));
    }

    /// Records an error built elsewhere.
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// `Ok` when nothing was recorded, else every error combined into one (rustc shows each at
    /// its own span), in the order they were found.
    pub fn propagate(&mut self) -> syn::Result<()> {
        let mut all = std::mem::take(&mut self.errors).into_iter();
        match all.next() {
            None => Ok(()),
            Some(mut first) => {
                for e in all {
                    first.combine(e);
                }
                Err(first)
            }
        }
    }
}

/// A failed expansion: the error, and the names of the kernels the source declares (when it was
/// read that far) so empty modules can stand in for them.
#[derive(Debug)]
pub struct Failure {
    /// Every error, combined.
    pub error: syn::Error,
    /// Kernel names for fallback modules.
    pub kernels: Vec<String>,
}

impl Failure {
    /// A failure before any kernel name is known.
    pub fn early(error: syn::Error) -> Failure {
        Failure { error, kernels: Vec::new() }
    }
}

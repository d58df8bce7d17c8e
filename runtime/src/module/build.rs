//! What builds the images the macro could not build when the crate was compiled: NVRTC at first
//! use (a module compiled from its source) and the linker (separately compiled units). Loading
//! knows only this trait: the crate root implements it with the `program` capability (NVRTC) and
//! the `link` capability (linked units) and hands that implementation to the loader, so that
//! loading an image never depends on how it was made.

use crate::error::Result;
use crate::module::spec::{LinkedUnit, ModuleSpec};
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// A cubin built at first use.
pub(crate) struct Built {
    /// SASS for exactly the GPU's architecture.
    pub(crate) cubin: Vec<u8>,
    /// The symbol of each name expression, in order.
    pub(crate) symbols: Vec<String>,
    /// Whether it came from the disk cache (no compiler ran).
    pub(crate) from_cache: bool,
    /// The mark of the load checks an earlier process passed on this cubin, when its cache entry
    /// records one (see `typecheck::checks_mark`).
    pub(crate) checked: Option<Vec<u8>>,
    /// Records a mark of passed checks in the cubin's cache entry, given the cubin and symbols
    /// again (the loader hands the cubin to the driver; it copies them only when it records);
    /// `None` when there is no entry to record in.
    pub(crate) record: Option<Recorder>,
}

/// Writes `(cubin, symbols, mark)` back into a built cubin's cache entry.
pub(crate) type Recorder = Box<dyn FnOnce(Vec<u8>, Vec<String>, Vec<u8>) + Send>;

/// How images are built at first use.
pub(crate) trait Build: Sync {
    /// Compiles `source` for `arch`, with the name expressions `exprs` (see
    /// `program::nvrtc::compile_module` for `own_len` and `digest`).
    #[allow(clippy::too_many_arguments)]
    fn compile(
        &self,
        origin: &'static str,
        source: &str,
        own_len: usize,
        options: &[&str],
        headers: &[(&str, &str)],
        exprs: &[&str],
        digest: Option<&str>,
        arch: u32,
    ) -> Result<Built>;

    /// Compiles and links the units of a separately compiled module for `ctx`'s device: the cubin
    /// and the symbols of the spec's kernels, then its globals.
    fn link(
        &self,
        spec: &ModuleSpec,
        units: &[LinkedUnit],
        headers: &[(&str, &str)],
        lto: bool,
        ctx: &Arc<CudaContext>,
    ) -> Result<(Vec<u8>, Vec<String>)>;
}

//! [`KernelRef`]: one kernel of a `cuda_kernel!` module, untyped (the module and the kernel's
//! index in it), and what loading alone tells of it: its names, parameter sizes and loaded
//! function. Launching it, its attributes and limits are the `launch` capability's (an `impl` block
//! in `launch/kernel.rs`), so that the binding path and the capabilities can name a kernel without
//! importing the launch routine.

use crate::error::{Error, Result};
use crate::module::load::Function;
use crate::module::registry::Module;
use cudarc::driver::CudaContext;
use std::sync::Arc;

/// One kernel of a `cuda_kernel!` module, untyped. `Copy`, `'static`, free to pass around.
#[derive(Clone, Copy)]
pub struct KernelRef {
    pub(crate) module: &'static Module,
    pub(crate) index: usize,
}

impl std::fmt::Debug for KernelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelRef").field("name", &self.name()).field("origin", &self.module.origin()).finish()
    }
}

impl KernelRef {
    /// Kernel `index` of `module`.
    ///
    /// # Safety
    /// `index` must be a kernel of `module`, and every launch through the handle packs arguments
    /// of that kernel's parameter types. Only `cuda_kernel!` makes handles.
    #[doc(hidden)]
    pub const unsafe fn new(module: &'static Module, index: usize) -> Self {
        KernelRef { module, index }
    }

    /// Whether both handles name the same kernel of the same module.
    #[inline(always)]
    pub(crate) fn same(&self, other: &KernelRef) -> bool {
        std::ptr::eq(self.module, other.module) && self.index == other.index
    }

    /// The kernel's C++ name (`saxpy`, `ns::scale`, `axpy<float>`).
    #[inline]
    pub fn name(&self) -> &'static str {
        self.module.spec().kernels.get(self.index).map_or("<no such kernel>", |k| k.name)
    }

    /// The kernel's symbol in the compiled image, when known at build time (nvcc builds).
    pub fn symbol(&self) -> Option<&'static str> {
        self.module.spec().kernels.get(self.index).and_then(|k| k.symbol)
    }

    /// The byte size of each parameter, as the launchers pack them.
    pub fn param_sizes(&self) -> &'static [u32] {
        self.module.spec().kernels.get(self.index).map_or(&[], |k| k.param_sizes)
    }

    /// The module holding the kernel (shared by every kernel of one `cuda_kernel!`).
    pub fn module(&self) -> &'static Module {
        self.module
    }

    /// The kernel's loaded function on `ctx`'s device, loading the module there first if
    /// needed: what a graph node keeps (a launch `Target`, with what its errors say, is built
    /// from it only when a check fails).
    #[inline(always)]
    pub(crate) fn function_on(&self, ctx: &Arc<CudaContext>) -> Result<&'static Function> {
        let loaded = self.module.loaded(ctx)?;
        match loaded.functions.get(self.index) {
            Some(f) => Ok(f),
            None => Err(self.no_such_kernel(ctx)),
        }
    }

    #[cold]
    pub(crate) fn no_such_kernel(&self, ctx: &CudaContext) -> Error {
        Error::Launch {
            kernel: format!("#{}", self.index),
            origin: self.module.origin().to_string(),
            device: ctx.ordinal(),
            cause: format!(
                "the module has {} kernels, there is no kernel {}",
                self.module.spec().kernels.len(),
                self.index
            ),
            fix: None,
        }
    }
}

//! The module registry: one `static` [`Module`] per `cuda_kernel!` invocation, loaded lazily on
//! each device it is used on.
//!
//! The first use of any of its kernels or globals on a device loads the embedded image there
//! ([`load`](crate::module::load)). Later uses on that device read one `OnceLock` slot indexed by the
//! device ordinal — no lock, no map lookup, no allocation.

use crate::error::Result;
use crate::module::load::{self, Function, Loaded};
use crate::module::spec::{BuildPath, ModuleSpec};
use cudarc::driver::CudaContext;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Devices with an ordinal below this get a lock-free slot; others use a slower, locked list.
const FAST_DEVICE_SLOTS: usize = 32;

/// One embedded CUDA module, loaded lazily on each device it is used on.
///
/// Created by `cuda_kernel!`; reach it through the generated `NAME::module()` for
/// introspection ([`Module::loads`], [`Module::build_info`]) or to load it ahead of the first
/// launch ([`Module::preload`]).
pub struct Module {
    spec: &'static ModuleSpec,
    slots: [OnceLock<Loaded>; FAST_DEVICE_SLOTS],
    other: Mutex<Vec<&'static Loaded>>,
    init: Mutex<()>,
    loads: AtomicUsize,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("origin", &self.spec.origin)
            .field("kernels", &self.spec.kernels.iter().map(|k| k.name).collect::<Vec<_>>())
            .field("loads", &self.loads())
            .finish_non_exhaustive()
    }
}

impl Module {
    /// A module not yet loaded anywhere. `const` so it can initialise a `static`.
    ///
    /// # Safety
    /// `spec` must describe its image truthfully: every kernel's symbol and parameter sizes are
    /// those of the compiled code, as the launchers generated with it rely on. Only
    /// `cuda_kernel!` builds specs.
    #[doc(hidden)]
    pub const unsafe fn new(spec: &'static ModuleSpec) -> Self {
        Module {
            spec,
            slots: [const { OnceLock::new() }; FAST_DEVICE_SLOTS],
            other: Mutex::new(Vec::new()),
            init: Mutex::new(()),
            loads: AtomicUsize::new(0),
        }
    }

    /// What the macro embedded. Not a stable API.
    #[doc(hidden)]
    pub fn spec(&self) -> &'static ModuleSpec {
        self.spec
    }

    /// `file:line` of the `cuda_kernel!` invocation.
    pub fn origin(&self) -> &'static str {
        self.spec.origin
    }

    /// The C++ names of the module's kernels (template instances as `axpy<float>`), in order.
    pub fn kernel_names(&self) -> impl Iterator<Item = &'static str> {
        self.spec.kernels.iter().map(|k| k.name)
    }

    /// How many times this module has been loaded onto a device (once per device/context).
    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::Relaxed)
    }

    /// Which compiler produced (or will produce) this module's code.
    pub fn build_info(&self) -> BuildPath {
        self.spec.build_path()
    }

    /// Whether the code for `ctx`'s device came from the on-disk NVRTC cache (false for nvcc
    /// modules and for modules not loaded there yet).
    pub fn loaded_from_disk_cache(&'static self, ctx: &Arc<CudaContext>) -> bool {
        self.find(ctx).is_some_and(|l| l.from_disk_cache)
    }

    /// Loads the module on `ctx`'s device now (it is otherwise loaded at first launch).
    pub fn preload(&'static self, ctx: &Arc<CudaContext>) -> Result<()> {
        self.loaded(ctx).map(|_| ())
    }

    /// Whether the module is loaded in `ctx` (without loading it).
    pub(crate) fn is_loaded(&'static self, ctx: &CudaContext) -> bool {
        self.find(ctx).is_some() || {
            let cu_ctx = ctx.cu_ctx();
            self.other.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|l| l.cu_ctx == cu_ctx)
        }
    }

    /// The module as loaded in `ctx`, if it is.
    #[inline(always)]
    pub(crate) fn find(&'static self, ctx: &CudaContext) -> Option<&'static Loaded> {
        let cu_ctx = ctx.cu_ctx();
        if let Some(slot) = self.slots.get(ctx.ordinal()) {
            if let Some(l) = slot.get() {
                if l.cu_ctx == cu_ctx {
                    return Some(l);
                }
            }
        }
        None
    }

    /// Kernel `index` as loaded in `ctx`, for a launch's common path: a module without globals
    /// (whose launches need no ordering) loaded in `ctx`, on a device with a lock-free slot.
    /// `None` sends the launch the full way. The ordinal is masked instead of bounds-checked: a
    /// device past the slots lands on another device's slot, whose context is not `ctx`.
    #[inline(always)]
    pub(crate) fn plain_function(&'static self, ctx: &CudaContext, index: usize) -> Option<&'static Function> {
        let l = self.slots[ctx.ordinal() % FAST_DEVICE_SLOTS].get()?;
        if l.cu_ctx != ctx.cu_ctx() || !l.plain {
            return None;
        }
        l.functions.get(index)
    }

    /// The module as loaded in `ctx`, loading it first if needed.
    #[inline(always)]
    pub(crate) fn loaded(&'static self, ctx: &Arc<CudaContext>) -> Result<&'static Loaded> {
        match self.find(ctx) {
            Some(l) => Ok(l),
            None => self.load_slow(ctx),
        }
    }

    #[cold]
    #[inline(never)]
    fn load_slow(&'static self, ctx: &Arc<CudaContext>) -> Result<&'static Loaded> {
        // One loader at a time per module: racing threads wait here and then find the slot set.
        let _guard = self.init.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = self.find(ctx) {
            return Ok(l);
        }
        let cu_ctx = ctx.cu_ctx();
        if let Some(l) = self.other.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|l| l.cu_ctx == cu_ctx) {
            return Ok(l);
        }
        let loaded = load::load(self.spec, ctx)?;
        self.loads.fetch_add(1, Ordering::Relaxed);
        if let Some(slot) = self.slots.get(ctx.ordinal()) {
            if slot.get().is_none() {
                // Under the init lock nobody else sets the slot: this stores `loaded`.
                return Ok(slot.get_or_init(|| loaded));
            }
        }
        // A second context on the same device (non-primary), or a very high ordinal.
        let leaked: &'static Loaded = Box::leak(Box::new(loaded));
        self.other.lock().unwrap_or_else(|p| p.into_inner()).push(leaked);
        Ok(leaked)
    }
}

/// Where the code of a module's first load on a device lies (see [`crate::module::prefault::map_first_load_code`]).
pub(crate) fn load_slow_address() -> usize {
    Module::load_slow as *const () as usize
}

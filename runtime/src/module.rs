//! The module registry and the launch fast path.
//!
//! Every `cuda_kernel!` invocation emits one `static` [`Module`]. The first launch of any of its
//! kernels on a device loads the embedded image there (a fatbin built by nvcc, or source compiled
//! by NVRTC for that device) and resolves every kernel's function handle. Later launches on that
//! device read one `OnceLock` slot indexed by the device ordinal — no lock, no map lookup, no
//! allocation — and call `cuLaunchKernel` with the argument pointers the generated launcher packed
//! on its stack.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Devices with an ordinal below this get a lock-free slot; others use a slower, locked list.
pub const FAST_DEVICE_SLOTS: usize = 32;

/// Grid limits of every GPU CUDA 13 supports (compute capability 7.5 and newer).
const MAX_GRID_X: u32 = i32::MAX as u32;
const MAX_GRID_YZ: u32 = 65535;

/// What the macro embedded for one `cuda_kernel!` invocation. Built by generated code only.
#[derive(Debug)]
pub struct ModuleSpec {
    /// `file:line` of the invocation, for messages.
    pub origin: &'static str,
    /// The compiled image or the source to compile at first use.
    pub image: Image,
    /// The kernels, in the order the generated launchers index them.
    pub kernels: &'static [KernelSpec],
    /// The `__constant__`/`__device__` variables, in the order the generated handles index them.
    pub globals: &'static [crate::global::GlobalSpec],
}

/// The code embedded in the binary.
#[derive(Debug)]
pub enum Image {
    /// A fatbin built by nvcc at build time.
    Fatbin {
        /// The fatbin bytes (16-byte aligned by the generated code).
        bytes: &'static [u8],
        /// The targets it holds, e.g. `["sm_80", "sm_90", "compute_80"]`.
        targets: &'static [&'static str],
        /// The nvcc release that built it, e.g. `13.0`.
        compiler: &'static str,
    },
    /// No nvcc at build time: CUDA source compiled with NVRTC for the device at first use.
    Source {
        /// The CUDA source, with a `#line` directive pointing at the Rust file.
        source: &'static str,
        /// NVRTC options from the macro (without the architecture, chosen per device).
        options: &'static [&'static str],
        /// User headers the source includes, embedded at build time: (name as included, text).
        headers: &'static [(&'static str, &'static str)],
        /// Why nvcc was not used (shown by [`Module::build_info`]).
        reason: &'static str,
    },
}

/// One kernel of a module.
#[derive(Debug)]
pub struct KernelSpec {
    /// The name as written in C++ (`saxpy`, `ns::scale`).
    pub name: &'static str,
    /// The symbol in the compiled image when known at build time (nvcc path), else empty.
    pub symbol: &'static str,
    /// The NVRTC name expression that yields the symbol (`saxpy`, `&ns::scale`); C linkage uses
    /// the plain name.
    pub name_expression: &'static str,
    /// Byte size of every parameter, as the launcher packs them.
    pub param_sizes: &'static [u32],
}

/// How a module's code was produced, for users checking which path a build took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildPath {
    /// nvcc at build time; the fatbin holds these targets.
    Nvcc {
        /// e.g. `["sm_80", "sm_90", "compute_80"]`.
        targets: Vec<String>,
        /// nvcc release.
        compiler: String,
    },
    /// NVRTC at first use, for the device's own architecture.
    Nvrtc {
        /// Why nvcc was not used at build time.
        reason: String,
    },
}

pub(crate) struct Loaded {
    pub(crate) cu_ctx: sys::CUcontext,
    // Holding the context keeps the primary context (and so `module` and `functions`) alive for
    // the life of the process, even if the user drops every `CudaContext` they made.
    pub(crate) _ctx: Arc<CudaContext>,
    pub(crate) module: sys::CUmodule,
    /// Symbol of each global variable (NVRTC path: lowered at load; nvcc path: from the spec).
    pub(crate) global_symbols: Box<[String]>,
    pub(crate) functions: Box<[sys::CUfunction]>,
    /// Each kernel's `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` on this device (device limit,
    /// registers and `__launch_bounds__` combined), checked before every launch.
    pub(crate) max_threads: Box<[u32]>,
    /// Each kernel's current dynamic shared memory limit (48 KiB unless raised through
    /// [`Module::set_max_dynamic_shared_memory`]), checked before every launch.
    pub(crate) max_dyn_smem: Box<[AtomicU32]>,
    pub(crate) from_disk_cache: bool,
}

// SAFETY: CUDA driver handles (contexts, modules, functions) may be used from any thread.
unsafe impl Send for Loaded {}
// SAFETY: as above; `Loaded` is never mutated after it is published.
unsafe impl Sync for Loaded {}

/// One embedded CUDA module, loaded lazily on each device it is used on.
///
/// Created by `cuda_kernel!`; users reach it through the generated `NAME::MODULE` items for
/// introspection ([`Module::loads`], [`Module::build_info`]).
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
            .field("loads", &self.loads())
            .finish_non_exhaustive()
    }
}

impl Module {
    /// A module not yet loaded anywhere. `const` so it can initialise a `static`.
    pub const fn new(spec: &'static ModuleSpec) -> Self {
        Module {
            spec,
            slots: [const { OnceLock::new() }; FAST_DEVICE_SLOTS],
            other: Mutex::new(Vec::new()),
            init: Mutex::new(()),
            loads: AtomicUsize::new(0),
        }
    }

    /// What the macro embedded.
    pub fn spec(&self) -> &'static ModuleSpec {
        self.spec
    }

    /// How many times this module has been loaded onto a device (once per device/context).
    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::Relaxed)
    }

    /// Which compiler produced (or will produce) this module's code.
    pub fn build_info(&self) -> BuildPath {
        match &self.spec.image {
            Image::Fatbin { targets, compiler, .. } => BuildPath::Nvcc {
                targets: targets.iter().map(|s| s.to_string()).collect(),
                compiler: compiler.to_string(),
            },
            Image::Source { reason, .. } => BuildPath::Nvrtc { reason: reason.to_string() },
        }
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

    /// The driver function handle of kernel `index` on `ctx`'s device, loading the module first if
    /// needed.
    pub fn function(&'static self, ctx: &Arc<CudaContext>, index: usize) -> Result<sys::CUfunction> {
        Ok(self.loaded(ctx)?.functions[index])
    }

    #[inline(always)]
    fn find(&'static self, ctx: &Arc<CudaContext>) -> Option<&'static Loaded> {
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
        let loaded = crate::load::load(self.spec, ctx)?;
        self.loads.fetch_add(1, Ordering::Relaxed);
        let ordinal = ctx.ordinal();
        match self.slots.get(ordinal) {
            Some(slot) if slot.get().is_none() => {
                let _ = slot.set(loaded);
                Ok(slot.get().expect("slot was just set under the init lock"))
            }
            // A second context on the same device (non-primary), or a very high ordinal.
            _ => {
                let leaked: &'static Loaded = Box::leak(Box::new(loaded));
                self.other.lock().unwrap_or_else(|p| p.into_inner()).push(leaked);
                Ok(leaked)
            }
        }
    }

    /// Launches kernel `index` with `args` (pointers to each argument value, in order).
    ///
    /// This is the fast path behind every generated `launch`: one slot read, a current-context
    /// check, and `cuLaunchKernel`.
    ///
    /// # Safety
    /// `args` must hold one pointer per kernel parameter, each pointing at a value of exactly the
    /// parameter's type, and the kernel must be safe to run with them. Generated launchers
    /// guarantee the first part.
    #[inline]
    pub unsafe fn launch(
        &'static self,
        index: usize,
        stream: &CudaStream,
        cfg: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let loaded = self.loaded(stream.context())?;
        self.check_limits(index, stream.context(), loaded, cfg)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_loaded(index, stream, loaded, cfg, args) }
    }

    /// [`Module::launch`] without the launch-limit checks; exists only so the launch benchmark
    /// can measure what the checks cost. Invalid configurations reach the driver and come back
    /// as its error code.
    ///
    /// # Safety
    /// As for [`Module::launch`].
    #[doc(hidden)]
    #[inline]
    pub unsafe fn launch_unchecked(
        &'static self,
        index: usize,
        stream: &CudaStream,
        cfg: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let loaded = self.loaded(stream.context())?;
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_loaded(index, stream, loaded, cfg, args) }
    }

    #[inline(always)]
    unsafe fn launch_loaded(
        &'static self,
        index: usize,
        stream: &CudaStream,
        loaded: &Loaded,
        cfg: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let ctx = stream.context();
        let f = loaded.functions[index];
        if let Err(e) = ctx.bind_to_thread() {
            return Err(Error::Driver { call: "cuCtxSetCurrent", device: ctx.ordinal(), cause: DriverCode(e.0) });
        }
        // SAFETY: `f` belongs to the stream's context (looked up by that context above), `args`
        // holds one valid pointer per parameter (caller's contract), extra is null.
        let r = unsafe {
            sys::cuLaunchKernel(
                f,
                cfg.grid_dim.0,
                cfg.grid_dim.1,
                cfg.grid_dim.2,
                cfg.block_dim.0,
                cfg.block_dim.1,
                cfg.block_dim.2,
                cfg.shared_mem_bytes,
                stream.cu_stream(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        if r == sys::CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(self.launch_error(index, ctx, f, cfg, r))
        }
    }

    /// Checks every launch limit the wrapper knows before the driver is called: threads per block
    /// against the kernel's own maximum, grid dimensions, and dynamic shared memory against the
    /// kernel's current limit. The limits are cached per device at load, so this is a handful of
    /// compares; the error is built off the hot path.
    #[inline(always)]
    pub(crate) fn check_limits(
        &'static self,
        index: usize,
        ctx: &Arc<CudaContext>,
        loaded: &Loaded,
        cfg: &LaunchConfig,
    ) -> Result<()> {
        let max_smem = loaded.max_dyn_smem[index].load(Ordering::Relaxed);
        // Rejected before the driver sees it: a clear Error, and no failed API call.
        check_config(cfg, loaded.max_threads[index], max_smem)
            .map_err(|v| self.limit_error(index, ctx, loaded.functions[index], cfg, v))
    }

    #[cold]
    #[inline(never)]
    fn limit_error(
        &self,
        index: usize,
        ctx: &Arc<CudaContext>,
        f: sys::CUfunction,
        cfg: &LaunchConfig,
        v: Violation,
    ) -> Error {
        let kernel = self.spec.kernels[index].name;
        let (mut cause, mut fix) = v.describe(cfg);
        if let Violation::SharedMemory { .. } = v {
            let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES;
            let static_smem = crate::control::attr(f, attr).unwrap_or(0);
            cause.push_str(&format!(" (plus {static_smem} static)"));
            fix = format!("request less, or raise the kernel's limit first with `{kernel}::set_max_dynamic_shared_memory(&ctx, bytes)`");
        }
        Error::Launch { kernel, device: ctx.ordinal(), cause, fix: Some(fix) }
    }

    /// The Error for a launch the driver refused: a limit the kernel's attributes show was
    /// exceeded, else the driver's code with the configuration.
    #[cold]
    #[inline(never)]
    pub(crate) fn launch_error(
        &self,
        index: usize,
        ctx: &Arc<CudaContext>,
        f: sys::CUfunction,
        cfg: &LaunchConfig,
        r: sys::CUresult,
    ) -> Error {
        use sys::CUfunction_attribute::*;
        let attr = |a| crate::control::attr(f, a).unwrap_or(u32::MAX);
        let limits = check_config(
            cfg,
            attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            attr(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
        );
        if let Err(v) = limits {
            return self.limit_error(index, ctx, f, cfg, v);
        }
        let (b, g) = (cfg.block_dim, cfg.grid_dim);
        Error::Launch {
            kernel: self.spec.kernels[index].name,
            device: ctx.ordinal(),
            cause: format!(
                "{} with grid {g:?}, block {b:?}, {} bytes dynamic shared memory",
                DriverCode(r),
                cfg.shared_mem_bytes
            ),
            fix: None,
        }
    }
}

/// A launch configuration a kernel cannot take, found before the driver is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Violation {
    /// A zero grid or block dimension.
    Empty,
    /// More threads per block than the kernel allows.
    Threads {
        /// The kernel's limit.
        max: u32,
    },
    /// A grid dimension over the device limits.
    Grid,
    /// More dynamic shared memory than the kernel's current limit.
    SharedMemory {
        /// The kernel's limit.
        max: u32,
    },
}

impl Violation {
    /// What is wrong and what to do, for the Error. The shared-memory fix is generic: callers
    /// name their own way to raise the limit.
    pub(crate) fn describe(self, cfg: &LaunchConfig) -> (String, String) {
        let (b, g) = (cfg.block_dim, cfg.grid_dim);
        let threads = b.0 as u64 * b.1 as u64 * b.2 as u64;
        match self {
            Violation::Empty => (
                format!("empty launch: grid {g:?}, block {b:?}"),
                "every grid and block dimension must be at least 1".into(),
            ),
            Violation::Threads { max } => (
                format!(
                    "block of {}x{}x{} = {threads} threads exceeds the kernel's limit of {max} threads per block",
                    b.0, b.1, b.2
                ),
                format!("use at most {max} threads per block (the limit comes from the device, the kernel's registers and __launch_bounds__)"),
            ),
            Violation::Grid => (
                format!("grid {g:?} exceeds the grid limits ({MAX_GRID_X}, {MAX_GRID_YZ}, {MAX_GRID_YZ})"),
                "use fewer blocks per dimension, or loop inside the kernel (grid-stride loop)".into(),
            ),
            Violation::SharedMemory { max } => (
                format!("{} bytes of dynamic shared memory requested, the kernel allows {max}", cfg.shared_mem_bytes),
                "request less, or raise the kernel's limit first".into(),
            ),
        }
    }
}

/// Checks `cfg` against a kernel's thread and dynamic shared memory limits and the grid limits;
/// shared by the generated launchers and `Program` kernels.
#[inline(always)]
pub(crate) fn check_config(cfg: &LaunchConfig, max_threads: u32, max_dyn_smem: u32) -> Result<(), Violation> {
    let (b, g) = (cfg.block_dim, cfg.grid_dim);
    let threads = b.0 as u64 * b.1 as u64 * b.2 as u64;
    if threads == 0 || g.0 == 0 || g.1 == 0 || g.2 == 0 {
        Err(Violation::Empty)
    } else if threads > u64::from(max_threads) {
        Err(Violation::Threads { max: max_threads })
    } else if g.0 > MAX_GRID_X || g.1 > MAX_GRID_YZ || g.2 > MAX_GRID_YZ {
        Err(Violation::Grid)
    } else if cfg.shared_mem_bytes > max_dyn_smem {
        Err(Violation::SharedMemory { max: max_dyn_smem })
    } else {
        Ok(())
    }
}

/// Converts a Rust string to a C string for a driver call, or says which name was bad.
pub(crate) fn c_string(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("name `{s}` contains a NUL byte"))
}

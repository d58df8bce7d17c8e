//! The loaded side of run-time programs: [`ProgramModule`] (a [`Program`](crate::Program)(crate::Program) loaded
//! on one device) and its kernels, [`ProgramKernel`], launched with checked [`Arg`] lists.

use crate::args::dynamic::Arg;
use crate::bind::dynamic::{bind_buffers, misplaced};
use crate::driver::{bind, func_attr};
use crate::error::{DriverCode, Error, Result};
use crate::launch::limits::KernelAttributes;
use crate::launch::{self, attrs, LaunchKind, Target, Who};
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

pub(crate) struct ModuleInner {
    // Keeps the context (and so the module) alive while any module or kernel handle exists.
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) module: sys::CUmodule,
    /// ``program `name` ``, for errors.
    pub(crate) origin: String,
    pub(crate) program: String,
    pub(crate) arch: u32,
    /// (name expression, lowered symbol)
    pub(crate) names: Vec<(String, String)>,
    /// (kernel symbol, parameter count) read from the cubin, when it could be read.
    pub(crate) param_counts: Option<Vec<(String, usize)>>,
    pub(crate) from_cache: bool,
    pub(crate) cache_file: Option<PathBuf>,
    /// The program's source, options and in-memory header texts, for
    /// [`ProgramModule::kernel_checked`].
    pub(crate) source: String,
    pub(crate) options: Vec<String>,
    pub(crate) headers: Vec<String>,
}

// SAFETY: CUDA driver handles (contexts, modules) may be used from any thread; nothing here is
// mutated after construction.
unsafe impl Send for ModuleInner {}
// SAFETY: as above.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: the module was loaded in this context and no kernel handle outlives it (each
            // holds this `ModuleInner`). The driver waits for work still using it.
            unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

/// A [`Program`](crate::Program) loaded on one device. Cheap to clone (shared); unloaded when the last clone and
/// the last of its kernels are dropped.
#[derive(Clone)]
pub struct ProgramModule {
    pub(crate) inner: Arc<ModuleInner>,
}

impl std::fmt::Debug for ProgramModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = &self.inner;
        f.debug_struct("ProgramModule")
            .field("program", &m.program)
            .field("device", &m.ctx.ordinal())
            .field("arch", &m.arch)
            .field("from_cache", &m.from_cache)
            .field("names", &m.names)
            .finish_non_exhaustive()
    }
}

impl ProgramModule {
    /// The program's name.
    pub fn name(&self) -> &str {
        &self.inner.program
    }

    /// The architecture the code was compiled for, e.g. `90` for sm_90 (the device's own).
    pub fn arch(&self) -> u32 {
        self.inner.arch
    }

    /// Whether the cubin came from the disk cache (NVRTC did not run).
    pub fn from_cache(&self) -> bool {
        self.inner.from_cache
    }

    /// The cache file read or written; `None` when the cache could not be written.
    pub fn cache_file(&self) -> Option<&Path> {
        self.inner.cache_file.as_deref()
    }

    /// The context the module is loaded in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// The driver's module handle, for calls cuda-embed does not wrap (`cuModuleGetGlobal`, ...).
    pub fn cu_module(&self) -> sys::CUmodule {
        self.inner.module
    }

    /// The symbol NVRTC gave a name expression (`axpy<float>` -> `_Z4axpyIfEvT_PKS0_PS0_i`).
    pub fn lowered_name(&self, expression: &str) -> Option<&str> {
        self.inner.names.iter().find(|(e, _)| e == expression).map(|(_, s)| s.as_str())
    }

    /// The kernel named `name`: a name expression given to [`Program::name_expression`](crate::Program::name_expression), an
    /// `extern "C"` kernel's name, or a symbol. Its parameter list is read once, here, for the
    /// checks every launch makes.
    ///
    /// An unknown name is an [`Error::UnknownKernel`] listing the kernels the module has.
    pub fn kernel(&self, name: &str) -> Result<ProgramKernel> {
        let m = &self.inner;
        let device = m.ctx.ordinal();
        let unknown = || Error::UnknownKernel { origin: m.origin.clone(), kernel: name.into(), known: self.kernels() };
        let symbol = self.lowered_name(name).unwrap_or(name);
        let c_symbol = CString::new(symbol).map_err(|_| unknown())?;
        // A name the cubin does not list is unknown without asking the driver (whose failing
        // lookup compute-sanitizer would report as an API error).
        let count = m.param_counts.as_deref().map(|c| cuda_embed_source::cubin::lookup(c, symbol));
        if count == Some(None) {
            return Err(unknown());
        }
        bind(&m.ctx).map_err(|e| crate::launch::of_kernel(e, name, &m.origin))?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a live module of the now-current context; a valid C string; a valid out-pointer.
        let r = unsafe { sys::cuModuleGetFunction(&mut f, m.module, c_symbol.as_ptr()) };
        match r {
            sys::CUresult::CUDA_SUCCESS => {}
            sys::CUresult::CUDA_ERROR_NOT_FOUND => return Err(unknown()),
            r => {
                let e = Error::Driver { call: "cuModuleGetFunction", device, cause: DriverCode(r) };
                return Err(crate::launch::of_kernel(e, name, &m.origin));
            }
        }
        use sys::CUfunction_attribute::*;
        // A limit the driver cannot report is not checked (u32::MAX), rather than failing the lookup.
        let limit = |a| func_attr(f, a).unwrap_or(u32::MAX);
        Ok(ProgramKernel {
            module: m.clone(),
            name: name.into(),
            function: f,
            params: crate::module::params::param_info(f, count.flatten()).map(Vec::into_boxed_slice),
            signature: None,
            max_threads: AtomicU32::new(limit(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)),
            max_dyn_smem: AtomicU32::new(limit(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)),
        })
    }

    /// The kernels of the module: each name expression (with its symbol), then every other
    /// kernel symbol the driver lists (CUDA 12.4+ drivers).
    pub fn kernels(&self) -> Vec<String> {
        let m = &self.inner;
        let mut known: Vec<String> =
            m.names.iter().map(|(e, s)| if e == s { e.clone() } else { format!("{e} ({s})") }).collect();
        for symbol in self.symbols() {
            if !m.names.iter().any(|(_, s)| *s == symbol) {
                known.push(symbol);
            }
        }
        known
    }

    /// Every function symbol in the module, when the driver can enumerate them (CUDA 12.4+).
    fn symbols(&self) -> Vec<String> {
        let module = self.inner.module;
        if crate::module::params::driver_version() < 12040 {
            return Vec::new();
        }
        let mut count = 0u32;
        // SAFETY: a live module; a valid out-pointer; the entry point exists on 12.4+ drivers.
        if unsafe { sys::cuModuleGetFunctionCount(&mut count, module) } != sys::CUresult::CUDA_SUCCESS {
            return Vec::new();
        }
        let mut functions: Vec<sys::CUfunction> = vec![std::ptr::null_mut(); count as usize];
        // SAFETY: `functions` has room for `count` handles.
        let r = unsafe { sys::cuModuleEnumerateFunctions(functions.as_mut_ptr(), count, module) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Vec::new();
        }
        functions
            .into_iter()
            .filter_map(|f| {
                let mut name: *const std::ffi::c_char = std::ptr::null();
                // SAFETY: a function handle the driver just listed; a valid out-pointer.
                let r = unsafe { sys::cuFuncGetName(&mut name, f) };
                // SAFETY: on success the driver returns a NUL-terminated string it owns; copied here.
                (r == sys::CUresult::CUDA_SUCCESS && !name.is_null())
                    .then(|| unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned())
            })
            .collect()
    }
}

/// One kernel of a [`ProgramModule`], launched with a checked, dynamic argument list.
///
/// Holds its module: the module stays loaded while the kernel exists.
pub struct ProgramKernel {
    module: Arc<ModuleInner>,
    name: String,
    function: sys::CUfunction,
    pub(crate) params: Option<Box<[(usize, usize)]>>,
    /// The C signature given to [`ProgramModule::kernel_with_signature`].
    pub(crate) signature: Option<Box<[crate::program::sigcheck::Expected]>>,
    max_threads: AtomicU32,
    max_dyn_smem: AtomicU32,
}

// SAFETY: a CUDA function handle may be used from any thread; the only mutable state is atomic.
unsafe impl Send for ProgramKernel {}
// SAFETY: as above.
unsafe impl Sync for ProgramKernel {}

impl std::fmt::Debug for ProgramKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramKernel")
            .field("program", &self.module.program)
            .field("name", &self.name)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl ProgramKernel {
    /// The name the kernel was looked up by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `(offset, size)` in bytes of each parameter of the compiled kernel, or `None` when the
    /// driver cannot say (older than CUDA 12.4; launches are then not checked against it).
    pub fn params(&self) -> Option<&[(usize, usize)]> {
        self.params.as_deref()
    }

    /// The driver's function handle, for calls cuda-embed does not wrap.
    pub fn cu_function(&self) -> sys::CUfunction {
        self.function
    }

    /// The C signature the kernel was taken with, when it was.
    pub(crate) fn signature(&self) -> Option<&[crate::program::sigcheck::Expected]> {
        self.signature.as_deref()
    }

    /// ``program `name` ``, for errors.
    pub(crate) fn origin(&self) -> &str {
        &self.module.origin
    }

    /// The context the kernel's module is loaded in.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.module.ctx
    }

    pub(crate) fn target(&self) -> Target<'_> {
        Target {
            f: self.function,
            max_threads: &self.max_threads,
            max_dyn_smem: &self.max_dyn_smem,
            who: Who {
                kernel: &self.name,
                origin: &self.module.origin,
                raise_smem: "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) on `cu_function()`, \
                             or `ProgramKernel::set_max_dynamic_shared_memory`",
            },
        }
    }

    /// Launches the kernel on `stream` with `args`, one per kernel parameter.
    ///
    /// Before the driver is called, the argument count and every argument's byte size are
    /// compared with the compiled kernel's parameters ([`Error::Arguments`] on a mismatch), the
    /// block size, grid and dynamic shared memory with the kernel's limits, and the stream's
    /// device with the module's ([`Error::Launch`]). Buffers are ordered with the other work on
    /// them the way cudarc orders its own launches.
    ///
    /// A kernel taken with [`ProgramModule::kernel_with_signature`] also has every argument
    /// checked against its C signature (element types, mutability, value types).
    ///
    /// # Safety
    /// The kernel body can do anything: each argument must be what the kernel expects (a buffer
    /// of the element type it reads and long enough, a value of the C++ type), and the kernel
    /// must be safe to run with them. Without a signature only the sizes are checked; with one,
    /// buffer lengths still are not.
    pub unsafe fn launch(&self, stream: &CudaStream, cfg: LaunchConfig, args: &mut [Arg<'_>]) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.launch_as(stream, cfg, LaunchKind::Plain, args) }.map(drop)
    }

    /// Launches as `kind` says (plain, timed, cooperative, with clusters), with the checks of
    /// [`ProgramKernel::launch`]. Returns the GPU time in milliseconds for [`LaunchKind::Timed`].
    ///
    /// # Safety
    /// As for [`ProgramKernel::launch`].
    pub unsafe fn launch_as(
        &self,
        stream: &CudaStream,
        cfg: LaunchConfig,
        kind: LaunchKind,
        args: &mut [Arg<'_>],
    ) -> Result<Option<f32>> {
        let ctx = stream.context();
        let device = ctx.ordinal();
        let target = self.target();
        #[cfg(feature = "nvtx")]
        let _range = crate::nvtx::launch(target.who.kernel, target.who.origin);
        if ctx.cu_ctx() != self.module.ctx.cu_ctx() {
            return Err(target.who.error(
                device,
                format!(
                    "the stream belongs to device {device} but the module was loaded on device {}",
                    self.module.ctx.ordinal()
                ),
                Some("load the program on the stream's device too: `program.load(stream.context())`".into()),
            ));
        }
        self.check_args(args)?;
        if let Some((i, buffer_device)) = misplaced(args, stream) {
            let who = &target.who;
            return Err(crate::bind::wrong_device(who.kernel, who.origin, &format!("#{i}"), buffer_device, stream));
        }
        let mut pointers = vec![0 as sys::CUdeviceptr; args.len()];
        let who = target.who;
        let mut go = |pointers: &[sys::CUdeviceptr]| {
            let mut params = crate::bind::dynamic::param_pointers(args, pointers);
            // SAFETY: `f` belongs to the stream's context (checked above); `params` holds one
            // pointer per parameter, each to a value of the parameter's size (checked above),
            // alive for the call; the kernel's own safety is the caller's contract.
            unsafe { launch::launch(&target, stream, &cfg, kind, &mut params) }
        };
        // SAFETY: every buffer argument's object is borrowed by its `Arg` for this call.
        unsafe { bind_buffers(args, stream, (who.kernel, who.origin), &mut pointers, &mut go) }
    }

    /// Registers, thread and memory limits of this kernel.
    pub fn attributes(&self) -> Result<KernelAttributes> {
        attrs::attributes(&self.target(), self.module.ctx.ordinal())
    }

    /// Lets this kernel use up to `bytes` of dynamic shared memory per block (above 48 KiB).
    pub fn set_max_dynamic_shared_memory(&self, bytes: u32) -> Result<()> {
        attrs::set_max_dynamic_shared_memory(&self.target(), &self.module.ctx, bytes)
    }

    /// A 1-D configuration covering `n` threads with the occupancy-maximising block size.
    pub fn occupancy_config(&self, n: u32, dynamic_shared_bytes: u32) -> Result<LaunchConfig> {
        attrs::occupancy_config(&self.target(), &self.module.ctx, n, dynamic_shared_bytes)
    }

    fn check_args(&self, args: &[Arg<'_>]) -> Result<()> {
        if let Some(i) = args.iter().position(Arg::is_view) {
            return Err(Error::Argument {
                kernel: self.name.clone(),
                origin: self.module.origin.clone(),
                parameter: format!("#{i}"),
                detail: "is an N-D view (`Arg::view`), which only the N-D launches of the elementwise and \
                         reduction programs take: pass a pointer with `Arg::slice(view.buffer())`"
                    .into(),
            });
        }
        if let Some(sig) = &self.signature {
            crate::program::sigcheck::check(sig, args).map_err(|detail| Error::Signature {
                kernel: self.name.clone(),
                origin: self.module.origin.clone(),
                detail,
            })?;
        }
        let Some(params) = &self.params else { return Ok(()) };
        if params.len() != args.len() || params.iter().zip(args).any(|(p, a)| p.1 != a.size) {
            return Err(Error::Arguments {
                origin: self.module.origin.clone(),
                kernel: self.name.clone(),
                expected: params.iter().map(|p| p.1).collect(),
                given: args.iter().map(|a| a.size).collect(),
            });
        }
        Ok(())
    }
}

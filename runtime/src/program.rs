//! Run-time programs: CUDA source built while the program runs (PyCUDA `SourceModule` templates,
//! CuPy `RawModule`), compiled by NVRTC for the device at hand and cached on disk.
//!
//! [`Program`] collects the source, options, defines, in-memory headers, include directories and
//! name expressions (template instances); [`Program::load`] compiles it for a context's device —
//! or takes the cubin from the disk cache — and loads it as a [`ProgramModule`]. Its kernels
//! ([`ProgramKernel`]) launch with a dynamic argument list of [`Arg`]s whose count and byte sizes
//! are checked against the compiled kernel's own parameter list before anything runs: the
//! dynamic sibling of the typed launchers `cuda_kernel!` generates.
//!
//! Programs compile through the same [`nvrtc`](crate::nvrtc) unit as `cuda_kernel!`'s run-time
//! path, so they share its cache key scheme and its cache: the key covers the NVRTC build, the
//! architecture, the program name, every option, the name expressions, the source, every
//! in-memory header (name and bytes) and the bytes of every file on disk the source can reach
//! through `#include` (found in the include directories and next to the including file, by the
//! scanner of `cuda_embed_build::includes`). Entries live in
//! [`nvrtc::cache_dir`](crate::nvrtc::cache_dir)`/nvrtc/`, beside the `cuda_kernel!` NVRTC entries.

use crate::arg::{bind_buffers, Arg, ArgKind};
use crate::error::{DriverCode, Error, Result};
use crate::launch::{self, attrs, LaunchKind, Target, Who};
use crate::limits::{bind, func_attr, KernelAttributes};
use crate::nvrtc::{self, Compiled, Unit};
use cuda_embed_build::cache::{Store, NVRTC_SUBDIR};
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::ffi::{c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

const DEFAULT_NAME: &str = "program.cu";

/// CUDA C++ source to compile at run time with NVRTC, with its options.
///
/// A builder: every method takes and returns the program. Nothing is added behind your back
/// (no `-ftz`, no fast math); the target architecture is the device's own (`sm_XY`), chosen by
/// [`Program::load`].
///
/// ```no_run
/// use cuda_embed_runtime::{Arg, LaunchConfig, Program};
///
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let program = Program::new(
///     r#"
///     template <class T> __global__ void axpy(T a, const T* x, T* y, int n) {
///         int i = blockIdx.x * BLOCK + threadIdx.x;
///         if (i < n) y[i] = a * x[i] + y[i];
///     }"#,
/// )
/// .name("axpy.cu")
/// .define("BLOCK", 256)
/// .name_expression("axpy<float>");
/// let module = program.load(&ctx)?; // NVRTC, or a disk-cache hit
/// let axpy = module.kernel("axpy<float>")?;
///
/// let n = 1000i32;
/// let x = stream.clone_htod(&vec![1.0f32; n as usize])?;
/// let mut y = stream.alloc_zeros::<f32>(n as usize)?;
/// let cfg = LaunchConfig { grid_dim: (4, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
/// // SAFETY: the kernel reads n elements of x and writes n of y, both that long.
/// unsafe { axpy.launch(&stream, cfg, &mut [Arg::value(&2.0f32), Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)])? };
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Program {
    name: String,
    source: String,
    options: Vec<String>,
    headers: Vec<(String, String)>,
    name_expressions: Vec<String>,
    cache_dir: Option<PathBuf>,
}

impl Program {
    /// A program of CUDA C++ `source`, named `program.cu` until [`Program::name`] says otherwise.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new(r#"extern "C" __global__ void k(int* x) { *x = 1; }"#);
    /// ```
    pub fn new(source: impl Into<String>) -> Self {
        Program {
            name: DEFAULT_NAME.into(),
            source: source.into(),
            options: Vec::new(),
            headers: Vec::new(),
            name_expressions: Vec::new(),
            cache_dir: None,
        }
    }

    /// Names the program in errors and NVRTC diagnostics. A name with a directory
    /// (`kernels/axpy.cu`) also makes NVRTC look for `#include "..."` files in that directory.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("").name("axpy.cu");
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds one NVRTC option, as NVRTC spells it (`--use_fast_math`, `-lineinfo`,
    /// `--maxrregcount=64`). Do not pass an architecture: it is the device's.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("").option("--use_fast_math");
    /// ```
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// Adds several NVRTC options.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("").options(["-lineinfo", "--extra-device-vectorization"]);
    /// ```
    pub fn options<I: IntoIterator<Item = S>, S: Into<String>>(mut self, options: I) -> Self {
        self.options.extend(options.into_iter().map(Into::into));
        self
    }

    /// Defines a preprocessor macro: `-D{name}={value}`.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("").define("BLOCK", 256).define("T", "float");
    /// ```
    pub fn define(self, name: &str, value: impl std::fmt::Display) -> Self {
        self.option(format!("-D{name}={value}"))
    }

    /// Selects the C++ dialect: `--std={std}` (`c++17`, `c++20`).
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("").std("c++17");
    /// ```
    pub fn std(self, std: &str) -> Self {
        self.option(format!("--std={std}"))
    }

    /// Adds an in-memory header: `#include "name"` (or `<name>`) in the source or another header
    /// reads `contents`. Its bytes are part of the cache key.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("#include \"common.cuh\"")
    ///     .header("common.cuh", "#define SCALE 2.0f");
    /// ```
    pub fn header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        self.headers.push((name.into(), contents.into()));
        self
    }

    /// Adds an include directory (`--include-path=dir`). Every file the source reaches through
    /// `#include` in these directories (or relative to the including file) is hashed into the
    /// cache key, so editing a header recompiles.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("#include \"tile.cuh\"").include_dir("kernels");
    /// ```
    pub fn include_dir(self, dir: impl AsRef<Path>) -> Self {
        self.option(format!("--include-path={}", dir.as_ref().display()))
    }

    /// Asks NVRTC for the symbol of a `__global__` function given as a C++ expression: a template
    /// instance (`axpy<float>`), a namespaced or overloaded kernel. [`ProgramModule::kernel`] then
    /// finds the kernel by this same text. Instantiates templates that the source does not.
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("template <class T> __global__ void k(T* x) {}")
    ///     .name_expression("k<float>")
    ///     .name_expression("k<double>");
    /// ```
    pub fn name_expression(mut self, expression: impl Into<String>) -> Self {
        self.name_expressions.push(expression.into());
        self
    }

    /// Caches compiled code under `dir/nvrtc/` instead of the default
    /// [`nvrtc::cache_dir`](crate::nvrtc::cache_dir) (`CUDA_EMBED_CACHE_DIR`, ...).
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("").cache_dir("/tmp/my-kernels");
    /// ```
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// The NVRTC options as they will be passed (the architecture and the toolkit include
    /// directories are added at compile time).
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("").define("N", 4).std("c++17");
    /// assert_eq!(p.nvrtc_options(), ["-DN=4", "--std=c++17"]);
    /// ```
    pub fn nvrtc_options(&self) -> &[String] {
        &self.options
    }

    /// The disk-cache key of this program compiled for `sm_{arch}` with the NVRTC this process
    /// would use, as hex. Equal keys mean the same cubin.
    ///
    /// ```
    /// use cuda_embed_runtime::Program;
    /// let a = Program::new("__global__ void k() {}");
    /// assert_eq!(a.cache_key(90), a.clone().cache_key(90));
    /// assert_ne!(a.cache_key(90), a.clone().define("X", 1).cache_key(90));
    /// assert_ne!(a.cache_key(90), a.cache_key(80));
    /// ```
    pub fn cache_key(&self, arch: u32) -> String {
        // With no NVRTC the key is still defined; compiling then fails with the reason.
        let compiler = nvrtc::compiler_identity().unwrap_or_else(|_| "nvrtc not found".into());
        let unit = self.unit();
        unit.key(&compiler, arch, &unit.scan())
    }

    /// The program as an NVRTC compilation unit (what its cubin and cache key depend on).
    fn unit(&self) -> Unit<'_, String> {
        Unit {
            name: &self.name,
            source: &self.source,
            options: &self.options,
            headers: &self.headers,
            name_expressions: &self.name_expressions,
        }
    }

    fn error(&self, arch: u32, cause: String) -> Error {
        Error::Compile { origin: origin_of(&self.name), arch, cause }
    }

    /// Compiles the program for `sm_{arch}`, or takes the cubin from the disk cache. Needs NVRTC,
    /// not a GPU. [`Program::load`] calls this with the device's architecture.
    ///
    /// Errors carry NVRTC's log; a name expression that names no kernel is called out by name.
    ///
    /// ```no_run
    /// let compiled = cuda_embed_runtime::Program::new(r#"extern "C" __global__ void k(int* x) { *x = 1; }"#)
    ///     .name_expression("k")
    ///     .compile(90)?;
    /// assert_eq!(compiled.symbols, ["k"]);
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn compile(&self, arch: u32) -> Result<Compiled> {
        let dir = self.cache_dir.as_ref().map_or_else(cuda_embed_build::cache::nvrtc_dir, |d| d.join(NVRTC_SUBDIR));
        self.unit().compile(arch, &Store::new(dir, "cubin")).map_err(|log| self.error(arch, self.explain(log)))
    }

    /// Turns NVRTC's log into a message that says which input was wrong.
    fn explain(&self, log: String) -> String {
        // NVRTC compiles name expressions as `#pragma nv_mangled_name EXPR` in a `__nv_name_map`
        // appendix; its errors there mean an expression names nothing.
        let bad: Vec<&str> = self
            .name_expressions
            .iter()
            .filter(|e| log.contains(&format!("nv_mangled_name {e}")))
            .map(String::as_str)
            .collect();
        if !bad.is_empty() {
            return format!(
                "name expression(s) `{}` name no __global__ function of the program (a template instance \
                 needs its template arguments, e.g. `axpy<float>`); NVRTC said:\n{log}",
                bad.join("`, `")
            );
        }
        if log.starts_with("the NVRTC library") {
            return log;
        }
        format!("NVRTC could not compile it:\n{log}")
    }

    /// Compiles the program for `ctx`'s device (NVRTC, or a disk-cache hit) and loads it there.
    ///
    /// Each call loads a new module; keep the [`ProgramModule`] (or its kernels) to launch again.
    ///
    /// ```no_run
    /// let ctx = cuda_embed_runtime::context(0)?;
    /// let module = cuda_embed_runtime::Program::new(r#"extern "C" __global__ void k(int* x) { *x = 1; }"#).load(&ctx)?;
    /// println!("sm_{}, from cache: {}", module.arch(), module.from_cache());
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn load(&self, ctx: &Arc<CudaContext>) -> Result<ProgramModule> {
        let device = ctx.ordinal();
        bind(ctx)?;
        let (major, minor) = ctx.compute_capability().map_err(|e| Error::Driver {
            call: "cuDeviceGetAttribute",
            device,
            cause: DriverCode(e.0),
        })?;
        let arch = (major * 10 + minor) as u32;
        let compiled = self.compile(arch)?;
        let module = crate::load::load_raw(&compiled.cubin).map_err(|(code, log)| Error::Load {
            origin: origin_of(&self.name),
            device,
            device_name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
            arch,
            cause: crate::load::with_log(code, &log),
            fix: None,
        })?;
        Ok(ProgramModule {
            inner: Arc::new(ModuleInner {
                ctx: ctx.clone(),
                module,
                origin: origin_of(&self.name),
                program: self.name.clone(),
                arch,
                names: self.name_expressions.iter().cloned().zip(compiled.symbols).collect(),
                from_cache: compiled.from_cache,
                cache_file: compiled.cache_file,
            }),
        })
    }
}

struct ModuleInner {
    // Keeps the context (and so the module) alive while any module or kernel handle exists.
    ctx: Arc<CudaContext>,
    module: sys::CUmodule,
    /// ``program `name` ``, for errors.
    origin: String,
    program: String,
    arch: u32,
    /// (name expression, lowered symbol)
    names: Vec<(String, String)>,
    from_cache: bool,
    cache_file: Option<PathBuf>,
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

/// A [`Program`] loaded on one device. Cheap to clone (shared); unloaded when the last clone and
/// the last of its kernels are dropped.
#[derive(Clone)]
pub struct ProgramModule {
    inner: Arc<ModuleInner>,
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

    /// The kernel named `name`: a name expression given to [`Program::name_expression`], an
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
        bind(&m.ctx)?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a live module of the now-current context; a valid C string; a valid out-pointer.
        let r = unsafe { sys::cuModuleGetFunction(&mut f, m.module, c_symbol.as_ptr()) };
        match r {
            sys::CUresult::CUDA_SUCCESS => {}
            sys::CUresult::CUDA_ERROR_NOT_FOUND => return Err(unknown()),
            r => return Err(Error::Driver { call: "cuModuleGetFunction", device, cause: DriverCode(r) }),
        }
        use sys::CUfunction_attribute::*;
        // A limit the driver cannot report is not checked (u32::MAX), rather than failing the lookup.
        let limit = |a| func_attr(f, a).unwrap_or(u32::MAX);
        Ok(ProgramKernel {
            module: m.clone(),
            name: name.into(),
            function: f,
            params: crate::params::param_info(f).map(Vec::into_boxed_slice),
            max_threads: limit(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
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
        if crate::params::driver_version() < 12040 {
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
    params: Option<Box<[(usize, usize)]>>,
    max_threads: u32,
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

    /// The context the kernel's module is loaded in.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.module.ctx
    }

    pub(crate) fn target(&self) -> Target<'_> {
        Target {
            f: self.function,
            max_threads: self.max_threads,
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
    /// # Safety
    /// The kernel body can do anything: each argument must be what the kernel expects (a buffer
    /// of the element type it reads and long enough, a value of the C++ type), and the kernel
    /// must be safe to run with them. Only the sizes are checked.
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
        let mut pointers = vec![0 as sys::CUdeviceptr; args.len()];
        let mut go = |pointers: &[sys::CUdeviceptr]| {
            let mut params: Vec<*mut c_void> = args
                .iter()
                .zip(pointers)
                .map(|(a, p)| match a.kind {
                    ArgKind::Value(v) => v as *mut c_void,
                    ArgKind::Buffer { .. } => p as *const sys::CUdeviceptr as *mut c_void,
                })
                .collect();
            // SAFETY: `f` belongs to the stream's context (checked above); `params` holds one
            // pointer per parameter, each to a value of the parameter's size (checked above),
            // alive for the call; the kernel's own safety is the caller's contract.
            unsafe { launch::launch(&target, stream, &cfg, kind, &mut params) }
        };
        // SAFETY: every buffer argument's object is borrowed by its `Arg` for this call.
        unsafe { bind_buffers(args, 0, stream, &mut pointers, &mut go) }
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

/// ``program `name` ``: how errors name where a run-time program's kernels come from.
fn origin_of(program: &str) -> String {
    format!("program `{program}`")
}

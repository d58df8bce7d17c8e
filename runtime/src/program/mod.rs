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
//! Programs compile through the same [`nvrtc`](crate::program::nvrtc) unit as `cuda_kernel!`'s run-time
//! path, so they share its cache key scheme and its cache: the key covers the NVRTC build, the
//! architecture, the program name, every option, the name expressions, the source, every
//! in-memory header (name and bytes) and the bytes of every file on disk the source can reach
//! through `#include` (found in the include directories and next to the including file, by the
//! scanner of `cuda_embed_source::includes`). Entries live in
//! [`nvrtc::cache_dir`](crate::program::nvrtc::cache_dir)`/nvrtc/`, beside the `cuda_kernel!` NVRTC entries.

pub(crate) mod module; // ProgramModule, ProgramKernel: a program loaded on one device
pub mod nvrtc; // run-time compilation and its disk cache
pub(crate) mod sigcheck; // run-time kernels checked against a C signature

use crate::driver::bind;
use crate::error::{DriverCode, Error, Result};
use cuda_embed_source::cache::{Store, NVRTC_SUBDIR};
use cudarc::driver::CudaContext;
use nvrtc::{Compiled, Unit};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::program::module::ModuleInner;
pub use crate::program::module::{ProgramKernel, ProgramModule};

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

    /// The same program with another source (generated kernels keep the user's options).
    pub(crate) fn with_source(mut self, source: String) -> Self {
        self.source = source;
        self
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
    /// reads `contents`. Its bytes are part of the cache key. A second header of the same name
    /// replaces the first (NVRTC refuses a program given two headers of one name).
    ///
    /// ```
    /// let p = cuda_embed_runtime::Program::new("#include \"common.cuh\"")
    ///     .header("common.cuh", "#define SCALE 2.0f");
    /// ```
    pub fn header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        let (name, contents) = (name.into(), contents.into());
        match self.headers.iter_mut().find(|(n, _)| *n == name) {
            Some(h) => h.1 = contents,
            None => self.headers.push((name, contents)),
        }
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
    /// [`nvrtc::cache_dir`](crate::program::nvrtc::cache_dir) (`CUDA_EMBED_CACHE_DIR`, ...).
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

    /// The disk-cache key of this program compiled for `sm_{arch}` in this process's environment
    /// (the entry's file name): the SHA-256 of the program (hex), `-`, and a 64-bit checksum (16
    /// hex digits) of what the run time adds: the variables the search for libnvrtc reads, the
    /// architecture and the headers reached on disk (from the source's `#include`s and from
    /// `--pre-include`/`-include` options). The entry records those inputs and the
    /// NVRTC build that compiled it, and is used only while both still hold (see
    /// [`nvrtc`](crate::nvrtc)): another program is another key, and so are other inputs but for
    /// a 64-bit chance, which costs a compile, never a wrong cubin.
    ///
    /// ```
    /// use cuda_embed_runtime::Program;
    /// let a = Program::new("__global__ void k() {}");
    /// assert_eq!(a.cache_key(90), a.clone().cache_key(90));
    /// assert_ne!(a.cache_key(90), a.clone().define("X", 1).cache_key(90));
    /// assert_ne!(a.cache_key(90), a.cache_key(80));
    /// ```
    pub fn cache_key(&self, arch: u32) -> String {
        // The key names the NVRTC by the variables its search reads (the entry records the
        // build itself): defined with no NVRTC too; compiling then fails with the reason.
        self.unit().cache_key(arch)
    }

    /// Name, source, in-memory headers and name expressions, for [`crate::link`].
    pub(crate) fn parts(&self) -> (&str, &str, &[(String, String)], &[String]) {
        (&self.name, &self.source, &self.headers, &self.name_expressions)
    }

    /// The directory of this program's NVRTC cache entries.
    pub(crate) fn store_dir(&self) -> PathBuf {
        self.cache_dir.as_ref().map_or_else(cuda_embed_source::cache::nvrtc_dir, |d| d.join(NVRTC_SUBDIR))
    }

    /// The program as an NVRTC compilation unit (what its cubin and cache key depend on).
    fn unit(&self) -> Unit<'_, String> {
        Unit {
            name: &self.name,
            source: &self.source,
            options: &self.options,
            headers: &self.headers,
            name_expressions: &self.name_expressions,
            digest: None,
            scanned: None,
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
        let dir = self.cache_dir.as_ref().map_or_else(cuda_embed_source::cache::nvrtc_dir, |d| d.join(NVRTC_SUBDIR));
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
        let module = crate::module::image::load_raw(&compiled.cubin).map_err(|(code, log)| Error::Load {
            origin: origin_of(&self.name),
            device,
            device_name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
            arch,
            cause: crate::module::image::with_log(code, &log),
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
                param_counts: cuda_embed_source::cubin::param_counts(&compiled.cubin),
                from_cache: compiled.from_cache,
                cache_file: compiled.cache_file,
                source: self.source.clone(),
                options: self.options.clone(),
                headers: self.headers.iter().map(|h| h.1.clone()).collect(),
            }),
        })
    }
}

/// ``program `name` ``: how errors name where a run-time program's kernels come from.
pub(crate) fn origin_of(program: &str) -> String {
    format!("program `{program}`")
}

/// A module compiled by NVRTC at first use, for the loader (the `compile` of
/// [`crate::module::build::Build`], which the crate root implements with this and the run-time
/// linker): the cubin, its symbols, and what records a mark of passed checks in its cache entry.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_at_first_use(
    origin: &'static str,
    source: &str,
    own_len: usize,
    options: &[&str],
    headers: &[(&str, &str)],
    exprs: &[&str],
    digest: Option<&str>,
    arch: u32,
) -> Result<crate::module::build::Built> {
    let compiled = nvrtc::compile_module(origin, source, own_len, options, headers, exprs, digest, arch)?;
    let nvrtc::Compiled { cubin, symbols, from_cache, cache_file, checked, compiler, inputs } = compiled;
    // What the entry holds besides the cubin and symbols moves into the recorder: nothing is
    // copied unless the loader records.
    let record = cache_file.map(|file| {
        Box::new(move |cubin: Vec<u8>, symbols: Vec<String>, mark: Vec<u8>| {
            let entry =
                nvrtc::Compiled { cubin, symbols, from_cache, cache_file: None, checked: None, compiler, inputs };
            nvrtc::record_checked(&file, entry, mark)
        }) as crate::module::build::Recorder
    });
    Ok(crate::module::build::Built { cubin, symbols, from_cache, checked, record })
}

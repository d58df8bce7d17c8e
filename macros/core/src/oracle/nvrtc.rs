//! NVRTC at build time: the compiler the macro uses when there is no nvcc but there is libnvrtc
//! (the CUDA toolkit's, or the `nvidia-cuda-nvrtc` wheel's).
//!
//! The macro crate links no CUDA library: libnvrtc is opened with the system's dynamic loader
//! when a module needs it. [`find_nvrtc`] looks, in order:
//!
//! 1. `CUDA_EMBED_NVRTC`: the library file (`/opt/cuda/lib64/libnvrtc.so.13`) or the directory
//!    holding it. Set but unusable is an error, not a silent fallback.
//! 2. The `lib64/` and `lib/` directories of `$CUDA_PATH` and `$CUDA_HOME`, each directory of
//!    `LD_LIBRARY_PATH`, then `/usr/local/cuda/lib64`: the first `libnvrtc.so.13`,
//!    `libnvrtc.so.12` or `libnvrtc.so` found there.
//! 3. The system loader's own search (`ldconfig`'s cache, `/usr/lib/...`) for those names.
//!
//! `CUDA_EMBED_NO_BUILD_NVRTC=1` makes it find none, wherever libnvrtc is installed (as
//! `CUDA_EMBED_NO_NVCC` hides nvcc): a build with neither compiler then falls back to NVRTC at
//! first use, which this variable does not affect.
//!
//! NVRTC opens `libnvrtc-builtins.so.<version>` by name when it compiles; when the library was
//! found in a directory, the builtins next to it are opened first, so no `LD_LIBRARY_PATH` is
//! needed for them.
//!
//! One module is compiled once per listed architecture, each to a cubin (SASS); the lowest one's
//! PTX is kept too, for the type probes and as the image newer GPUs JIT. Results are cached like
//! nvcc builds ([`cuda_embed_source::cache::build_dir`]), keyed by the library, the arguments and
//! the source, and checked against the headers the source reaches.

use crate::oracle::nvcc::{Arch, Request};
use cuda_embed_source::cache::{self, Dep, Entry, Store};
use cuda_embed_source::includes::Scanner;
use cuda_embed_source::key::Key;
use cuda_embed_source::options::{self, toolkit_include_dirs};
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The variable naming the libnvrtc to use at build time.
pub const NVRTC_VAR: &str = "CUDA_EMBED_NVRTC";

/// The variable that hides every libnvrtc from the macro (not from the run-time NVRTC).
pub const NO_BUILD_NVRTC_VAR: &str = "CUDA_EMBED_NO_BUILD_NVRTC";

/// The key scheme of build-time NVRTC builds.
const KEY_SCHEME: &str = "cuda-embed nvrtc build v1";

/// Library names tried in each directory and with the system loader, newest first.
const NAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// A loaded libnvrtc.
#[derive(Clone)]
pub struct Nvrtc {
    /// Where it was found (the name given to the loader when it searched itself).
    pub path: PathBuf,
    /// `(major, minor)` from `nvrtcVersion`.
    pub version: (i32, i32),
    /// The directory's toolkit headers (`<lib>/../include`), when it has them.
    include: Vec<PathBuf>,
    lib: Arc<Loaded>,
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvrtc").field("path", &self.path).field("version", &self.version).finish()
    }
}

struct Loaded {
    lib: Library,
    // Kept open so NVRTC's own `dlopen` of the builtins finds them by their soname.
    _builtins: Vec<Library>,
}

impl Nvrtc {
    /// `NVRTC 13.0`.
    pub fn name(&self) -> String {
        format!("NVRTC {}.{}", self.version.0, self.version.1)
    }

    /// `13.0`.
    pub fn release(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }
}

/// Finds and loads libnvrtc (see the module docs for where it looks). `Ok(Err(why))` when there
/// is none; `Err` when `CUDA_EMBED_NVRTC` names one that does not load. Loaded once per process.
pub fn find_nvrtc() -> Result<Result<Nvrtc, String>, String> {
    static FOUND: OnceLock<Result<Result<Nvrtc, String>, String>> = OnceLock::new();
    FOUND.get_or_init(search).clone()
}

fn search() -> Result<Result<Nvrtc, String>, String> {
    if crate::oracle::nvcc::flag(NO_BUILD_NVRTC_VAR) {
        return Ok(Err(format!("{NO_BUILD_NVRTC_VAR} is set")));
    }
    if let Some(explicit) = std::env::var_os(NVRTC_VAR).filter(|s| !s.is_empty()) {
        let p = PathBuf::from(explicit);
        let file = if p.is_dir() { NAMES.iter().map(|n| p.join(n)).find(|f| f.is_file()) } else { Some(p.clone()) };
        let Some(file) = file else {
            return Err(format!("{NVRTC_VAR}={}: no {} there", p.display(), NAMES.join(" or ")));
        };
        return open(&file, true).map(Ok).map_err(|e| format!("{NVRTC_VAR}={}: {e}", p.display()));
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = std::env::var_os(var).filter(|s| !s.is_empty()) {
            dirs.push(Path::new(&root).join("lib64"));
            dirs.push(Path::new(&root).join("lib"));
        }
    }
    if let Some(v) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&v).filter(|d| !d.as_os_str().is_empty()));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    for dir in &dirs {
        for name in NAMES {
            let f = dir.join(name);
            if f.is_file() {
                if let Ok(n) = open(&f, true) {
                    return Ok(Ok(n));
                }
            }
        }
    }
    for name in NAMES {
        if let Ok(n) = open(Path::new(name), false) {
            return Ok(Ok(n));
        }
    }
    Ok(Err(format!(
        "no libnvrtc found ({NVRTC_VAR}, $CUDA_PATH and $CUDA_HOME lib64/lib, LD_LIBRARY_PATH, /usr/local/cuda/lib64, \
         the system loader)"
    )))
}

/// Opens the library at `path` (a file when `in_dir`, else a name for the system loader).
fn open(path: &Path, in_dir: bool) -> Result<Nvrtc, String> {
    let dir = path.parent().filter(|_| in_dir);
    let mut builtins = Vec::new();
    if let Some(dir) = dir {
        let mut names: Vec<PathBuf> =
            std::fs::read_dir(dir).map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
        names.retain(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libnvrtc-builtins.so")));
        names.sort();
        for b in names {
            // SAFETY: NVRTC's own builtins library; its initialisers are NVIDIA's and have no
            // preconditions. A failure only means NVRTC will look for it itself.
            if let Ok(l) = unsafe { Library::new(&b) } {
                builtins.push(l);
            }
        }
    }
    // SAFETY: loading libnvrtc runs its initialisers, which have no preconditions; every symbol
    // is looked up with its documented C signature below.
    let lib = unsafe { Library::new(path) }.map_err(|e| format!("cannot load it: {e}"))?;
    let loaded = Arc::new(Loaded { lib, _builtins: builtins });
    let (mut major, mut minor) = (0, 0);
    // SAFETY: `nvrtcVersion(int*, int*)`; both out-pointers are valid.
    let r = unsafe {
        sym::<unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int>(&loaded, b"nvrtcVersion\0")?(
            &mut major, &mut minor,
        )
    };
    if r != 0 {
        return Err(format!("nvrtcVersion failed ({r})"));
    }
    let include = dir
        .and_then(Path::parent)
        .map(|root| root.join("include"))
        .filter(|inc| inc.join("cuda_fp16.h").is_file())
        .map(|inc| {
            let cccl = inc.join("cccl");
            if cccl.is_dir() {
                vec![inc, cccl]
            } else {
                vec![inc]
            }
        })
        .unwrap_or_default();
    Ok(Nvrtc { path: path.to_path_buf(), version: (major, minor), include, lib: loaded })
}

/// Looks up `name` (NUL-terminated) as a function of type `F`.
///
/// # Safety
/// `F` must be the symbol's C signature.
unsafe fn sym<F: Copy>(l: &Loaded, name: &[u8]) -> Result<F, String> {
    // SAFETY: the caller gives the symbol's true type.
    unsafe { l.lib.get::<F>(name) }.map(|s| *s).map_err(|e| {
        format!("libnvrtc has no `{}`: {e}", String::from_utf8_lossy(&name[..name.len().saturating_sub(1)]))
    })
}

/// What one build-time NVRTC build produced.
#[derive(Debug, Clone)]
pub struct Output {
    /// `(sm_XX, cubin)` for every requested architecture, lowest first.
    pub cubins: Vec<(String, Vec<u8>)>,
    /// PTX of the lowest architecture.
    pub ptx: String,
    /// `compute_XX` of the lowest architecture (the PTX's target).
    pub ptx_target: String,
    /// Whether NVRTC did not run.
    pub from_cache: bool,
    /// Headers on disk the source reaches, for rebuild tracking.
    pub deps: Vec<PathBuf>,
    /// The lowered symbol of each name expression, in order.
    pub lowered: Vec<String>,
}

/// NVRTC's options for `arch`: the architecture, the toolkit headers, `-I` per include directory,
/// then the user's options as NVRTC spells them (`options::nvrtc_options`: nvcc's
/// `--expt-relaxed-constexpr` is `-default-device`, ...).
pub(crate) fn args(n: &Nvrtc, req: &Request<'_>, arch: &Arch) -> Vec<String> {
    let mut a = vec![format!("--gpu-architecture={}", arch.sm())];
    let mut toolkit = toolkit_include_dirs();
    for d in &n.include {
        if !toolkit.contains(d) {
            toolkit.push(d.clone());
        }
    }
    a.extend(toolkit.iter().map(|d| format!("--include-path={}", d.display())));
    a.extend(req.include_dirs.iter().map(|d| format!("-I{}", d.display())));
    a.extend(cuda_embed_source::options::nvrtc_options(req.options));
    a
}

/// The library's identity for cache keys: its resolved file, size and modification time, and
/// its version.
pub(crate) fn identity(n: &Nvrtc) -> String {
    let real = std::fs::canonicalize(&n.path).unwrap_or_else(|_| n.path.clone());
    let meta = std::fs::metadata(&real).ok();
    let size = meta.as_ref().map_or(0, |m| m.len());
    let mtime = meta
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    format!("{} {size} {mtime} {}", real.display(), n.release())
}

/// Compiles `req` for every architecture, or takes the result from the build cache, resolving
/// each of `exprs` (NVRTC name expressions, e.g. `&axpy<float>`) to its symbol. `Err` is NVRTC's
/// log (diagnostics name the `#line` file, i.e. the Rust file or the `.cu` file).
pub fn compile(n: &Nvrtc, exprs: &[String], req: &Request<'_>) -> Result<Output, String> {
    let mut archs = req.archs.to_vec();
    archs.sort();
    archs.dedup();
    let Some(lowest) = archs.first().cloned() else {
        return Err("no target architecture".into());
    };
    let mut key = Key::new(KEY_SCHEME);
    key.field("nvrtc", identity(n)).field("line", req.line_directive).field("source", req.source).list("exprs", exprs);
    for a in &archs {
        key.list("args", args(n, req, a));
    }
    // CUTLASS include directories by their version (their headers are not scanned: see
    // `options::cutlass_identity`); no field at all without one, so other keys stay as they were.
    let cutlass = options::cutlass_identity(&options::include_dirs(req.options));
    if !cutlass.is_empty() {
        key.list("cutlass", &cutlass);
    }
    let key = key.finish();
    let store = Store::new(cache::build_dir(), "bin");
    if let Some(out) = store.read(&key).and_then(|e| output(e, &archs, exprs.len())) {
        return Ok(out);
    }
    let text = format!("{}\n{}", req.line_directive, req.source);
    let mut cubins = Vec::new();
    let mut ptx = String::new();
    let mut lowered = Vec::new();
    for a in &archs {
        let first = *a == lowest;
        let (cubin, p, l) =
            run(n, &text, &args(n, req, a), if first { exprs } else { &[] }, Emit::Cubin).map_err(|log| {
                // NVRTC's summary line names the program; the diagnostics already name the `#line` file.
                let file = req.line_directive.split('"').nth(1).unwrap_or("the CUDA source");
                super::echo::restore(&log, req.source).replace("\"kernel.cu\"", &format!("\"{file}\""))
            })?;
        cubins.push((a.sm(), cubin));
        if first {
            ptx = p.unwrap_or_default();
            lowered = l;
        }
    }
    let deps = header_deps(req);
    let mut strings = vec![ptx];
    strings.extend(cubins.iter().map(|c| c.0.clone()));
    strings.extend(lowered);
    let entry = Entry { blobs: cubins.iter().map(|c| c.1.clone()).collect(), strings, deps };
    store.write_or_warn(&key, &entry); // an unwritable cache only costs time
    output(entry, &archs, exprs.len())
        .map(|o| Output { from_cache: false, ..o })
        .ok_or_else(|| "NVRTC produced an empty cubin".into())
}

/// The headers on disk a build of `req` reads, with their hashes, for its cache entry: those the
/// source includes and those its options include before it (`--pre-include`, `-include`),
/// searched next to the source, in its include directories and in those of its options.
pub(crate) fn header_deps(req: &Request<'_>) -> Vec<Dep> {
    let mut dirs = req.include_dirs.to_vec();
    dirs.extend(options::include_dirs(req.options));
    let pre = options::pre_includes(req.options);
    let scan = Scanner::new(&dirs).scan_unit(&pre, req.source, req.include_dirs.first().map(PathBuf::as_path));
    scan.headers.iter().filter_map(|h| h.path.clone()).filter_map(Dep::of_file).collect()
}

/// The output a cache entry holds: the PTX, one non-empty cubin per architecture, named as
/// expected, and `exprs` lowered names (else `None`).
fn output(entry: Entry, archs: &[Arch], exprs: usize) -> Option<Output> {
    let mut strings = entry.strings.into_iter();
    let ptx = strings.next()?;
    let names: Vec<String> = strings.by_ref().take(archs.len()).collect();
    let lowered: Vec<String> = strings.collect();
    if lowered.len() != exprs {
        return None;
    }
    let expected: Vec<String> = archs.iter().map(Arch::sm).collect();
    if names != expected || entry.blobs.len() != archs.len() || entry.blobs.iter().any(Vec::is_empty) {
        return None;
    }
    Some(Output {
        cubins: names.into_iter().zip(entry.blobs).collect(),
        ptx,
        ptx_target: archs.first()?.compute(),
        from_cache: true,
        deps: entry.deps.into_iter().map(|d| d.path).collect(),
        lowered,
    })
}

type Prog = *mut c_void;

/// What [`run`] reads back from a compiled program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Emit {
    /// The cubin and the PTX (with `-rdc=true`, relocatable code for a link).
    Cubin,
    /// LTO-IR (compiled with `-dlto`), which has no PTX.
    LtoIr,
}

/// The output of [`run`]: the binary (cubin or LTO-IR), the PTX (for [`Emit::Cubin`]) and the
/// lowered name of each name expression.
pub(crate) type Ran = (Vec<u8>, Option<String>, Vec<String>);

/// One NVRTC compile of `text` with `options`: the cubin (or LTO-IR), the PTX and the lowered
/// name of each of `exprs`.
pub(crate) fn run(n: &Nvrtc, text: &str, options: &[String], exprs: &[String], emit: Emit) -> Result<Ran, String> {
    type Create = unsafe extern "C" fn(
        *mut Prog,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int;
    type Compile = unsafe extern "C" fn(Prog, c_int, *const *const c_char) -> c_int;
    type Size = unsafe extern "C" fn(Prog, *mut usize) -> c_int;
    type Get = unsafe extern "C" fn(Prog, *mut c_char) -> c_int;
    type Destroy = unsafe extern "C" fn(*mut Prog) -> c_int;
    type AddName = unsafe extern "C" fn(Prog, *const c_char) -> c_int;
    type Lowered = unsafe extern "C" fn(Prog, *const c_char, *mut *const c_char) -> c_int;
    let l = &*n.lib;
    // SAFETY: each type is the function's documented C signature (nvrtc.h).
    let (create, compile, destroy) = unsafe {
        (
            sym::<Create>(l, b"nvrtcCreateProgram\0")?,
            sym::<Compile>(l, b"nvrtcCompileProgram\0")?,
            sym::<Destroy>(l, b"nvrtcDestroyProgram\0")?,
        )
    };
    // SAFETY: as above.
    let (add_name, get_lowered) =
        unsafe { (sym::<AddName>(l, b"nvrtcAddNameExpression\0")?, sym::<Lowered>(l, b"nvrtcGetLoweredName\0")?) };
    // SAFETY: as above.
    let (log_size, log, cubin_size, cubin, ptx_size, ptx) = unsafe {
        (
            sym::<Size>(l, b"nvrtcGetProgramLogSize\0")?,
            sym::<Get>(l, b"nvrtcGetProgramLog\0")?,
            sym::<Size>(l, b"nvrtcGetCUBINSize\0")?,
            sym::<Get>(l, b"nvrtcGetCUBIN\0")?,
            sym::<Size>(l, b"nvrtcGetPTXSize\0")?,
            sym::<Get>(l, b"nvrtcGetPTX\0")?,
        )
    };
    let lto_ir = match emit {
        Emit::Cubin => None,
        // SAFETY: as above.
        Emit::LtoIr => unsafe { Some((sym::<Size>(l, b"nvrtcGetLTOIRSize\0")?, sym::<Get>(l, b"nvrtcGetLTOIR\0")?)) },
    };
    // The device runtime's declarations nvcc would give the source (`cudaGraphSetConditional`).
    let prelude = cuda_embed_source::devrt::nvrtc_prelude(text);
    let src =
        CString::new(format!("{prelude}{text}")).map_err(|_| "the CUDA source contains a NUL byte".to_string())?;
    let opts: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()).map_err(|_| format!("option `{o}` contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let mut prog: Prog = std::ptr::null_mut();
    // SAFETY: valid C strings; no in-memory headers (NVRTC reads included files from the include
    // paths itself).
    let r = unsafe { create(&mut prog, src.as_ptr(), c"kernel.cu".as_ptr(), 0, std::ptr::null(), std::ptr::null()) };
    if r != 0 {
        return Err(format!("nvrtcCreateProgram failed ({r})"));
    }
    struct Guard(Prog, unsafe extern "C" fn(*mut Prog) -> c_int);
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: the program came from nvrtcCreateProgram and is destroyed once.
            unsafe { (self.1)(&mut self.0) };
        }
    }
    let prog = Guard(prog, destroy);
    // Reads a size-then-bytes result of the compiled program.
    let read = |size: Size, get: Get, what: &str| -> Result<Vec<u8>, String> {
        let mut len = 0usize;
        // SAFETY: a live program; a valid out-pointer.
        let r = unsafe { size(prog.0, &mut len) };
        if r != 0 {
            return Err(format!("NVRTC could not give its {what} ({r})"));
        }
        let mut buf = vec![0u8; len.max(1)];
        // SAFETY: `buf` has the size NVRTC reported.
        let r = unsafe { get(prog.0, buf.as_mut_ptr() as *mut c_char) };
        if r != 0 {
            return Err(format!("NVRTC could not give its {what} ({r})"));
        }
        buf.truncate(len);
        Ok(buf)
    };
    let names: Vec<CString> = exprs
        .iter()
        .map(|e| CString::new(e.as_str()).map_err(|_| format!("name expression `{e}` contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    for e in &names {
        // SAFETY: a live program; a valid C string (NVRTC copies it).
        let r = unsafe { add_name(prog.0, e.as_ptr()) };
        if r != 0 {
            return Err(format!("nvrtcAddNameExpression failed ({r})"));
        }
    }
    // SAFETY: a live program; `opt_ptrs` holds valid C strings that outlive the call.
    let r = unsafe { compile(prog.0, opt_ptrs.len() as c_int, opt_ptrs.as_ptr()) };
    if r != 0 {
        let text = read(log_size, log, "log").unwrap_or_default();
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        let log = String::from_utf8_lossy(&text[..end]).trim_end().to_string();
        return Err(if log.is_empty() { format!("nvrtcCompileProgram failed ({r})") } else { log });
    }
    let (bin, ptx) = match lto_ir {
        Some((size, get)) => (read(size, get, "LTO-IR")?, None),
        None => {
            let mut p = read(ptx_size, ptx, "PTX")?;
            while p.last() == Some(&0) {
                p.pop();
            }
            (read(cubin_size, cubin, "cubin")?, Some(String::from_utf8(p).map_err(|_| "NVRTC's PTX is not UTF-8")?))
        }
    };
    let mut lowered = Vec::with_capacity(names.len());
    for (e, text) in names.iter().zip(exprs) {
        let mut out: *const c_char = std::ptr::null();
        // SAFETY: a live, compiled program; the expression was added before compiling.
        let r = unsafe { get_lowered(prog.0, e.as_ptr(), &mut out) };
        if r != 0 || out.is_null() {
            return Err(format!("NVRTC could not resolve `{text}` ({r})"));
        }
        // SAFETY: a NUL-terminated string owned by the program, copied before it is destroyed.
        lowered.push(unsafe { std::ffi::CStr::from_ptr(out) }.to_string_lossy().into_owned());
    }
    Ok((bin, ptx, lowered))
}

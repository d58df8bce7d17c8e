//! NVRTC compilation with an on-disk cache: the path taken when no nvcc was found at build time,
//! and the compiler behind run-time [`Program`](crate::Program)s.
//!
//! Source is compiled for the device's own architecture straight to a cubin (SASS, no PTX JIT at
//! load). Both users go through one compilation unit and so share one cache: entries are
//! [`cuda_embed_source::cache`] entries under [`cache_dir`]`/nvrtc/`. An entry depends on the
//! program name, the options, the name expressions, the source and every in-memory header (the
//! unit's SHA-256 [digest](cuda_embed_source::key::nvrtc_unit_digest), which `cuda_kernel!`
//! computes at build time), and on what only the run time knows: the variables the search for
//! the NVRTC library reads (`LD_LIBRARY_PATH`, `CUDA_EMBED_TOOLKIT`, `CUDA_PATH`, `CUDA_HOME`),
//! the target architecture, and the bytes of every file on disk the source reaches through
//! `#include` (found by the [`cuda_embed_source::includes`] scanner in the include directories
//! named by the options and next to the including file). It is filed under the digest and a
//! [checksum](cuda_embed_source::cache::checksum) of the run-time inputs, and records those
//! inputs, which a hit must find equal: a cache hit of a `cuda_kernel!` module computes no
//! SHA-256. Files are written to a temporary name and renamed into place, so parallel processes
//! never see a torn entry; an unreadable or foreign entry is ignored and rewritten.
//!
//! # Which NVRTC compiled an entry
//!
//! Each entry records the NVRTC build that compiled it: the library file the search found
//! (without loading it, so a cache hit never pays the ~10 ms NVRTC load) with its size and
//! modification time, which change with any other build put there; or, where the search finds no
//! file, the version the loaded library reports. A hit checks the record: one `stat` of the
//! recorded file (none when this process already found or checked it), or for a version record
//! the full search and the library's version. A record that no longer holds is a miss: the
//! source is compiled again by the NVRTC found now and the entry rewritten.
//!
//! The key holds the search's inputs rather than its result, so a hit does not repeat the search
//! (a `stat` per directory and name tried, each tens of microseconds on some virtual machines).
//! What this no longer notices: with the variables unchanged and the recorded library file
//! untouched, *another* libnvrtc appearing earlier in the search order (in a directory of
//! `LD_LIBRARY_PATH` before the recorded one). The hit then returns the recorded NVRTC's cubin
//! where a compile would now use the other build. That cubin is still a correct compile of the
//! same source, options and headers for the same GPU by an NVRTC that is still installed, so the
//! program behaves as it did; a change of the variables, or of the recorded file, is noticed.
//! Machines that share a cache directory, have the same variables and different builds of NVRTC
//! at the same path overwrite each other's entries (each compiles again after the other ran);
//! give them separate `CUDA_EMBED_CACHE_DIR`s.

use crate::error::{Error, Result};
use cuda_embed_source::cache::{Entry, Store};
use cuda_embed_source::includes::{Scan, Scanner};
use cuda_embed_source::key::Key;
use cuda_embed_source::library_headers::missing_library_header;
use cuda_embed_source::options;
use cudarc::nvrtc::sys as nv;
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};

/// The key scheme of NVRTC modules and objects (see [`Unit::module_key`], [`Unit::key`]). v3:
/// the key holds the library search's inputs, and each entry records the NVRTC build (see the
/// module docs). v4: a module's entry is filed under the unit's digest and a checksum of the
/// inputs known at run time, which it records (no SHA-256 at run time on a cache hit).
const KEY_SCHEME: &str = "cuda-embed nvrtc module v4";

/// The name NVRTC gives the source of a `cuda_kernel!` compiled at run time.
const KERNEL_NAME: &str = cuda_embed_source::key::NVRTC_KERNEL_NAME;

/// The directory cuda-embed caches compiled code in: `CUDA_EMBED_CACHE_DIR` when set, else
/// `$XDG_CACHE_HOME/cuda-embed`, else `$HOME/.cache/cuda-embed`, else `cuda-embed` under the
/// system temporary directory ([`cuda_embed_source::cache::root`]).
///
/// ```
/// let dir = cuda_embed_runtime::nvrtc::cache_dir();
/// assert!(dir.ends_with("cuda-embed") || std::env::var_os("CUDA_EMBED_CACHE_DIR").is_some());
/// ```
pub fn cache_dir() -> PathBuf {
    cuda_embed_source::cache::root()
}

/// The result of compiling one program for one architecture.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The cubin (SASS for exactly the requested architecture).
    pub cubin: Vec<u8>,
    /// The symbol of each name expression, in the order they were given.
    pub symbols: Vec<String>,
    /// True when the cubin came from the on-disk cache and NVRTC did not run.
    pub from_cache: bool,
    /// The cache file used or written (None when caching was not possible).
    pub cache_file: Option<PathBuf>,
    /// The record of checks a `cuda_kernel!` load passed on this cubin in an earlier process
    /// (see [`record_checked`]), when the cache entry carries one.
    pub(crate) checked: Option<Vec<u8>>,
    /// The NVRTC build that compiled the cubin ([`compiler_identity`]), as its entry records it.
    pub(crate) compiler: String,
    /// The run-time inputs of the compile ([`ModuleKey::inputs`]), as its entry records them.
    pub(crate) inputs: Vec<u8>,
}

/// Adds `mark` (what a `cuda_kernel!` load checked the cubin against, and passed) to the cache
/// entry in `cache_file` that holds `compiled` (its cubin, symbols, compiler and inputs), so a
/// later process that reads the entry skips those checks without opening another file. A failed
/// write only costs the next process the checks.
pub(crate) fn record_checked(cache_file: &Path, compiled: Compiled, mark: Vec<u8>) {
    let (Some(dir), Some(key)) = (cache_file.parent(), cache_file.file_stem().and_then(|s| s.to_str())) else {
        return;
    };
    let Compiled { cubin, symbols, compiler, inputs, .. } = compiled;
    let entry = module_entry(cubin, symbols, &compiler, inputs, Some(mark));
    Store::new(dir, "cubin").write_or_warn(key, &entry);
}

/// The cache entry of a module: blobs `[cubin, run-time inputs, checks mark if any]`, strings
/// `[symbols..., compiler]`.
fn module_entry(
    cubin: Vec<u8>,
    mut symbols: Vec<String>,
    compiler: &str,
    inputs: Vec<u8>,
    mark: Option<Vec<u8>>,
) -> Entry {
    symbols.push(compiler.to_string());
    Entry { blobs: [cubin, inputs].into_iter().chain(mark).collect(), strings: symbols, deps: Vec::new() }
}

/// What a module's cache entry is filed under and must record (see [`Unit::module_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModuleKey {
    /// The entry's key: the unit's digest (SHA-256 hex, computed by `cuda_kernel!` at build
    /// time), `-`, then the [`checksum`](cuda_embed_source::cache::checksum) of `inputs` (16 hex
    /// digits).
    pub(crate) file: String,
    /// What else the cubin depends on, known only at run time, each part length-prefixed: the
    /// key scheme, the search variables set (`NAME=value`), the architecture, the headers
    /// reached on disk (path and SHA-256 of the bytes), the includes found nowhere and the
    /// include cycles. The entry records them, and a hit needs them equal: the checksum in the
    /// file name only files different inputs apart, it decides nothing.
    pub(crate) inputs: Vec<u8>,
}

/// Whether the NVRTC library can be loaded on this machine.
///
/// Always `true` when cudarc links NVRTC at build time (`dynamic-linking`): the process could not
/// have started without it.
pub fn is_available() -> bool {
    #[cfg(feature = "dynamic-loading")]
    {
        // SAFETY: only tries to dlopen the library; no NVRTC function is called.
        unsafe { nv::is_culib_present() }
    }
    #[cfg(not(feature = "dynamic-loading"))]
    {
        true
    }
}

/// The NVRTC version as (major, minor). Errors when the library is missing.
pub fn version() -> Result<(i32, i32), String> {
    if !is_available() {
        return Err(missing_nvrtc());
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; both out-pointers are valid.
    let r = unsafe { nv::nvrtcVersion(&mut major, &mut minor) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcVersion failed: {r:?}"));
    }
    Ok((major, minor))
}

fn missing_nvrtc() -> String {
    "the NVRTC library (libnvrtc.so.13) was not found: install the CUDA toolkit or the \
     `nvidia-cuda-nvrtc` wheel and add its lib directory to LD_LIBRARY_PATH, or build with nvcc \
     available so kernels are compiled at build time"
        .to_string()
}

/// The variables the search for libnvrtc reads ([`library_identity`]): `LD_LIBRARY_PATH`, then
/// [`options::TOOLKIT_ROOT_VARS`].
type SearchEnv = [Option<std::ffi::OsString>; 1 + options::TOOLKIT_ROOT_VARS.len()];

fn search_env() -> SearchEnv {
    let mut env = SearchEnv::default();
    env[0] = std::env::var_os("LD_LIBRARY_PATH");
    for (slot, var) in env[1..].iter_mut().zip(options::TOOLKIT_ROOT_VARS) {
        *slot = std::env::var_os(var);
    }
    env
}

/// Appends `parts` to `out` as one length-prefixed item (their joined length, then each).
fn put(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    out.extend_from_slice(&(len as u64).to_le_bytes());
    for part in parts {
        out.extend_from_slice(part);
    }
}

/// The identity of the library file at `path` with metadata `meta`: `"<path> <size> <mtime ns>"`.
fn file_identity(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    Some(format!("{} {} {}", path.display(), meta.len(), modified_ns(meta)?))
}

/// The modification time in `meta`, in nanoseconds since the Unix epoch.
fn modified_ns(meta: &std::fs::Metadata) -> Option<u128> {
    Some(meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos())
}

/// The file a [`file_identity`] names with the size and modification time it records, or `None`
/// for another kind of identity (`"nvrtc 13.0"`). The numbers are taken only in the form
/// `file_identity` writes them (decimal digits, no leading zero), so the file at the path matches
/// the record exactly when `file_identity` of it would write the record: a hit compares numbers
/// and formats nothing.
fn identity_file(identity: &str) -> Option<(&str, u64, u128)> {
    fn decimal(s: &str) -> Option<u128> {
        let canonical = !s.is_empty() && (s == "0" || !s.starts_with('0'));
        canonical.then_some(())?;
        s.bytes().try_fold(0u128, |n, b| {
            n.checked_mul(10)?.checked_add(u128::from(b.checked_sub(b'0').filter(|d| *d < 10)?))
        })
    }
    let (rest, mtime) = identity.rsplit_once(' ')?;
    let (path, len) = rest.rsplit_once(' ')?;
    let (len, mtime) = (u64::try_from(decimal(len)?).ok()?, decimal(mtime)?);
    (!path.is_empty()).then_some((path, len, mtime))
}

/// What this process knows of the NVRTC build for one value of the search variables.
struct Known {
    env: SearchEnv,
    identity: String,
    /// Found by the full search ([`compiler_identity`]), rather than checked as an entry's record.
    searched: bool,
}

/// The process-wide memo of [`compiler_identity`] and [`is_current`].
static KNOWN: std::sync::Mutex<Option<Known>> = std::sync::Mutex::new(None);

fn known() -> std::sync::MutexGuard<'static, Option<Known>> {
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `recorded`, the NVRTC build a cache entry was compiled by, is still the one to use
/// with the search variables `env` (see the module docs): the recorded library file unchanged
/// (one `stat`, none when this process already knows it), else (a version record, a changed
/// file, a path that does not survive the round trip through text) the full search finding the
/// same build. A miss needs that search anyway, for the compile.
fn is_current(recorded: &str, env: &SearchEnv) -> bool {
    if known().as_ref().is_some_and(|k| k.env == *env && k.identity == recorded) {
        return true;
    }
    let unchanged = identity_file(recorded).is_some_and(|(file, len, mtime)| {
        std::fs::metadata(file).is_ok_and(|m| m.len() == len && modified_ns(&m) == Some(mtime))
    });
    if !unchanged {
        return compiler_identity_for(env).is_ok_and(|id| id == recorded);
    }
    let mut known = known();
    // What the full search found for these variables is kept (it is what a compile uses).
    if !known.as_ref().is_some_and(|k| k.env == *env && k.searched) {
        *known = Some(Known { env: env.clone(), identity: recorded.to_string(), searched: false });
    }
    true
}

/// Where the dynamic loader will find libnvrtc, approximated without loading it: the
/// directories of `LD_LIBRARY_PATH`, then the toolkit roots (`CUDA_EMBED_TOOLKIT`, `CUDA_PATH`,
/// `CUDA_HOME`, `/usr/local/cuda`),
/// then the system library directories. Returns the path found with the size and modification
/// time of the library file it leads to.
///
/// The directories are tried in order and the search stops at the first library found: on a
/// usual setup (the library's directory first in `LD_LIBRARY_PATH`) that is one or two `stat`s.
fn library_identity(env: &SearchEnv) -> Option<String> {
    const SYSTEM: [&str; 5] =
        ["/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"];
    let ld = env[0].iter().flat_map(std::env::split_paths);
    let roots = env[1..].iter().flatten().filter(|r| !r.is_empty());
    let toolkit = roots.flat_map(|r| [Path::new(r).join("lib64"), Path::new(r).join("lib")]);
    let mut candidate = PathBuf::new();
    for dir in ld.chain(toolkit).chain(SYSTEM.into_iter().map(PathBuf::from)) {
        for name in ["libnvrtc.so", "libnvrtc.so.13"] {
            candidate.clear();
            candidate.push(&dir);
            candidate.push(name);
            // One `stat` per candidate, following the links to the library file itself: its size
            // and modification time change with any other build of NVRTC put there, so the
            // versioned file name (a `realpath` walk over every component, which costs more than
            // all the misses together) is not needed.
            if let Ok(meta) = std::fs::metadata(&candidate) {
                return file_identity(&candidate, &meta);
            }
        }
    }
    None
}

/// Identifies the NVRTC build for cache keys: by its library file when that can be found without
/// loading it (loading libnvrtc costs ~10 ms, which a cache hit must not pay), else by loading it
/// and asking its version.
///
/// The answer is kept for the process, with the variables the search reads: a process that
/// loads many modules looks for the library once (unless it changes those variables).
pub(crate) fn compiler_identity() -> Result<String, String> {
    compiler_identity_for(&search_env())
}

/// [`compiler_identity`] with the search variables `env`.
fn compiler_identity_for(env: &SearchEnv) -> Result<String, String> {
    if let Some(k) = known().as_ref().filter(|k| k.env == *env && k.searched) {
        return Ok(k.identity.clone());
    }
    let id = match library_identity(env) {
        Some(id) => id,
        None => {
            let (major, minor) = version()?;
            format!("nvrtc {major}.{minor}")
        }
    };
    *known() = Some(Known { env: env.clone(), identity: id.clone(), searched: true });
    Ok(id)
}

/// Compiles `source` for `sm_{arch}` with NVRTC, or takes the result from the disk cache.
///
/// `origin` names the source in errors (the `file:line` of a `cuda_kernel!`).
///
/// `headers` are (name as included, text) pairs embedded at build time; NVRTC resolves
/// `#include "name"` to them, and their text is part of the cache key.
pub fn compile(
    origin: &'static str,
    source: &str,
    options: &[&str],
    headers: &[(&str, &str)],
    name_expressions: &[&str],
    arch: u32,
) -> Result<Compiled> {
    compile_module(origin, source, source.len(), options, headers, name_expressions, None, arch)
}

/// [`compile`], with the unit's digest ([`cuda_embed_source::key::nvrtc_unit_digest`] of the
/// inputs) when `cuda_kernel!` computed it at build time, and the length of the module's own
/// text, `own_len`: the rest of `source` is the type check the macro appended (see `load.rs`),
/// which holds no includes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compile_module(
    origin: &'static str,
    source: &str,
    own_len: usize,
    options: &[&str],
    headers: &[(&str, &str)],
    name_expressions: &[&str],
    digest: Option<&str>,
    arch: u32,
) -> Result<Compiled> {
    let scanned = source.get(..own_len).filter(|s| s.len() < source.len());
    let unit = Unit { name: KERNEL_NAME, source, options, headers, name_expressions, digest, scanned };
    unit.compile(arch, &Store::new(cuda_embed_source::cache::nvrtc_dir(), "cubin")).map_err(|log| Error::Compile {
        origin: origin.to_string(),
        arch,
        cause: log,
    })
}

/// One NVRTC compilation: everything its cubin depends on besides the compiler and the target.
/// `cuda_kernel!`'s run-time path and [`Program`](crate::Program) both compile through it, so
/// they share one cache key scheme and one cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit<'a, S> {
    /// The program's name in diagnostics; its directory is where the source's quoted includes
    /// are looked for (the current directory when it has none).
    pub(crate) name: &'a str,
    pub(crate) source: &'a str,
    /// Options as written (include directories among them are scanned for headers).
    pub(crate) options: &'a [S],
    /// In-memory headers: (name as included, text).
    pub(crate) headers: &'a [(S, S)],
    pub(crate) name_expressions: &'a [S],
    /// [`cuda_embed_source::key::nvrtc_unit_digest`] of the fields above, when it was computed at
    /// build time (`None`: computed for the key).
    pub(crate) digest: Option<&'a str>,
    /// The start of `source` that can hold `#include`s, when not all of it: a `cuda_kernel!`
    /// source ends with its type check as `static_assert`s, which include nothing, and a cache
    /// hit need not read them (`None`: the whole source).
    pub(crate) scanned: Option<&'a str>,
}

impl<S: AsRef<str>> Unit<'_, S> {
    /// The headers the source reaches (see [`cuda_embed_source::includes`]).
    pub(crate) fn scan(&self) -> Scan {
        let text = self.scanned.unwrap_or(self.source);
        // Headers the options include before the source (`--pre-include`, `-include`) are read
        // like the source's own includes.
        let pre = options::pre_includes(self.options);
        // A source that includes nothing reaches no header, in memory or on disk (the usual case
        // of a cache hit): no scanner is set up for it.
        if pre.is_empty() && !cuda_embed_source::includes::may_include(text) {
            return Scan::default();
        }
        let dir = Path::new(self.name).parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Scanner::new(&options::include_dirs(self.options)).memory(self.headers).scan_unit(&pre, text, Some(dir))
    }

    /// The cache key for `sm_{arch}` of a relocatable object (a module's entry is filed by
    /// [`module_key`](Self::module_key)), given the unit's `scan`; `compiler` says which NVRTC
    /// compiles it (the build itself).
    ///
    /// Every input is a labelled field, so changing any of them changes the key: in-memory
    /// headers by name and text, files reached on disk by canonical path and bytes, includes that
    /// resolved nowhere by name (a header appearing there later changes the key).
    pub(crate) fn key<C: AsRef<[u8]>>(&self, compiler: &[C], arch: u32, scan: &Scan) -> String {
        let mut k = Key::new(KEY_SCHEME);
        k.list("compiler", compiler);
        self.finish_key(k, arch, scan)
    }

    /// The fields of the key after the compiler (see [`key`](Self::key)).
    fn finish_key(&self, mut k: Key, arch: u32, scan: &Scan) -> String {
        k.field("arch", arch.to_le_bytes()).field("unit", self.unit_digest().as_bytes());
        let files: Vec<_> = scan.headers.iter().filter_map(|h| Some((h.path.as_ref()?, h.sha256))).collect();
        k.list("files", files.iter().map(|(p, _)| p.to_string_lossy().into_owned()))
            .list("file hashes", files.iter().map(|(_, d)| *d))
            .list("not found", &scan.missing)
            .list("cycles", scan.cycles.iter().map(|c| c.chain.join("\0")));
        k.finish()
    }

    /// [`cuda_embed_source::key::nvrtc_unit_digest`] of the unit: the one `cuda_kernel!`
    /// embedded, else computed now.
    fn unit_digest(&self) -> std::borrow::Cow<'_, str> {
        match self.digest {
            Some(d) => d.into(),
            None => cuda_embed_source::key::nvrtc_unit_digest(
                self.name,
                self.source,
                self.options,
                self.headers,
                self.name_expressions,
            )
            .into(),
        }
    }

    /// What the unit's module entry for `sm_{arch}` with the search variables `env` is filed
    /// under and must record ([`ModuleKey`]).
    ///
    /// The entry of a `cuda_kernel!` module is found and checked without SHA-256 at run time:
    /// the unit's digest (everything fixed at build time: the source, options, headers, name
    /// expressions, program name) was computed by the macro, and what only the run time knows is
    /// compared byte for byte with the entry's record. (Headers on disk are hashed by the scan,
    /// when the source includes any.)
    fn module_key(&self, env: &SearchEnv, arch: u32, scan: &Scan) -> ModuleKey {
        let mut inputs = Vec::with_capacity(256);
        put(&mut inputs, &[KEY_SCHEME.as_bytes()]);
        let set = env.iter().flatten().count();
        put(&mut inputs, &[&(set as u64).to_le_bytes()]);
        for (name, value) in std::iter::once("LD_LIBRARY_PATH").chain(options::TOOLKIT_ROOT_VARS).zip(env) {
            if let Some(value) = value {
                put(&mut inputs, &[name.as_bytes(), b"=", value.as_encoded_bytes()]);
            }
        }
        put(&mut inputs, &[&arch.to_le_bytes()]);
        let files = || scan.headers.iter().filter_map(|h| Some((h.path.as_ref()?, &h.sha256)));
        put(&mut inputs, &[&(files().count() as u64).to_le_bytes()]);
        for (path, digest) in files() {
            put(&mut inputs, &[path.as_os_str().as_encoded_bytes()]);
            put(&mut inputs, &[digest]);
        }
        put(&mut inputs, &[&(scan.missing.len() as u64).to_le_bytes()]);
        for name in &scan.missing {
            put(&mut inputs, &[name.as_bytes()]);
        }
        put(&mut inputs, &[&(scan.cycles.len() as u64).to_le_bytes()]);
        for cycle in &scan.cycles {
            put(&mut inputs, &[&(cycle.chain.len() as u64).to_le_bytes()]);
            for name in &cycle.chain {
                put(&mut inputs, &[name.as_bytes()]);
            }
        }
        let sum = cuda_embed_source::cache::checksum(&inputs).to_be_bytes();
        let unit = self.unit_digest();
        let mut file = String::with_capacity(unit.len() + 1 + 16);
        file.push_str(&unit);
        file.push('-');
        file.push_str(&cuda_embed_source::key::hex(&sum));
        ModuleKey { file, inputs }
    }

    /// The key the unit's cubin for `sm_{arch}` is filed under in this process's environment
    /// ([`ModuleKey::file`]).
    pub(crate) fn cache_key(&self, arch: u32) -> String {
        self.module_key(&search_env(), arch, &self.scan()).file
    }

    /// Compiles for `sm_{arch}`, or takes the cubin from `store`. The error is NVRTC's log (with
    /// any include cycle through unguarded headers noted), or why NVRTC could not run.
    pub(crate) fn compile(&self, arch: u32, store: &Store) -> Result<Compiled, String> {
        let mut trace = crate::module::load::Trace::start("nvrtc unit");
        let env = search_env();
        let scan = self.scan();
        trace.lap("include scan");
        let ModuleKey { file: key, inputs } = self.module_key(&env, arch, &scan);
        let file = store.path(&key);
        trace.lap("key");
        let hit = store.read_file(&file, &key);
        trace.lap("cache read");
        if let Some(entry) = hit {
            // The cubin, the run-time inputs it was compiled with, and the record of passed load
            // checks when a load added one; the symbols, then the NVRTC build that compiled it.
            let mut blobs = entry.blobs.into_iter();
            let mut symbols = entry.strings;
            let compiler = symbols.pop();
            let (cubin, recorded, checked, extra) = (blobs.next(), blobs.next(), blobs.next(), blobs.next());
            if let (Some(cubin), Some(recorded), None, Some(compiler)) = (cubin, recorded, extra, compiler) {
                if !cubin.is_empty()
                    && recorded == inputs
                    && symbols.len() == self.name_expressions.len()
                    && is_current(&compiler, &env)
                {
                    trace.lap("compiler check");
                    return Ok(Compiled {
                        cubin,
                        symbols,
                        from_cache: true,
                        cache_file: Some(file),
                        checked,
                        compiler,
                        inputs,
                    });
                }
            }
        }
        let identity = compiler_identity_for(&env)?;
        let headers: Vec<(String, String)> =
            self.headers.iter().map(|(n, t)| (n.as_ref().to_string(), t.as_ref().to_string())).collect();
        let (cubin, symbols) = run_nvrtc(self.name, self.source, &headers, self.options, self.name_expressions, arch)
            .map_err(|log| {
            let cycles: Vec<String> = scan.cycles.iter().map(|c| format!("\nnote: {c}")).collect();
            format!("{log}{}", cycles.concat())
        })?;
        let entry = module_entry(cubin, symbols, &identity, inputs, None);
        // A cache that cannot be written is not an error: the program still runs, only slower next time.
        let cache_file = store.write_or_warn(&key, &entry);
        let Entry { blobs, mut strings, .. } = entry;
        strings.pop(); // the compiler
        let mut blobs = blobs.into_iter();
        Ok(Compiled {
            cubin: blobs.next().unwrap_or_default(),
            symbols: strings,
            from_cache: false,
            cache_file,
            checked: None,
            compiler: identity,
            inputs: blobs.next().unwrap_or_default(),
        })
    }
}

struct Program(nv::nvrtcProgram);
impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from nvrtcCreateProgram and is destroyed exactly once.
        unsafe { nv::nvrtcDestroyProgram(&mut self.0) };
    }
}

/// Runs NVRTC on `source` (named `name` in diagnostics and for relative `#include`s) with the
/// in-memory `headers` (`(include name, contents)`), returning the cubin and the lowered symbol of
/// each name expression. The error is NVRTC's log, or why NVRTC could not run.
pub(crate) fn run_nvrtc<S: AsRef<str>>(
    name: &str,
    source: &str,
    headers: &[(String, String)],
    options: &[S],
    name_expressions: &[S],
    arch: u32,
) -> Result<(Vec<u8>, Vec<String>), String> {
    run_nvrtc_to(name, source, headers, options, name_expressions, arch, crate::link::CodeKind::Cubin)
}

/// [`run_nvrtc`], returning the code `kind` asks for (PTX, cubin or LTO-IR; the options must
/// ask for LTO-IR with `-dlto` where `kind` is [`LtoIr`](crate::link::CodeKind::LtoIr)).
pub(crate) fn run_nvrtc_to<S: AsRef<str>>(
    name: &str,
    source: &str,
    headers: &[(String, String)],
    options: &[S],
    name_expressions: &[S],
    arch: u32,
    kind: crate::link::CodeKind,
) -> Result<(Vec<u8>, Vec<String>), String> {
    if !is_available() {
        return Err(missing_nvrtc());
    }
    // The device runtime's declarations nvcc would give the source (`cudaGraphSetConditional`).
    let prelude = cuda_embed_source::devrt::nvrtc_prelude(source);
    let src =
        CString::new(format!("{prelude}{source}")).map_err(|_| "the CUDA source contains a NUL byte".to_string())?;
    let name = CString::new(name).map_err(|_| "the program name contains a NUL byte".to_string())?;
    let header_names: Vec<CString> = headers
        .iter()
        .map(|(n, _)| CString::new(n.as_str()).map_err(|_| format!("header name `{n}` contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    let header_texts: Vec<CString> = headers
        .iter()
        .map(|(n, t)| CString::new(t.as_str()).map_err(|_| format!("header `{n}` contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    let name_ptrs: Vec<*const c_char> = header_names.iter().map(|h| h.as_ptr()).collect();
    let text_ptrs: Vec<*const c_char> = header_texts.iter().map(|h| h.as_ptr()).collect();
    let (text_arr, name_arr) = if headers.is_empty() {
        (std::ptr::null(), std::ptr::null())
    } else {
        (text_ptrs.as_ptr(), name_ptrs.as_ptr())
    };
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid C strings; the header arrays hold `headers.len()` valid C strings each (or are
    // null with a count of 0) and outlive the call, which copies them.
    let r = unsafe {
        nv::nvrtcCreateProgram(&mut prog, src.as_ptr(), name.as_ptr(), headers.len() as i32, text_arr, name_arr)
    };
    check(r, "nvrtcCreateProgram")?;
    let prog = Program(prog);
    let exprs: Vec<CString> = name_expressions
        .iter()
        .map(|n| {
            let n = n.as_ref();
            CString::new(n).map_err(|_| format!("name expression `{n}` contains a NUL byte"))
        })
        .collect::<Result<_, _>>()?;
    for e in &exprs {
        // SAFETY: live program, valid C string.
        check(unsafe { nv::nvrtcAddNameExpression(prog.0, e.as_ptr()) }, "nvrtcAddNameExpression")?;
    }
    let opts: Vec<CString> = options::nvrtc_args(arch, options)
        .into_iter()
        .map(|o| CString::new(o).map_err(|_| "an NVRTC option contains a NUL byte".to_string()))
        .collect::<Result<_, _>>()?;
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: live program; `opt_ptrs` holds `len` valid C strings that outlive the call.
    let r = unsafe { nv::nvrtcCompileProgram(prog.0, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        let log = program_log(&prog).unwrap_or_else(|| format!("nvrtcCompileProgram failed: {r:?}"));
        return Err(with_library_hint(log));
    }
    let cubin = crate::link::nvrtc_output(prog.0, kind)?;
    let mut symbols = Vec::with_capacity(exprs.len());
    for (e, text) in exprs.iter().zip(name_expressions) {
        let mut lowered: *const c_char = std::ptr::null();
        // SAFETY: live, compiled program; the expression was added before compiling.
        let r = unsafe { nv::nvrtcGetLoweredName(prog.0, e.as_ptr(), &mut lowered) };
        if r != nv::nvrtcResult::NVRTC_SUCCESS || lowered.is_null() {
            return Err(format!("NVRTC could not resolve the kernel name `{}` ({r:?})", text.as_ref()));
        }
        // SAFETY: NVRTC returns a NUL-terminated string owned by the program, copied here.
        symbols.push(unsafe { CStr::from_ptr(lowered) }.to_string_lossy().into_owned());
    }
    Ok((cubin, symbols))
}

fn program_log(prog: &Program) -> Option<String> {
    let mut size = 0usize;
    // SAFETY: live program; valid out-pointer.
    if unsafe { nv::nvrtcGetProgramLogSize(prog.0, &mut size) } != nv::nvrtcResult::NVRTC_SUCCESS {
        return None;
    }
    let mut buf = vec![0u8; size.max(1)];
    // SAFETY: `buf` has the size NVRTC reported.
    if unsafe { nv::nvrtcGetProgramLog(prog.0, buf.as_mut_ptr() as *mut c_char) } != nv::nvrtcResult::NVRTC_SUCCESS {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).trim_end().to_string())
}

pub(crate) fn check(r: nv::nvrtcResult, call: &str) -> Result<(), String> {
    if r == nv::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {r:?}"))
    }
}

/// NVRTC's `log` with a `help:` line appended when it reports a CUDA library's header (cuBLAS,
/// cuRAND, NVTX, ...) as missing. At run time NVRTC looks only in the toolkit include folder that
/// [`options::toolkit_include_dirs`] finds and in the program's own include options, and a machine
/// with just the driver and NVRTC has no library headers.
fn with_library_hint(log: String) -> String {
    let Some((header, library)) = missing_library_header(&log) else { return log };
    format!(
        "{log}\nhelp: `{header}` is a header of {library}, which NVRTC did not find on this machine: set \
         `CUDA_EMBED_TOOLKIT` (or `CUDA_PATH`) to a CUDA toolkit that has {library}'s headers, or pass the folder \
         holding them as an `--include-path=DIR` option; a `cuda_kernel!` module can instead be compiled when the \
         crate builds (`CUDA_EMBED_LIBRARY_HEADERS=1 scripts/with-cuda cargo build`), so nothing compiles at run time"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit<'a>(options: &'a [&'a str], headers: &'a [(&'a str, &'a str)], names: &'a [&'a str]) -> Unit<'a, &'a str> {
        Unit { name: "p.cu", source: "src", options, headers, name_expressions: names, digest: None, scanned: None }
    }

    fn key(u: &Unit<'_, &str>, compiler: &str, arch: u32) -> String {
        u.key(&[compiler], arch, &u.scan())
    }

    #[test]
    fn key_changes_with_every_input() {
        let v = "libnvrtc.so.13.0.88 1000 1";
        let base = unit(&["-O3"], &[("h.cuh", "x")], &["k"]);
        let k0 = key(&base, v, 90);
        assert_eq!(k0, key(&base, v, 90));
        let variants = [
            ("compiler", key(&base, "libnvrtc.so.13.1.20 1000 1", 90)),
            ("arch", key(&base, v, 80)),
            ("option", key(&unit(&["-O2"], &[("h.cuh", "x")], &["k"]), v, 90)),
            ("name expression", key(&unit(&["-O3"], &[("h.cuh", "x")], &["j"]), v, 90)),
            ("header name", key(&unit(&["-O3"], &[("g.cuh", "x")], &["k"]), v, 90)),
            ("header text", key(&unit(&["-O3"], &[("h.cuh", "y")], &["k"]), v, 90)),
            ("source", key(&Unit { source: "src2", ..base }, v, 90)),
            ("name", key(&Unit { name: "q.cu", ..base }, v, 90)),
        ];
        for (what, other) in &variants {
            assert_ne!(&k0, other, "changing the {what} must change the key");
        }
        // Option boundaries are part of the key.
        assert_ne!(key(&unit(&["a", "b"], &[], &[]), v, 90), key(&unit(&["ab"], &[], &[]), v, 90));
    }

    #[test]
    fn key_follows_headers_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(dir.path().join("top.cuh"), "#include \"sub/mid.cuh\"\n").unwrap();
        std::fs::write(sub.join("mid.cuh"), "#include \"leaf.cuh\"\n#include \"mem.cuh\"\n").unwrap();
        std::fs::write(sub.join("leaf.cuh"), "#define LEAF 1\n").unwrap();
        let inc = format!("--include-path={}", dir.path().display());
        let options = [inc.as_str()];
        let headers = [("mem.cuh", "#pragma once\n")];
        let u = Unit {
            name: "p.cu",
            source: "#include \"top.cuh\"\n#include <cuda_fp16.h>\n",
            options: &options[..],
            headers: &headers[..],
            name_expressions: &[],
            digest: None,
            scanned: None,
        };
        let scan = u.scan();
        let names: Vec<&str> = scan.headers.iter().map(|h| h.include.as_str()).collect();
        assert_eq!(names, ["top.cuh", "sub/mid.cuh", "leaf.cuh", "mem.cuh"]);
        assert_eq!(scan.missing, ["cuda_fp16.h"]);
        let k0 = key(&u, "c", 90);
        std::fs::write(sub.join("leaf.cuh"), "#define LEAF 2\n").unwrap();
        assert_ne!(k0, key(&u, "c", 90), "a header two levels down changed");
    }

    /// Headers that options include before the source (`--pre-include=H`, `-include H`) are in
    /// the key like the source's own includes: a change to one, or to a header it includes,
    /// changes the key and the module's cache file name, though the source names no header.
    #[test]
    fn key_follows_pre_included_headers() {
        let dir = tempfile::tempdir().unwrap();
        let pre = dir.path().join("pre.cuh");
        std::fs::write(&pre, "#include \"deep.cuh\"\n").unwrap();
        std::fs::write(dir.path().join("deep.cuh"), "#define SCALE 2.0f\n").unwrap();
        std::fs::write(dir.path().join("other.cuh"), "#define OTHER 1\n").unwrap();
        let long = format!("--pre-include={}", pre.display());
        let inc = format!("-I{}", dir.path().display());
        let spellings: [&[&str]; 3] =
            [&[long.as_str()], &[inc.as_str(), "-include", "other.cuh"], &[inc.as_str(), "-include=other.cuh"]];
        let source = "extern \"C\" __global__ void k(float* x) { x[0] *= SCALE; }\n";
        for options in spellings {
            let u = Unit { source, ..unit(options, &[], &["k"]) };
            let (k0, file0) = (key(&u, "c", 90), u.module_key(&SearchEnv::default(), 90, &u.scan()).file);
            let changed = if options.len() == 1 { dir.path().join("deep.cuh") } else { dir.path().join("other.cuh") };
            let before = std::fs::read(&changed).unwrap();
            std::fs::write(&changed, "#define SCALE 3.0f\n#define OTHER 2\n").unwrap();
            assert_ne!(k0, key(&u, "c", 90), "{options:?}: a pre-included header changed");
            assert_ne!(file0, u.module_key(&SearchEnv::default(), 90, &u.scan()).file, "{options:?}");
            std::fs::write(&changed, before).unwrap();
            assert_eq!(k0, key(&u, "c", 90), "{options:?}: the same bytes again");
        }
    }

    /// libnvrtc is looked for in `LD_LIBRARY_PATH`, then the toolkit roots, and identified by the
    /// file found: another build put there (another size) is another identity.
    #[test]
    fn the_library_is_found_in_search_order_and_identified_by_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let (ld, root) = (dir.path().join("ld"), dir.path().join("toolkit"));
        std::fs::create_dir_all(&ld).unwrap();
        std::fs::create_dir_all(root.join("lib64")).unwrap();
        std::fs::write(root.join("lib64/libnvrtc.so.13"), b"toolkit build").unwrap();
        let mut env = SearchEnv::default();
        env[0] = Some(ld.clone().into_os_string());
        env[1] = Some(std::ffi::OsString::new()); // an empty root is no root
        env[2] = Some(root.clone().into_os_string());
        let toolkit = library_identity(&env).unwrap();
        assert!(toolkit.starts_with(&format!("{} 13 ", root.join("lib64/libnvrtc.so.13").display())), "{toolkit}");
        std::fs::write(ld.join("libnvrtc.so"), b"ld").unwrap();
        let first = library_identity(&env).unwrap();
        assert!(first.starts_with(&format!("{} 2 ", ld.join("libnvrtc.so").display())), "{first}");
        std::fs::write(ld.join("libnvrtc.so"), b"another build").unwrap();
        assert_ne!(library_identity(&env).unwrap(), first, "another build in the same place");
    }

    /// The key names the NVRTC by the variables its search reads: another value (or a variable
    /// set empty rather than unset) is another key.
    #[test]
    fn the_key_follows_the_search_variables() {
        let u = unit(&[], &[], &["k"]);
        let scan = u.scan();
        let mut env = SearchEnv::default();
        let k0 = u.module_key(&env, 90, &scan);
        env[0] = Some("/opt/a".into());
        let k1 = u.module_key(&env, 90, &scan);
        env[0] = Some("/opt/b".into());
        let k2 = u.module_key(&env, 90, &scan);
        env[0] = None;
        env[3] = Some("/opt/a".into());
        let k3 = u.module_key(&env, 90, &scan);
        env[3] = Some("".into());
        let k4 = u.module_key(&env, 90, &scan);
        let keys = [&k0, &k1, &k2, &k3, &k4];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a.inputs, b.inputs);
                assert_ne!(a.file, b.file, "other inputs are filed apart");
            }
        }
        assert_eq!(k1, {
            env[3] = None;
            env[0] = Some("/opt/a".into());
            u.module_key(&env, 90, &scan)
        });
    }

    #[test]
    fn identities_of_files_are_told_from_versions() {
        assert_eq!(identity_file("/usr/lib/libnvrtc.so.13 1000 123"), Some(("/usr/lib/libnvrtc.so.13", 1000, 123)));
        assert_eq!(
            identity_file("/my libs/libnvrtc.so 1 2"),
            Some(("/my libs/libnvrtc.so", 1, 2)),
            "spaces in the path"
        );
        assert_eq!(identity_file("nvrtc 13.0"), None);
        assert_eq!(identity_file("a 13 x"), None);
        assert_eq!(identity_file(" 1 2"), None);
        // Only the form `file_identity` writes: another spelling of the same numbers is not it.
        assert_eq!(identity_file("/l 0 0"), Some(("/l", 0, 0)));
        for other in ["/l 01 2", "/l 1 02", "/l +1 2", "/l 1  2", "/l 1 2 ", "/l 18446744073709551616 2"] {
            assert_eq!(identity_file(other), None, "{other:?}");
        }
    }

    /// A record matches a file exactly when `file_identity` of the file writes the record.
    #[test]
    fn a_record_is_read_back_as_the_file_identity_wrote_it() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib nvrtc.so");
        std::fs::write(&lib, b"some build").unwrap();
        let meta = std::fs::metadata(&lib).unwrap();
        let record = file_identity(&lib, &meta).unwrap();
        let (path, len, mtime) = identity_file(&record).unwrap();
        assert_eq!((Path::new(path), len, Some(mtime)), (lib.as_path(), meta.len(), modified_ns(&meta)));
    }

    /// A module's entry is filed under the unit's digest and the checksum of its run-time
    /// inputs, which name the search variables set as `NAME=value` and the architecture.
    #[test]
    fn the_module_key_is_the_unit_digest_and_the_checksum_of_the_run_time_inputs() {
        let u = unit(&[], &[], &["k"]);
        let scan = u.scan();
        let mut env = SearchEnv::default();
        env[0] = Some("/opt/a:/opt/b".into());
        env[2] = Some("/usr/local/cuda".into());
        let key = u.module_key(&env, 90, &scan);
        let sum = cuda_embed_source::cache::checksum(&key.inputs).to_be_bytes();
        assert_eq!(key.file, format!("{}-{}", u.unit_digest(), cuda_embed_source::key::hex(&sum)));
        let has = |item: &[u8]| key.inputs.windows(item.len()).any(|w| w == item);
        assert_eq!(options::TOOLKIT_ROOT_VARS[1], "CUDA_PATH");
        assert!(
            has(b"LD_LIBRARY_PATH=/opt/a:/opt/b") && has(b"CUDA_PATH=/usr/local/cuda") && has(KEY_SCHEME.as_bytes())
        );
        let other_arch = u.module_key(&env, 80, &scan);
        assert!(other_arch.inputs != key.inputs && other_arch.file != key.file);
        let other_unit = Unit { source: "src2", ..u }.module_key(&env, 90, &scan);
        assert_eq!(other_unit.inputs, key.inputs, "the unit is in the file name, not the inputs");
        assert_ne!(other_unit.file, key.file);
        // The embedded digest is used as given: a hit hashes nothing of the source.
        let embedded = Unit { digest: Some("0123"), ..u }.module_key(&env, 90, &scan);
        assert!(embedded.file.starts_with("0123-"), "{}", embedded.file);
    }

    /// An entry whose recorded run-time inputs are not this process's (what a checksum
    /// collision in the file name would look like) is a miss.
    #[test]
    fn an_entry_recording_other_run_time_inputs_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path(), "cubin");
        let lib = dir.path().join("libnvrtc.so");
        std::fs::write(&lib, b"a build").unwrap();
        let mut env = SearchEnv::default();
        env[0] = Some(dir.path().as_os_str().to_owned());
        let recorded = library_identity(&env).unwrap();
        let u = Unit { source: "extern \"C\" __global__ void k() {}", ..unit(&[], &[], &["k"]) };
        let key = u.module_key(&search_env(), 80, &u.scan());
        let cubin = b"\x7fELF cubin".to_vec();
        let mut other = key.inputs.clone();
        other.push(0);
        store.write_atomic(&key.file, &module_entry(cubin.clone(), vec!["k".into()], &recorded, other, None)).unwrap();
        match u.compile(80, &store) {
            Ok(c) => assert!(!c.from_cache && c.cubin != cubin, "an entry of other inputs was used"),
            Err(log) => assert!(!is_available(), "NVRTC is here but the compile failed: {log}"),
        }
        store
            .write_atomic(&key.file, &module_entry(cubin.clone(), vec!["k".into()], &recorded, key.inputs, None))
            .unwrap();
        let hit = u.compile(80, &store).unwrap();
        assert!(hit.from_cache && hit.cubin == cubin, "the same inputs: a hit");
    }

    /// A source without the word `include` is not scanned at all; one with it is.
    #[test]
    fn a_source_that_includes_nothing_is_not_scanned() {
        let plain = unit(&["--include-path=/nonexistent"], &[("h.cuh", "x")], &[]);
        assert_eq!(plain.scan(), Scan::default());
        let including = Unit { source: "#include \"h.cuh\"\n#include \"gone.cuh\"\n", ..plain };
        let scan = including.scan();
        assert_eq!(scan.headers.len(), 1);
        assert_eq!(scan.missing, ["gone.cuh"]);
    }

    /// A recorded library file is current while it is unchanged (one `stat`); another build in
    /// its place (another size) is not, nor is a file that is gone, nor a version no search finds.
    #[test]
    fn a_recorded_library_is_current_while_its_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libnvrtc.so.13");
        std::fs::write(&lib, b"one build").unwrap();
        let mut env = SearchEnv::default();
        env[0] = Some(dir.path().as_os_str().to_owned());
        let recorded = library_identity(&env).unwrap();
        assert!(is_current(&recorded, &env));
        assert!(is_current(&recorded, &env), "again, from the process's memo");
        // Another environment does not trust the memo: it looks at the file.
        let mut other = env.clone();
        other[1] = Some("/nonexistent-toolkit".into());
        std::fs::write(&lib, b"another build").unwrap();
        assert!(!is_current(&recorded, &other), "another build in the recorded place");
        std::fs::remove_file(&lib).unwrap();
        assert!(!is_current(&recorded, &other), "the recorded file is gone");
        assert!(!is_current("nvrtc 0.1", &other), "no NVRTC here is version 0.1");
    }

    /// A hit returns the cubin only while the NVRTC build its entry records is current; once that
    /// library changes, the entry is a miss (compiled again, or an error without NVRTC).
    #[test]
    fn an_entry_of_another_nvrtc_build_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("nvrtc"), "cubin");
        let lib = dir.path().join("libnvrtc.so");
        std::fs::write(&lib, b"recorded build").unwrap();
        let mut env = SearchEnv::default();
        env[0] = Some(dir.path().as_os_str().to_owned());
        let recorded = library_identity(&env).unwrap();
        let u = Unit { source: "extern \"C\" __global__ void k() {}", ..unit(&[], &[], &["k"]) };
        let cubin = b"\x7fELF cubin".to_vec();
        let key = u.module_key(&search_env(), 80, &u.scan());
        store
            .write_atomic(&key.file, &module_entry(cubin.clone(), vec!["k".into()], &recorded, key.inputs, None))
            .unwrap();
        let hit = u.compile(80, &store).unwrap();
        assert!(hit.from_cache && hit.cubin == cubin && hit.symbols == ["k"] && hit.compiler == recorded);
        std::fs::write(&lib, b"an upgraded build").unwrap();
        // A process checks a library once, as it searches once: forget it, as a new process would.
        *known() = None;
        match u.compile(80, &store) {
            Ok(c) => assert!(!c.from_cache && c.cubin != cubin, "the entry of the old build was used"),
            Err(log) => assert!(!is_available(), "NVRTC is here but the compile failed: {log}"),
        }
    }

    /// The include scan reads `scanned` when given (the part of a `cuda_kernel!` source before
    /// its appended type check), the whole source otherwise.
    #[test]
    fn the_scan_reads_the_scanned_part_only() {
        let source = "#include \"a.cuh\"\n#ifndef X\n#include \"b.cuh\"\n#endif\n";
        let whole = Unit { source, ..unit(&[], &[], &[]) };
        assert_eq!(whole.scan().missing, ["a.cuh", "b.cuh"]);
        let part = Unit { scanned: Some(&source[..source.find("#ifndef").unwrap()]), ..whole };
        assert_eq!(part.scan().missing, ["a.cuh"]);
    }

    #[test]
    fn a_foreign_entry_is_a_miss() {
        // Without NVRTC the compile fails after the cache lookup; with it, a garbage entry is
        // recompiled. Either way it is never returned as a cubin.
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path(), "cubin");
        let u = Unit { source: "extern \"C\" __global__ void k() {}", ..unit(&[], &[], &["k"]) };
        let k = u.module_key(&search_env(), 80, &u.scan()).file;
        store.write_atomic(&k, &Entry { blobs: vec![b"\x7fELF".to_vec()], strings: vec![], deps: vec![] }).unwrap();
        match u.compile(80, &store) {
            Ok(c) => assert!(!c.from_cache, "an entry with the wrong symbol count is not a hit"),
            // Only the compile after the lookup can fail, and only for want of NVRTC.
            Err(log) => assert!(!is_available(), "NVRTC is here but the compile failed: {log}"),
        }
    }

    #[test]
    fn a_missing_library_header_gets_run_time_advice() {
        let log = "k.cu(1): catastrophic error: cannot open source file \"cublas_v2.h\"".to_string();
        let out = with_library_hint(log.clone());
        assert!(out.starts_with(&log), "{out}");
        assert!(out.contains("help: `cublas_v2.h` is a header of cuBLAS"), "{out}");
        assert!(out.contains("CUDA_EMBED_TOOLKIT") && out.contains("--include-path="), "{out}");
        let own = "k.cu(1): catastrophic error: cannot open source file \"mine.cuh\"".to_string();
        assert_eq!(with_library_hint(own.clone()), own, "a user's own header gets no library advice");
    }

    /// A kernel that sets a graph condition compiles with NVRTC as with nvcc: NVRTC's built-in
    /// headers do not declare `cudaGraphSetConditional` (the GPU run of the conditional-node
    /// tests failed with `identifier "cudaGraphSetConditional" is undefined`), the prelude does;
    /// a source that declares it as `cuda_device_runtime_api.h` does still compiles; and an error
    /// keeps the line number of the source as written (the prelude ends with `#line 1`).
    #[test]
    fn nvrtc_compiles_a_kernel_that_sets_a_graph_condition() {
        let kernel = "extern \"C\" __global__ void step(int* c, cudaGraphConditionalHandle h) {\n\
                      \x20   cudaGraphSetConditional(h, --*c > 0 ? 1u : 0u);\n}\n";
        let declared = format!(
            "extern \"C\" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle, \
             unsigned int);\n{kernel}"
        );
        let broken = format!("{kernel}\n\nint x = y;\n");
        for (source, what) in [(kernel.to_string(), "plain"), (declared, "declared"), (broken, "broken")] {
            match run_nvrtc::<&str>("cond.cu", &source, &[], &[], &[], 90) {
                Ok((cubin, _)) => assert!(what != "broken" && cubin.starts_with(b"\x7fELF"), "{what}"),
                Err(log) if !is_available() => assert!(log.contains("NVRTC"), "without NVRTC the error says so: {log}"),
                Err(log) => {
                    assert_eq!(what, "broken", "{what}: {log}");
                    assert!(log.contains("cond.cu(6)") && log.contains("\"y\""), "the error's line: {log}");
                }
            }
        }
    }

    /// NVRTC's own log for a library header it cannot open carries the advice. The name is one
    /// no library ships (with cuRAND's prefix), so the test holds on a machine that has the
    /// library headers installed as well.
    #[test]
    fn nvrtc_reports_a_missing_library_header_with_advice() {
        let source = "#include <curand_no_such_header_for_this_test.h>\nextern \"C\" __global__ void k() {}";
        match run_nvrtc::<&str>("hint.cu", source, &[], &[], &[], 80) {
            Ok(_) => panic!("a missing header compiled"),
            Err(log) if is_available() => {
                assert!(log.contains("curand_no_such_header_for_this_test.h"), "{log}");
                assert!(log.contains("is a header of cuRAND, which NVRTC did not find"), "{log}");
            }
            Err(log) => assert!(log.contains("NVRTC"), "without NVRTC the error says so: {log}"),
        }
    }
}

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

mod identity; // which NVRTC compiled an entry
mod run; // the NVRTC calls
pub(crate) use identity::compiler_identity;
use identity::*;
pub use run::CodeKind;
pub(crate) use run::{run_nvrtc, run_nvrtc_to};

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

#[cfg(test)]
mod tests;

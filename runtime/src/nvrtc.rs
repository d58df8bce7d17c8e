//! NVRTC compilation with an on-disk cache: the path taken when no nvcc was found at build time,
//! and the compiler behind run-time [`Program`](crate::Program)s.
//!
//! Source is compiled for the device's own architecture straight to a cubin (SASS, no PTX JIT at
//! load). Results are cached content-addressed under [`cache_dir`]`/nvrtc/`: the key is a SHA-256
//! of the NVRTC build (its library file's resolved name, which carries the full version, size and
//! modification time — found without loading the library, so a cache hit never pays the ~10 ms
//! NVRTC load), the target architecture, the options, the name expressions and the source text. Files are written to a temporary name and renamed into place, so parallel processes never
//! see a torn entry; an unreadable or foreign entry is ignored and rewritten.

use crate::error::{Error, Result};
use cudarc::nvrtc::sys as nv;
use sha2::{Digest, Sha256};
use std::ffi::{c_char, CStr, CString};
use std::path::{Path, PathBuf};

const MAGIC: &str = "cuda-embed nvrtc cubin v1";

/// The directory cuda-embed caches compiled code in.
///
/// `CUDA_EMBED_CACHE_DIR` when set, else `$XDG_CACHE_HOME/cuda-embed`, else
/// `$HOME/.cache/cuda-embed`, else `cuda-embed` under the system temporary directory.
///
/// ```
/// let dir = cuda_embed_runtime::nvrtc::cache_dir();
/// assert!(dir.ends_with("cuda-embed") || std::env::var_os("CUDA_EMBED_CACHE_DIR").is_some());
/// ```
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CUDA_EMBED_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("cuda-embed");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(h).join(".cache").join("cuda-embed");
    }
    std::env::temp_dir().join("cuda-embed")
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
}

/// Whether the NVRTC library can be loaded on this machine.
pub fn is_available() -> bool {
    // SAFETY: only tries to dlopen the library; no NVRTC function is called.
    unsafe { nv::is_culib_present() }
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

/// Where the dynamic loader will find libnvrtc, approximated without loading it: the
/// directories of `LD_LIBRARY_PATH`, then the toolkit (`CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda`),
/// then the system library directories. Returns the resolved file name (which carries the full
/// version, e.g. `libnvrtc.so.13.0.88`) with its size and modification time.
fn library_identity() -> Option<String> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("LD_LIBRARY_PATH").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = std::env::var_os(var).filter(|s| !s.is_empty()) {
            dirs.push(PathBuf::from(&root).join("lib64"));
            dirs.push(PathBuf::from(root).join("lib"));
        }
    }
    for d in ["/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"] {
        dirs.push(PathBuf::from(d));
    }
    for dir in dirs {
        for name in ["libnvrtc.so", "libnvrtc.so.13"] {
            let candidate = dir.join(name);
            if let Ok(real) = std::fs::canonicalize(&candidate) {
                let meta = std::fs::metadata(&real).ok()?;
                let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
                let file = real.file_name()?.to_string_lossy().into_owned();
                return Some(format!("{file} {} {mtime}", meta.len()));
            }
        }
    }
    None
}

/// Identifies the NVRTC build for cache keys: by its library file when that can be found without
/// loading it (loading libnvrtc costs ~10 ms, which a cache hit must not pay), else by loading it
/// and asking its version.
pub(crate) fn compiler_identity() -> Result<String, String> {
    match library_identity() {
        Some(id) => Ok(id),
        None => {
            let (major, minor) = version()?;
            Ok(format!("nvrtc {major}.{minor}"))
        }
    }
}

/// The cache key of a compilation, as a hex string. `compiler` identifies the NVRTC build.
pub fn cache_key(compiler: &str, arch: u32, options: &[&str], name_expressions: &[&str], source: &str) -> String {
    let mut h = Sha256::new();
    h.update(MAGIC.as_bytes());
    h.update(format!("\0{compiler}\0sm_{arch}\0").as_bytes());
    for o in options {
        h.update(o.as_bytes());
        h.update(b"\0");
    }
    h.update(b"\x01");
    for n in name_expressions {
        h.update(n.as_bytes());
        h.update(b"\0");
    }
    h.update(b"\x01");
    h.update(source.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
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
    let fail = |log: String| Error::Nvrtc { origin, arch, log };
    let identity = compiler_identity().map_err(fail)?;
    // Headers join the key as source text: (name, text) pairs after the source.
    let mut keyed = source.to_string();
    for (name, text) in headers {
        keyed.push_str(&format!("\0header {name}\0{}\0{text}", text.len()));
    }
    let key = cache_key(&identity, arch, options, name_expressions, &keyed);
    let dir = cache_dir().join("nvrtc");
    let file = dir.join(format!("{key}.cubin"));
    if let Some((cubin, symbols)) = read_entry(&file, name_expressions.len()) {
        return Ok(Compiled { cubin, symbols, from_cache: true, cache_file: Some(file) });
    }
    let headers: Vec<(String, String)> = headers.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    let (cubin, symbols) =
        run_nvrtc("cuda_embed_kernel.cu", source, &headers, options, name_expressions, arch).map_err(fail)?;
    // A cache that cannot be written is not an error: the program still runs, only slower next time.
    let cache_file = write_entry(&dir, &file, &cubin, &symbols).ok().map(|_| file);
    Ok(Compiled { cubin, symbols, from_cache: false, cache_file })
}

pub(crate) fn read_entry(file: &Path, n: usize) -> Option<(Vec<u8>, Vec<String>)> {
    let bytes = std::fs::read(file).ok()?;
    let mut rest = bytes.as_slice();
    let mut line = || {
        let at = rest.iter().position(|&b| b == b'\n')?;
        let l = std::str::from_utf8(&rest[..at]).ok()?.to_string();
        rest = &rest[at + 1..];
        Some(l)
    };
    if line()? != MAGIC {
        return None;
    }
    let count: usize = line()?.parse().ok()?;
    if count != n {
        return None;
    }
    let symbols = (0..count).map(|_| line()).collect::<Option<Vec<_>>>()?;
    let len: usize = line()?.parse().ok()?;
    (rest.len() == len && len > 0).then(|| (rest.to_vec(), symbols))
}

pub(crate) fn write_entry(dir: &Path, file: &Path, cubin: &[u8], symbols: &[String]) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    writeln!(tmp, "{MAGIC}\n{}", symbols.len())?;
    for s in symbols {
        writeln!(tmp, "{s}")?;
    }
    writeln!(tmp, "{}", cubin.len())?;
    tmp.write_all(cubin)?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// Include directories NVRTC needs for headers that are not built in (e.g. `cuda_fp16.h` pulls in
/// `nv/target` from CCCL): the toolkit named by `CUDA_PATH`/`CUDA_HOME`, then `/usr/local/cuda`.
fn toolkit_include_options() -> Vec<String> {
    let mut roots: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(|v| std::env::var_os(v).filter(|s| !s.is_empty()).map(PathBuf::from))
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    for root in roots {
        let inc = root.join("include");
        if inc.join("cuda_fp16.h").is_file() {
            let mut v = vec![format!("--include-path={}", inc.display())];
            let cccl = inc.join("cccl");
            if cccl.is_dir() {
                v.push(format!("--include-path={}", cccl.display()));
            }
            return v;
        }
    }
    Vec::new()
}

/// One file a program may include, for its cache key: a disk file's canonical path and the
/// SHA-256 of its bytes, or an include that names no file cuda-embed can find (`digest: None`;
/// toolkit headers such as `<cuda_fp16.h>` land here, covered by the compiler identity).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dependency {
    pub(crate) label: String,
    pub(crate) digest: Option<[u8; 32]>,
}

/// More files than any real program includes: a guard against pathological include graphs.
const MAX_INCLUDED_FILES: usize = 4096;

/// Every file `source` may `#include`, transitively, found the way NVRTC looks for them: in-memory
/// `headers` by their exact name, then on disk — for `"quoted"` includes relative to the
/// including file (for the program itself: the directory of `program_name`, then the current
/// directory), then in `include_dirs`. Every `#include` line counts, even one disabled by `#if`:
/// the key may change more often than needed, never less. Each file is scanned once, so include
/// cycles terminate with or without `#pragma once`. Toolkit include directories are not scanned
/// (the compiler identity covers them).
pub(crate) fn include_closure(
    program_name: &str,
    source: &str,
    headers: &[(String, String)],
    include_dirs: &[PathBuf],
) -> Vec<Dependency> {
    use std::collections::HashSet;
    let dirs: Vec<&PathBuf> = include_dirs.iter().filter(|d| !is_toolkit_include_dir(d)).collect();
    let cwd = PathBuf::from(".");
    let mut main_bases = Vec::new();
    if let Some(parent) = Path::new(program_name).parent().filter(|p| !p.as_os_str().is_empty()) {
        main_bases.push(parent.to_path_buf());
    }
    main_bases.push(cwd.clone());

    let mut out = Vec::new();
    let mut seen_memory: HashSet<usize> = HashSet::new();
    let mut seen_disk: HashSet<PathBuf> = HashSet::new();
    let mut seen_missing: HashSet<String> = HashSet::new();
    // (text to scan, directories its quoted includes are relative to)
    let mut work: Vec<(std::borrow::Cow<'_, str>, Vec<PathBuf>)> = vec![(source.into(), main_bases)];
    let mut scanned = 0usize;
    while let Some((text, bases)) = work.pop() {
        scanned += 1;
        if scanned > MAX_INCLUDED_FILES {
            out.push(Dependency { label: "too many included files".into(), digest: None });
            break;
        }
        for (quoted, name) in include_directives(&text) {
            let mut found = false;
            if let Some(i) = headers.iter().position(|(n, _)| n == name) {
                found = true;
                if seen_memory.insert(i) {
                    work.push((headers[i].1.as_str().into(), vec![cwd.clone()]));
                }
            }
            let relative = if quoted { bases.as_slice() } else { &[] };
            let on_disk = relative
                .iter()
                .chain(dirs.iter().copied())
                .map(|d| d.join(name))
                .find(|p| p.is_file())
                .and_then(|p| std::fs::canonicalize(p).ok());
            if let Some(path) = on_disk {
                found = true;
                if seen_disk.insert(path.clone()) {
                    let bytes = std::fs::read(&path).unwrap_or_default();
                    out.push(Dependency {
                        label: path.display().to_string(),
                        digest: Some(Sha256::digest(&bytes).into()),
                    });
                    let base = path.parent().map(Path::to_path_buf).unwrap_or_else(|| cwd.clone());
                    work.push((String::from_utf8_lossy(&bytes).into_owned().into(), vec![base]));
                }
            }
            if !found && seen_missing.insert(name.to_string()) {
                out.push(Dependency { label: format!("not found: {name}"), digest: None });
            }
        }
    }
    out
}

/// The `#include "name"` (quoted: true) and `#include <name>` lines of `text`.
fn include_directives(text: &str) -> impl Iterator<Item = (bool, &str)> {
    text.lines().filter_map(|line| {
        let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?;
        let rest = rest.strip_prefix("_next").unwrap_or(rest).trim_start();
        let (quoted, close) = match rest.chars().next()? {
            '"' => (true, '"'),
            '<' => (false, '>'),
            _ => return None,
        };
        let name = &rest[1..];
        Some((quoted, &name[..name.find(close)?]))
    })
}

/// A CUDA toolkit (or CCCL) include directory: its headers are versioned with the compiler.
fn is_toolkit_include_dir(dir: &Path) -> bool {
    ["cuda_runtime_api.h", "cuda_fp16.h", "nv/target"].iter().any(|f| dir.join(f).is_file())
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
    if !is_available() {
        return Err(missing_nvrtc());
    }
    let src = CString::new(source).map_err(|_| "the CUDA source contains a NUL byte".to_string())?;
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
    let mut opts: Vec<String> = vec![format!("--gpu-architecture=sm_{arch}")];
    opts.extend(toolkit_include_options());
    opts.extend(options.iter().map(|s| s.as_ref().to_string()));
    let opts: Vec<CString> = opts
        .into_iter()
        .map(|o| CString::new(o).map_err(|_| "an NVRTC option contains a NUL byte".to_string()))
        .collect::<Result<_, _>>()?;
    let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: live program; `opt_ptrs` holds `len` valid C strings that outlive the call.
    let r = unsafe { nv::nvrtcCompileProgram(prog.0, opt_ptrs.len() as i32, opt_ptrs.as_ptr()) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(program_log(&prog).unwrap_or_else(|| format!("nvrtcCompileProgram failed: {r:?}")));
    }
    let mut size = 0usize;
    // SAFETY: live, compiled program; valid out-pointer.
    check(unsafe { nv::nvrtcGetCUBINSize(prog.0, &mut size) }, "nvrtcGetCUBINSize")?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has the size NVRTC reported.
    check(unsafe { nv::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr() as *mut c_char) }, "nvrtcGetCUBIN")?;
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

fn check(r: nv::nvrtcResult, call: &str) -> Result<(), String> {
    if r == nv::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed: {r:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_changes_with_every_input() {
        let v = "libnvrtc.so.13.0.88 1000 1";
        let base = cache_key(v, 90, &["-O3"], &["k"], "src");
        assert_ne!(base, cache_key("libnvrtc.so.13.1.20 1000 1", 90, &["-O3"], &["k"], "src"));
        assert_ne!(base, cache_key(v, 80, &["-O3"], &["k"], "src"));
        assert_ne!(base, cache_key(v, 90, &["-O2"], &["k"], "src"));
        assert_ne!(base, cache_key(v, 90, &["-O3"], &["j"], "src"));
        assert_ne!(base, cache_key(v, 90, &["-O3"], &["k"], "src2"));
        // Option/name boundaries are part of the key.
        assert_ne!(cache_key(v, 90, &["a", "b"], &[], ""), cache_key(v, 90, &["ab"], &[], ""));
    }

    #[test]
    fn include_directives_are_read_like_the_preprocessor() {
        let text = "#include \"a.cuh\"\n  #  include <b/c.h>\n#include_next \"d.h\"\n// #include \"no.h\"\n#define X\n#include MACRO\n";
        let found: Vec<_> = include_directives(text).collect();
        assert_eq!(found, [(true, "a.cuh"), (false, "b/c.h"), (true, "d.h")]);
    }

    #[test]
    fn include_closure_follows_relative_includes_and_stops_on_cycles() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(dir.path().join("top.cuh"), "#include \"sub/mid.cuh\"\n").unwrap();
        std::fs::write(sub.join("mid.cuh"), "#include \"leaf.cuh\"\n#include \"../top.cuh\"\n").unwrap();
        std::fs::write(sub.join("leaf.cuh"), "#include \"mem.cuh\"\n#include <cuda_fp16.h>\n").unwrap();
        let headers = [("mem.cuh".to_string(), "#include \"mem.cuh\"\n".to_string())];
        let deps = include_closure("p.cu", "#include \"top.cuh\"\n", &headers, &[dir.path().to_path_buf()]);
        let labels: Vec<&str> = deps.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels.len(), 4, "{labels:?}");
        assert!(labels[0].ends_with("top.cuh") && labels[1].ends_with("mid.cuh") && labels[2].ends_with("leaf.cuh"));
        assert_eq!(labels[3], "not found: cuda_fp16.h");
        assert!(deps[..3].iter().all(|d| d.digest.is_some()));
    }

    #[test]
    fn entry_round_trip_and_rejects_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.cubin");
        write_entry(dir.path(), &file, b"\x7fELFdata\n", &["_Z1kv".into(), "saxpy".into()]).unwrap();
        let (cubin, syms) = read_entry(&file, 2).unwrap();
        assert_eq!(cubin, b"\x7fELFdata\n");
        assert_eq!(syms, ["_Z1kv", "saxpy"]);
        assert!(read_entry(&file, 1).is_none(), "symbol count mismatch must miss");
        std::fs::write(&file, b"garbage").unwrap();
        assert!(read_entry(&file, 2).is_none());
    }
}

//! NVRTC compilation with an on-disk cache: the path taken when no nvcc was found at build time.
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
pub fn compile(
    origin: &'static str,
    source: &str,
    options: &[&str],
    name_expressions: &[&str],
    arch: u32,
) -> Result<Compiled> {
    let fail = |log: String| Error::Nvrtc { origin, arch, log };
    // Identify the compiler by its library file when it can be found without loading it: loading
    // libnvrtc costs ~10 ms, which a cache hit must not pay. Otherwise load it and ask.
    let identity = match library_identity() {
        Some(id) => id,
        None => {
            let (major, minor) = version().map_err(fail)?;
            format!("nvrtc {major}.{minor}")
        }
    };
    let key = cache_key(&identity, arch, options, name_expressions, source);
    let dir = cache_dir().join("nvrtc");
    let file = dir.join(format!("{key}.cubin"));
    if let Some((cubin, symbols)) = read_entry(&file, name_expressions.len()) {
        return Ok(Compiled { cubin, symbols, from_cache: true, cache_file: Some(file) });
    }
    let (cubin, symbols) = run_nvrtc(source, options, name_expressions, arch).map_err(fail)?;
    // A cache that cannot be written is not an error: the program still runs, only slower next time.
    let cache_file = write_entry(&dir, &file, &cubin, &symbols).ok().map(|_| file);
    Ok(Compiled { cubin, symbols, from_cache: false, cache_file })
}

fn read_entry(file: &Path, n: usize) -> Option<(Vec<u8>, Vec<String>)> {
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

fn write_entry(dir: &Path, file: &Path, cubin: &[u8], symbols: &[String]) -> std::io::Result<()> {
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

struct Program(nv::nvrtcProgram);
impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from nvrtcCreateProgram and is destroyed exactly once.
        unsafe { nv::nvrtcDestroyProgram(&mut self.0) };
    }
}

fn run_nvrtc(
    source: &str,
    options: &[&str],
    name_expressions: &[&str],
    arch: u32,
) -> Result<(Vec<u8>, Vec<String>), String> {
    let src = CString::new(source).map_err(|_| "the CUDA source contains a NUL byte".to_string())?;
    let name = c"cuda_embed_kernel.cu";
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: valid C strings; no headers are passed (count 0, null arrays).
    let r = unsafe {
        nv::nvrtcCreateProgram(&mut prog, src.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null())
    };
    check(r, "nvrtcCreateProgram")?;
    let prog = Program(prog);
    let exprs: Vec<CString> = name_expressions
        .iter()
        .map(|n| CString::new(*n).map_err(|_| format!("name expression `{n}` contains a NUL byte")))
        .collect::<Result<_, _>>()?;
    for e in &exprs {
        // SAFETY: live program, valid C string.
        check(unsafe { nv::nvrtcAddNameExpression(prog.0, e.as_ptr()) }, "nvrtcAddNameExpression")?;
    }
    let mut opts: Vec<String> = vec![format!("--gpu-architecture=sm_{arch}")];
    opts.extend(toolkit_include_options());
    opts.extend(options.iter().map(|s| s.to_string()));
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
            return Err(format!("NVRTC could not resolve the kernel name `{text}` ({r:?})"));
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

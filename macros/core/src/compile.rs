//! The build-time compiler driver: nvcc discovery, fatbin + PTX builds, and the build cache.
//!
//! Cache entries live under `<cache dir>/build/` (same directory rules as the runtime's NVRTC
//! cache: `CUDA_EMBED_CACHE_DIR`, `$XDG_CACHE_HOME/cuda-embed`, `~/.cache/cuda-embed`). An entry is
//! keyed by a SHA-256 of the nvcc version, the target list, the options and the source; it
//! records the bytes' hash of every header the compile read outside the toolkit and the system
//! include directories, and is a hit only while those headers are unchanged. Entries are written
//! to a temporary file and renamed into place, so parallel rustc processes never read a torn one.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

const MAGIC: &str = "cuda-embed nvcc build v1";

/// Default target architectures when neither the macro nor `CUDA_EMBED_ARCHS` names any.
pub const DEFAULT_ARCHS: &[&str] = &["80", "90"];

/// Architectures nvcc 13 can build SASS for (with optional `a`/`f` feature suffix where nvcc
/// accepts one).
pub const KNOWN_ARCHS: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121];

/// A target architecture such as `90` or `90a`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Arch {
    /// Compute capability as a number (`90`).
    pub number: u32,
    /// Feature suffix (`""`, `"a"`, `"f"`).
    pub suffix: String,
}

impl Arch {
    /// Parses `90`, `sm_90`, `90a`, `compute_90`.
    pub fn parse(s: &str) -> Result<Arch, String> {
        let t = s.trim();
        let t = t.strip_prefix("sm_").or_else(|| t.strip_prefix("compute_")).unwrap_or(t);
        let digits: String = t.chars().take_while(|c| c.is_ascii_digit()).collect();
        let suffix = &t[digits.len()..];
        let number: u32 = digits.parse().map_err(|_| format!("`{s}` is not a GPU architecture"))?;
        if !KNOWN_ARCHS.contains(&number) || !["", "a", "f"].contains(&suffix) {
            let list: Vec<String> = KNOWN_ARCHS.iter().map(|a| a.to_string()).collect();
            return Err(format!(
                "unknown GPU architecture `{s}`: nvcc 13 builds for {} (optionally with an `a` or `f` suffix, e.g. `90a`)",
                list.join(", ")
            ));
        }
        Ok(Arch { number, suffix: suffix.to_string() })
    }

    /// `sm_90a` style name.
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.number, self.suffix)
    }
}

/// The archs from `CUDA_EMBED_ARCHS` (comma or space separated), else [`DEFAULT_ARCHS`].
pub fn archs_from_env() -> Result<Vec<Arch>, String> {
    match std::env::var("CUDA_EMBED_ARCHS") {
        Ok(v) if !v.trim().is_empty() => v
            .split([',', ' '])
            .filter(|s| !s.is_empty())
            .map(|s| Arch::parse(s).map_err(|e| format!("CUDA_EMBED_ARCHS: {e}")))
            .collect(),
        _ => Ok(DEFAULT_ARCHS.iter().map(|a| Arch::parse(a).expect("default archs are valid")).collect()),
    }
}

/// A usable nvcc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nvcc {
    /// The executable.
    pub path: PathBuf,
    /// Full version, e.g. `13.0.88`.
    pub version: String,
    /// Toolkit root (parent of `bin/`), whose headers are covered by the version.
    pub root: PathBuf,
}

impl Nvcc {
    /// `13.0` from `13.0.88`.
    pub fn release(&self) -> String {
        self.version.split('.').take(2).collect::<Vec<_>>().join(".")
    }
}

/// Why no nvcc is used, when none is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoNvcc {
    /// `CUDA_EMBED_FORCE_NVRTC` is set.
    Forced,
    /// None was found where we looked.
    NotFound(String),
}

impl std::fmt::Display for NoNvcc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoNvcc::Forced => write!(f, "NVRTC was requested (CUDA_EMBED_FORCE_NVRTC or `compiler = \"nvrtc\"`)"),
            NoNvcc::NotFound(w) => write!(f, "no nvcc found ({w})"),
        }
    }
}

/// Finds nvcc: `NVCC`, `$CUDA_PATH/bin`, `$CUDA_HOME/bin`, then `PATH`. An `NVCC` that is set
/// but does not run is an error, not a silent fallback.
pub fn find_nvcc() -> Result<Result<Nvcc, NoNvcc>, String> {
    if std::env::var("CUDA_EMBED_FORCE_NVRTC").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false") {
        return Ok(Err(NoNvcc::Forced));
    }
    if let Some(explicit) = std::env::var_os("NVCC").filter(|s| !s.is_empty()) {
        let p = PathBuf::from(explicit);
        return probe_nvcc(&p).map(Ok).map_err(|e| format!("NVCC={}: {e}", p.display()));
    }
    let mut candidates: Vec<PathBuf> = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(|v| std::env::var_os(v).filter(|s| !s.is_empty()))
        .map(|root| PathBuf::from(root).join("bin").join("nvcc"))
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("nvcc")));
    }
    for c in &candidates {
        if c.is_file() {
            if let Ok(n) = probe_nvcc(c) {
                return Ok(Ok(n));
            }
        }
    }
    Ok(Err(NoNvcc::NotFound("looked at NVCC, $CUDA_PATH/bin, $CUDA_HOME/bin and PATH".into())))
}

fn probe_nvcc(path: &Path) -> Result<Nvcc, String> {
    static SEEN: OnceLock<Mutex<Vec<Nvcc>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(n) = seen.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|n| n.path == path) {
        return Ok(n.clone());
    }
    let out = Command::new(path).arg("--version").output().map_err(|e| format!("cannot run it: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix('V').filter(|v| v.starts_with(|c: char| c.is_ascii_digit())))
        .ok_or_else(|| format!("`--version` printed no version: {text}"))?
        .to_string();
    let root = path.parent().and_then(Path::parent).unwrap_or(Path::new("/")).to_path_buf();
    let n = Nvcc { path: path.to_path_buf(), version, root };
    seen.lock().unwrap_or_else(|p| p.into_inner()).push(n.clone());
    Ok(n)
}

/// The directory the build cache lives in (see module docs).
pub fn cache_dir() -> PathBuf {
    let base = if let Some(d) = std::env::var_os("CUDA_EMBED_CACHE_DIR").filter(|d| !d.is_empty()) {
        PathBuf::from(d)
    } else if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(d).join("cuda-embed")
    } else if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(h).join(".cache").join("cuda-embed")
    } else {
        std::env::temp_dir().join("cuda-embed")
    };
    base.join("build")
}

/// One compilation.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// CUDA source as the user wrote it (the cache key).
    pub source: &'a str,
    /// Prepended when compiling: `#line N "file.rs"`, so diagnostics cite the Rust file.
    pub line_directive: &'a str,
    /// Extra nvcc options from the macro.
    pub options: &'a [String],
    /// Targets.
    pub archs: &'a [Arch],
    /// Directories searched for `#include "..."` (the Rust file's own directory).
    pub include_dirs: &'a [PathBuf],
}

/// A compiled module.
#[derive(Debug, Clone)]
pub struct Output {
    /// The fatbin: SASS per arch, PTX for the lowest.
    pub fatbin: Vec<u8>,
    /// PTX for the lowest arch (for the signature cross-check).
    pub ptx: String,
    /// Whether nvcc did not run.
    pub from_cache: bool,
    /// Targets in the fatbin, e.g. `sm_80, sm_90, compute_80`.
    pub targets: Vec<String>,
    /// User headers the source included (toolkit and system headers left out), for cargo's
    /// rebuild tracking.
    pub deps: Vec<PathBuf>,
}

fn nvcc_args(req: &Request<'_>) -> (Vec<String>, Vec<String>) {
    let mut archs = req.archs.to_vec();
    archs.sort();
    archs.dedup();
    let mut args = Vec::new();
    let mut targets = Vec::new();
    for (n, a) in archs.iter().enumerate() {
        let compute = format!("compute_{}{}", a.number, a.suffix);
        if n == 0 {
            args.push(format!("-gencode=arch={compute},code=[{},{compute}]", a.sm()));
        } else {
            args.push(format!("-gencode=arch={compute},code={}", a.sm()));
        }
        targets.push(a.sm());
    }
    if let Some(a) = archs.first() {
        targets.push(format!("compute_{}{}", a.number, a.suffix));
    }
    for d in req.include_dirs {
        args.push(format!("-I{}", d.display()));
    }
    args.extend(req.options.iter().cloned());
    (args, targets)
}

/// The cache key of a request.
pub fn key(nvcc: &Nvcc, req: &Request<'_>) -> String {
    let (args, _) = nvcc_args(req);
    let mut h = Sha256::new();
    h.update(MAGIC.as_bytes());
    h.update(b"\0");
    h.update(nvcc.version.as_bytes());
    for a in &args {
        h.update(b"\0");
        h.update(a.as_bytes());
    }
    h.update(b"\x01");
    h.update(req.source.as_bytes());
    hex(&h.finalize())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn file_hash(p: &Path) -> Option<String> {
    std::fs::read(p).ok().map(|b| hex(&Sha256::digest(&b)))
}

/// Compiles, or returns the cached result. `Err` carries nvcc's full log.
pub fn compile(nvcc: &Nvcc, req: &Request<'_>) -> Result<Output, String> {
    let key = key(nvcc, req);
    let dir = cache_dir();
    let file = dir.join(format!("{key}.bin"));
    let (_, targets) = nvcc_args(req);
    if let Some((fatbin, ptx, deps)) = read_entry(&file) {
        return Ok(Output { fatbin, ptx, from_cache: true, targets, deps });
    }
    let (fatbin, ptx, deps) = run_nvcc(nvcc, req)?;
    let user_deps: Vec<(String, PathBuf)> = deps
        .into_iter()
        // Relative names are the `#line` file (the Rust file or the `.cu` file itself), not a
        // header: the source text is already in the key.
        .filter(|d| d.is_absolute())
        .filter(|d| !d.starts_with(&nvcc.root) && !d.starts_with("/usr/include") && !d.starts_with("/usr/lib"))
        .filter_map(|d| file_hash(&d).map(|h| (h, d)))
        .collect();
    let _ = write_entry(&dir, &file, &user_deps, &fatbin, &ptx); // an unwritable cache only costs time
    let deps = user_deps.into_iter().map(|d| d.1).collect();
    Ok(Output { fatbin, ptx, from_cache: false, targets, deps })
}

fn read_entry(file: &Path) -> Option<(Vec<u8>, String, Vec<PathBuf>)> {
    let bytes = std::fs::read(file).ok()?;
    let mut rest = bytes.as_slice();
    let mut line = || -> Option<String> {
        let at = rest.iter().position(|&b| b == b'\n')?;
        let l = String::from_utf8(rest[..at].to_vec()).ok()?;
        rest = &rest[at + 1..];
        Some(l)
    };
    if line()? != MAGIC {
        return None;
    }
    let ndeps: usize = line()?.strip_prefix("deps ")?.parse().ok()?;
    let mut deps = Vec::with_capacity(ndeps);
    for _ in 0..ndeps {
        let l = line()?;
        let (hash, path) = l.split_once(' ')?;
        if file_hash(Path::new(path)).as_deref() != Some(hash) {
            return None; // a header changed: recompile
        }
        deps.push(PathBuf::from(path));
    }
    let ptx_len: usize = line()?.strip_prefix("ptx ")?.parse().ok()?;
    let fat_len: usize = line()?.strip_prefix("fatbin ")?.parse().ok()?;
    if rest.len() != ptx_len + fat_len || fat_len == 0 {
        return None;
    }
    let ptx = String::from_utf8(rest[..ptx_len].to_vec()).ok()?;
    Some((rest[ptx_len..].to_vec(), ptx, deps))
}

fn write_entry(dir: &Path, file: &Path, deps: &[(String, PathBuf)], fatbin: &[u8], ptx: &str) -> std::io::Result<()> {
    use std::io::Write;
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    writeln!(tmp, "{MAGIC}\ndeps {}", deps.len())?;
    for (h, p) in deps {
        writeln!(tmp, "{h} {}", p.display())?;
    }
    writeln!(tmp, "ptx {}\nfatbin {}", ptx.len(), fatbin.len())?;
    tmp.write_all(ptx.as_bytes())?;
    tmp.write_all(fatbin)?;
    tmp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

fn run_nvcc(nvcc: &Nvcc, req: &Request<'_>) -> Result<(Vec<u8>, String, Vec<PathBuf>), String> {
    let work = tempfile::Builder::new()
        .prefix("cuda-embed-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let src = work.path().join("kernel.cu");
    std::fs::write(&src, format!("{}\n{}", req.line_directive, req.source))
        .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let keep = work.path().join("keep");
    std::fs::create_dir_all(&keep).map_err(|e| e.to_string())?;
    let out = work.path().join("kernel.fatbin");
    let depfile = work.path().join("kernel.d");
    let (args, _) = nvcc_args(req);
    let result = Command::new(&nvcc.path)
        .arg("-fatbin")
        .args(&args)
        .arg("--keep")
        .arg("--keep-dir")
        .arg(&keep)
        .arg("-MD")
        .arg("-MF")
        .arg(&depfile)
        .arg("-o")
        .arg(&out)
        // Relative, so no random temporary path reaches the log (the `#line` directive names the
        // Rust file for every diagnostic; only nvcc's summary line names the input).
        .arg("kernel.cu")
        .current_dir(work.path())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.path.display()))?;
    let log = format!("{}{}", String::from_utf8_lossy(&result.stdout), String::from_utf8_lossy(&result.stderr));
    if !result.status.success() {
        let file = req.line_directive.split('"').nth(1).unwrap_or("the CUDA source");
        return Err(clean_log(&log).replace("\"kernel.cu\"", &format!("\"{file}\"")));
    }
    let fatbin = std::fs::read(&out).map_err(|e| format!("nvcc produced no fatbin ({e}); its output:\n{log}"))?;
    let lowest = req.archs.iter().min().map(|a| format!("compute_{}{}", a.number, a.suffix));
    let mut ptx_files: Vec<PathBuf> = std::fs::read_dir(&keep)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    ptx_files.sort();
    let ptx_file = ptx_files
        .iter()
        .find(|p| lowest.as_ref().is_some_and(|l| p.to_string_lossy().contains(l.as_str())))
        .or(ptx_files.first())
        .ok_or("nvcc kept no PTX file")?;
    let ptx = std::fs::read_to_string(ptx_file).map_err(|e| e.to_string())?;
    let deps = std::fs::read_to_string(&depfile).map(|d| parse_depfile(&d)).unwrap_or_default();
    Ok((fatbin, ptx, deps.into_iter().filter(|d| d != &src).collect()))
}

/// Paths in a make-style dependency file.
pub fn parse_depfile(d: &str) -> Vec<PathBuf> {
    let body = d.replace("\\\n", " ");
    let after = body.split_once(": ").map(|x| x.1).unwrap_or("");
    after.split_whitespace().map(PathBuf::from).collect()
}

/// Drops nvcc's noise (the deprecation banner) and keeps the diagnostics.
fn clean_log(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains("Support for offline compilation for architectures prior to"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parsing() {
        assert_eq!(Arch::parse("sm_90a").unwrap(), Arch { number: 90, suffix: "a".into() });
        assert_eq!(Arch::parse("80").unwrap().sm(), "sm_80");
        assert!(Arch::parse("52").unwrap_err().contains("unknown GPU architecture `52`"));
        assert!(Arch::parse("90x").is_err());
        assert!(Arch::parse("abc").is_err());
    }

    #[test]
    fn gencode_puts_ptx_on_lowest_arch() {
        let archs = [Arch::parse("90").unwrap(), Arch::parse("80").unwrap()];
        let req = Request { source: "", line_directive: "", options: &[], archs: &archs, include_dirs: &[] };
        let (args, targets) = nvcc_args(&req);
        assert_eq!(args, ["-gencode=arch=compute_80,code=[sm_80,compute_80]", "-gencode=arch=compute_90,code=sm_90"]);
        assert_eq!(targets, ["sm_80", "sm_90", "compute_80"]);
    }

    #[test]
    fn depfile() {
        let d = "out.fatbin : /tmp/a.cu \\\n    /x/h.cuh \\\n /usr/include/stdio.h\n";
        assert_eq!(parse_depfile(d), [PathBuf::from("/tmp/a.cu"), "/x/h.cuh".into(), "/usr/include/stdio.h".into()]);
    }
}

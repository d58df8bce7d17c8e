//! The build-time compiler driver: nvcc discovery, fatbin + PTX builds, and the build cache.
//!
//! Cache entries are [`cuda_embed_source::cache`] entries under
//! [`cache::build_dir`] (`<cache dir>/build/`, the same directory rules as the runtime's NVRTC
//! cache: `CUDA_EMBED_CACHE_DIR`, `$XDG_CACHE_HOME/cuda-embed`, `~/.cache/cuda-embed`). An entry is
//! keyed by [`key`] (the nvcc version, the nvcc arguments — targets, include directories,
//! options — and the source); it holds the fatbin and the PTX and records the hash of every
//! header the compile read outside the toolkit and the system include directories (from nvcc's
//! dependency file), and is a hit only while those headers are unchanged. Entries are written to a
//! temporary file and renamed into place, so parallel rustc processes never read a torn one.
//! Architectures and the nvcc argument list come from [`cuda_embed_source::options`].

use cuda_embed_source::cache::{self, Dep, Entry, Store};
use cuda_embed_source::key::Key;
use cuda_embed_source::options::nvcc_args;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

pub use cuda_embed_source::options::{archs_from_env, Arch, DEFAULT_ARCHS, KNOWN_ARCHS};

/// The key scheme of nvcc builds (see [`key`]).
const KEY_SCHEME: &str = "cuda-embed nvcc build v3";

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

/// Whether the environment variable `name` is set to something other than empty, `0` or `false`.
pub fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Finds nvcc: `NVCC`, `bin/` of each toolkit root (`CUDA_EMBED_TOOLKIT`, `CUDA_PATH`,
/// `CUDA_HOME`: [`cuda_embed_source::options::toolkit_roots`]), then `PATH`. An `NVCC` that is set
/// but does not run is an error, not a silent fallback. `CUDA_EMBED_NO_NVCC` makes it find none
/// (so a machine with nvcc can build through NVRTC at build time); `CUDA_EMBED_FORCE_NVRTC`
/// asks for NVRTC at run time.
pub fn find_nvcc() -> Result<Result<Nvcc, NoNvcc>, String> {
    if flag("CUDA_EMBED_FORCE_NVRTC") {
        return Ok(Err(NoNvcc::Forced));
    }
    if flag("CUDA_EMBED_NO_NVCC") {
        return Ok(Err(NoNvcc::NotFound("CUDA_EMBED_NO_NVCC is set".into())));
    }
    if let Some(explicit) = std::env::var_os("NVCC").filter(|s| !s.is_empty()) {
        let p = PathBuf::from(explicit);
        return probe_nvcc(&p).map(Ok).map_err(|e| format!("NVCC={}: {e}", p.display()));
    }
    let mut candidates: Vec<PathBuf> =
        cuda_embed_source::options::toolkit_roots().into_iter().map(|root| root.join("bin").join("nvcc")).collect();
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
    Ok(Err(NoNvcc::NotFound("looked at NVCC, bin/ of $CUDA_EMBED_TOOLKIT, $CUDA_PATH and $CUDA_HOME, and PATH".into())))
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

pub use crate::front::ir::BlockLimits;

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
    /// The largest block each kernel is sure to take, per cubin of the fatbin, read from the
    /// cubins nvcc kept ([`cuda_embed_source::cubin::block_limits`]): `("sm_90", [(symbol,
    /// threads)])`. A first launch on a GPU that loads one of these cubins then need not ask the
    /// driver for the limit before the kernel runs.
    pub limits: BlockLimits,
    /// ptxas's "Potential Performance Loss" advisories (e.g. C7510: `wgmma` serialized because a
    /// call crosses the pipeline, which CuTe's device asserts cause without `NDEBUG`), kept in the
    /// cache entry so a cached build reports them too. nvcc prints them on success, where the
    /// macro shows no log: the generated code turns each into a warning.
    pub advisories: Vec<String>,
}

/// The lines of a successful nvcc log that warn of lost performance (ptxas's `Potential
/// Performance Loss` infos), each once.
pub fn performance_advisories(log: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in log.lines().filter(|l| l.contains("Potential Performance Loss")) {
        let line = line.trim().trim_start_matches("ptxas info    : ").to_string();
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

fn args(req: &Request<'_>) -> cuda_embed_source::options::NvccArgs {
    nvcc_args(req.archs, req.include_dirs, req.options)
}

/// The cache key of a request: nvcc's version, its arguments and the source, in one
/// [`Key`] scheme.
pub fn key(nvcc: &Nvcc, req: &Request<'_>) -> String {
    key_with_env(nvcc, req, &environment(&args(req).args))
}

/// What besides its arguments changes nvcc's output, as `NAME=value` entries for cache keys: the
/// variables nvcc reads (`NVCC_PREPEND_FLAGS`, `NVCC_APPEND_FLAGS`, `NVCC_CCBIN`) and the host
/// compiler it runs for `args` (its headers and predefined macros: another compiler or version
/// under the same path is another build).
pub fn environment(args: &[String]) -> Vec<String> {
    let mut env: Vec<String> = ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN"]
        .iter()
        .map(|v| format!("{v}={}", std::env::var(v).unwrap_or_default()))
        .collect();
    env.push(format!("host compiler={}", cuda_embed_source::host::host_compiler_identity(args)));
    // CUTLASS include directories stand in the key by their version, not header by header (their
    // headers are left out of the entry's dependencies below).
    env.extend(cuda_embed_source::options::cutlass_identity(&cuda_embed_source::options::include_dirs(args)));
    env
}

/// [`key`] with nvcc's environment settings given (`NAME=value` each).
pub fn key_with_env(nvcc: &Nvcc, req: &Request<'_>, env: &[String]) -> String {
    Key::new(KEY_SCHEME)
        .field("nvcc", &nvcc.version)
        .list("args", &args(req).args)
        .list("env", env)
        .field("source", req.source)
        .finish()
}

/// Compiles, or returns the cached result. `Err` carries nvcc's full log.
pub fn compile(nvcc: &Nvcc, req: &Request<'_>) -> Result<Output, String> {
    let key = key(nvcc, req);
    let store = Store::new(cache::build_dir(), "bin");
    let targets = args(req).targets;
    if let Some(out) = store.read(&key).and_then(|e| output(e, true, &targets)) {
        return Ok(out);
    }
    let (fatbin, ptx, deps, limits, advisories) = run_nvcc(nvcc, req, &targets)?;
    let cutlass_dirs: Vec<PathBuf> = cuda_embed_source::options::include_dirs(&args(req).args)
        .into_iter()
        .filter(|d| cuda_embed_source::options::is_cutlass_include_dir(d))
        .map(|d| lexical(&d))
        .collect();
    let user_deps: Vec<Dep> = deps
        .into_iter()
        // Relative names are the `#line` file (the Rust file or the `.cu` file itself), not a
        // header: the source text is already in the key.
        .filter(|d| d.is_absolute())
        .filter(|d| !is_toolkit_or_system_header(d, &nvcc.root))
        .filter(|d| !cutlass_dirs.iter().any(|c| lexical(d).starts_with(c)))
        .filter_map(Dep::of_file)
        .collect();
    let entry = Entry {
        blobs: vec![fatbin],
        strings: vec![ptx, encode_limits(&limits), advisories.join("\n")],
        deps: user_deps,
    };
    store.write_or_warn(&key, &entry); // an unwritable cache only costs time
    output(entry, false, &targets).ok_or_else(|| "nvcc produced an empty fatbin".to_string())
}

/// The output an entry holds: exactly one non-empty fatbin, one PTX text, the block limits and
/// the performance advisories (else `None`: an entry of an older build, compiled again).
fn output(entry: Entry, from_cache: bool, targets: &[String]) -> Option<Output> {
    let Ok([fatbin]) = <[Vec<u8>; 1]>::try_from(entry.blobs) else { return None };
    let Ok([ptx, limits, advisories]) = <[String; 3]>::try_from(entry.strings) else { return None };
    let limits = decode_limits(&limits)?;
    let advisories = advisories.lines().map(str::to_string).collect();
    let deps = entry.deps.into_iter().map(|d| d.path).collect();
    (!fatbin.is_empty()).then(|| Output {
        fatbin,
        ptx,
        from_cache,
        targets: targets.to_vec(),
        deps,
        limits,
        advisories,
    })
}

/// [`Output::limits`] as a cache entry's text: a line per cubin, `sm_90 symbol threads symbol
/// threads ...` (symbols hold no spaces).
pub fn encode_limits(limits: &BlockLimits) -> String {
    let mut text = String::new();
    for (target, kernels) in limits {
        text.push_str(target);
        for (symbol, threads) in kernels {
            text.push_str(&format!(" {symbol} {threads}"));
        }
        text.push('\n');
    }
    text
}

/// The limits [`encode_limits`] wrote; `None` for any other text.
pub fn decode_limits(text: &str) -> Option<BlockLimits> {
    text.lines()
        .map(|line| {
            let mut words = line.split(' ');
            let target = words.next().filter(|t| t.starts_with("sm_"))?.to_string();
            let words: Vec<&str> = words.collect();
            if !words.len().is_multiple_of(2) {
                return None;
            }
            let kernels =
                words.chunks(2).map(|p| Some((p[0].to_string(), p[1].parse().ok()?))).collect::<Option<_>>()?;
            Some((target, kernels))
        })
        .collect()
}

/// The block limits of the kernels in the cubins among the files nvcc kept (one per real architecture
/// of `targets`). nvcc names a cubin `<input>.compute_XX.sm_YY.cubin`, or `<input>.compute_XX.cubin`
/// when the real architecture is the virtual one's (`compute_90a` for `sm_90a`). A cubin this
/// cannot place or read is left out: its GPUs ask the driver.
fn kept_limits(kept: &[PathBuf], targets: &[String]) -> BlockLimits {
    let mut out: BlockLimits = Vec::new();
    for path in kept {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".cubin")) else {
            continue;
        };
        let target = match name.rsplit('.').next() {
            Some(sm) if sm.starts_with("sm_") => sm.to_string(),
            Some(compute) => match compute.strip_prefix("compute_") {
                Some(arch) => format!("sm_{arch}"),
                None => continue,
            },
            None => continue,
        };
        if !targets.contains(&target) || out.iter().any(|(t, _)| *t == target) {
            continue;
        }
        let arch = Arch::parse(&target).ok().map(|a| a.number);
        let limits = std::fs::read(path)
            .ok()
            .zip(arch)
            .and_then(|(cubin, arch)| cuda_embed_source::cubin::block_limits(&cubin, arch));
        if let Some(limits) = limits {
            out.push((target, limits));
        }
    }
    out.sort();
    out
}

/// What [`run_nvcc`] returns: the fatbin, the PTX, the files it read, the block limits, the
/// performance advisories.
type NvccBuilt = (Vec<u8>, String, Vec<PathBuf>, BlockLimits, Vec<String>);

fn run_nvcc(nvcc: &Nvcc, req: &Request<'_>, targets: &[String]) -> Result<NvccBuilt, String> {
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
    // No `-MMD`: nvcc would run one more preprocessor pass for it (about a tenth of a small
    // kernel's compile). The headers are read from the preprocessed files `--keep` leaves anyway
    // (`kept_includes`), which name the same files.
    let result = Command::new(&nvcc.path)
        .arg("-fatbin")
        .args(&args(req).args)
        .arg("--keep")
        .arg("--keep-dir")
        .arg(&keep)
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
        let log = super::echo::restore(&clean_log(&log), req.source);
        return Err(log.replace("\"kernel.cu\"", &format!("\"{file}\"")));
    }
    let fatbin = std::fs::read(&out).map_err(|e| format!("nvcc produced no fatbin ({e}); its output:\n{log}"))?;
    let lowest = req.archs.iter().min().map(Arch::compute);
    // What nvcc kept, listed once, in name order.
    let mut kept: Vec<PathBuf> =
        std::fs::read_dir(&keep).map_err(|e| e.to_string())?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    kept.sort();
    let ptx_files: Vec<&PathBuf> = kept.iter().filter(|p| p.extension().is_some_and(|x| x == "ptx")).collect();
    let ptx_file = ptx_files
        .iter()
        .find(|p| lowest.as_ref().is_some_and(|l| p.to_string_lossy().contains(l.as_str())))
        .or(ptx_files.first())
        .ok_or("nvcc kept no PTX file")?;
    let ptx = std::fs::read_to_string(ptx_file).map_err(|e| e.to_string())?;
    let deps = kept_includes(&kept);
    let limits = kept_limits(&kept, targets);
    Ok((fatbin, ptx, deps.into_iter().filter(|d| d != &src).collect(), limits, performance_advisories(&log)))
}

/// The headers the compile read, from the preprocessed files among those nvcc kept (one per
/// virtual architecture, `*.cpp1.ii`, and the host side's `*.cpp4.ii`): every file a line marker
/// enters (`# 1 "path" 1`), except system headers (flag 3: the host compiler's own, wherever it is
/// installed, e.g. /opt/gcc), in first-seen order. The same files `-MMD` lists; the toolkit's
/// are left out later by `is_toolkit_or_system_header`.
fn kept_includes(kept: &[PathBuf]) -> Vec<PathBuf> {
    let files = kept.iter().filter(|p| p.to_str().is_some_and(|n| n.ends_with(".cpp1.ii") || n.ends_with(".cpp4.ii")));
    let mut out: Vec<PathBuf> = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read(file) else { continue };
        for path in entered_files(&String::from_utf8_lossy(&text)) {
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// The files that the line markers of preprocessed `text` enter (flag 1), system headers
/// (flag 3) left out. A marker is `# LINE "NAME" FLAGS...`, the name escaped as a C string.
fn entered_files(text: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# ") else { continue };
        let Some((number, rest)) = rest.split_once(' ') else { continue };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(quoted) = rest.strip_prefix('"') else { continue };
        let (mut name, mut chars, mut closed) = (String::new(), quoted.chars(), false);
        while let Some(c) = chars.next() {
            match c {
                '\\' => name.push(chars.next().unwrap_or('\\')),
                '"' => {
                    closed = true;
                    break;
                }
                c => name.push(c),
            }
        }
        let flags: Vec<&str> = chars.as_str().split_whitespace().collect();
        if closed && flags.contains(&"1") && !flags.contains(&"3") {
            out.push(PathBuf::from(name));
        }
    }
    out
}

/// Paths in a make-style dependency file.
pub fn parse_depfile(d: &str) -> Vec<PathBuf> {
    let body = d.replace("\\\n", " ");
    let after = body.split_once(": ").map(|x| x.1).unwrap_or("");
    // Make-style: whitespace separates names, `\ ` is a space inside one.
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = after.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => cur.push(chars.next().unwrap_or(' ')),
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(PathBuf::from(cur));
    }
    out
}

/// `path` with `.` and `a/..` removed, without asking the file system.
fn lexical(path: &std::path::Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether a dependency is the toolkit's or the system's own header, which the nvcc version in
/// the key already stands for. Judged by the toolkit's header folders, not its whole root: an
/// nvcc installed as `/usr/bin/nvcc` has the root `/usr`, under which user projects live too.
pub(crate) fn is_toolkit_or_system_header(d: &std::path::Path, root: &std::path::Path) -> bool {
    // nvcc names its own headers through its bin folder (`<root>/bin/..//include/...`).
    let d = &lexical(d);
    let root = &lexical(root);
    let toolkit = ["include", "targets", "nvvm", "lib", "lib64"].iter().any(|s| d.starts_with(root.join(s)));
    toolkit || ["/usr/include", "/usr/lib", "/usr/local/include"].iter().any(|s| d.starts_with(s))
}

/// Drops nvcc's noise (the deprecation banner) and keeps the diagnostics.
pub(crate) fn clean_log(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.contains("Support for offline compilation for architectures prior to"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    dedup_diagnostics(&lines).join("\n")
}

/// The log with each diagnostic (its `file(line): error: ...` line and the source lines nvcc
/// quotes under it) shown once: code generated for several instances or kernels (elementwise,
/// reduction, N-D variants) repeats one mistake in the user's operation once per copy. The
/// summary line then says how many were repeats.
fn dedup_diagnostics<'a>(lines: &[&'a str]) -> Vec<std::borrow::Cow<'a, str>> {
    use std::borrow::Cow;
    let starts = |l: &str| l.contains("): error") || l.contains("): warning");
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for &l in lines {
        match blocks.last_mut() {
            Some(b) if !starts(l) && !l.contains(" detected in the compilation of ") => b.push(l),
            _ => blocks.push(vec![l]),
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut repeats = 0;
    for b in blocks {
        if starts(b[0]) && !seen.insert(b.clone()) {
            repeats += 1;
            continue;
        }
        for l in b {
            if repeats > 0 && l.contains(" detected in the compilation of ") {
                out.push(Cow::Owned(format!("{l} ({repeats} repeated in the generated code, shown once)")));
            } else {
                out.push(Cow::Borrowed(l));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_diagnostics_are_shown_once() {
        let log = "a.rs(9): error: identifier \"xx\" is undefined\n  y = xx\n      ^\n\
                   a.rs(9): error: identifier \"xx\" is undefined\n  y = xx\n      ^\n\
                   a.rs(12): error: other\n\
                   3 errors detected in the compilation of \"a.rs\".";
        let clean = clean_log(log);
        assert_eq!(clean.matches("is undefined").count(), 1, "{clean}");
        assert!(clean.contains("a.rs(12): error: other"));
        assert!(clean.ends_with("(1 repeated in the generated code, shown once)"), "{clean}");
        let once = "a.rs(9): error: x\n1 error detected in the compilation of \"a.rs\".";
        assert_eq!(clean_log(once), once, "nothing repeated: unchanged");
    }

    #[test]
    fn performance_advisories_are_read_from_a_successful_log() {
        // nvcc 13.0's log for a CUTLASS sm90 GEMM built without NDEBUG (two kernels).
        let log = "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized \
                   due to wgmma pipeline crossing function boundary at a function call in the function 'a'\n\
                   ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized \
                   due to wgmma pipeline crossing function boundary at a function call in the function 'a'\n\
                   ptxas info    : 0 bytes gmem\n";
        let a = performance_advisories(log);
        assert_eq!(a.len(), 1, "each once: {a:?}");
        assert!(a[0].starts_with("(C7510) Potential Performance Loss: wgmma.mma_async"), "{a:?}");
        assert!(performance_advisories("ptxas info    : 0 bytes gmem\n").is_empty());
    }

    #[test]
    fn included_files_from_line_markers_and_toolkit_headers() {
        // As gcc writes them: the main file, the command line, a user header (entered, left),
        // a system header (flag 3), a `#line` directive (no flag), a name with a space and a quote.
        let ii = "# 1 \"kernel.cu\"\n# 1 \"<built-in>\"\n# 1 \"<command-line>\"\n\
                  # 1 \"/home/me/my proj/h.cuh\" 1\n# 7 \"kernel.cu\" 2\n\
                  # 1 \"/usr/include/stdio.h\" 1 3 4\n# 12 \"src/main.rs\"\n\
                  # 1 \"/x/a\\\"b.cuh\" 1\n#pragma once\n# 1 \"/x/y.cuh\" 1\n";
        assert_eq!(
            entered_files(ii),
            [PathBuf::from("/home/me/my proj/h.cuh"), "/x/a\"b.cuh".into(), "/x/y.cuh".into()]
        );
        let d = "k.o: /home/me/my\\ proj/h.cuh /x/y.cuh\n";
        assert_eq!(parse_depfile(d), [PathBuf::from("/home/me/my proj/h.cuh"), "/x/y.cuh".into()]);
        let usr = std::path::Path::new("/usr");
        assert!(is_toolkit_or_system_header("/usr/include/cuda_runtime.h".as_ref(), usr));
        assert!(
            !is_toolkit_or_system_header("/usr/src/project/kernels/h.cuh".as_ref(), usr),
            "a user header under the root"
        );
        let wheel = std::path::Path::new("/w/.cuda/site/nvidia/cu13");
        assert!(is_toolkit_or_system_header("/w/.cuda/site/nvidia/cu13/include/cuda_fp16.h".as_ref(), wheel));
        assert!(is_toolkit_or_system_header(
            "/w/.cuda/site/nvidia/cu13/bin/..//include/crt/host_defines.h".as_ref(),
            wheel
        ));
    }

    #[test]
    fn depfile() {
        let d = "out.fatbin : /tmp/a.cu \\\n    /x/h.cuh \\\n /usr/include/stdio.h\n";
        assert_eq!(parse_depfile(d), [PathBuf::from("/tmp/a.cu"), "/x/h.cuh".into(), "/usr/include/stdio.h".into()]);
    }
}

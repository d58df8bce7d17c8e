//! Compiler options: target architectures, and the argument lists handed to nvcc (build time) and
//! to NVRTC (run time) for the same source and options.
//!
//! The user's options (the macro's typed options turned into flags, then its free-form `options`,
//! or a run-time program's options) are passed to both compilers as written, after what
//! cuda-embed itself must say (targets, include directories). Nothing is added that the user did
//! not ask for: no `-ftz`, no fast math.

use std::path::{Path, PathBuf};

/// Default target architectures when neither the macro nor `CUDA_EMBED_ARCHS` names any.
pub const DEFAULT_ARCHS: &[&str] = &["80", "90"];

/// Architectures nvcc 13 can build SASS for (with optional `a`/`f` feature suffix where nvcc
/// accepts one).
pub const KNOWN_ARCHS: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121];

/// A target architecture such as `90` or `90a`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Arch {
    /// Compute capability as a number (`90`).
    pub number: u32,
    /// Feature suffix (`""`, `"a"`, `"f"`).
    pub suffix: String,
}

impl Arch {
    /// Parses `90`, `sm_90`, `90a`, `compute_90`.
    ///
    /// ```
    /// use cuda_embed_source::options::Arch;
    /// assert_eq!(Arch::parse("sm_90a")?.sm(), "sm_90a");
    /// assert!(Arch::parse("52").is_err());
    /// # Ok::<(), String>(())
    /// ```
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

    /// `sm_90a` style name (SASS).
    pub fn sm(&self) -> String {
        format!("sm_{}{}", self.number, self.suffix)
    }

    /// `compute_90a` style name (PTX).
    pub fn compute(&self) -> String {
        format!("compute_{}{}", self.number, self.suffix)
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
        _ => DEFAULT_ARCHS.iter().map(|a| Arch::parse(a)).collect(),
    }
}

/// nvcc's arguments for one build, and the targets the fatbin will hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvccArgs {
    /// `-gencode` per arch (SASS for each, PTX for the lowest), `-I` per include directory, then
    /// the user's options.
    pub args: Vec<String>,
    /// Targets in the fatbin, e.g. `sm_80, sm_90, compute_80`.
    pub targets: Vec<String>,
}

/// nvcc's arguments: SASS for every arch in `archs` (sorted, duplicates dropped) and PTX for the
/// lowest, so newer GPUs JIT it; `-I` for each of `include_dirs`; `-ccbin` when [`crate::host::ccbin`]
/// finds the host C++ compiler set the way cargo C/C++ builds set it (`CXX`, ...); then `options` as written.
///
/// ```
/// use cuda_embed_source::options::{nvcc_args, Arch};
/// let a = nvcc_args(&[Arch::parse("90")?, Arch::parse("80")?], &["inc".into()], &["-DN=4".to_string()]);
/// assert_eq!(a.args, ["-gencode=arch=compute_80,code=[sm_80,compute_80]", "-gencode=arch=compute_90,code=sm_90", "-Iinc", "-DN=4"]);
/// assert_eq!(a.targets, ["sm_80", "sm_90", "compute_80"]);
/// # Ok::<(), String>(())
/// ```
pub fn nvcc_args(archs: &[Arch], include_dirs: &[PathBuf], options: &[String]) -> NvccArgs {
    let mut archs = archs.to_vec();
    archs.sort();
    archs.dedup();
    let mut args = Vec::new();
    let mut targets = Vec::new();
    for (n, a) in archs.iter().enumerate() {
        let compute = a.compute();
        if n == 0 {
            args.push(format!("-gencode=arch={compute},code=[{},{compute}]", a.sm()));
        } else {
            args.push(format!("-gencode=arch={compute},code={}", a.sm()));
        }
        targets.push(a.sm());
    }
    targets.extend(archs.first().map(Arch::compute));
    args.extend(include_dirs.iter().map(|d| format!("-I{}", d.display())));
    if let Some(ccbin) = crate::host::ccbin(options) {
        args.push(format!("-ccbin={}", ccbin.display()));
    }
    args.extend(options.iter().cloned());
    NvccArgs { args, targets }
}

/// NVRTC's options for compiling to a cubin for a GPU of compute capability `arch` (`90`): the
/// architecture, the toolkit's include directories ([`toolkit_include_dirs`]), then `options` as
/// [`nvrtc_options`] spells them for NVRTC.
///
/// The architecture is `sm_{arch}`, or the arch-specific target of the same number that
/// `options` name (`--gpu-architecture=sm_90a`, as the macro passes `archs = ["90a"]` on to the
/// run-time path): on a compute capability 9.0 GPU such a module is built for `sm_90a`, with
/// the features only that GPU has (`wgmma`, `setmaxnreg`); on another it is built for that GPU.
///
/// ```
/// use cuda_embed_source::options::nvrtc_args;
/// let o = nvrtc_args(90, &["-DN=4"]);
/// assert_eq!((o[0].as_str(), o.last().map(String::as_str)), ("--gpu-architecture=sm_90", Some("-DN=4")));
/// let o = nvrtc_args(90, &["--gpu-architecture=sm_90a", "--gpu-architecture=sm_100a", "-DN=4"]);
/// assert_eq!((o[0].as_str(), o.last().map(String::as_str)), ("--gpu-architecture=sm_90a", Some("-DN=4")));
/// assert_eq!(nvrtc_args(80, &["--gpu-architecture=sm_90a"])[0], "--gpu-architecture=sm_80");
/// ```
pub fn nvrtc_args<S: AsRef<str>>(arch: u32, options: &[S]) -> Vec<String> {
    let own = options.iter().filter_map(|o| arch_option(o.as_ref())).find(|a| a.number == arch);
    let target = own.map_or_else(|| format!("sm_{arch}"), |a| a.sm());
    let mut args = vec![format!("--gpu-architecture={target}")];
    args.extend(toolkit_include_dirs().iter().map(|d| format!("--include-path={}", d.display())));
    args.extend(nvrtc_options(options));
    args
}

/// The arch-specific target an option names: `--gpu-architecture=sm_90a`, `-arch=sm_100f`
/// (`None` for any other option, a plain `sm_90` too, which NVRTC takes as written).
pub fn arch_option(option: &str) -> Option<Arch> {
    let value = ["--gpu-architecture=", "-arch="].iter().find_map(|p| option.strip_prefix(p))?;
    Arch::parse(value.strip_prefix("sm_")?).ok().filter(|a| !a.suffix.is_empty())
}

/// nvcc flags that NVRTC spells differently or does not have, with NVRTC's equivalent (`None`:
/// none). NVRTC compiles device code only: every lambda is a device lambda and needs no
/// `--extended-lambda`; a `constexpr` function is a host function unless `-default-device`
/// makes unannotated functions device functions, which is what `--expt-relaxed-constexpr` lets
/// device code call.
pub const NVCC_ONLY: &[(&str, Option<&str>)] = &[
    ("--expt-relaxed-constexpr", Some("-default-device")),
    ("-expt-relaxed-constexpr", Some("-default-device")),
    ("--extended-lambda", None),
    ("-extended-lambda", None),
    ("--expt-extended-lambda", None),
    ("-expt-extended-lambda", None),
];

/// `options` as NVRTC takes them: an nvcc flag of [`NVCC_ONLY`] as NVRTC spells it (once), or
/// left out where NVRTC has no equivalent (see [`nvcc_only`] for the error the macro gives
/// instead), and the architectures left out (NVRTC builds for one: see [`nvrtc_args`]); every
/// other option as written.
///
/// ```
/// use cuda_embed_source::options::nvrtc_options;
/// let o = nvrtc_options(&["--expt-relaxed-constexpr", "-std=c++20", "--extended-lambda", "--gpu-architecture=sm_90a"]);
/// assert_eq!(o, ["-default-device", "-std=c++20"]);
/// ```
pub fn nvrtc_options<S: AsRef<str>>(options: &[S]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in options.iter().map(AsRef::as_ref) {
        if arch_option(o).is_some() {
            continue;
        }
        let o = match NVCC_ONLY.iter().find(|(flag, _)| *flag == o) {
            Some((_, Some(equivalent))) => *equivalent,
            Some((_, None)) => continue,
            None => o,
        };
        if !(out.iter().any(|x| x == o) && NVCC_ONLY.iter().any(|(_, e)| *e == Some(o))) {
            out.push(o.to_string());
        }
    }
    out
}

/// The first of `options` that NVRTC has no equivalent for ([`NVCC_ONLY`]), if any.
///
/// ```
/// use cuda_embed_source::options::nvcc_only;
/// assert_eq!(nvcc_only(&["-DN=4", "--extended-lambda"]), Some("--extended-lambda"));
/// assert_eq!(nvcc_only(&["--expt-relaxed-constexpr"]), None);
/// ```
pub fn nvcc_only<S: AsRef<str>>(options: &[S]) -> Option<&str> {
    options.iter().map(AsRef::as_ref).find(|o| NVCC_ONLY.iter().any(|(flag, e)| flag == o && e.is_none()))
}

/// The `(NAME, value)` pairs the compiler options define (`-DNAME=value`, `-DNAME`, `-D NAME`,
/// `--define-macro=NAME`), in order; `-DNAME` defines `1`.
///
/// ```
/// let d = cuda_embed_source::options::defines(&["-DN=4".to_string(), "-I".into(), "x".into(), "-DFAST".into()]);
/// assert_eq!(d, [("N".to_string(), "4".to_string()), ("FAST".into(), "1".into())]);
/// ```
pub fn defines(options: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut it = options.iter();
    while let Some(o) = it.next() {
        let d = if o == "-D" || o == "--define-macro" {
            it.next().map(String::as_str)
        } else {
            o.strip_prefix("--define-macro=").or_else(|| o.strip_prefix("-D"))
        };
        if let Some(d) = d.filter(|d| !d.is_empty()) {
            let (name, value) = d.split_once('=').unwrap_or((d, "1"));
            out.push((name.to_string(), value.to_string()));
        }
    }
    out
}

/// The include directories named in compiler options (`-Idir`, `-I dir`, `--include-path=dir`,
/// `--include-path dir`), in order.
///
/// ```
/// let o = ["-Ia", "-DX", "--include-path=b", "-I", "c"];
/// assert_eq!(cuda_embed_source::options::include_dirs(&o), [std::path::PathBuf::from("a"), "b".into(), "c".into()]);
/// ```
pub fn include_dirs<S: AsRef<str>>(options: &[S]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut opts = options.iter().map(AsRef::as_ref);
    while let Some(o) = opts.next() {
        let dir = if o == "-I" || o == "--include-path" {
            opts.next()
        } else {
            o.strip_prefix("--include-path=").or_else(|| o.strip_prefix("-I"))
        };
        dirs.extend(dir.filter(|d| !d.is_empty()).map(PathBuf::from));
    }
    dirs
}

/// The variable naming the CUTLASS/CuTe include directory that `cutlass = true` uses
/// (`scripts/with-cuda --with-cutlass` sets it).
pub const CUTLASS_DIR_VAR: &str = "CUDA_EMBED_CUTLASS_DIR";

/// The command that installs the pinned CUTLASS headers, for error messages.
pub const CUTLASS_INSTALL: &str = "scripts/with-cuda --with-cutlass cargo build";

/// Whether `dir` is a CUTLASS include directory: it holds `cutlass/version.h` and
/// `cute/config.hpp`. Its headers are versioned as a whole (see [`cutlass_identity`]), like the
/// toolkit's, rather than hashed one by one for every build.
pub fn is_cutlass_include_dir(dir: &Path) -> bool {
    dir.join("cutlass/version.h").is_file() && dir.join("cute/config.hpp").is_file()
}

/// The CUTLASS include directory `cutlass = true` uses: `CUDA_EMBED_CUTLASS_DIR`, which must be
/// one ([`is_cutlass_include_dir`]). The error says what is missing and how to install it.
pub fn cutlass_include_dir() -> Result<PathBuf, String> {
    let how = format!(
        "run `{CUTLASS_INSTALL}` (it installs the pinned `nvidia-cutlass` wheel's headers into .cuda/cutlass/include \
         and sets {CUTLASS_DIR_VAR}), or set {CUTLASS_DIR_VAR} to a CUTLASS include directory (the one holding \
         cutlass/ and cute/)"
    );
    match std::env::var_os(CUTLASS_DIR_VAR).filter(|v| !v.is_empty()) {
        None => Err(format!("`cutlass = true` needs the CUTLASS headers and {CUTLASS_DIR_VAR} is not set: {how}")),
        Some(d) => {
            let dir = PathBuf::from(d);
            if is_cutlass_include_dir(&dir) {
                Ok(dir)
            } else {
                Err(format!(
                    "`cutlass = true`: {CUTLASS_DIR_VAR} is `{}`, which holds no cutlass/version.h and cute/config.hpp: {how}",
                    dir.display()
                ))
            }
        }
    }
}

/// What stands for every header of the CUTLASS include directories among `include_dirs` in a
/// cache key: each directory with the bytes of its `cutlass/version.h`. A pinned install is never
/// edited in place (a new pin is a new install), so its version is its content, as the nvcc
/// version is the toolkit's; hashing its several hundred headers at every build would cost more
/// than the rest of a cache hit.
pub fn cutlass_identity(include_dirs: &[PathBuf]) -> Vec<String> {
    include_dirs
        .iter()
        .filter(|d| is_cutlass_include_dir(d))
        .map(|d| {
            let version = std::fs::read(d.join("cutlass/version.h")).unwrap_or_default();
            format!("cutlass={} version.h={}", d.display(), crate::key::hex(&crate::key::sha256(&version)))
        })
        .collect()
}

/// The headers that `options` include before the source, in order: NVRTC's and nvcc's
/// `--pre-include=H` / `-include=H`, and the same with the name as the next option. The compiler
/// reads them as if the source began with `#include "H"` for each; a cache key covers them as it
/// does the source's own includes ([`crate::includes::Scanner::scan_unit`]).
///
/// ```
/// let o = ["-DX", "--pre-include=a.cuh", "-include", "b.cuh", "-include=c.cuh", "--pre-include", "d.cuh", "-I."];
/// assert_eq!(cuda_embed_source::options::pre_includes(&o), ["a.cuh", "b.cuh", "c.cuh", "d.cuh"]);
/// ```
pub fn pre_includes<S: AsRef<str>>(options: &[S]) -> Vec<String> {
    let mut headers = Vec::new();
    let mut opts = options.iter().map(AsRef::as_ref);
    while let Some(o) = opts.next() {
        let header = if o == "--pre-include" || o == "-include" {
            opts.next()
        } else {
            o.strip_prefix("--pre-include=").or_else(|| o.strip_prefix("-include="))
        };
        headers.extend(header.filter(|h| !h.is_empty()).map(str::to_string));
    }
    headers
}

/// The variables naming a CUDA toolkit root, in the order they are consulted:
/// `CUDA_EMBED_TOOLKIT` (cuda-embed's own: `scripts/with-cuda` sets only this one, so switching
/// between it and plain cargo does not make cudarc's build script, which watches `CUDA_PATH` and
/// `CUDA_HOME`, rebuild cudarc and everything above it), then `CUDA_PATH`, then `CUDA_HOME`.
pub const TOOLKIT_ROOT_VARS: [&str; 3] = ["CUDA_EMBED_TOOLKIT", "CUDA_PATH", "CUDA_HOME"];

/// The toolkit roots named by [`TOOLKIT_ROOT_VARS`] that are set and not empty, in that order.
/// Callers add their own fixed fallbacks (`/usr/local/cuda`, `PATH`).
pub fn toolkit_roots() -> Vec<PathBuf> {
    TOOLKIT_ROOT_VARS.iter().filter_map(|v| std::env::var_os(v).filter(|s| !s.is_empty()).map(PathBuf::from)).collect()
}

/// The include directories of the CUDA toolkit NVRTC needs for headers that are not built in
/// (e.g. `cuda_fp16.h` pulls in `nv/target` from CCCL): `include/` (and `include/cccl/` when
/// present) of the first of [`toolkit_roots`] and `/usr/local/cuda` that has `cuda_fp16.h`.
/// Empty when none does.
pub fn toolkit_include_dirs() -> Vec<PathBuf> {
    let mut roots = toolkit_roots();
    roots.push(PathBuf::from("/usr/local/cuda"));
    for root in roots {
        let inc = root.join("include");
        if inc.join("cuda_fp16.h").is_file() {
            let cccl = inc.join("cccl");
            let mut dirs = vec![inc];
            if cccl.is_dir() {
                dirs.push(cccl);
            }
            return dirs;
        }
    }
    Vec::new()
}

/// Whether `dir` is a CUDA toolkit (or CCCL) include directory, whose headers are versioned with
/// the compiler.
pub fn is_toolkit_include_dir(dir: &Path) -> bool {
    ["cuda_runtime_api.h", "cuda_fp16.h", "nv/target"].iter().any(|f| dir.join(f).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parsing() {
        assert_eq!(Arch::parse("sm_90a").unwrap(), Arch { number: 90, suffix: "a".into() });
        assert_eq!(Arch::parse("80").unwrap().sm(), "sm_80");
        assert_eq!(Arch::parse("compute_100f").unwrap().compute(), "compute_100f");
        assert!(Arch::parse("52").unwrap_err().contains("unknown GPU architecture `52`"));
        assert!(Arch::parse("90x").is_err());
        assert!(Arch::parse("abc").is_err());
        assert_eq!(
            DEFAULT_ARCHS.iter().map(|a| Arch::parse(a).map(|a| a.sm())).collect::<Result<Vec<_>, _>>().unwrap(),
            ["sm_80", "sm_90"]
        );
    }

    #[test]
    fn gencode_puts_ptx_on_lowest_arch() {
        let archs = [Arch::parse("90").unwrap(), Arch::parse("80").unwrap(), Arch::parse("sm_90").unwrap()];
        let a = nvcc_args(&archs, &[], &[]);
        assert_eq!(a.args, ["-gencode=arch=compute_80,code=[sm_80,compute_80]", "-gencode=arch=compute_90,code=sm_90"]);
        assert_eq!(a.targets, ["sm_80", "sm_90", "compute_80"]);
        let none = nvcc_args(&[], &[], &["-x".into()]);
        assert_eq!((none.args, none.targets), (vec!["-x".to_string()], vec![]));
    }

    #[test]
    fn nvrtc_options_keep_the_users_order() {
        let o = nvrtc_args(80, &["-DA", "--use_fast_math"]);
        assert_eq!(o[0], "--gpu-architecture=sm_80");
        assert_eq!(o[o.len() - 2..], ["-DA", "--use_fast_math"]);
        assert!(o[1..o.len() - 2].iter().all(|i| i.starts_with("--include-path=")));
    }

    #[test]
    fn nvcc_flags_are_spelled_for_nvrtc_and_arch_suffixes_kept() {
        let o = nvrtc_options(&["-expt-relaxed-constexpr", "--expt-relaxed-constexpr", "-default-device", "-DA"]);
        assert_eq!(o, ["-default-device", "-DA"], "one -default-device");
        assert_eq!(
            nvrtc_options(&["--expt-extended-lambda", "-arch=sm_100f", "--gpu-architecture=sm_80"]),
            ["--gpu-architecture=sm_80"]
        );
        let a = nvrtc_args(100, &["-arch=sm_100f", "--gpu-architecture=sm_90a"]);
        assert_eq!(a[0], "--gpu-architecture=sm_100f");
        assert!(!a.iter().any(|x| x.contains("sm_90a")));
        assert_eq!(arch_option("--gpu-architecture=sm_90"), None);
        assert_eq!(arch_option("--gpu-architecture=compute_90a"), None);
        assert_eq!(nvcc_only(&["-expt-extended-lambda"]), Some("-expt-extended-lambda"));
    }

    #[test]
    fn toolkit_dirs_are_recognised() {
        let d = tempfile::tempdir().unwrap();
        assert!(!is_toolkit_include_dir(d.path()));
        std::fs::write(d.path().join("cuda_runtime_api.h"), "").unwrap();
        assert!(is_toolkit_include_dir(d.path()));
        assert!(include_dirs(&["-I", ""]).is_empty());
    }
}

//! Build-script helper of [cuda-embed](https://docs.rs/cuda-embed): compiles a crate's kernels in
//! parallel before rustc expands its macros, and moves the build cache between machines.
//!
//! rustc expands proc macros one after another, so each `cuda_kernel!` of a crate pays its
//! compile in turn, on one core. A build script that calls [`prebuild()`] first finds every
//! `cuda_kernel!`, `elementwise_kernel!`, `reduction_kernel!` and `fuse!` in the package's
//! sources and runs each one's own expansion (the macro core's: the same front end, the same
//! cache key, the same compile), one per core, into the build cache; the macros then find every
//! module there and only generate code.
//!
//! ```toml
//! [build-dependencies]
//! cuda-embed-build = "0.1"
//! ```
//!
//! ```no_run
//! // build.rs: `fn main() { cuda_embed_build::prebuild(); }`
//! cuda_embed_build::prebuild();
//! ```
//!
//! Nothing else changes: without a build script the macros compile each module themselves, as
//! before; a kernel edited after the prebuild, or one it did not find (in a `macro_rules!`, in
//! a file outside `src/`, `tests/`, `examples/`, `benches/`), is compiled by its macro; an image
//! in the cache is the one its key names. A prebuild that cannot run (no CUDA compiler, a file
//! that is not Rust tokens) says so in one warning and leaves those modules to the macros.
//! `CUDA_EMBED_NO_PREBUILD=1` turns it off.
//!
//! The `cuda-embed-build` command (this crate's binary) does the same from the
//! command line, and exports the cache entries a crate uses to one file and imports them
//! elsewhere (a CI cache): see the guide's "Parallel and shared builds".

#![warn(missing_docs)]

use cuda_embed_macros_core::prebuild;
use std::path::{Path, PathBuf};

pub use cuda_embed_macros_core::prebuild::Report;

/// The variable that turns the prebuild off (`1`): the macros then compile every module
/// themselves.
pub const NO_PREBUILD_VAR: &str = "CUDA_EMBED_NO_PREBUILD";

/// The package folders whose `.rs` files are scanned: `src`, `tests`, `examples`, `benches`.
pub const SOURCE_DIRS: [&str; 4] = ["src", "tests", "examples", "benches"];

/// What the build script's choices depend on: a change of any of them runs it again.
const ENV_VARS: [&str; 12] = [
    NO_PREBUILD_VAR,
    "CUDA_EMBED_CACHE_DIR",
    "CUDA_EMBED_ARCHS",
    "CUDA_EMBED_NO_NVCC",
    "CUDA_EMBED_FORCE_NVRTC",
    "CUDA_EMBED_TOOLKIT",
    "CUDA_EMBED_NVRTC",
    "NVCC",
    "CUDA_PATH",
    "CUDA_HOME",
    "NVCC_APPEND_FLAGS",
    "NVCC_PREPEND_FLAGS",
];

/// Prebuilds the kernels of the package whose build script calls it, one compile per core; see
/// the crate docs. Prints cargo's `rerun-if-changed` lines for the source folders (so the
/// script runs again when a kernel changes) and at most one `cargo:warning` when something kept
/// it from prebuilding; writes its report to `$OUT_DIR/cuda-embed-prebuild.txt`. Never fails the
/// build.
///
/// A build script that prints any `rerun-if-changed` line is run again only when those paths
/// change, no longer on any change in the package: a build script that also does other work
/// and relied on that default names its own inputs too.
pub fn prebuild() -> Report {
    Prebuild::new().run()
}

/// A prebuild with its settings: [`prebuild()`] is `Prebuild::new().run()`.
#[derive(Debug, Clone)]
pub struct Prebuild {
    manifest_dir: PathBuf,
    dirs: Vec<PathBuf>,
    jobs: usize,
    cargo: bool,
}

impl Default for Prebuild {
    fn default() -> Self {
        Prebuild::new()
    }
}

impl Prebuild {
    /// The package of `CARGO_MANIFEST_DIR` (the current folder outside cargo), its
    /// [`SOURCE_DIRS`], one compile per core, with cargo's build-script output.
    pub fn new() -> Prebuild {
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        Prebuild::package(manifest_dir)
    }

    /// The package at `manifest_dir` (the folder of its `Cargo.toml`), its [`SOURCE_DIRS`].
    pub fn package(manifest_dir: impl Into<PathBuf>) -> Prebuild {
        // Absolute as rustc's paths are (the workspace root joined with the file), not
        // canonical: the include directory the macro passes (the Rust file's folder) is in the key.
        let manifest_dir = manifest_dir.into();
        let manifest_dir = std::path::absolute(&manifest_dir).unwrap_or(manifest_dir);
        let dirs = SOURCE_DIRS.iter().map(|d| manifest_dir.join(d)).filter(|d| d.is_dir()).collect();
        Prebuild { manifest_dir, dirs, jobs: 0, cargo: std::env::var_os("OUT_DIR").is_some() }
    }

    /// Scans `dir` (relative to the package, or absolute) too.
    pub fn dir(mut self, dir: impl AsRef<Path>) -> Prebuild {
        self.dirs.push(self.manifest_dir.join(dir));
        self
    }

    /// Runs `jobs` compiles at once (`0`, the default: one per core, `std::thread::available_parallelism`).
    pub fn jobs(mut self, jobs: usize) -> Prebuild {
        self.jobs = jobs;
        self
    }

    /// Whether to print cargo's build-script lines (`rerun-if-changed`, `warning`); on by default
    /// in a build script (where `OUT_DIR` is set).
    pub fn cargo_output(mut self, on: bool) -> Prebuild {
        self.cargo = on;
        self
    }

    /// The `.rs` files it scans.
    pub fn files(&self) -> Vec<PathBuf> {
        self.dirs.iter().flat_map(|d| prebuild::scan::rust_files(d)).collect()
    }

    /// Prebuilds; see [`prebuild()`].
    pub fn run(self) -> Report {
        let off = std::env::var(NO_PREBUILD_VAR).is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
        let report = if off {
            Report { skipped: Some(format!("{NO_PREBUILD_VAR} is set")), ..Report::default() }
        } else {
            prebuild::prebuild(&self.files(), &self.manifest_dir, self.jobs)
        };
        if self.cargo {
            for line in self.cargo_lines(&report, off) {
                println!("{line}");
            }
            if let Some(out) = std::env::var_os("OUT_DIR") {
                let _ = std::fs::write(Path::new(&out).join("cuda-embed-prebuild.txt"), format!("{report}\n"));
            }
        }
        report
    }

    /// The build-script lines for `report`: when to run again, and at most one warning (none
    /// when the prebuild was turned off on purpose, `off`).
    fn cargo_lines(&self, report: &Report, off: bool) -> Vec<String> {
        let mut lines: Vec<String> =
            self.dirs.iter().map(|d| format!("cargo:rerun-if-changed={}", d.display())).collect();
        lines.extend(ENV_VARS.iter().map(|v| format!("cargo:rerun-if-env-changed={v}")));
        if let Some(why) = report.skipped.as_ref().filter(|_| !off) {
            lines.push(format!(
                "cargo:warning=cuda-embed-build: no prebuild ({why}); the kernel macros compile their modules themselves"
            ));
        } else if !report.unreadable.is_empty() {
            lines.push(format!(
                "cargo:warning=cuda-embed-build: could not read {} (their kernels are compiled by the macros, one at a time)",
                report.unreadable.join("; ")
            ));
        }
        lines
    }
}

/// Runs the prebuild of the package at `manifest_dir` while recording the cache entries it hits
/// or writes (after a build, all hits: the entries the package's kernels use), and writes them to
/// the bundle file `out` ([`cuda_embed_source::cache::export`]). Run it in the environment of
/// the build (the same `CUDA_EMBED_ARCHS`, compiler, checkout folder), since the keys are computed
/// from it.
pub fn export(
    manifest_dir: &Path,
    out: &Path,
    jobs: usize,
) -> Result<(Report, cuda_embed_source::cache::Moved), String> {
    let rec = cuda_embed_source::cache::Recording::start();
    let report = Prebuild::package(manifest_dir).jobs(jobs).cargo_output(false).run();
    let used = rec.finish();
    if let Some(why) = &report.skipped {
        return Err(format!("nothing to export: {why}"));
    }
    let moved = cuda_embed_source::cache::export(&used, out).map_err(|e| format!("cannot export: {e}"))?;
    Ok((report, moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_when_it_cannot_prebuild_none_when_turned_off() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        let p = Prebuild::package(dir.path());
        let warnings = |r: &Report, off| {
            let lines = p.cargo_lines(r, off);
            assert!(lines.contains(&format!("cargo:rerun-if-changed={}", dir.path().join("src").display())));
            assert!(lines.contains(&format!("cargo:rerun-if-env-changed={NO_PREBUILD_VAR}")));
            lines.into_iter().filter(|l| l.starts_with("cargo:warning=")).collect::<Vec<_>>()
        };
        let no_compiler = Report { skipped: Some("no nvcc found and no libnvrtc".into()), ..Report::default() };
        let w = warnings(&no_compiler, false);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("no prebuild (no nvcc found and no libnvrtc)"), "{w:?}");
        assert!(warnings(&no_compiler, true).is_empty(), "turned off on purpose: no warning");
        let unreadable = Report { unreadable: vec!["a.rs: bad".into(), "b.rs: bad".into()], ..Report::default() };
        let w = warnings(&unreadable, false);
        assert_eq!(w.len(), 1, "one warning for every unreadable file");
        assert!(w[0].contains("a.rs: bad; b.rs: bad"), "{w:?}");
        assert!(warnings(&Report::default(), false).is_empty());
    }
}

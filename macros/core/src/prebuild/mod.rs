//! Prebuilding a crate's kernels in parallel, before rustc expands its macros one after another.
//!
//! rustc expands proc macros in sequence, so a crate with many kernel macros pays each compile
//! in turn, on one core. A prebuild (from a build script: the `cuda-embed-build` crate) finds
//! the crate's kernel macro invocations ([`scan`]) and runs each one's own expansion (the very
//! function the proc macro calls: the same front end, the same cache key, the same compile),
//! several at once, one per core. That fills the build cache; the macros then find every module
//! there. Nothing about the result changes: the macro computes its key from its input and
//! compiles on a miss, so a kernel edited after the prebuild (or one the prebuild missed) is
//! compiled by the macro itself, and an image in the cache is always the one its key names.

pub mod scan;

use crate::oracle::{nvcc, nvrtc};
use scan::Invocation;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a prebuild did.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Invocations found.
    pub found: usize,
    /// Of them, the ones whose expansion reported an error (the macro reports it again).
    pub failed: usize,
    /// Files that could not be read or tokenized, with why (their invocations are left to the
    /// macros).
    pub unreadable: Vec<String>,
    /// Why nothing was compiled, when nothing was (no CUDA compiler).
    pub skipped: Option<String>,
    /// How long it took.
    pub elapsed: Duration,
    /// How many ran at once.
    pub jobs: usize,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(why) = &self.skipped {
            return write!(f, "prebuild skipped: {why}");
        }
        write!(
            f,
            "prebuilt {} kernel macro invocations in {:.2} s, {} at a time",
            self.found,
            self.elapsed.as_secs_f64(),
            self.jobs
        )?;
        if self.failed > 0 {
            write!(f, " ({} with errors, which the macros report)", self.failed)?;
        }
        Ok(())
    }
}

/// One invocation to prebuild: the `index`-th of its file. Tokens cannot cross threads (and the
/// lines of their spans are kept per thread), so each worker tokenizes the files it needs once.
#[derive(Debug, Clone)]
pub struct Job {
    /// The file: its path, the name rustc gives it, its text.
    pub file: Arc<scan::File>,
    /// Which of the file's invocations.
    pub index: usize,
}

/// The invocations in the files `files` of the package at `manifest_dir`, and the files that
/// could not be read or tokenized, with why.
pub fn scan_files(files: &[PathBuf], manifest_dir: &Path) -> (Vec<Job>, Vec<String>) {
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    for f in files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                unreadable.push(format!("{}: {e}", f.display()));
                continue;
            }
        };
        // Cheap first: most files name no kernel macro.
        if !scan::MACROS.iter().any(|m| text.contains(m.name())) {
            continue;
        }
        let file = Arc::new(scan::File { path: f.clone(), rustc_name: scan::rustc_name(f, manifest_dir), text });
        match file.invocations() {
            Ok(inv) => found.extend((0..inv.len()).map(|index| Job { file: file.clone(), index })),
            Err(why) => unreadable.push(why),
        }
    }
    (found, unreadable)
}

/// Why there is no compiler to prebuild with (the macros then embed the source for NVRTC at
/// first use, which costs nothing at build time), or `None` when there is one.
pub fn no_compiler() -> Option<String> {
    let nvcc = match nvcc::find_nvcc() {
        Ok(Ok(_)) => return None,
        Ok(Err(why)) => why.to_string(),
        Err(e) => e,
    };
    match nvrtc::find_nvrtc() {
        Ok(Ok(_)) => None,
        Ok(Err(why)) | Err(why) => Some(format!("{nvcc} and {why}")),
    }
}

/// Expands every invocation, `jobs` at a time (`0`: one per core), filling the build cache.
/// Never panics on the caller: an expansion that panics counts as failed.
pub fn run(invocations: &[Job], jobs: usize) -> Report {
    let t0 = Instant::now();
    let jobs = match jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, invocations.len().max(1));
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(0usize);
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                // This thread's tokens of each file it has met, by the file's address.
                let mut tokenized: HashMap<*const scan::File, Vec<Invocation>> = HashMap::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = invocations.get(i) else { break };
                    let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let here = tokenized
                            .entry(Arc::as_ptr(&job.file))
                            .or_insert_with(|| job.file.invocations().unwrap_or_default());
                        here.get(job.index).is_some_and(|inv| !inv.expand().to_string().contains("compile_error"))
                    }));
                    if !ok.unwrap_or(false) {
                        *failed.lock().unwrap_or_else(|p| p.into_inner()) += 1;
                    }
                }
            });
        }
    });
    Report {
        found: invocations.len(),
        failed: failed.into_inner().unwrap_or_else(|p| p.into_inner()),
        unreadable: Vec::new(),
        skipped: None,
        elapsed: t0.elapsed(),
        jobs,
    }
}

/// Prebuilds the kernel macro invocations in `files` of the package at `manifest_dir`, `jobs`
/// at a time (`0`: one per core); with no compiler, does nothing and says why.
pub fn prebuild(files: &[PathBuf], manifest_dir: &Path, jobs: usize) -> Report {
    let t0 = Instant::now();
    if let Some(why) = no_compiler() {
        return Report { skipped: Some(why), ..Report::default() };
    }
    let (found, unreadable) = scan_files(files, manifest_dir);
    let mut report = run(&found, jobs);
    report.unreadable = unreadable;
    report.elapsed = t0.elapsed();
    report
}

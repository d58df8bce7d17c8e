//! Autotuning: `cuda_kernel!(..., tune = { ... })` builds every variant of a template kernel at
//! build time, and `NAME::tuned(&stream, args...)` launches the fastest one for the device and
//! the problem size, timing them at first use and remembering the choice.
//!
//! # What decides which variant runs
//!
//! A call looks up its key — the device (ordinal in this process), the key arguments rounded up
//! to a power of two (or exact, `bucket = "exact"`) — in the kernel's in-memory table: one
//! read-locked hash lookup, then the plain launch of the chosen variant. On a miss, in order:
//!
//! 1. records given to [`load_records`] (e.g. `include_str!` of an [`export`]ed file) or read
//!    from the file named by `CUDA_EMBED_TUNE_RECORDS`;
//! 2. the record on disk under [`records_dir`] (`<cache dir>/tune/`, next to the build cache);
//! 3. with tuning off ([`set_enabled`]`(false)` or `CUDA_EMBED_TUNE=off`): the first listed
//!    variant, nothing recorded;
//! 4. else every variant is timed on the real arguments (one launch each to warm up, then seven
//!    rounds over all variants, each sample enough launches for about 100 us, the median kept),
//!    each sample's launches queued behind a blocking kernel so that the GPU runs them back to
//!    back and the time is the kernels' own, not the launch path's ([`time_queued`]),
//!    on scratch copies of the output buffers (see [`Tuner`] for how the user's buffers are
//!    protected); the fastest wins, is written to disk and a line is logged to stderr (unless
//!    [`set_logging`]`(false)`).
//!
//! A record's identity is the kernel's name, the hash of its source and tune declaration, the
//! device (name, compute capability, SM count, driver version) and the bucketed key: a changed
//! kernel, another GPU or a new driver is tuned again. [`records`] returns every record this
//! process tuned, read or was given — the table of what was tried and what won.
//!
//! ```no_run
//! // Ship the choices with the program: export once on the target GPU...
//! cuda_embed_runtime::tune::export("tune-records.txt")?;
//! // ...and load them at start-up in production, so nothing is ever timed there:
//! // `tune::load_records(include_str!("../tune-records.txt"))?`, here from the file:
//! cuda_embed_runtime::tune::load_records_file("tune-records.txt")?;
//! # Ok::<(), cuda_embed_runtime::Error>(())
//! ```

pub mod expr;
pub mod queued;
pub mod record;
mod tuner;

#[cfg(test)]
mod tests;

pub use expr::{Op, Scalar};
pub use queued::{time_queued, Queued};
pub use record::{Device, Record};
pub use tuner::{bucket, TuneSpec, Tuner, Variant, MAX_KEY};

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

/// The variable that turns tuning off: `CUDA_EMBED_TUNE=off` (or `0`, `false`, `no`).
pub const TUNE_VAR: &str = "CUDA_EMBED_TUNE";
/// The variable naming a records file loaded at the first miss: `CUDA_EMBED_TUNE_RECORDS=path`.
pub const RECORDS_VAR: &str = "CUDA_EMBED_TUNE_RECORDS";

// 0: not set by the API (the environment decides); 1: on; 2: off.
static ENABLED: AtomicU8 = AtomicU8::new(0);
static LOGGING: AtomicU8 = AtomicU8::new(0);

/// Turns tuning on or off for this process, overriding `CUDA_EMBED_TUNE`. Off, a tuned launch
/// uses the recorded variant (given, from `CUDA_EMBED_TUNE_RECORDS` or on disk), else the first
/// listed one, and never times anything.
///
/// ```
/// cuda_embed_runtime::tune::set_enabled(false);
/// assert!(!cuda_embed_runtime::tune::enabled());
/// cuda_embed_runtime::tune::set_enabled(true);
/// ```
pub fn set_enabled(on: bool) {
    ENABLED.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

/// Whether a miss may be tuned: [`set_enabled`], else `CUDA_EMBED_TUNE` (on unless `off`, `0`,
/// `false` or `no`).
pub fn enabled() -> bool {
    match ENABLED.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => !std::env::var(TUNE_VAR)
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "false" | "no")),
    }
}

/// Turns the stderr line printed after each tuning on (default) or off.
pub fn set_logging(on: bool) {
    LOGGING.store(if on { 1 } else { 2 }, Ordering::Relaxed);
}

fn logging() -> bool {
    LOGGING.load(Ordering::Relaxed) != 2
}

/// Where tuning records are kept: the directory set by [`set_records_dir`], else `tune/` under
/// the cache directory ([`nvrtc::cache_dir`](crate::program::nvrtc::cache_dir): `CUDA_EMBED_CACHE_DIR`,
/// `$XDG_CACHE_HOME/cuda-embed`, `~/.cache/cuda-embed`).
pub fn records_dir() -> PathBuf {
    state::with(|s| s.dir.clone()).unwrap_or_else(|| crate::program::nvrtc::cache_dir().join("tune"))
}

/// Keeps tuning records in `dir` instead of [`records_dir`]'s default.
pub fn set_records_dir(dir: impl Into<PathBuf>) {
    let dir = dir.into();
    state::with(|s| s.dir = Some(dir));
}

/// Adds records (lines as [`export`] writes them; blank lines and `#` comments allowed) that
/// take precedence over records on disk, so a program can ship its choices:
/// `tune::load_records(include_str!("tune-records.txt"))`. Returns how many were read; a line
/// that is not a record is an error naming it, and nothing is added.
pub fn load_records(text: &str) -> Result<usize> {
    let records = record::parse_all(text).map_err(|line| Error::Tune {
        what: "the records given to `tune::load_records`".into(),
        cause: format!("line {line} is not a tuning record"),
        fix: Some("give the text of a file written by `tune::export`".into()),
    })?;
    let n = records.len();
    state::with(|s| {
        for r in records {
            s.given.insert(r.identity(), r);
        }
    });
    Ok(n)
}

/// [`load_records`] from a file.
pub fn load_records_file(path: impl AsRef<Path>) -> Result<usize> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| Error::Tune {
        what: format!("records file {}", path.display()),
        cause: e.to_string(),
        fix: None,
    })?;
    load_records(&text).map_err(|e| match e {
        Error::Tune { cause, fix, .. } => Error::Tune { what: format!("records file {}", path.display()), cause, fix },
        e => e,
    })
}

/// Every record this process knows: given ([`load_records`], `CUDA_EMBED_TUNE_RECORDS`),
/// tuned here, or read from disk here; sorted by kernel, device and key.
pub fn records() -> Vec<Record> {
    let mut out: Vec<Record> = state::with(|s| s.given.values().chain(s.seen.values()).cloned().collect());
    sort_dedup(&mut out);
    out
}

fn sort_dedup(out: &mut Vec<Record>) {
    out.sort_by_key(Record::identity);
    out.dedup_by_key(|r| r.identity());
}

/// Writes every record of [`records`] and every valid record under [`records_dir`] to `path`,
/// one line each (atomically: a temporary file and a rename). Returns how many were written.
pub fn export(path: impl AsRef<Path>) -> Result<usize> {
    let path = path.as_ref();
    let mut all = records();
    all.extend(record::Store::new(records_dir()).all());
    sort_dedup(&mut all);
    let mut text = String::from("# cuda-embed tuning records: load with cuda_embed::tune::load_records\n");
    for r in &all {
        text.push_str(&r.to_line());
        text.push('\n');
    }
    record::write_atomic(path, &text).map_err(|e| Error::Tune {
        what: format!("records file {}", path.display()),
        cause: format!("cannot write it: {e}"),
        fix: None,
    })?;
    Ok(all.len())
}

/// The process-wide part: records given and seen, device identities, the records directory.
mod state {
    use super::record::{Device, Record, Store};
    use crate::error::Result;
    use cudarc::driver::CudaContext;
    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub(super) struct State {
        pub(super) given: HashMap<String, Record>,
        pub(super) seen: HashMap<String, Record>,
        devices: HashMap<usize, Device>,
        pub(super) dir: Option<PathBuf>,
        env_loaded: bool,
    }

    static STATE: Mutex<Option<State>> = Mutex::new(None);

    pub(super) fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
        let mut g = STATE.lock().unwrap_or_else(|p| p.into_inner());
        f(g.get_or_insert_with(State::default))
    }

    /// The identity of `ctx`'s device, read once per ordinal.
    pub(super) fn device(ctx: &Arc<CudaContext>) -> Result<Device> {
        if let Some(d) = with(|s| s.devices.get(&ctx.ordinal()).cloned()) {
            return Ok(d);
        }
        let d = super::tuner::read_device(ctx)?;
        with(|s| s.devices.insert(ctx.ordinal(), d.clone()));
        Ok(d)
    }

    /// The record of `identity`: given, from `CUDA_EMBED_TUNE_RECORDS`, or on disk.
    pub(super) fn recorded(identity: &str) -> Option<Record> {
        let env_file = with(|s| {
            if s.env_loaded {
                None
            } else {
                s.env_loaded = true;
                std::env::var_os(super::RECORDS_VAR).filter(|v| !v.is_empty())
            }
        });
        if let Some(file) = env_file {
            if let Err(e) = super::load_records_file(&file) {
                eprintln!("cuda-embed tune: {} ignored: {e}", super::RECORDS_VAR);
            }
        }
        if let Some(r) = with(|s| s.given.get(identity).or_else(|| s.seen.get(identity)).cloned()) {
            return Some(r);
        }
        let r = Store::new(super::records_dir()).read(identity)?;
        with(|s| s.seen.insert(identity.to_string(), r.clone()));
        Some(r)
    }

    /// Drops the record of `identity` from memory (given and seen): it named a variant that
    /// cannot launch. One on disk is left to be replaced by the next tuning of its key.
    pub(super) fn forget(identity: &str) {
        with(|s| {
            s.given.remove(identity);
            s.seen.remove(identity);
        });
    }

    /// Keeps a new record in memory and on disk; the file, when it could be written.
    pub(super) fn remember(r: Record) -> Option<PathBuf> {
        let store = Store::new(super::records_dir());
        let file = match store.write(&r) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("cuda-embed tune: cannot write the record under {}: {e}", store.dir().display());
                None
            }
        };
        with(|s| s.seen.insert(r.identity(), r));
        file
    }
}

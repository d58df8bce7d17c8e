//! Crates outside the workspace that some tests build with cargo (`downstream.rs`,
//! `cudarc_features.rs`), set up so the test suite stays affordable on a small machine:
//!
//! - one target folder for all of them (`CARGO_TARGET_TMPDIR/scratch-target`), so the
//!   dependencies they share (syn, cudarc, the cuda-embed crates) are built once, not once per
//!   scratch crate; cargo's lock on the folder also keeps two such builds from running at once on
//!   the same two cores;
//! - no debug information (nothing here is debugged; it is most of the disk a debug build takes);
//! - a line on the terminal before each build, written past the test harness's output capture,
//!   so a minute of cargo does not look like a hang.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target folder every scratch crate builds into.
pub fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("scratch-target")
}

/// `cargo <args>` in the scratch crate at `dir`, building into [`target_dir`] without debug
/// information, with the outer cargo's settings for this workspace removed.
pub fn cargo(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    c.args(args).current_dir(dir).env("CARGO_TARGET_DIR", target_dir()).env("CARGO_PROFILE_DEV_DEBUG", "false");
    for var in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME", "CARGO_PRIMARY_PACKAGE", "CARGO_CRATE_NAME"] {
        c.env_remove(var);
    }
    c
}

/// Writes `line` to the terminal now, whether or not the harness captures the test's output
/// (it captures `print!`/`eprint!`, not writes to the stderr handle).
pub fn progress(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Writes `text` to `path` unless it already holds exactly that (so cargo sees no change).
pub fn write(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

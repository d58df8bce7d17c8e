//! Tuning records: what was chosen for one kernel, device and problem-size class, as one
//! human-readable line, and the directory that keeps them.
//!
//! # Format
//!
//! One record is one line of ` | `-separated `name=value` fields in a fixed order:
//!
//! ```text
//! cuda-embed-tune v1 | kernel=scale | source=3f2a9c1b7d4e8a60 | device=NVIDIA H100 80GB HBM3 | cc=9.0 | sms=132 | driver=13000 | key=n=1048576 | winner=BLOCK=256 ITEMS=2 | times_us=12.10 10.42 ...
//! ```
//!
//! The first seven fields after the magic are the record's identity ([`Record::identity`]); the
//! winner is named by its template values (not an index), `times_us` lists the median time of
//! each variant in declaration order (`-` for one that could not launch). A file of records
//! (an export, or the text given to [`load_records`](super::load_records)) is such lines; blank
//! lines and lines starting with `#` are ignored.
//!
//! # On disk
//!
//! [`Store`]: one file per identity, `<dir>/<16 hex digits of its SHA-256>.tune`, written to a
//! temporary file in the same directory and renamed into place, so concurrent processes never
//! see a torn record and two processes tuning the same key simply leave the last one's result.
//! A file that does not parse, or whose identity is not the one looked up, is a miss: the key is
//! tuned again and the file overwritten.

use cuda_embed_source::key::{hex, sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &str = "cuda-embed-tune v1";

/// The device a record was tuned on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Device {
    /// The driver's name for it (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability, `(9, 0)`.
    pub cc: (i32, i32),
    /// Number of streaming multiprocessors.
    pub sms: i32,
    /// The driver's CUDA version, `13000` for 13.0.
    pub driver: i32,
}

/// One tuning result: which variant won for a kernel, a device and a key.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The kernel's C++ name.
    pub kernel: String,
    /// Hash of the kernel's source and tune declaration (a changed kernel is tuned again).
    pub source: String,
    /// Where it was tuned.
    pub device: Device,
    /// The key values as `name=value` (bucketed), in declaration order.
    pub key: Vec<(String, i64)>,
    /// The winner's label (`BLOCK=256 ITEMS=2`).
    pub winner: String,
    /// Median time of each variant in microseconds, in declaration order; `None` for a variant
    /// that could not launch.
    pub times_us: Vec<Option<f64>>,
}

impl Record {
    /// The fields that identify what was tuned (everything but the result), as one string.
    pub fn identity(&self) -> String {
        identity(&self.kernel, &self.source, &self.device, &self.key)
    }

    /// The record as one line (no newline).
    pub fn to_line(&self) -> String {
        let times: Vec<String> =
            self.times_us.iter().map(|t| t.map_or_else(|| "-".to_string(), |t| format!("{t:.2}"))).collect();
        format!("{} | winner={} | times_us={}", self.identity(), clean(&self.winner), times.join(" "))
    }

    /// Parses one line written by [`Record::to_line`]; `None` for anything else.
    pub fn parse(line: &str) -> Option<Record> {
        let mut fields = line.trim().split(" | ");
        if fields.next()? != MAGIC {
            return None;
        }
        let mut field = |name: &str| fields.next()?.strip_prefix(name)?.strip_prefix('=').map(str::to_string);
        let kernel = field("kernel")?;
        let source = field("source")?;
        let name = field("device")?;
        let (major, minor) = field("cc")?.split_once('.').map(|(a, b)| (a.parse().ok(), b.parse().ok()))?;
        let sms = field("sms")?.parse().ok()?;
        let driver = field("driver")?.parse().ok()?;
        let key_text = field("key")?;
        let winner = field("winner")?;
        let times_text = field("times_us")?;
        if fields.next().is_some() || kernel.is_empty() || winner.is_empty() {
            return None;
        }
        let mut key = Vec::new();
        for kv in key_text.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=')?;
            key.push((k.to_string(), v.parse().ok()?));
        }
        let mut times_us = Vec::new();
        for t in times_text.split(' ').filter(|s| !s.is_empty()) {
            times_us.push(if t == "-" { None } else { Some(t.parse().ok()?) });
        }
        let device = Device { name, cc: (major?, minor?), sms, driver };
        Some(Record { kernel, source, device, key, winner, times_us })
    }
}

/// The identity string of a record (see [`Record::identity`]).
pub fn identity(kernel: &str, source: &str, device: &Device, key: &[(String, i64)]) -> String {
    let key: Vec<String> = key.iter().map(|(k, v)| format!("{}={v}", clean(k))).collect();
    format!(
        "{MAGIC} | kernel={} | source={} | device={} | cc={}.{} | sms={} | driver={} | key={}",
        clean(kernel),
        clean(source),
        clean(&device.name),
        device.cc.0,
        device.cc.1,
        device.sms,
        device.driver,
        key.join(",")
    )
}

/// A field value with the separators a line cannot hold replaced.
fn clean(s: &str) -> String {
    s.replace(" | ", " / ").replace(['\n', '\r', '|'], " ")
}

/// Parses a file of records: one per line, blank lines and `#` comments ignored. Errors name the
/// first line that is not a record (1-based).
pub fn parse_all(text: &str) -> Result<Vec<Record>, usize> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        out.push(Record::parse(t).ok_or(i + 1)?);
    }
    Ok(out)
}

/// One directory of records, one file per identity.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Records under `dir` (created at the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the record with this identity.
    pub fn path(&self, identity: &str) -> PathBuf {
        let h = hex(&sha256(identity.as_bytes()));
        self.dir.join(format!("{}.tune", &h[..16]))
    }

    /// The record with this identity, if its file holds exactly that record.
    pub fn read(&self, identity: &str) -> Option<Record> {
        let text = std::fs::read_to_string(self.path(identity)).ok()?;
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let r = Record::parse(lines.next()?)?;
        (lines.next().is_none() && r.identity() == identity).then_some(r)
    }

    /// Writes `record` atomically (a temporary file in the same directory, then a rename),
    /// replacing any earlier or corrupt record of the same identity. Returns the file.
    pub fn write(&self, record: &Record) -> std::io::Result<PathBuf> {
        let file = self.path(&record.identity());
        write_atomic(&file, &format!("{}\n", record.to_line()))?;
        Ok(file)
    }

    /// Every valid record in the directory (files that do not parse are skipped).
    pub fn all(&self) -> Vec<Record> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "tune") {
                if let Some(r) = std::fs::read_to_string(&p).ok().and_then(|t| Record::parse(t.lines().next()?)) {
                    if self.path(&r.identity()) == p {
                        out.push(r);
                    }
                }
            }
        }
        out
    }
}

/// Writes `text` to `file` through a uniquely named temporary file in the same directory and a
/// rename, so a reader sees the old content or the new, never a mix.
pub fn write_atomic(file: &Path, text: &str) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("records");
    let tmp =
        dir.join(format!(".{name}.{}.{nanos}.{}.tmp", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, file)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

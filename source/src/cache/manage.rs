//! Managing the cache as a whole: its size cap with least-recently-used eviction, [`usage`] and
//! [`clear`], the private temporary fallback directory, and the one warning a process prints
//! when the cache cannot be used. Which files are entries, and why they are told by name and
//! header: see the parent module's docs.

use super::{root, BUILD_SUBDIR, LINK_SUBDIR, NVRTC_SUBDIR};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

/// The environment variable that sets the cache's size cap: bytes, or a number with a `K`, `M`
/// or `G` suffix (powers of 1024); `0` turns the cap off.
pub const MAX_VAR: &str = "CUDA_EMBED_CACHE_MAX";

const DEFAULT_MAX: u64 = 2 << 30;

/// The subdirectories of the cache root that hold entries (the others are left alone).
const SUBDIRS: [&str; 3] = [BUILD_SUBDIR, NVRTC_SUBDIR, LINK_SUBDIR];

/// The cache's size cap in bytes ([`MAX_VAR`], default 2 GiB); `None` when turned off. A value
/// that cannot be read is reported once and the default used.
///
/// ```
/// assert!(cuda_embed_source::cache::max_bytes().is_none_or(|b| b > 0));
/// ```
pub fn max_bytes() -> Option<u64> {
    match std::env::var(MAX_VAR) {
        Err(_) => Some(DEFAULT_MAX),
        Ok(v) => match parse_size(&v) {
            Some(0) => None,
            Some(n) => Some(n),
            None => {
                warn_once(&format!(
                    "cuda-embed: {MAX_VAR}={v:?} is not a size (write bytes, or a number with K, M or G, or 0 for \
                     no cap); using 2G"
                ));
                Some(DEFAULT_MAX)
            }
        },
    }
}

/// `"512M"` -> 536870912; `None` for anything else than digits with an optional K/M/G.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, shift) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 10),
        b'm' | b'M' => (&s[..s.len() - 1], 20),
        b'g' | b'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(1u64 << shift)
}

/// What the cache holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// The cache root ([`root`]).
    pub root: PathBuf,
    /// Number of entries.
    pub entries: u64,
    /// Their total size in bytes.
    pub bytes: u64,
    /// The size cap in bytes ([`max_bytes`]), `None` when off.
    pub max_bytes: Option<u64>,
}

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cap = self.max_bytes.map_or("no cap".to_string(), |m| format!("cap {:.1} MiB", m as f64 / 1048576.0));
        write!(f, "{}: {} entries, {:.1} MiB ({cap})", self.root.display(), self.entries, self.bytes as f64 / 1048576.0)
    }
}

/// What the cache at [`root`] holds (build-time and run-time entries together).
///
/// ```
/// let u = cuda_embed_source::cache::usage();
/// println!("{u}");
/// ```
pub fn usage() -> Usage {
    usage_of(root(), max_bytes())
}

pub(crate) fn usage_of(root: PathBuf, max_bytes: Option<u64>) -> Usage {
    let files: Vec<_> = entries(&root).into_iter().filter(|f| is_entry(&f.0)).collect();
    Usage { entries: files.len() as u64, bytes: files.iter().map(|f| f.1).sum(), max_bytes, root }
}

/// Deletes every entry under [`root`] (what [`usage`] counts), returning how many bytes were
/// freed. Entries other processes are writing at the same moment may survive; modules already
/// loaded in running processes are not affected.
///
/// ```no_run
/// let freed = cuda_embed_source::cache::clear()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn clear() -> std::io::Result<u64> {
    clear_in(&root())
}

pub(crate) fn clear_in(root: &Path) -> std::io::Result<u64> {
    let mut freed = 0;
    for (path, len, _) in entries(root).into_iter().filter(|f| is_entry(&f.0)) {
        match std::fs::remove_file(&path) {
            Ok(()) => freed += len,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(freed)
}

/// Deletes the least recently used entries of the cache that holds `dir` until it is below 90%
/// of [`max_bytes`]. Safe to run from several processes at once: a file another process
/// removed first is skipped, and a reader that loses the race sees a miss.
pub fn evict(dir: &Path) {
    if let Some(max) = max_bytes() {
        evict_to(dir, max);
    }
}

pub(crate) fn evict_to(dir: &Path, max: u64) {
    // `dir` is `<root>/build`, `<root>/nvrtc` or `<root>/link` (or a Store's own directory): the
    // cap covers its parent's entry folders.
    let base = dir.parent().filter(|_| SUBDIRS.iter().any(|s| dir.ends_with(s))).unwrap_or(dir);
    let mut files = if base == dir { files_in(dir) } else { entries(base) };
    // Files named like entries first (one `stat` each); their headers only when over the cap.
    if files.iter().map(|f| f.1).sum::<u64>() <= max {
        return;
    }
    files.retain(|f| is_entry(&f.0));
    let total: u64 = files.iter().map(|f| f.1).sum();
    if total <= max {
        return;
    }
    files.sort_by_key(|f| f.2);
    let target = max / 10 * 9;
    let mut now = total;
    for (path, len, _) in files {
        if now <= target {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            now -= len;
        }
    }
}

/// Marks an entry as used now (its modification time), for eviction order.
pub(crate) fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// How stale an entry's last-use time may get before a hit refreshes it: the eviction order is
/// kept to the minute, and a hit on an entry used in the last minute costs no extra system calls
/// (a cache hit is on the path of every first launch of an NVRTC-compiled module).
const TOUCH_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// The bytes of the entry file at `path` and its last-use time (modification time), read through
/// one open file.
pub(crate) fn read_entry(path: &Path) -> Option<(Vec<u8>, SystemTime)> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    // Exactly the size `fstat` gave, in one `read` of the whole size: entries are written whole
    // and renamed into place, so the open file never changes size, and a file edited in place is
    // caught by the entry's hash. `read_to_end` would add a `read` that returns end-of-file, read
    // in 8 KiB steps at first, and (on the `File` itself) ask the size again.
    let len = usize::try_from(meta.len()).ok()?;
    let mut bytes = vec![0u8; len];
    (&f).read_exact(&mut bytes).ok()?;
    Some((bytes, meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
}

/// Marks the entry at `path` as used now, unless it was used within [`TOUCH_AFTER`].
pub(crate) fn touch_if_old(path: &Path, last_used: SystemTime) {
    if SystemTime::now().duration_since(last_used).is_ok_and(|age| age < TOUCH_AFTER) {
        return;
    }
    touch(path);
}

/// `(path, bytes, last used)` of every file named like an entry in `root`'s entry folders (see
/// [`files_in`]).
fn entries(root: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    SUBDIRS.iter().flat_map(|s| files_in(&root.join(s))).collect()
}

/// `(path, bytes, last used)` of every plain file in `dir` named like an entry
/// ([`entry_key`]); whether it is one is [`is_entry`]'s business. Links are not followed (a
/// directory entry's metadata is the link's own), so a link is never counted or deleted.
fn files_in(dir: &Path) -> Vec<(PathBuf, u64, SystemTime)> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| {
            entry_key(Path::new(&e.file_name()))?;
            let m = e.metadata().ok()?;
            m.is_file().then(|| (e.path(), m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
        })
        .collect()
}

/// The key of a file named like a cache entry, `<key>.<extension>` (both non-empty, the key
/// without a `.`, as [`Store::path`](super::Store::path) makes them); `None` for any other name,
/// among them the `.tmpXXXX` files of writes in progress.
fn entry_key(file: &Path) -> Option<&str> {
    let name = file.file_name()?.to_str()?;
    let (key, extension) = name.split_once('.')?;
    (!key.is_empty() && !extension.is_empty()).then_some(key)
}

/// The start of the first line of every cache entry format cuda-embed has written (`v2`, `v3`,
/// `v4`, ...), followed by the version's digits.
const HEADER_PREFIX: &[u8] = b"cuda-embed cache entry v";

/// Whether the file at `path` is a cache entry: named like one ([`entry_key`]) and beginning
/// with an entry header of any version whose `key` line is that name's key (see the module
/// docs). Reads the first line or two, not the entry.
pub(crate) fn is_entry(path: &Path) -> bool {
    use std::io::Read as _;
    let Some(key) = entry_key(path) else { return false };
    // The header line (a version of a few digits) and the key line.
    let want = HEADER_PREFIX.len() + 8 + "\nkey ".len() + key.len() + 1;
    let Ok(f) = std::fs::File::open(path) else { return false };
    let mut head = Vec::with_capacity(want);
    if f.take(want as u64).read_to_end(&mut head).is_err() {
        return false;
    }
    let Some(rest) = head.strip_prefix(HEADER_PREFIX) else { return false };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return false;
    }
    let expected = [b"\nkey ", key.as_bytes(), b"\n"].concat();
    rest[digits..].starts_with(&expected)
}

/// Prints `message` on stderr if this process has printed no cache warning yet.
pub(crate) fn warn_once(message: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("{message}");
    }
}

/// `cuda-embed-<uid>` under the system temporary directory, created mode 0700. A directory of
/// that name owned by another user, or open to other users, is refused (anyone could plant a
/// binary there): a fresh private directory is used instead, so nothing is cached across runs,
/// with one warning. So is the case where this process's user cannot be found out (no shared
/// directory whose owner is unchecked).
pub(crate) fn private_temp_root() -> PathBuf {
    private_temp_root_in(&std::env::temp_dir(), current_uid())
}

/// [`private_temp_root`] under `tmp` for the user `uid` (`None`: not known).
pub(crate) fn private_temp_root_in(tmp: &Path, uid: Option<u32>) -> PathBuf {
    let Some(uid) = uid else {
        if cfg!(unix) {
            warn_once(&format!(
                "cuda-embed: cannot tell which user this process runs as, so no shared cache directory in {} \
                 is trusted; caching for this process only (set CUDA_EMBED_CACHE_DIR or HOME)",
                tmp.display()
            ));
            return fresh_private_dir(tmp);
        }
        // Elsewhere (Windows) the temporary directory is the user's own.
        return tmp.join("cuda-embed");
    };
    let dir = tmp.join(format!("cuda-embed-{uid}"));
    match check_private(&dir, uid) {
        Ok(()) => dir,
        Err(why) => {
            warn_once(&format!(
                "cuda-embed: not using {} as the cache ({why}); set CUDA_EMBED_CACHE_DIR or HOME",
                dir.display()
            ));
            fresh_private_dir(tmp)
        }
    }
}

/// A new directory under `tmp` that only this user can use (mode 0700), kept after the process.
/// When none can be made, a path below a device file, where nothing can be created: caching is
/// then off (with the cache's warning on the first write), never done in a directory another
/// user controls.
fn fresh_private_dir(tmp: &Path) -> PathBuf {
    let mut builder = tempfile::Builder::new();
    builder.prefix("cuda-embed-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Created with this mode (less the umask), not changed to it after.
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder.tempdir_in(tmp).map(|d| d.keep()).unwrap_or_else(|_| PathBuf::from("/dev/null/cuda-embed"))
}

/// The user this process runs as: the owner of its own `/proc` entry (Linux), else the owner of
/// a file it creates (any Unix); `None` when neither can be read.
#[cfg(unix)]
pub(crate) fn current_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid()).or_else(|| uid_of_new_file(&std::env::temp_dir()))
}

/// The owner of a new (unnamed, removed at once) file in `dir`: the process's effective user.
#[cfg(unix)]
pub(crate) fn uid_of_new_file(dir: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    tempfile::tempfile_in(dir).and_then(|f| f.metadata()).ok().map(|m| m.uid())
}

#[cfg(not(unix))]
pub(crate) fn current_uid() -> Option<u32> {
    None
}

/// Creates `dir` private to `uid`, or checks that the existing one is.
#[cfg(unix)]
pub(crate) fn check_private(dir: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create it: {e}")),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    if !m.is_dir() {
        return Err("it is not a directory".into());
    }
    if m.uid() != uid {
        return Err(format!("it belongs to user {}, not to this user ({uid})", m.uid()));
    }
    if m.permissions().mode() & 0o077 != 0 {
        return Err(format!("other users can use it (mode {:o})", m.permissions().mode() & 0o777));
    }
    Ok(())
}

#[cfg(not(unix))]
pub(crate) fn check_private(_dir: &Path, _uid: u32) -> Result<(), String> {
    Ok(())
}

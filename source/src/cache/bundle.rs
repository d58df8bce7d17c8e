//! One file that carries cache entries between machines (a CI cache), and the record of which
//! entries a build used.
//!
//! A bundle is a text header line per entry followed by the entry file's bytes, as written:
//!
//! ```text
//! cuda-embed cache bundle v1
//! entry <subdir> <file name> <length>
//! <bytes of the entry file>
//! end <checksum of every byte before this line, 16 hex digits>
//! ```
//!
//! [`import`] checks everything before it writes anything: the bundle's own checksum, then each
//! entry as [`Store::read`](super::Store::read) would (the current entry format, filed under the
//! key of its own name, its trailer checksum right), and refuses a bundle with any fault: it
//! changes nothing then. An imported entry is then an ordinary entry: keyed by everything that
//! changes the code (the compiler's version, every argument, the host compiler, the source), so
//! on a machine with another toolkit it is a miss, never a wrong image; and a miss too when a
//! header it was built from differs there.

use super::{checksum, parse, root, BUILD_SUBDIR, LINK_SUBDIR, NVRTC_SUBDIR};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

const MAGIC: &str = "cuda-embed cache bundle v1";

/// The entry folders a bundle may hold entries of.
const SUBDIRS: [&str; 3] = [BUILD_SUBDIR, NVRTC_SUBDIR, LINK_SUBDIR];

static RECORDING: AtomicBool = AtomicBool::new(false);
static USED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Notes that the entry file `path` was read (a hit) or written, while a [`Recording`] runs.
pub(crate) fn note_used(path: &Path) {
    if RECORDING.load(Ordering::Relaxed) {
        USED.lock().unwrap_or_else(|p| p.into_inner()).push(path.to_path_buf());
    }
}

/// The entry files this process hits or writes from [`Recording::start`] to
/// [`Recording::finish`], from every thread (one recording at a time per process; a second
/// `start` joins the first).
///
/// ```
/// use cuda_embed_source::cache::{Entry, Recording, Store};
/// let dir = tempfile::tempdir()?;
/// let store = Store::new(dir.path().join("build"), "bin");
/// let rec = Recording::start();
/// store.write_atomic("k1", &Entry::default())?;
/// assert!(store.read("k1").is_some());
/// assert_eq!(rec.finish(), vec![store.path("k1")]);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Recording(());

impl Recording {
    /// Starts recording.
    pub fn start() -> Recording {
        USED.lock().unwrap_or_else(|p| p.into_inner()).clear();
        RECORDING.store(true, Ordering::Relaxed);
        Recording(())
    }

    /// Stops recording; the entry files used, each once, sorted.
    pub fn finish(self) -> Vec<PathBuf> {
        RECORDING.store(false, Ordering::Relaxed);
        let mut used = std::mem::take(&mut *USED.lock().unwrap_or_else(|p| p.into_inner()));
        used.sort();
        used.dedup();
        used
    }
}

/// What [`export`] or [`import`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Moved {
    /// Entries written (to the bundle, or into the cache).
    pub entries: usize,
    /// Entries an import found already in the cache, byte for byte, and left alone.
    pub present: usize,
    /// Their bytes.
    pub bytes: u64,
}

impl std::fmt::Display for Moved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} entries, {:.1} MiB", self.entries, self.bytes as f64 / 1048576.0)?;
        if self.present > 0 {
            write!(f, " ({} already in the cache)", self.present)?;
        }
        Ok(())
    }
}

/// Writes the entry files `files` (paths in a cache's entry folders, e.g. from a
/// [`Recording`]) into one bundle file at `out` (written whole, then renamed into place). A file
/// that is not a valid entry of the current format is refused: nothing is written then.
pub fn export(files: &[PathBuf], out: &Path) -> std::io::Result<Moved> {
    let bad = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    let mut body = format!("{MAGIC}\n").into_bytes();
    let mut moved = Moved::default();
    for file in files {
        let (subdir, name) = place(file).ok_or_else(|| {
            bad(format!("{} is not in a cache entry folder ({})", file.display(), SUBDIRS.join(", ")))
        })?;
        let bytes = std::fs::read(file).map_err(|e| bad(format!("cannot read {}: {e}", file.display())))?;
        check_entry(&name, &bytes)
            .map_err(|why| bad(format!("{} is not a valid cache entry: {why}", file.display())))?;
        body.extend_from_slice(format!("entry {subdir} {name} {}\n", bytes.len()).as_bytes());
        body.extend_from_slice(&bytes);
        body.push(b'\n');
        moved.entries += 1;
        moved.bytes += bytes.len() as u64;
    }
    let sum = checksum(&body);
    body.extend_from_slice(format!("end {}\n", super::hex(&sum.to_be_bytes())).as_bytes());
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, &body)?;
    tmp.persist(out).map_err(|e| e.error)?;
    Ok(moved)
}

/// Imports the bundle at `bundle` into the cache at [`root`]: see [`import_into`].
pub fn import(bundle: &Path) -> Result<Moved, String> {
    import_into(bundle, &root())
}

/// Writes every entry of the bundle at `bundle` into its folder under the cache root `root`,
/// after checking all of them (see the module docs): a foreign, truncated or corrupt bundle, or
/// one entry that is not a whole entry of the current format under its own key, is refused with
/// the reason, and nothing is written. An entry already present with the same bytes is left
/// alone.
pub fn import_into(bundle: &Path, root: &Path) -> Result<Moved, String> {
    let bytes = std::fs::read(bundle).map_err(|e| format!("cannot read {}: {e}", bundle.display()))?;
    let refuse = |why: String| format!("{} is refused, nothing was imported: {why}", bundle.display());
    let entries = parse_bundle(&bytes).map_err(refuse)?;
    let mut moved = Moved::default();
    for (subdir, name, entry) in entries {
        let dir = root.join(subdir);
        let file = dir.join(name);
        if std::fs::read(&file).is_ok_and(|b| b == entry) {
            moved.present += 1;
            continue;
        }
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
            std::io::Write::write_all(&mut tmp, entry)?;
            tmp.persist(&file).map_err(|e| e.error)?;
            Ok(())
        };
        write().map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        moved.entries += 1;
        moved.bytes += entry.len() as u64;
    }
    for s in SUBDIRS {
        super::evict(&root.join(s));
    }
    Ok(moved)
}

/// One entry of a bundle: its folder, its file name, its bytes.
type BundleEntry<'a> = (&'static str, &'a str, &'a [u8]);

/// Every entry of a bundle, all checked; or what is wrong.
fn parse_bundle(bytes: &[u8]) -> Result<Vec<BundleEntry<'_>>, String> {
    let foreign = || "it is not a cuda-embed cache bundle (made with `cuda-embed-build export`)".to_string();
    if !bytes.starts_with(MAGIC.as_bytes()) || bytes.get(MAGIC.len()) != Some(&b'\n') {
        return Err(if bytes.starts_with(b"cuda-embed cache bundle v") {
            "it is a bundle of another cuda-embed version's format".into()
        } else {
            foreign()
        });
    }
    let body_len = bytes.len().checked_sub(1).filter(|&n| bytes[n] == b'\n').ok_or("it is truncated")?;
    let trailer_at = bytes[..body_len].iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
    let sum = bytes[trailer_at..body_len]
        .strip_prefix(b"end ")
        .and_then(|h| std::str::from_utf8(h).ok())
        .and_then(|h| u64::from_str_radix(h, 16).ok().filter(|_| h.len() == 16))
        .ok_or("it is truncated (no end line)")?;
    let mut rest = &bytes[MAGIC.len() + 1..trailer_at];
    if checksum(&bytes[..trailer_at]) != sum {
        return Err("its contents do not match their checksum (corrupt or altered)".into());
    }
    let mut out = Vec::new();
    while !rest.is_empty() {
        let at = rest.iter().position(|&b| b == b'\n').ok_or("a malformed entry line")?;
        let header = std::str::from_utf8(&rest[..at]).map_err(|_| "a malformed entry line")?;
        let mut words = header.split(' ');
        let (Some("entry"), Some(subdir), Some(name), Some(len), None) =
            (words.next(), words.next(), words.next(), words.next(), words.next())
        else {
            return Err(format!("a malformed entry line `{header}`"));
        };
        let subdir = SUBDIRS.into_iter().find(|s| *s == subdir).ok_or_else(|| format!("an entry in `{subdir}`"))?;
        let len: usize = len.parse().map_err(|_| format!("a malformed entry line `{header}`"))?;
        let body = &rest[at + 1..];
        if body.len() <= len || body[len] != b'\n' {
            return Err(format!("entry {name} is truncated"));
        }
        let entry = &body[..len];
        check_entry(name, entry).map_err(|why| format!("entry {subdir}/{name} {why}"))?;
        out.push((subdir, name, entry));
        rest = &body[len + 1..];
    }
    Ok(out)
}

/// Whether `bytes` is a whole entry of the current format filed under the key of `name`
/// (`<key>.<extension>`, a plain file name).
fn check_entry(name: &str, bytes: &[u8]) -> Result<(), String> {
    let key = name
        .split_once('.')
        .map(|s| s.0)
        .filter(|k| !k.is_empty() && !name.contains(['/', '\\', '\0']) && !name.starts_with('.'))
        .ok_or_else(|| format!("has a name (`{name}`) that is not `<key>.<extension>`"))?;
    if !name.ends_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(format!("has a name (`{name}`) that is not `<key>.<extension>`"));
    }
    parse(bytes, key).map(drop).map_err(|why| format!("is not a valid cache entry: {why}"))
}

/// `(entry folder, file name)` of an entry file in a cache's entry folders.
fn place(file: &Path) -> Option<(&'static str, String)> {
    let name = file.file_name()?.to_str()?.to_string();
    let dir = file.parent()?.file_name()?.to_str()?;
    Some((SUBDIRS.into_iter().find(|s| *s == dir)?, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{Entry, Store};

    fn cache_with(keys: &[&str]) -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join(BUILD_SUBDIR), "bin");
        let files = keys
            .iter()
            .map(|k| {
                let e =
                    Entry { blobs: vec![k.as_bytes().repeat(100)], strings: vec![format!("ptx {k}")], deps: vec![] };
                store.write_atomic(k, &e).unwrap()
            })
            .collect();
        (dir, files)
    }

    #[test]
    fn export_then_import_elsewhere_gives_the_same_entries() {
        let (from, files) = cache_with(&["aa11", "bb22"]);
        let bundle = from.path().join("kernels.cache");
        let moved = export(&files, &bundle).unwrap();
        assert_eq!((moved.entries, moved.present), (2, 0));
        let to = tempfile::tempdir().unwrap();
        let got = import_into(&bundle, to.path()).unwrap();
        assert_eq!((got.entries, got.present), (2, 0));
        let store = Store::new(to.path().join(BUILD_SUBDIR), "bin");
        assert_eq!(store.read("aa11"), Store::new(from.path().join(BUILD_SUBDIR), "bin").read("aa11"));
        assert!(store.read("bb22").is_some());
        let again = import_into(&bundle, to.path()).unwrap();
        assert_eq!((again.entries, again.present), (0, 2), "a second import writes nothing");
    }

    #[test]
    fn a_corrupt_or_foreign_bundle_is_refused_and_changes_nothing() {
        let (from, files) = cache_with(&["aa11", "bb22"]);
        let bundle = from.path().join("kernels.cache");
        export(&files, &bundle).unwrap();
        let good = std::fs::read(&bundle).unwrap();
        let to = tempfile::tempdir().unwrap();
        let try_import = |bytes: &[u8]| {
            let f = to.path().join("in.cache");
            std::fs::write(&f, bytes).unwrap();
            let r = import_into(&f, &to.path().join("cache"));
            assert!(!to.path().join("cache").exists(), "a refused import wrote something");
            r.unwrap_err()
        };
        // One flipped byte inside an entry's fatbin.
        let mut flipped = good.clone();
        let at = flipped.len() / 2;
        flipped[at] ^= 1;
        assert!(try_import(&flipped).contains("checksum"), "{}", try_import(&flipped));
        assert!(try_import(&good[..good.len() - 10]).contains("truncated"));
        assert!(try_import(b"PK\x03\x04 a zip file").contains("not a cuda-embed cache bundle"));
        assert!(try_import(b"cuda-embed cache bundle v0\nend 0\n").contains("another cuda-embed version"));
        // A bundle whose own checksum is right but whose entry is not a valid entry (e.g. made by
        // hand): refused by the entry check.
        let mut body = format!("{MAGIC}\nentry build cc33.bin 5\nhello\n").into_bytes();
        body.extend_from_slice(format!("end {}\n", crate::key::hex(&checksum(&body).to_be_bytes())).as_bytes());
        assert!(try_import(&body).contains("not a valid cache entry"), "{}", try_import(&body));
        // An entry aimed outside the cache's folders.
        let mut body = format!("{MAGIC}\nentry ../etc x.bin 1\nx\n").into_bytes();
        body.extend_from_slice(format!("end {}\n", crate::key::hex(&checksum(&body).to_be_bytes())).as_bytes());
        assert!(try_import(&body).contains("an entry in `../etc`"));
    }

    #[test]
    fn export_refuses_files_that_are_not_entries() {
        let (from, mut files) = cache_with(&["aa11"]);
        let stray = from.path().join(BUILD_SUBDIR).join("notes.txt");
        std::fs::write(&stray, "not an entry").unwrap();
        files.push(stray);
        let bundle = from.path().join("kernels.cache");
        assert!(export(&files, &bundle).is_err());
        assert!(!bundle.exists());
    }
}

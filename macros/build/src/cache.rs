//! Where compiled code is cached, and the one format of a cache entry.
//!
//! # Location
//!
//! [`root`]: `CUDA_EMBED_CACHE_DIR` when set, else `$XDG_CACHE_HOME/cuda-embed`, else
//! `$HOME/.cache/cuda-embed`, else `cuda-embed` under the system temporary directory. Below it,
//! [`BUILD_SUBDIR`] (`build/`) holds nvcc results of the macro and [`NVRTC_SUBDIR`] (`nvrtc/`)
//! holds NVRTC cubins compiled at run time.
//!
//! # Entries
//!
//! A [`Store`] is one directory of entries with one file extension; an entry is an [`Entry`]
//! (binary blobs, strings and the files it was built from, each with the SHA-256 of its bytes)
//! filed under its key (see [`key`](crate::key)). [`Store::write_atomic`] writes a temporary file
//! in the same directory and renames it into place, so concurrent builds (parallel rustc
//! processes, several programs) never see a torn entry. [`Store::read`] returns an entry only when
//! its magic line, its recorded key, every length and its end marker are right and every
//! dependency still has the recorded hash: a missing, foreign, truncated or stale entry is a miss
//! (`None`), never an error, and the caller rebuilds and overwrites it.
//!
//! The file is a text header line per field followed by the field's raw bytes:
//!
//! ```text
//! cuda-embed cache entry v2
//! key <key>
//! dep <sha256 hex> <path length>
//! <path bytes>
//! str <length>
//! <bytes>
//! blob <length>
//! <bytes>
//! end
//! ```

use crate::key::{hex, sha256, Digest};
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &str = "cuda-embed cache entry v2";

/// The subdirectory of [`root`] holding the macro's nvcc builds.
pub const BUILD_SUBDIR: &str = "build";

/// The subdirectory of [`root`] holding NVRTC cubins compiled at run time.
pub const NVRTC_SUBDIR: &str = "nvrtc";

/// The directory cuda-embed caches compiled code in (see the module docs for the rules).
///
/// ```
/// let dir = cuda_embed_build::cache::root();
/// assert!(dir.ends_with("cuda-embed") || std::env::var_os("CUDA_EMBED_CACHE_DIR").is_some());
/// ```
pub fn root() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var("CUDA_EMBED_CACHE_DIR") {
        d
    } else if let Some(d) = var("XDG_CACHE_HOME") {
        d.join("cuda-embed")
    } else if let Some(h) = var("HOME") {
        h.join(".cache").join("cuda-embed")
    } else {
        std::env::temp_dir().join("cuda-embed")
    }
}

/// `<root>/build`: the macro's nvcc builds.
pub fn build_dir() -> PathBuf {
    root().join(BUILD_SUBDIR)
}

/// `<root>/nvrtc`: NVRTC cubins compiled at run time.
pub fn nvrtc_dir() -> PathBuf {
    root().join(NVRTC_SUBDIR)
}

/// A file an entry was built from, with the SHA-256 of its bytes when the entry was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dep {
    /// The file (absolute, so the entry means the same from any working directory).
    pub path: PathBuf,
    /// SHA-256 of its bytes.
    pub sha256: Digest,
}

impl Dep {
    /// The file at `path` with its current hash; `None` when it cannot be read.
    pub fn of_file(path: impl Into<PathBuf>) -> Option<Dep> {
        let path = path.into();
        let bytes = std::fs::read(&path).ok()?;
        Some(Dep { sha256: sha256(&bytes), path })
    }

    /// Whether the file still has the recorded bytes.
    pub fn is_fresh(&self) -> bool {
        std::fs::read(&self.path).is_ok_and(|b| sha256(&b) == self.sha256)
    }
}

/// What a cache entry holds. What each blob and string means is the writer's business (e.g. a
/// cubin and its lowered symbols); readers check the shape they expect.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entry {
    /// Binary outputs (a fatbin, a cubin).
    pub blobs: Vec<Vec<u8>>,
    /// Text outputs (PTX, symbol names).
    pub strings: Vec<String>,
    /// Files the outputs were built from: the entry is stale once any of them changes.
    pub deps: Vec<Dep>,
}

/// One directory of cache entries, named `<key>.<extension>`.
///
/// ```
/// use cuda_embed_build::cache::{Entry, Store};
/// let dir = tempfile::tempdir()?;
/// let store = Store::new(dir.path(), "cubin");
/// let entry = Entry { blobs: vec![b"\x7fELF".to_vec()], strings: vec!["k".into()], deps: vec![] };
/// let file = store.write_atomic("0123abcd", &entry)?;
/// assert!(file.ends_with("0123abcd.cubin"));
/// assert_eq!(store.read("0123abcd"), Some(entry));
/// assert_eq!(store.read("ffff"), None);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    dir: PathBuf,
    extension: &'static str,
}

impl Store {
    /// Entries under `dir` (created on the first write), with file extension `extension`.
    pub fn new(dir: impl Into<PathBuf>, extension: &'static str) -> Store {
        Store { dir: dir.into(), extension }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the entry with `key`.
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.{}", self.extension))
    }

    /// Writes `entry` under `key` atomically (temporary file + rename), returning its file. A key
    /// that is not a plain file-name stem (empty, a path separator, `.`, a newline) is refused.
    pub fn write_atomic(&self, key: &str, entry: &Entry) -> std::io::Result<PathBuf> {
        if key.is_empty() || key.contains(['/', '\\', '.', '\n', '\0']) {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("`{key}` is not a cache key")));
        }
        std::fs::create_dir_all(&self.dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        {
            let mut w = std::io::BufWriter::new(tmp.as_file_mut());
            writeln!(w, "{MAGIC}\nkey {key}")?;
            for d in &entry.deps {
                let path = d.path.to_string_lossy();
                writeln!(w, "dep {} {}", hex(&d.sha256), path.len())?;
                w.write_all(path.as_bytes())?;
                w.write_all(b"\n")?;
            }
            for s in &entry.strings {
                writeln!(w, "str {}", s.len())?;
                w.write_all(s.as_bytes())?;
                w.write_all(b"\n")?;
            }
            for b in &entry.blobs {
                writeln!(w, "blob {}", b.len())?;
                w.write_all(b)?;
                w.write_all(b"\n")?;
            }
            w.write_all(b"end\n")?;
            w.flush()?;
        }
        let file = self.path(key);
        tmp.persist(&file).map_err(|e| e.error)?;
        Ok(file)
    }

    /// The entry under `key`, if there is a valid one whose dependencies are unchanged (see the
    /// module docs); anything else is `None`.
    pub fn read(&self, key: &str) -> Option<Entry> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        let entry = parse(&bytes, key)?;
        entry.deps.iter().all(Dep::is_fresh).then_some(entry)
    }
}

/// Parses an entry file written for `key`; `None` for anything malformed.
fn parse(bytes: &[u8], key: &str) -> Option<Entry> {
    let mut rest = bytes;
    let mut line = || -> Option<&str> {
        let at = rest.iter().position(|&b| b == b'\n')?;
        let l = std::str::from_utf8(&rest[..at]).ok()?;
        rest = &rest[at + 1..];
        Some(l)
    };
    if line()? != MAGIC || line()?.strip_prefix("key ")? != key {
        return None;
    }
    let mut entry = Entry::default();
    // Each field: a header line, then `len` raw bytes and a newline.
    fn take(rest: &mut &[u8], len: usize) -> Option<Vec<u8>> {
        if rest.len() <= len || rest[len] != b'\n' {
            return None;
        }
        let value = rest[..len].to_vec();
        *rest = &rest[len + 1..];
        Some(value)
    }
    loop {
        let at = rest.iter().position(|&b| b == b'\n')?;
        let header = std::str::from_utf8(&rest[..at]).ok()?.to_string();
        rest = &rest[at + 1..];
        let (tag, args) = header.split_once(' ').unwrap_or((header.as_str(), ""));
        match tag {
            "end" if args.is_empty() => return rest.is_empty().then_some(entry),
            "dep" => {
                let (hash, len) = args.split_once(' ')?;
                let sha = parse_digest(hash)?;
                let path = String::from_utf8(take(&mut rest, len.parse().ok()?)?).ok()?;
                entry.deps.push(Dep { path: PathBuf::from(path), sha256: sha });
            }
            "str" => entry.strings.push(String::from_utf8(take(&mut rest, args.parse().ok()?)?).ok()?),
            "blob" => entry.blobs.push(take(&mut rest, args.parse().ok()?)?),
            _ => return None,
        }
    }
}

fn parse_digest(hex: &str) -> Option<Digest> {
    if hex.len() != 64 {
        return None;
    }
    let mut d = [0u8; 32];
    for (i, byte) in d.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dir: &Path) -> Entry {
        let header = dir.join("h.cuh");
        std::fs::write(&header, "#define X 1\n").unwrap();
        Entry {
            blobs: vec![b"\x7fELF\n\0binary\nend\n".to_vec(), Vec::new()],
            strings: vec!["_Z1kv".into(), "multi\nline ptx".into(), String::new()],
            deps: vec![Dep::of_file(&header).unwrap()],
        }
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path().join("nvrtc"), "cubin");
        let entry = sample(d.path());
        let file = store.write_atomic("abc123", &entry).unwrap();
        assert_eq!(file, d.path().join("nvrtc/abc123.cubin"));
        assert_eq!(store.read("abc123"), Some(entry.clone()));
        // Overwriting is fine; no temporary files are left behind.
        store.write_atomic("abc123", &entry).unwrap();
        assert_eq!(std::fs::read_dir(store.dir()).unwrap().count(), 1);
        assert_eq!(store.read("abc123"), Some(entry));
        assert_eq!(Store::new(d.path().join("nvrtc"), "bin").read("abc123"), None, "other extension");
    }

    #[test]
    fn garbage_torn_and_foreign_entries_are_misses() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path(), "bin");
        let entry = sample(d.path());
        let file = store.write_atomic("k1", &entry).unwrap();
        let good = std::fs::read(&file).unwrap();
        // Every truncation (a torn write) is a miss.
        for len in 0..good.len() {
            std::fs::write(&file, &good[..len]).unwrap();
            assert_eq!(store.read("k1"), None, "truncated to {len} bytes");
        }
        // Trailing bytes, garbage, a wrong magic.
        std::fs::write(&file, [&good[..], b"x"].concat()).unwrap();
        assert_eq!(store.read("k1"), None);
        std::fs::write(&file, b"garbage").unwrap();
        assert_eq!(store.read("k1"), None);
        std::fs::write(&file, String::from_utf8_lossy(&good).replace("v2", "v1")).unwrap();
        assert_eq!(store.read("k1"), None);
        // An entry filed under another key's name (copied or renamed) is not that key's entry.
        std::fs::write(&file, &good).unwrap();
        std::fs::copy(&file, store.path("k2")).unwrap();
        assert_eq!(store.read("k2"), None);
        assert!(store.read("k1").is_some());
        // Keys that are not file names are refused.
        assert!(store.write_atomic("../x", &entry).is_err());
        assert!(store.write_atomic("", &entry).is_err());
    }

    #[test]
    fn a_changed_or_missing_dependency_is_a_miss() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path(), "bin");
        let entry = sample(d.path());
        store.write_atomic("k", &entry).unwrap();
        assert!(store.read("k").is_some());
        std::fs::write(d.path().join("h.cuh"), "#define X 2\n").unwrap();
        assert_eq!(store.read("k"), None, "a header's bytes changed");
        std::fs::write(d.path().join("h.cuh"), "#define X 1\n").unwrap();
        assert!(store.read("k").is_some(), "the same bytes again: a hit");
        std::fs::remove_file(d.path().join("h.cuh")).unwrap();
        assert_eq!(store.read("k"), None, "a header disappeared");
    }

    #[test]
    fn location_rules() {
        // One test owns the environment variables (tests run in parallel threads).
        let vars = ["CUDA_EMBED_CACHE_DIR", "XDG_CACHE_HOME", "HOME"];
        let saved: Vec<_> = vars.iter().map(std::env::var_os).collect();
        std::env::set_var("CUDA_EMBED_CACHE_DIR", "/c");
        std::env::set_var("XDG_CACHE_HOME", "/x");
        std::env::set_var("HOME", "/h");
        assert_eq!(root(), Path::new("/c"));
        assert_eq!(build_dir(), Path::new("/c/build"));
        assert_eq!(nvrtc_dir(), Path::new("/c/nvrtc"));
        std::env::set_var("CUDA_EMBED_CACHE_DIR", "");
        assert_eq!(root(), Path::new("/x/cuda-embed"));
        std::env::remove_var("XDG_CACHE_HOME");
        assert_eq!(root(), Path::new("/h/.cache/cuda-embed"));
        std::env::remove_var("HOME");
        assert_eq!(root(), std::env::temp_dir().join("cuda-embed"));
        for (v, s) in vars.iter().zip(saved) {
            match s {
                Some(s) => std::env::set_var(v, s),
                None => std::env::remove_var(v),
            }
        }
    }
}

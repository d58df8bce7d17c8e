//! Where compiled code is cached, and the one format of a cache entry.
//!
//! # Location
//!
//! [`root`]: `CUDA_EMBED_CACHE_DIR` when set, else `$XDG_CACHE_HOME/cuda-embed`, else
//! `$HOME/.cache/cuda-embed`, else `cuda-embed-<uid>` under the system temporary directory
//! (created private to the user, mode 0700; one owned by another user or open to others is
//! refused, and so is any shared name when the process's user cannot be found out: a fresh
//! private directory serves that process instead, with one warning, and when none can be made
//! caching is off). Below it, [`BUILD_SUBDIR`] (`build/`) holds
//! nvcc results of the macro, [`NVRTC_SUBDIR`] (`nvrtc/`) holds NVRTC cubins compiled at run
//! time and [`LINK_SUBDIR`] (`link/`) cubins linked at run time.
//!
//! # Size and management
//!
//! The cache is capped (default 2 GiB, `CUDA_EMBED_CACHE_MAX` in bytes or with a `K`/`M`/`G`
//! suffix, `0` for no cap): a hit refreshes its entry's modification time, and after each write
//! the least recently used entries are deleted until the cache is below 90% of the cap.
//! [`usage`] and [`clear`] report and empty it (`cuda-embed-cache usage|clear` on the command
//! line). Counting, eviction and clearing touch only the files the cache wrote itself, recognised
//! by name (`<key>.<extension>`) and by their entry header naming that key: other files in the
//! same folders (a CMake `build/` when the cache directory is a project's) are never counted or
//! deleted (see [below](#what-counts-as-an-entry)). A cache directory that cannot be written
//! (read-only, full) only costs time: the result is used uncached and one warning is printed per
//! process.
//!
//! # Moving entries between machines
//!
//! [`export`] writes entry files (those a [`Recording`] saw a build use) into one bundle file, and
//! [`import`] adds a bundle's entries to the cache after checking all of them (the bundle's
//! checksum, each entry's format, key and checksum): a foreign or corrupt bundle is refused and
//! changes nothing. Entries are keyed by everything that changes the code, so an imported entry
//! of another toolkit is a miss. `cuda-embed-build export|import` does both from the command line.
//!
//! # What counts as an entry
//!
//! The cache directories are often shared with other files: `CUDA_EMBED_CACHE_DIR=.` or
//! `Program::cache_dir(d)` can point at a project whose `build/` belongs to CMake. So counting,
//! eviction and [`clear`] only ever touch a file that the cache itself wrote, recognised by both
//! its name and its contents:
//!
//! - a plain file (not a link, not a directory) directly in `<root>/build`, `<root>/nvrtc` or
//!   `<root>/link`
//!   (or the directory a [`Store`] was given), named `<key>.<extension>` with a
//!   non-empty key and extension, the key without a `.` (the names
//!   [`Store::path`] makes; temporary files of writes in progress start with
//!   `.` and are not entries);
//! - that begins with an entry header of any format version, `cuda-embed cache entry v<N>`, and
//!   whose next line, `key <key>`, names the key of its own file name. Every format cuda-embed
//!   has written has this header, so the entries of older versions are recognised too, counted,
//!   and evicted or cleared like the current ones: existing caches need no migration (entries of
//!   the current format are read as before; older ones are misses that are rebuilt).
//!
//! A marker file in the entry directories (a `CACHEDIR.TAG`) was not chosen as the test: a marker
//! says who made a directory, not who wrote each file in it, and the directories in question are
//! exactly those that may hold other files (a `build/` that existed before the cache wrote to
//! it), while the caches written so far carry no marker. Only the header is read, not the whole
//! entry: a file that names itself in a cuda-embed entry header was written by cuda-embed (or
//! copied from its cache), and [`clear`] does not read gigabytes. The size cap first sums the
//! sizes of the files named like entries (one `stat` each, as before), and reads headers only
//! when that sum is over the cap.
//!
//! # Entries
//!
//! A [`Store`] is one directory of entries with one file extension; an entry is an [`Entry`]
//! (binary blobs, strings and the files it was built from, each with the SHA-256 of its bytes)
//! filed under its key (see [`key`](crate::key)). [`Store::write_atomic`] writes a temporary file
//! in the same directory and renames it into place, so concurrent builds (parallel rustc
//! processes, several programs) never see a torn entry. [`Store::read`] returns an entry only when
//! its magic line, its recorded key, every length, its end marker and the [`checksum`] of its
//! contents are right and every dependency still has the recorded hash: a missing, foreign,
//! truncated, corrupt or stale entry is a miss (`None`), never an error, and the caller rebuilds
//! and overwrites it. A corrupt entry (well-formed in places but not what was written) is also
//! reported on stderr ([`Store::lookup`] says which kind of miss it was).
//!
//! The file is a text header line per field followed by the field's raw bytes:
//!
//! ```text
//! cuda-embed cache entry v4
//! key <key>
//! dep <sha256 hex> <path length>
//! <path bytes>
//! str <length>
//! <bytes>
//! blob <length>
//! <bytes>
//! end <checksum of every byte before this line, 16 hex digits>
//! ```
//!
//! The trailer is a 64-bit [`checksum`] rather than a SHA-256: it is there to catch a file that
//! is not what was written (torn, truncated, edited in place, a disk error), not an adversary
//! (the cache directory is private to its user, and anyone who can write an entry can write the
//! code it holds), and a cache hit checks every byte of a cubin on a module's first launch,
//! where SHA-256 cost 3 us for a 4 KiB entry (SHA-NI; 0.7 ms for 1 MiB) plus its CPU feature
//! detection (two `cpuid`, each a trap to the hypervisor in a virtual machine). What an entry
//! is filed under is its writer's choice (content-addressed keys: see [`key`](crate::key)).

use crate::key::{hex, sha256, Digest};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

mod bundle;
mod manage;
pub use bundle::{export, import, import_into, Moved, Recording};
pub use manage::{clear, evict, max_bytes, usage, Usage, MAX_VAR};

const MAGIC: &str = "cuda-embed cache entry v4";

/// The subdirectory of [`root`] holding the macro's nvcc builds.
pub const BUILD_SUBDIR: &str = "build";

/// The subdirectory of [`root`] holding NVRTC cubins compiled at run time.
pub const NVRTC_SUBDIR: &str = "nvrtc";

/// The subdirectory of [`root`] holding cubins linked at run time (the runtime's `Linker`).
pub const LINK_SUBDIR: &str = "link";

/// The directory cuda-embed caches compiled code in (see the module docs for the rules).
///
/// ```
/// let dir = cuda_embed_source::cache::root();
/// assert!(dir.ends_with("cuda-embed") || std::env::var_os("CUDA_EMBED_CACHE_DIR").is_some());
/// ```
pub fn root() -> PathBuf {
    root_from(|name| std::env::var_os(name))
}

/// [`root`] with the environment given as a function (tests pass their own).
pub(crate) fn root_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let var = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = var("CUDA_EMBED_CACHE_DIR") {
        d
    } else if let Some(d) = var("XDG_CACHE_HOME") {
        d.join("cuda-embed")
    } else if let Some(h) = var("HOME") {
        h.join(".cache").join("cuda-embed")
    } else {
        manage::private_temp_root()
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
/// use cuda_embed_source::cache::{Entry, Store};
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
        // Joined by hand (one allocation of the final size, no formatting): a cache hit asks
        // for it on the first launch of a module.
        let dir = self.dir.as_os_str();
        let mut path = std::ffi::OsString::with_capacity(dir.len() + 1 + key.len() + 1 + self.extension.len());
        path.push(dir);
        if dir.as_encoded_bytes().last().is_some_and(|&b| !std::path::is_separator(char::from(b))) {
            path.push(std::path::MAIN_SEPARATOR_STR);
        }
        path.push(key);
        path.push(".");
        path.push(self.extension);
        PathBuf::from(path)
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
            w.flush()?;
        }
        // The trailer hashes everything before it, so a file altered in place is caught.
        let f = tmp.as_file_mut();
        f.seek(SeekFrom::Start(0))?;
        let mut written = Vec::new();
        f.read_to_end(&mut written)?;
        writeln!(f, "end {}", hex(&checksum(&written).to_be_bytes()))?;
        let file = self.path(key);
        tmp.persist(&file).map_err(|e| e.error)?;
        bundle::note_used(&file);
        evict(&self.dir);
        Ok(file)
    }

    /// [`write_atomic`](Self::write_atomic) for callers that go on without the cache when it
    /// cannot be written (read-only, full, refused): the first failure in a process prints one
    /// warning naming the directory and the cause; later ones are silent.
    pub fn write_or_warn(&self, key: &str, entry: &Entry) -> Option<PathBuf> {
        match self.write_atomic(key, entry) {
            Ok(f) => Some(f),
            Err(e) => {
                manage::warn_once(&format!(
                    "cuda-embed: cannot write the cache in {} ({e}); going on without caching (set \
                     CUDA_EMBED_CACHE_DIR to a writable directory)",
                    self.dir.display()
                ));
                None
            }
        }
    }

    /// The entry under `key`, if there is a valid one whose dependencies are unchanged (see the
    /// module docs); anything else is `None`. A hit marks the entry as recently used; a corrupt
    /// entry is reported on stderr.
    pub fn read(&self, key: &str) -> Option<Entry> {
        self.read_file(&self.path(key), key)
    }

    /// [`read`](Self::read) of the entry under `key` whose file, [`path`](Self::path)`(key)`,
    /// the caller already has.
    pub fn read_file(&self, file: &Path, key: &str) -> Option<Entry> {
        match Store::lookup_file(file, key) {
            Lookup::Hit(e) => Some(e),
            Lookup::Corrupt(why) => {
                eprintln!("cuda-embed: cache entry {} is corrupt ({why}); rebuilding it", file.display());
                None
            }
            Lookup::Missing | Lookup::Stale => None,
        }
    }

    /// What is filed under `key`, and if it cannot be used, why.
    pub fn lookup(&self, key: &str) -> Lookup {
        Store::lookup_file(&self.path(key), key)
    }

    /// [`lookup`](Self::lookup) of `key` in the entry file `path`.
    fn lookup_file(path: &Path, key: &str) -> Lookup {
        let Some((bytes, last_used)) = manage::read_entry(path) else { return Lookup::Missing };
        // Another version's entry (an older cuda-embed sharing the directory) is not corrupt:
        // it is replaced without a report.
        if !bytes.starts_with(MAGIC.as_bytes()) || bytes.get(MAGIC.len()) != Some(&b'\n') {
            return if bytes.starts_with(b"cuda-embed cache entry v") {
                Lookup::Missing
            } else {
                Lookup::Corrupt("not a cache entry")
            };
        }
        let entry = match parse(&bytes, key) {
            Ok(e) => e,
            Err(why) => return Lookup::Corrupt(why),
        };
        if !entry.deps.iter().all(Dep::is_fresh) {
            return Lookup::Stale;
        }
        manage::touch_if_old(path, last_used);
        bundle::note_used(path);
        Lookup::Hit(entry)
    }
}

/// The result of [`Store::lookup`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A valid entry whose dependencies are unchanged.
    Hit(Entry),
    /// No entry under the key (or one of another cuda-embed version's format).
    Missing,
    /// A valid entry, but a file it was built from changed or disappeared.
    Stale,
    /// A file that is not a whole, unaltered entry for this key (torn, truncated, edited,
    /// another key's, an older format); the text says what is wrong.
    Corrupt(&'static str),
}

/// Parses an entry file written for `key`; the error says what is malformed.
///
/// Byte compares and hand-read numbers only (no text conversion of the headers, no formatting):
/// a cache hit parses one entry on the first launch of a module, where every line of code run
/// for the first time in the process counts.
fn parse(bytes: &[u8], key: &str) -> Result<Entry, &'static str> {
    // The trailer first: `end <checksum of everything before it>` and nothing after.
    let body_len = bytes.len().checked_sub(1).filter(|&n| bytes[n] == b'\n').ok_or("no end line")?;
    let trailer_at = bytes[..body_len].iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
    let sum = bytes[trailer_at..body_len].strip_prefix(b"end ").and_then(parse_sum).ok_or("no end line with a hash")?;
    let mut rest = &bytes[..trailer_at];
    if checksum(rest) != sum {
        return Err("its contents do not match their hash");
    }
    if line(&mut rest) != Some(MAGIC.as_bytes()) {
        return Err("not a cache entry of this version");
    }
    if line(&mut rest).and_then(|l| l.strip_prefix(b"key ")) != Some(key.as_bytes()) {
        return Err("it is filed under another key");
    }
    let mut entry = Entry::default();
    while !rest.is_empty() {
        field(&mut rest, &mut entry).ok_or("a malformed field")?;
    }
    Ok(entry)
}

/// The next line of `rest` (without its newline), which moves past it.
fn line<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let at = rest.iter().position(|&b| b == b'\n')?;
    let (line, tail) = rest.split_at(at);
    *rest = &tail[1..];
    Some(line)
}

/// The next field of `rest` (a header line, then `len` raw bytes and a newline), added to `entry`.
fn field(rest: &mut &[u8], entry: &mut Entry) -> Option<()> {
    let header = line(rest)?;
    if let Some(len) = header.strip_prefix(b"blob ") {
        entry.blobs.push(take(rest, number(len)?)?.to_vec());
    } else if let Some(len) = header.strip_prefix(b"str ") {
        entry.strings.push(String::from_utf8(take(rest, number(len)?)?.to_vec()).ok()?);
    } else {
        let args = header.strip_prefix(b"dep ")?;
        let space = args.iter().position(|&b| b == b' ')?;
        let sha256 = parse_digest(&args[..space])?;
        let path = String::from_utf8(take(rest, number(&args[space + 1..])?)?.to_vec()).ok()?;
        entry.deps.push(Dep { path: PathBuf::from(path), sha256 });
    }
    Some(())
}

/// The first `len` bytes of `rest`, which must be followed by a newline; moves past both.
fn take<'a>(rest: &mut &'a [u8], len: usize) -> Option<&'a [u8]> {
    if rest.len() <= len || rest[len] != b'\n' {
        return None;
    }
    let value = &rest[..len];
    *rest = &rest[len + 1..];
    Some(value)
}

/// A length written in decimal: digits only, at least one.
fn number(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0usize, |n, &d| {
        let digit = usize::from(d.wrapping_sub(b'0'));
        (digit < 10).then_some(())?;
        n.checked_mul(10)?.checked_add(digit)
    })
}

/// `N` bytes written as `2 * N` hexadecimal digits.
fn parse_hex<const N: usize>(hex: &[u8]) -> Option<[u8; N]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    if hex.len() != 2 * N {
        return None;
    }
    let mut d = [0u8; N];
    for (byte, pair) in d.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(d)
}

/// A SHA-256 written as 64 hexadecimal digits.
fn parse_digest(hex: &[u8]) -> Option<Digest> {
    parse_hex(hex)
}

/// A [`checksum`] written as 16 hexadecimal digits (big-endian).
fn parse_sum(hex: &[u8]) -> Option<u64> {
    parse_hex(hex).map(u64::from_be_bytes)
}

/// The checksum an entry's trailer holds: 64 bits over every byte of `bytes` and their number.
///
/// Four lanes of 64 bits each take every fourth 8-byte word (bytes `8i..8i + 8`, the last ones
/// zero-padded): a lane step `(lane ^ word) * K`, rotated, is a bijection of the lane for a given
/// word and gives another lane for another word, and the lanes are folded into the result by
/// steps that are bijections of each lane in turn. So a change confined to one of those words
/// (any number of bit flips in it) always changes the checksum; other changes go unnoticed only
/// when two 64-bit values meet by chance. About 0.2 us for a 4 KiB entry (SHA-256 with SHA-NI:
/// 3 us); no CPU feature detection.
///
/// ```
/// use cuda_embed_source::cache::checksum;
/// assert_eq!(checksum(b"cubin"), checksum(b"cubin"));
/// assert_ne!(checksum(b"cubin"), checksum(b"cubiN"));
/// assert_ne!(checksum(b""), checksum(b"\0"), "the length counts");
/// ```
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15; // odd: multiplying by it is a bijection
    const M: u64 = 0xff51_afd7_ed55_8ccd;
    let step = |lane: u64, word: u64| (lane ^ word).wrapping_mul(K).rotate_left(29);
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let mut lanes = [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (lane, w) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = step(*lane, word(w));
        }
    }
    // The last 0-31 bytes, zero-padded into a block of their own (the length tells the padding
    // from zeros that were written).
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut last = [0u8; 32];
        last[..tail.len()].copy_from_slice(tail);
        for (lane, w) in lanes.iter_mut().zip(last.chunks_exact(8)) {
            *lane = step(*lane, word(w));
        }
    }
    let mut h = (bytes.len() as u64).wrapping_mul(M);
    for lane in lanes {
        h = step(h, lane);
        h ^= h >> 31;
    }
    h = (h ^ (h >> 33)).wrapping_mul(M);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests;

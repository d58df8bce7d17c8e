//! Which NVRTC compiled an entry: the variables the search for libnvrtc reads, the library file
//! it finds (identified by path, size and modification time, without loading it), and whether a
//! recorded identity still holds (see the module docs of [`super`]).

use super::*;

/// The variables the search for libnvrtc reads ([`library_identity`]): `LD_LIBRARY_PATH`, then
/// [`options::TOOLKIT_ROOT_VARS`].
pub(super) type SearchEnv = [Option<std::ffi::OsString>; 1 + options::TOOLKIT_ROOT_VARS.len()];

pub(super) fn search_env() -> SearchEnv {
    let mut env = SearchEnv::default();
    env[0] = std::env::var_os("LD_LIBRARY_PATH");
    for (slot, var) in env[1..].iter_mut().zip(options::TOOLKIT_ROOT_VARS) {
        *slot = std::env::var_os(var);
    }
    env
}

/// Appends `parts` to `out` as one length-prefixed item (their joined length, then each).
pub(super) fn put(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    out.extend_from_slice(&(len as u64).to_le_bytes());
    for part in parts {
        out.extend_from_slice(part);
    }
}

/// The identity of the library file at `path` with metadata `meta`: `"<path> <size> <mtime ns>"`.
pub(super) fn file_identity(path: &Path, meta: &std::fs::Metadata) -> Option<String> {
    Some(format!("{} {} {}", path.display(), meta.len(), modified_ns(meta)?))
}

/// The modification time in `meta`, in nanoseconds since the Unix epoch.
pub(super) fn modified_ns(meta: &std::fs::Metadata) -> Option<u128> {
    Some(meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos())
}

/// The file a [`file_identity`] names with the size and modification time it records, or `None`
/// for another kind of identity (`"nvrtc 13.0"`). The numbers are taken only in the form
/// `file_identity` writes them (decimal digits, no leading zero), so the file at the path matches
/// the record exactly when `file_identity` of it would write the record: a hit compares numbers
/// and formats nothing.
pub(super) fn identity_file(identity: &str) -> Option<(&str, u64, u128)> {
    fn decimal(s: &str) -> Option<u128> {
        let canonical = !s.is_empty() && (s == "0" || !s.starts_with('0'));
        canonical.then_some(())?;
        s.bytes().try_fold(0u128, |n, b| {
            n.checked_mul(10)?.checked_add(u128::from(b.checked_sub(b'0').filter(|d| *d < 10)?))
        })
    }
    let (rest, mtime) = identity.rsplit_once(' ')?;
    let (path, len) = rest.rsplit_once(' ')?;
    let (len, mtime) = (u64::try_from(decimal(len)?).ok()?, decimal(mtime)?);
    (!path.is_empty()).then_some((path, len, mtime))
}

/// What this process knows of the NVRTC build for one value of the search variables.
pub(super) struct Known {
    env: SearchEnv,
    identity: String,
    /// Found by the full search ([`compiler_identity`]), rather than checked as an entry's record.
    searched: bool,
}

/// The process-wide memo of [`compiler_identity`] and [`is_current`].
pub(super) static KNOWN: std::sync::Mutex<Option<Known>> = std::sync::Mutex::new(None);

pub(super) fn known() -> std::sync::MutexGuard<'static, Option<Known>> {
    KNOWN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `recorded`, the NVRTC build a cache entry was compiled by, is still the one to use
/// with the search variables `env` (see the module docs): the recorded library file unchanged
/// (one `stat`, none when this process already knows it), else (a version record, a changed
/// file, a path that does not survive the round trip through text) the full search finding the
/// same build. A miss needs that search anyway, for the compile.
pub(super) fn is_current(recorded: &str, env: &SearchEnv) -> bool {
    if known().as_ref().is_some_and(|k| k.env == *env && k.identity == recorded) {
        return true;
    }
    let unchanged = identity_file(recorded).is_some_and(|(file, len, mtime)| {
        std::fs::metadata(file).is_ok_and(|m| m.len() == len && modified_ns(&m) == Some(mtime))
    });
    if !unchanged {
        return compiler_identity_for(env).is_ok_and(|id| id == recorded);
    }
    let mut known = known();
    // What the full search found for these variables is kept (it is what a compile uses).
    if !known.as_ref().is_some_and(|k| k.env == *env && k.searched) {
        *known = Some(Known { env: env.clone(), identity: recorded.to_string(), searched: false });
    }
    true
}

/// Where the dynamic loader will find libnvrtc, approximated without loading it: the
/// directories of `LD_LIBRARY_PATH`, then the toolkit roots (`CUDA_EMBED_TOOLKIT`, `CUDA_PATH`,
/// `CUDA_HOME`, `/usr/local/cuda`),
/// then the system library directories. Returns the path found with the size and modification
/// time of the library file it leads to.
///
/// The directories are tried in order and the search stops at the first library found: on a
/// usual setup (the library's directory first in `LD_LIBRARY_PATH`) that is one or two `stat`s.
pub(super) fn library_identity(env: &SearchEnv) -> Option<String> {
    const SYSTEM: [&str; 5] =
        ["/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"];
    let ld = env[0].iter().flat_map(std::env::split_paths);
    let roots = env[1..].iter().flatten().filter(|r| !r.is_empty());
    let toolkit = roots.flat_map(|r| [Path::new(r).join("lib64"), Path::new(r).join("lib")]);
    let mut candidate = PathBuf::new();
    for dir in ld.chain(toolkit).chain(SYSTEM.into_iter().map(PathBuf::from)) {
        for name in ["libnvrtc.so", "libnvrtc.so.13"] {
            candidate.clear();
            candidate.push(&dir);
            candidate.push(name);
            // One `stat` per candidate, following the links to the library file itself: its size
            // and modification time change with any other build of NVRTC put there, so the
            // versioned file name (a `realpath` walk over every component, which costs more than
            // all the misses together) is not needed.
            if let Ok(meta) = std::fs::metadata(&candidate) {
                return file_identity(&candidate, &meta);
            }
        }
    }
    None
}

/// Identifies the NVRTC build for cache keys: by its library file when that can be found without
/// loading it (loading libnvrtc costs ~10 ms, which a cache hit must not pay), else by loading it
/// and asking its version.
///
/// The answer is kept for the process, with the variables the search reads: a process that
/// loads many modules looks for the library once (unless it changes those variables).
pub(crate) fn compiler_identity() -> Result<String, String> {
    compiler_identity_for(&search_env())
}

/// [`compiler_identity`] with the search variables `env`.
pub(super) fn compiler_identity_for(env: &SearchEnv) -> Result<String, String> {
    if let Some(k) = known().as_ref().filter(|k| k.env == *env && k.searched) {
        return Ok(k.identity.clone());
    }
    let id = match library_identity(env) {
        Some(id) => id,
        None => {
            let (major, minor) = version()?;
            format!("nvrtc {major}.{minor}")
        }
    };
    *known() = Some(Known { env: env.clone(), identity: id.clone(), searched: true });
    Ok(id)
}

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

/// An entry is read in one piece whatever its size (a cubin of a few MiB is common).
#[test]
fn a_large_entry_round_trips() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::new(d.path(), "cubin");
    let blob: Vec<u8> = (0..3 << 20).map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let entry = Entry { blobs: vec![blob], strings: vec!["k".into()], deps: vec![] };
    store.write_atomic("big", &entry).unwrap();
    assert_eq!(store.read("big"), Some(entry));
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
    std::fs::write(&file, String::from_utf8_lossy(&good).replace("v4", "v1")).unwrap();
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
    use std::ffi::OsString;
    // The environment is passed in, not set: tests run in parallel threads of one process.
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|p| p.0 == name).map(|p| OsString::from(p.1))
    };
    assert_eq!(
        root_from(env(&[("CUDA_EMBED_CACHE_DIR", "/c"), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
        Path::new("/c")
    );
    assert_eq!(
        root_from(env(&[("CUDA_EMBED_CACHE_DIR", ""), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
        Path::new("/x/cuda-embed")
    );
    assert_eq!(root_from(env(&[("HOME", "/h")])), Path::new("/h/.cache/cuda-embed"));
    let fallback = root_from(env(&[]));
    assert!(fallback.starts_with(std::env::temp_dir()), "{}", fallback.display());
    assert!(fallback.file_name().unwrap().to_string_lossy().starts_with("cuda-embed-"));
}

#[test]
fn usage_clear_and_least_recently_used_eviction() {
    use super::manage::{clear_in, evict_to, usage_of};
    use std::time::{Duration, SystemTime};
    let d = tempfile::tempdir().unwrap();
    let build = Store::new(d.path().join(BUILD_SUBDIR), "bin");
    let nvrtc = Store::new(d.path().join(NVRTC_SUBDIR), "cubin");
    let blob = |n: usize| Entry { blobs: vec![vec![7u8; n]], strings: vec![], deps: vec![] };
    for (i, store) in [&build, &nvrtc, &build, &nvrtc].iter().enumerate() {
        let f = store.write_atomic(&format!("k{i}"), &blob(1000)).unwrap();
        // Ages: k0 oldest ... k3 newest.
        let t = SystemTime::now() - Duration::from_secs(1000 - 100 * i as u64);
        std::fs::File::options().append(true).open(&f).unwrap().set_modified(t).unwrap();
    }
    // Something else in the root is not an entry.
    std::fs::write(d.path().join("notes.txt"), "keep").unwrap();
    let u = usage_of(d.path().to_path_buf(), Some(1 << 20));
    assert_eq!(u.entries, 4);
    assert!(u.bytes > 4000 && u.bytes < 4800, "{u}");
    // A hit makes k0 the most recently used.
    assert!(build.read("k0").is_some());
    // A cap of 2.5 entries: evicted down to 90% of it, oldest first (k1, then k2).
    let one = std::fs::metadata(build.path("k0")).unwrap().len();
    evict_to(build.dir(), one * 5 / 2);
    assert!(build.read("k0").is_some(), "recently used: kept");
    assert_eq!(nvrtc.lookup("k1"), Lookup::Missing, "least recently used: evicted");
    assert_eq!(build.lookup("k2"), Lookup::Missing);
    assert!(nvrtc.read("k3").is_some());
    assert_eq!(usage_of(d.path().to_path_buf(), None).entries, 2);
    // Clear empties both folders and leaves other files.
    assert_eq!(clear_in(d.path()).unwrap(), 2 * one);
    assert_eq!(usage_of(d.path().to_path_buf(), None).entries, 0);
    assert!(d.path().join("notes.txt").exists());
}

#[test]
fn an_unwritable_cache_is_skipped_with_a_warning_not_an_error() {
    // A cache "directory" below a plain file cannot be created, whoever runs the test (root
    // writes read-only directories).
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let store = Store::new(file.join("build"), "bin");
    assert!(store.write_atomic("k", &Entry::default()).is_err());
    assert_eq!(store.write_or_warn("k", &Entry::default()), None);
    assert_eq!(store.lookup("k"), Lookup::Missing);
}

#[test]
fn an_entry_altered_in_place_is_corrupt_and_reported_as_such() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::new(d.path(), "bin");
    let entry = sample(d.path());
    let file = store.write_atomic("k", &entry).unwrap();
    let good = std::fs::read(&file).unwrap();
    // Flip one byte inside the first blob: every length and marker is still right.
    let at = good.windows(4).position(|w| w == b"\x7fELF").unwrap() + 1;
    let mut bad = good.clone();
    bad[at] ^= 0x20;
    std::fs::write(&file, &bad).unwrap();
    assert_eq!(store.lookup("k"), Lookup::Corrupt("its contents do not match their hash"));
    assert_eq!(store.read("k"), None);
    // Rewritten, it is a hit again.
    store.write_atomic("k", &entry).unwrap();
    assert_eq!(store.lookup("k"), Lookup::Hit(entry));
    // An older format is a quiet miss, not corruption.
    std::fs::write(&file, b"cuda-embed cache entry v2\nkey k\nend\n").unwrap();
    assert_eq!(store.lookup("k"), Lookup::Missing);
    assert_eq!(store.lookup("absent"), Lookup::Missing);
}

#[test]
fn sizes_parse_with_suffixes() {
    use super::manage::parse_size;
    assert_eq!(parse_size("1024"), Some(1024));
    assert_eq!(parse_size("4K"), Some(4096));
    assert_eq!(parse_size("3m"), Some(3 << 20));
    assert_eq!(parse_size(" 2G "), Some(2 << 30));
    assert_eq!(parse_size("0"), Some(0));
    assert_eq!(parse_size("lots"), None);
    assert_eq!(parse_size("-1"), None);
    assert_eq!(parse_size("99999999999999G"), None);
}

#[test]
fn a_private_temp_dir_is_created_0700_and_others_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let uid = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").unwrap().uid()
    };
    let mine = d.path().join("cuda-embed-test");
    super::manage::check_private(&mine, uid).unwrap();
    assert_eq!(std::fs::metadata(&mine).unwrap().permissions().mode() & 0o777, 0o700);
    super::manage::check_private(&mine, uid).unwrap();
    // Open to others: refused.
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(super::manage::check_private(&mine, uid).unwrap_err().contains("other users"));
    // Owned by someone else: refused.
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(super::manage::check_private(&mine, uid + 1).unwrap_err().contains("belongs to user"));
}

/// The entry's file is `<dir>/<key>.<extension>`, as `Path::join` makes it, whatever the
/// directory's form.
#[test]
fn an_entrys_file_is_its_key_in_the_directory() {
    for dir in ["", "rel", "rel/", "/abs/dir", "/abs/dir/", "/", "./x", "a b/c"] {
        let store = Store::new(dir, "cubin");
        assert_eq!(store.path("0a1b"), Path::new(dir).join("0a1b.cubin"), "{dir:?}");
    }
}

/// Lengths are plain decimal digits, and hashes 64 hexadecimal digits: anything else in a
/// header is a malformed entry.
#[test]
fn field_lengths_and_hashes_are_read_strictly() {
    assert_eq!(number(b"0"), Some(0));
    assert_eq!(number(b"4191"), Some(4191));
    for bad in [&b""[..], b"+5", b"-1", b" 5", b"5 ", b"0x10", b"99999999999999999999999"] {
        assert_eq!(number(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
    let d = crate::key::sha256(b"x");
    assert_eq!(parse_digest(crate::key::hex(&d).as_bytes()), Some(d));
    assert_eq!(parse_digest(crate::key::hex(&d).to_uppercase().as_bytes()), Some(d));
    assert_eq!(parse_digest(&crate::key::hex(&d).as_bytes()[1..]), None);
    assert_eq!(parse_digest(&[b'g'; 64]), None);
}

/// Every byte of an entry is checked: flipping any bit of any byte before the trailer makes the
/// entry a miss (the checksum catches every change confined to one aligned 8-byte word).
#[test]
fn every_byte_of_an_entry_is_checked() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::new(d.path(), "bin");
    let entry = Entry { blobs: vec![(0..200u8).collect()], strings: vec!["_Z1kv".into()], deps: vec![] };
    let file = store.write_atomic("k", &entry).unwrap();
    let good = std::fs::read(&file).unwrap();
    let trailer = good[..good.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    for at in 0..trailer {
        for bit in [0x01, 0x80] {
            let mut bad = good.clone();
            bad[at] ^= bit;
            std::fs::write(&file, &bad).unwrap();
            assert!(!matches!(store.lookup("k"), Lookup::Hit(_)), "byte {at} bit {bit:#x} changed");
        }
    }
    std::fs::write(&file, &good).unwrap();
    assert_eq!(store.lookup("k"), Lookup::Hit(entry));
}

/// The checksum separates what a torn or altered file looks like: another length, zeros in
/// place of data, two words swapped, one bit anywhere.
#[test]
fn the_checksum_tells_usual_corruptions_apart() {
    let data: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
    let sum = checksum(&data);
    assert_ne!(sum, checksum(&data[..4095]));
    assert_ne!(sum, checksum(&[&data[..], &[0]].concat()), "a zero byte appended");
    let mut zeroed = data.clone();
    zeroed[1024..2048].fill(0);
    assert_ne!(sum, checksum(&zeroed));
    let mut swapped = data.clone();
    swapped.swap(8, 40);
    swapped.swap(9, 41);
    assert_ne!(sum, checksum(&swapped), "bytes moved between lanes");
    let mut moved = data.clone();
    moved[..64].rotate_left(32);
    assert_ne!(sum, checksum(&moved), "blocks reordered");
    for at in (0..data.len()).step_by(61) {
        let mut flipped = data.clone();
        flipped[at] ^= 0x10;
        assert_ne!(sum, checksum(&flipped), "bit flip at {at}");
    }
}

/// Files the cache did not write, planted in `root`'s entry folders: each older and larger than
/// any entry, so an eviction that took them for entries would take them first. Returns them.
fn plant_foreign_files(root: &Path) -> Vec<PathBuf> {
    use std::time::{Duration, SystemTime};
    let build = root.join(BUILD_SUBDIR);
    let nvrtc = root.join(NVRTC_SUBDIR);
    let outside = root.join("outside");
    for d in [&build, &nvrtc, &outside, &build.join("CMakeFiles")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let big = vec![b'x'; 8192];
    let mut files = vec![
        // Plain files of another tool: the reported loss, and a CMake build directory.
        (build.join("my_results.dat"), big.clone()),
        (build.join("CMakeCache.txt"), big.clone()),
        (build.join("Makefile"), big.clone()),
        (build.join("CMakeFiles").join("k.bin"), big.clone()),
        // Named like entries, but not in the entry format.
        (nvrtc.join("abc.cubin"), vec![0u8; 8192]),
        (build.join("fedcba98.bin"), [b"cuda-embed cache entry".as_slice(), &big].concat()),
        (nvrtc.join("nov.cubin"), [b"cuda-embed cache entry v\nkey nov\n".as_slice(), &big].concat()),
        // An entry header that names another key: not this file's entry.
        (nvrtc.join("mine.cubin"), [b"cuda-embed cache entry v4\nkey theirs\n".as_slice(), &big].concat()),
        // A write in progress (tempfile's name), already holding a header.
        (nvrtc.join(".tmpAbC123"), [b"cuda-embed cache entry v4\nkey k\n".as_slice(), &big].concat()),
        // An entry of this cache, outside its folders, reached through a link in them.
        (outside.join("linked.bin"), [b"cuda-embed cache entry v4\nkey linked\n".as_slice(), &big].concat()),
    ];
    for (f, bytes) in &files {
        std::fs::write(f, bytes).unwrap();
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.join("linked.bin"), build.join("linked.bin")).unwrap();
        files.push((build.join("linked.bin"), Vec::new()));
    }
    let old = SystemTime::now() - Duration::from_secs(100_000);
    for (f, _) in &files {
        if let Ok(file) = std::fs::File::options().append(true).open(f) {
            file.set_modified(old).unwrap();
        }
    }
    files.into_iter().map(|f| f.0).collect()
}

fn assert_all_there(files: &[PathBuf]) {
    for f in files {
        assert!(std::fs::symlink_metadata(f).is_ok(), "{} was deleted", f.display());
    }
}

/// `clear` and `usage` know the cache's own entries only: files of other tools in the same
/// folders (a CMake `build/` under `CUDA_EMBED_CACHE_DIR=.`) are neither counted nor deleted.
#[test]
fn clear_and_usage_leave_files_the_cache_did_not_write() {
    use super::manage::{clear_in, usage_of};
    let d = tempfile::tempdir().unwrap();
    let foreign = plant_foreign_files(d.path());
    let build = Store::new(d.path().join(BUILD_SUBDIR), "bin");
    let nvrtc = Store::new(d.path().join(NVRTC_SUBDIR), "cubin");
    let entry = Entry { blobs: vec![vec![1u8; 100]], strings: vec![], deps: vec![] };
    let a = build.write_atomic("0123abcd", &entry).unwrap();
    let b = nvrtc.write_atomic("4567-89", &entry).unwrap();
    let entry_bytes = std::fs::metadata(&a).unwrap().len() + std::fs::metadata(&b).unwrap().len();
    let u = usage_of(d.path().to_path_buf(), None);
    assert_eq!((u.entries, u.bytes), (2, entry_bytes), "{u}");
    assert_eq!(clear_in(d.path()).unwrap(), entry_bytes);
    assert!(!a.exists() && !b.exists());
    assert_all_there(&foreign);
    assert_eq!(usage_of(d.path().to_path_buf(), None).entries, 0);
}

/// The size cap evicts entries only, however old and large the other files in the folders are;
/// so does a [`Store`] in a directory of the caller's (`Program::cache_dir(d)` writes `d/nvrtc`
/// and caps `d/build` with it).
#[test]
fn eviction_leaves_files_the_cache_did_not_write() {
    use super::manage::{evict_to, usage_of};
    let d = tempfile::tempdir().unwrap();
    let foreign = plant_foreign_files(d.path());
    let build = Store::new(d.path().join(BUILD_SUBDIR), "bin");
    let nvrtc = Store::new(d.path().join(NVRTC_SUBDIR), "cubin");
    let entry = Entry { blobs: vec![vec![1u8; 100]], strings: vec![], deps: vec![] };
    build.write_atomic("k1", &entry).unwrap();
    nvrtc.write_atomic("k2", &entry).unwrap();
    // Well under the cap once the foreign files are left out: nothing goes.
    let one = std::fs::metadata(build.path("k1")).unwrap().len();
    evict_to(nvrtc.dir(), 3 * one);
    assert!(build.read("k1").is_some() && nvrtc.read("k2").is_some(), "under the cap, no entry is evicted");
    // A cap of one byte: every entry goes, nothing else.
    evict_to(nvrtc.dir(), 1);
    assert_eq!(usage_of(d.path().to_path_buf(), None).entries, 0);
    assert_all_there(&foreign);
    // A Store in a folder of its own (not `build`/`nvrtc`) caps that folder alone, the same way.
    let own = Store::new(d.path().join(BUILD_SUBDIR).join("CMakeFiles"), "bin");
    own.write_atomic("k3", &entry).unwrap();
    evict_to(own.dir(), 1);
    assert_eq!(own.lookup("k3"), Lookup::Missing);
    assert_all_there(&foreign);
}

/// Entries of older formats (the same header, another version) are the cache's own: counted,
/// evicted and cleared, so a cache written by an older cuda-embed needs no migration.
#[test]
fn entries_of_older_formats_are_recognised() {
    use super::manage::{clear_in, is_entry, usage_of};
    let d = tempfile::tempdir().unwrap();
    let nvrtc = d.path().join(NVRTC_SUBDIR);
    std::fs::create_dir_all(&nvrtc).unwrap();
    let old = nvrtc.join("0a1b.cubin");
    std::fs::write(&old, b"cuda-embed cache entry v2\nkey 0a1b\nblob 1\nx\nend\n").unwrap();
    assert!(is_entry(&old));
    let current = Store::new(&nvrtc, "cubin").write_atomic("2c3d", &Entry::default()).unwrap();
    assert!(is_entry(&current));
    // Named like an entry and headed like one, but the header names another file's key.
    std::fs::copy(&current, nvrtc.join("4e5f.cubin")).unwrap();
    assert!(!is_entry(&nvrtc.join("4e5f.cubin")));
    assert_eq!(usage_of(d.path().to_path_buf(), None).entries, 2);
    clear_in(d.path()).unwrap();
    assert!(!old.exists() && !current.exists() && nvrtc.join("4e5f.cubin").exists());
}

/// The temporary fallback is never a directory whose owner is unchecked: without a known user
/// it is a fresh private directory, not a shared `$TMP/cuda-embed`; one of another user's, or
/// open to others, is passed over for a fresh private one too.
#[test]
fn the_temp_fallback_is_private_even_without_a_known_user() {
    use super::manage::{current_uid, private_temp_root_in, uid_of_new_file};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let tmp = tempfile::tempdir().unwrap();
    let uid = current_uid().unwrap();
    assert_eq!(uid_of_new_file(tmp.path()), Some(uid), "the owner of a new file is this user");
    let private = |dir: &Path| {
        let m = std::fs::symlink_metadata(dir).unwrap();
        m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o777 == 0o700
    };
    // The user is not known: a fresh private directory each time, never a shared name.
    let a = private_temp_root_in(tmp.path(), None);
    let b = private_temp_root_in(tmp.path(), None);
    assert!(a.starts_with(tmp.path()) && a != tmp.path().join("cuda-embed") && a != b, "{}", a.display());
    assert!(private(&a) && private(&b));
    // The user's own directory: created private, then used again.
    let mine = private_temp_root_in(tmp.path(), Some(uid));
    assert_eq!(mine, tmp.path().join(format!("cuda-embed-{uid}")));
    assert!(private(&mine));
    assert_eq!(private_temp_root_in(tmp.path(), Some(uid)), mine);
    // Open to others, or another user's (here: this user's directory seen as another user's): a
    // fresh private one instead.
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o777)).unwrap();
    let instead = private_temp_root_in(tmp.path(), Some(uid));
    assert!(instead != mine && private(&instead), "{}", instead.display());
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(tmp.path().join(format!("cuda-embed-{}", uid + 1))).unwrap();
    let other = private_temp_root_in(tmp.path(), Some(uid + 1));
    assert!(other != tmp.path().join(format!("cuda-embed-{}", uid + 1)) && private(&other), "{}", other.display());
}

/// Cubins linked at run time (`<root>/link`) are entries of the cache like the others: counted,
/// under the same cap, and cleared.
#[test]
fn linked_cubins_are_counted_capped_and_cleared() {
    use super::manage::{clear_in, evict_to, usage_of};
    let d = tempfile::tempdir().unwrap();
    let link = Store::new(d.path().join(LINK_SUBDIR), "cubin");
    let nvrtc = Store::new(d.path().join(NVRTC_SUBDIR), "cubin");
    let entry = Entry { blobs: vec![vec![1u8; 100]], strings: vec![], deps: vec![] };
    let linked = link.write_atomic("l1", &entry).unwrap();
    let len = std::fs::metadata(&linked).unwrap().len();
    let u = usage_of(d.path().to_path_buf(), None);
    assert_eq!((u.entries, u.bytes), (1, len), "{u}");
    assert_eq!(clear_in(d.path()).unwrap(), len);
    assert!(!linked.exists());
    // A write to `nvrtc/` evicts the linked cubins too, under one cap.
    link.write_atomic("l2", &entry).unwrap();
    nvrtc.write_atomic("n1", &entry).unwrap();
    evict_to(nvrtc.dir(), 1);
    assert_eq!(link.lookup("l2"), Lookup::Missing);
    assert_eq!(usage_of(d.path().to_path_buf(), None).entries, 0);
}

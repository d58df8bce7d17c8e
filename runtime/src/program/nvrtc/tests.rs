use super::run::with_library_hint;
use super::*;

fn unit<'a>(options: &'a [&'a str], headers: &'a [(&'a str, &'a str)], names: &'a [&'a str]) -> Unit<'a, &'a str> {
    Unit { name: "p.cu", source: "src", options, headers, name_expressions: names, digest: None, scanned: None }
}

fn key(u: &Unit<'_, &str>, compiler: &str, arch: u32) -> String {
    u.key(&[compiler], arch, &u.scan())
}

#[test]
fn key_changes_with_every_input() {
    let v = "libnvrtc.so.13.0.88 1000 1";
    let base = unit(&["-O3"], &[("h.cuh", "x")], &["k"]);
    let k0 = key(&base, v, 90);
    assert_eq!(k0, key(&base, v, 90));
    let variants = [
        ("compiler", key(&base, "libnvrtc.so.13.1.20 1000 1", 90)),
        ("arch", key(&base, v, 80)),
        ("option", key(&unit(&["-O2"], &[("h.cuh", "x")], &["k"]), v, 90)),
        ("name expression", key(&unit(&["-O3"], &[("h.cuh", "x")], &["j"]), v, 90)),
        ("header name", key(&unit(&["-O3"], &[("g.cuh", "x")], &["k"]), v, 90)),
        ("header text", key(&unit(&["-O3"], &[("h.cuh", "y")], &["k"]), v, 90)),
        ("source", key(&Unit { source: "src2", ..base }, v, 90)),
        ("name", key(&Unit { name: "q.cu", ..base }, v, 90)),
    ];
    for (what, other) in &variants {
        assert_ne!(&k0, other, "changing the {what} must change the key");
    }
    // Option boundaries are part of the key.
    assert_ne!(key(&unit(&["a", "b"], &[], &[]), v, 90), key(&unit(&["ab"], &[], &[]), v, 90));
}

#[test]
fn key_follows_headers_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(dir.path().join("top.cuh"), "#include \"sub/mid.cuh\"\n").unwrap();
    std::fs::write(sub.join("mid.cuh"), "#include \"leaf.cuh\"\n#include \"mem.cuh\"\n").unwrap();
    std::fs::write(sub.join("leaf.cuh"), "#define LEAF 1\n").unwrap();
    let inc = format!("--include-path={}", dir.path().display());
    let options = [inc.as_str()];
    let headers = [("mem.cuh", "#pragma once\n")];
    let u = Unit {
        name: "p.cu",
        source: "#include \"top.cuh\"\n#include <cuda_fp16.h>\n",
        options: &options[..],
        headers: &headers[..],
        name_expressions: &[],
        digest: None,
        scanned: None,
    };
    let scan = u.scan();
    let names: Vec<&str> = scan.headers.iter().map(|h| h.include.as_str()).collect();
    assert_eq!(names, ["top.cuh", "sub/mid.cuh", "leaf.cuh", "mem.cuh"]);
    assert_eq!(scan.missing, ["cuda_fp16.h"]);
    let k0 = key(&u, "c", 90);
    std::fs::write(sub.join("leaf.cuh"), "#define LEAF 2\n").unwrap();
    assert_ne!(k0, key(&u, "c", 90), "a header two levels down changed");
}

/// Headers that options include before the source (`--pre-include=H`, `-include H`) are in
/// the key like the source's own includes: a change to one, or to a header it includes,
/// changes the key and the module's cache file name, though the source names no header.
#[test]
fn key_follows_pre_included_headers() {
    let dir = tempfile::tempdir().unwrap();
    let pre = dir.path().join("pre.cuh");
    std::fs::write(&pre, "#include \"deep.cuh\"\n").unwrap();
    std::fs::write(dir.path().join("deep.cuh"), "#define SCALE 2.0f\n").unwrap();
    std::fs::write(dir.path().join("other.cuh"), "#define OTHER 1\n").unwrap();
    let long = format!("--pre-include={}", pre.display());
    let inc = format!("-I{}", dir.path().display());
    let spellings: [&[&str]; 3] =
        [&[long.as_str()], &[inc.as_str(), "-include", "other.cuh"], &[inc.as_str(), "-include=other.cuh"]];
    let source = "extern \"C\" __global__ void k(float* x) { x[0] *= SCALE; }\n";
    for options in spellings {
        let u = Unit { source, ..unit(options, &[], &["k"]) };
        let (k0, file0) = (key(&u, "c", 90), u.module_key(&SearchEnv::default(), 90, &u.scan()).file);
        let changed = if options.len() == 1 { dir.path().join("deep.cuh") } else { dir.path().join("other.cuh") };
        let before = std::fs::read(&changed).unwrap();
        std::fs::write(&changed, "#define SCALE 3.0f\n#define OTHER 2\n").unwrap();
        assert_ne!(k0, key(&u, "c", 90), "{options:?}: a pre-included header changed");
        assert_ne!(file0, u.module_key(&SearchEnv::default(), 90, &u.scan()).file, "{options:?}");
        std::fs::write(&changed, before).unwrap();
        assert_eq!(k0, key(&u, "c", 90), "{options:?}: the same bytes again");
    }
}

/// libnvrtc is looked for in `LD_LIBRARY_PATH`, then the toolkit roots, and identified by the
/// file found: another build put there (another size) is another identity.
#[test]
fn the_library_is_found_in_search_order_and_identified_by_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let (ld, root) = (dir.path().join("ld"), dir.path().join("toolkit"));
    std::fs::create_dir_all(&ld).unwrap();
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    std::fs::write(root.join("lib64/libnvrtc.so.13"), b"toolkit build").unwrap();
    let mut env = SearchEnv::default();
    env[0] = Some(ld.clone().into_os_string());
    env[1] = Some(std::ffi::OsString::new()); // an empty root is no root
    env[2] = Some(root.clone().into_os_string());
    let toolkit = library_identity(&env).unwrap();
    assert!(toolkit.starts_with(&format!("{} 13 ", root.join("lib64/libnvrtc.so.13").display())), "{toolkit}");
    std::fs::write(ld.join("libnvrtc.so"), b"ld").unwrap();
    let first = library_identity(&env).unwrap();
    assert!(first.starts_with(&format!("{} 2 ", ld.join("libnvrtc.so").display())), "{first}");
    std::fs::write(ld.join("libnvrtc.so"), b"another build").unwrap();
    assert_ne!(library_identity(&env).unwrap(), first, "another build in the same place");
}

/// The key names the NVRTC by the variables its search reads: another value (or a variable
/// set empty rather than unset) is another key.
#[test]
fn the_key_follows_the_search_variables() {
    let u = unit(&[], &[], &["k"]);
    let scan = u.scan();
    let mut env = SearchEnv::default();
    let k0 = u.module_key(&env, 90, &scan);
    env[0] = Some("/opt/a".into());
    let k1 = u.module_key(&env, 90, &scan);
    env[0] = Some("/opt/b".into());
    let k2 = u.module_key(&env, 90, &scan);
    env[0] = None;
    env[3] = Some("/opt/a".into());
    let k3 = u.module_key(&env, 90, &scan);
    env[3] = Some("".into());
    let k4 = u.module_key(&env, 90, &scan);
    let keys = [&k0, &k1, &k2, &k3, &k4];
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i + 1..] {
            assert_ne!(a.inputs, b.inputs);
            assert_ne!(a.file, b.file, "other inputs are filed apart");
        }
    }
    assert_eq!(k1, {
        env[3] = None;
        env[0] = Some("/opt/a".into());
        u.module_key(&env, 90, &scan)
    });
}

#[test]
fn identities_of_files_are_told_from_versions() {
    assert_eq!(identity_file("/usr/lib/libnvrtc.so.13 1000 123"), Some(("/usr/lib/libnvrtc.so.13", 1000, 123)));
    assert_eq!(identity_file("/my libs/libnvrtc.so 1 2"), Some(("/my libs/libnvrtc.so", 1, 2)), "spaces in the path");
    assert_eq!(identity_file("nvrtc 13.0"), None);
    assert_eq!(identity_file("a 13 x"), None);
    assert_eq!(identity_file(" 1 2"), None);
    // Only the form `file_identity` writes: another spelling of the same numbers is not it.
    assert_eq!(identity_file("/l 0 0"), Some(("/l", 0, 0)));
    for other in ["/l 01 2", "/l 1 02", "/l +1 2", "/l 1  2", "/l 1 2 ", "/l 18446744073709551616 2"] {
        assert_eq!(identity_file(other), None, "{other:?}");
    }
}

/// A record matches a file exactly when `file_identity` of the file writes the record.
#[test]
fn a_record_is_read_back_as_the_file_identity_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib nvrtc.so");
    std::fs::write(&lib, b"some build").unwrap();
    let meta = std::fs::metadata(&lib).unwrap();
    let record = file_identity(&lib, &meta).unwrap();
    let (path, len, mtime) = identity_file(&record).unwrap();
    assert_eq!((Path::new(path), len, Some(mtime)), (lib.as_path(), meta.len(), modified_ns(&meta)));
}

/// A module's entry is filed under the unit's digest and the checksum of its run-time
/// inputs, which name the search variables set as `NAME=value` and the architecture.
#[test]
fn the_module_key_is_the_unit_digest_and_the_checksum_of_the_run_time_inputs() {
    let u = unit(&[], &[], &["k"]);
    let scan = u.scan();
    let mut env = SearchEnv::default();
    env[0] = Some("/opt/a:/opt/b".into());
    env[2] = Some("/usr/local/cuda".into());
    let key = u.module_key(&env, 90, &scan);
    let sum = cuda_embed_source::cache::checksum(&key.inputs).to_be_bytes();
    assert_eq!(key.file, format!("{}-{}", u.unit_digest(), cuda_embed_source::key::hex(&sum)));
    let has = |item: &[u8]| key.inputs.windows(item.len()).any(|w| w == item);
    assert_eq!(options::TOOLKIT_ROOT_VARS[1], "CUDA_PATH");
    assert!(has(b"LD_LIBRARY_PATH=/opt/a:/opt/b") && has(b"CUDA_PATH=/usr/local/cuda") && has(KEY_SCHEME.as_bytes()));
    let other_arch = u.module_key(&env, 80, &scan);
    assert!(other_arch.inputs != key.inputs && other_arch.file != key.file);
    let other_unit = Unit { source: "src2", ..u }.module_key(&env, 90, &scan);
    assert_eq!(other_unit.inputs, key.inputs, "the unit is in the file name, not the inputs");
    assert_ne!(other_unit.file, key.file);
    // The embedded digest is used as given: a hit hashes nothing of the source.
    let embedded = Unit { digest: Some("0123"), ..u }.module_key(&env, 90, &scan);
    assert!(embedded.file.starts_with("0123-"), "{}", embedded.file);
}

/// An entry whose recorded run-time inputs are not this process's (what a checksum
/// collision in the file name would look like) is a miss.
#[test]
fn an_entry_recording_other_run_time_inputs_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "cubin");
    let lib = dir.path().join("libnvrtc.so");
    std::fs::write(&lib, b"a build").unwrap();
    let mut env = SearchEnv::default();
    env[0] = Some(dir.path().as_os_str().to_owned());
    let recorded = library_identity(&env).unwrap();
    let u = Unit { source: "extern \"C\" __global__ void k() {}", ..unit(&[], &[], &["k"]) };
    let key = u.module_key(&search_env(), 80, &u.scan());
    let cubin = b"\x7fELF cubin".to_vec();
    let mut other = key.inputs.clone();
    other.push(0);
    store.write_atomic(&key.file, &module_entry(cubin.clone(), vec!["k".into()], &recorded, other, None)).unwrap();
    match u.compile(80, &store) {
        Ok(c) => assert!(!c.from_cache && c.cubin != cubin, "an entry of other inputs was used"),
        Err(log) => assert!(!is_available(), "NVRTC is here but the compile failed: {log}"),
    }
    store.write_atomic(&key.file, &module_entry(cubin.clone(), vec!["k".into()], &recorded, key.inputs, None)).unwrap();
    let hit = u.compile(80, &store).unwrap();
    assert!(hit.from_cache && hit.cubin == cubin, "the same inputs: a hit");
}

/// A source without the word `include` is not scanned at all; one with it is.
#[test]
fn a_source_that_includes_nothing_is_not_scanned() {
    let plain = unit(&["--include-path=/nonexistent"], &[("h.cuh", "x")], &[]);
    assert_eq!(plain.scan(), Scan::default());
    let including = Unit { source: "#include \"h.cuh\"\n#include \"gone.cuh\"\n", ..plain };
    let scan = including.scan();
    assert_eq!(scan.headers.len(), 1);
    assert_eq!(scan.missing, ["gone.cuh"]);
}

/// A recorded library file is current while it is unchanged (one `stat`); another build in
/// its place (another size) is not, nor is a file that is gone, nor a version no search finds.
#[test]
fn a_recorded_library_is_current_while_its_file_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libnvrtc.so.13");
    std::fs::write(&lib, b"one build").unwrap();
    let mut env = SearchEnv::default();
    env[0] = Some(dir.path().as_os_str().to_owned());
    let recorded = library_identity(&env).unwrap();
    assert!(is_current(&recorded, &env));
    assert!(is_current(&recorded, &env), "again, from the process's memo");
    // Another environment does not trust the memo: it looks at the file.
    let mut other = env.clone();
    other[1] = Some("/nonexistent-toolkit".into());
    std::fs::write(&lib, b"another build").unwrap();
    assert!(!is_current(&recorded, &other), "another build in the recorded place");
    std::fs::remove_file(&lib).unwrap();
    assert!(!is_current(&recorded, &other), "the recorded file is gone");
    assert!(!is_current("nvrtc 0.1", &other), "no NVRTC here is version 0.1");
}

/// A hit returns the cubin only while the NVRTC build its entry records is current; once that
/// library changes, the entry is a miss (compiled again, or an error without NVRTC).
#[test]
fn an_entry_of_another_nvrtc_build_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("nvrtc"), "cubin");
    let lib = dir.path().join("libnvrtc.so");
    std::fs::write(&lib, b"recorded build").unwrap();
    let mut env = SearchEnv::default();
    env[0] = Some(dir.path().as_os_str().to_owned());
    let recorded = library_identity(&env).unwrap();
    let u = Unit { source: "extern \"C\" __global__ void k() {}", ..unit(&[], &[], &["k"]) };
    let cubin = b"\x7fELF cubin".to_vec();
    let key = u.module_key(&search_env(), 80, &u.scan());
    store.write_atomic(&key.file, &module_entry(cubin.clone(), vec!["k".into()], &recorded, key.inputs, None)).unwrap();
    let hit = u.compile(80, &store).unwrap();
    assert!(hit.from_cache && hit.cubin == cubin && hit.symbols == ["k"] && hit.compiler == recorded);
    std::fs::write(&lib, b"an upgraded build").unwrap();
    // A process checks a library once, as it searches once: forget it, as a new process would.
    *known() = None;
    match u.compile(80, &store) {
        Ok(c) => assert!(!c.from_cache && c.cubin != cubin, "the entry of the old build was used"),
        Err(log) => assert!(!is_available(), "NVRTC is here but the compile failed: {log}"),
    }
}

/// The include scan reads `scanned` when given (the part of a `cuda_kernel!` source before
/// its appended type check), the whole source otherwise.
#[test]
fn the_scan_reads_the_scanned_part_only() {
    let source = "#include \"a.cuh\"\n#ifndef X\n#include \"b.cuh\"\n#endif\n";
    let whole = Unit { source, ..unit(&[], &[], &[]) };
    assert_eq!(whole.scan().missing, ["a.cuh", "b.cuh"]);
    let part = Unit { scanned: Some(&source[..source.find("#ifndef").unwrap()]), ..whole };
    assert_eq!(part.scan().missing, ["a.cuh"]);
}

#[test]
fn a_foreign_entry_is_a_miss() {
    // Without NVRTC the compile fails after the cache lookup; with it, a garbage entry is
    // recompiled. Either way it is never returned as a cubin.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path(), "cubin");
    let u = Unit { source: "extern \"C\" __global__ void k() {}", ..unit(&[], &[], &["k"]) };
    let k = u.module_key(&search_env(), 80, &u.scan()).file;
    store.write_atomic(&k, &Entry { blobs: vec![b"\x7fELF".to_vec()], strings: vec![], deps: vec![] }).unwrap();
    match u.compile(80, &store) {
        Ok(c) => assert!(!c.from_cache, "an entry with the wrong symbol count is not a hit"),
        // Only the compile after the lookup can fail, and only for want of NVRTC.
        Err(log) => assert!(!is_available(), "NVRTC is here but the compile failed: {log}"),
    }
}

#[test]
fn a_missing_library_header_gets_run_time_advice() {
    let log = "k.cu(1): catastrophic error: cannot open source file \"cublas_v2.h\"".to_string();
    let out = with_library_hint(log.clone());
    assert!(out.starts_with(&log), "{out}");
    assert!(out.contains("help: `cublas_v2.h` is a header of cuBLAS"), "{out}");
    assert!(out.contains("CUDA_EMBED_TOOLKIT") && out.contains("--include-path="), "{out}");
    let own = "k.cu(1): catastrophic error: cannot open source file \"mine.cuh\"".to_string();
    assert_eq!(with_library_hint(own.clone()), own, "a user's own header gets no library advice");
}

/// A kernel that sets a graph condition compiles with NVRTC as with nvcc: NVRTC's built-in
/// headers do not declare `cudaGraphSetConditional` (the GPU run of the conditional-node
/// tests failed with `identifier "cudaGraphSetConditional" is undefined`), the prelude does;
/// a source that declares it as `cuda_device_runtime_api.h` does still compiles; and an error
/// keeps the line number of the source as written (the prelude ends with `#line 1`).
#[test]
fn nvrtc_compiles_a_kernel_that_sets_a_graph_condition() {
    let kernel = "extern \"C\" __global__ void step(int* c, cudaGraphConditionalHandle h) {\n\
                  \x20   cudaGraphSetConditional(h, --*c > 0 ? 1u : 0u);\n}\n";
    let declared = format!(
        "extern \"C\" __device__ __cudart_builtin__ void cudaGraphSetConditional(cudaGraphConditionalHandle, \
         unsigned int);\n{kernel}"
    );
    let broken = format!("{kernel}\n\nint x = y;\n");
    for (source, what) in [(kernel.to_string(), "plain"), (declared, "declared"), (broken, "broken")] {
        match run_nvrtc::<&str>("cond.cu", &source, &[], &[], &[], 90) {
            Ok((cubin, _)) => assert!(what != "broken" && cubin.starts_with(b"\x7fELF"), "{what}"),
            Err(log) if !is_available() => assert!(log.contains("NVRTC"), "without NVRTC the error says so: {log}"),
            Err(log) => {
                assert_eq!(what, "broken", "{what}: {log}");
                assert!(log.contains("cond.cu(6)") && log.contains("\"y\""), "the error's line: {log}");
            }
        }
    }
}

/// NVRTC's own log for a library header it cannot open carries the advice. The name is one
/// no library ships (with cuRAND's prefix), so the test holds on a machine that has the
/// library headers installed as well.
#[test]
fn nvrtc_reports_a_missing_library_header_with_advice() {
    let source = "#include <curand_no_such_header_for_this_test.h>\nextern \"C\" __global__ void k() {}";
    match run_nvrtc::<&str>("hint.cu", source, &[], &[], &[], 80) {
        Ok(_) => panic!("a missing header compiled"),
        Err(log) if is_available() => {
            assert!(log.contains("curand_no_such_header_for_this_test.h"), "{log}");
            assert!(log.contains("is a header of cuRAND, which NVRTC did not find"), "{log}");
        }
        Err(log) => assert!(log.contains("NVRTC"), "without NVRTC the error says so: {log}"),
    }
}

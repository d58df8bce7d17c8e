//! Compile-fail cases: each `cases/**/*.rs` holds one bad input to `cuda_kernel!` or to a
//! generated launcher, and the `.stderr` next to it the error rustc must print for it.
//!
//! - `cases/*.rs` give the same errors with or without nvcc (input parsing, the type mapping and
//!   the Rust types of the launchers).
//! - `cases/nvcc/*.rs` need nvcc at build time: CUDA compile errors with nvcc's log, the PTX
//!   cross-check, the compiler's answers about types, and structs passed by value (their layout
//!   comes from the compiled code). They run when the macro finds an nvcc (`NVCC`,
//!   `bin/` of `$CUDA_EMBED_TOOLKIT`, `$CUDA_PATH`, `$CUDA_HOME`, `PATH`) and are skipped with a note otherwise; set
//!   `CUDA_EMBED_UI_REQUIRE_NVCC=1` (as CI should) to make a missing nvcc a failure.
//!
//! - `cases/nvrtc_build/*.rs` need libnvrtc at build time (`compiler = "nvrtc-build"`): CUDA
//!   errors reported by NVRTC while the crate builds. They run when the macro finds libnvrtc and
//!   are skipped with a note otherwise (a failure under `CUDA_EMBED_REQUIRE_TOOLKIT`).
//!
//! The `.stderr` files are specific to the rustc and nvcc versions CI uses (nvcc 13.0 from the
//! pinned PyPI wheels that `scripts/with-cuda` installs). Regenerate them with
//!
//! ```sh
//! TRYBUILD=overwrite cargo test -p cuda-embed-ui-tests
//! ```
//!
//! and read every changed `.stderr`: each message must say what is wrong and point at the line
//! to fix.
//!
//! `link = [...]` (and `file = ...`) paths are relative to the crate root, and trybuild builds
//! the cases as a crate of its own, in `<target dir>/tests/trybuild/cuda-embed-ui-tests/`: the
//! root is there, wherever the target dir is (`CARGO_TARGET_DIR` may be outside the checkout).
//! [`place_case_files`] copies the CUDA files of `cases/` there under the same relative names,
//! so a case names them as written in this crate (`link = ["cases/link_math.cu"]`).

use cuda_embed_macros_core::oracle::nvcc::find_nvcc;
use cuda_embed_macros_core::oracle::nvrtc::find_nvrtc;

/// Writes `line` to the terminal now: trybuild builds every case when the test ends, a couple of
/// silent minutes on a small machine otherwise (the harness captures `eprintln!`, not writes to
/// the stderr handle).
fn progress(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// How many cases `dir` holds.
fn cases(dir: &str) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    std::fs::read_dir(dir)
        .map_or(0, |d| d.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "rs")).count())
}

/// The target dir trybuild builds under: `cargo metadata`'s `target_directory`, asked the way
/// trybuild asks it (from this crate's root, with the cargo that runs the tests).
fn target_dir() -> std::path::PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version=1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo metadata");
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let json = String::from_utf8_lossy(&out.stdout);
    let key = "\"target_directory\":\"";
    let start = json.find(key).expect("cargo metadata names the target directory") + key.len();
    // A JSON string: cargo escapes `"` and `\` (and control characters, which a path has not).
    let mut dir = String::new();
    let mut chars = json[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return dir.into(),
            '\\' => match chars.next() {
                Some('/') => dir.push('/'),
                Some(c @ ('"' | '\\')) => dir.push(c),
                other => panic!("unexpected escape {other:?} in the target directory: {json}"),
            },
            c => dir.push(c),
        }
    }
    panic!("unterminated target directory in cargo metadata's output: {json}")
}

/// Copies every file of `cases/` that is not a case (`.rs`) or its expected output (`.stderr`),
/// the CUDA files the cases link, to the same relative place under the root of the crate
/// trybuild builds the cases in (`<target dir>/tests/trybuild/<this crate>/`), where
/// `link = ["cases/link_math.cu"]` is resolved. A case naming a file that is not there fails
/// with `cannot read the `link` file`.
fn place_case_files() {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("reading {}: {e}", from.display()));
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                copy(&path, &to.join(e.file_name()));
            } else if !path.extension().is_some_and(|x| x == "rs" || x == "stderr") {
                std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("creating {}: {e}", to.display()));
                let dest = to.join(e.file_name());
                std::fs::copy(&path, &dest)
                    .unwrap_or_else(|e| panic!("copying {} to {}: {e}", path.display(), dest.display()));
            }
        }
    }
    let root = target_dir().join("tests").join("trybuild").join(env!("CARGO_PKG_NAME"));
    copy(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"), &root.join("cases"));
}

/// The rustc flags trybuild 1.0 builds the cases with (`src/rustflags.rs` and `cargo.rs` of
/// trybuild 1.0.122): its base set, plus `--diagnostic-width=140` for the cases.
const TRYBUILD_CASE_FLAGS: [&str; 6] = ["--cfg", "trybuild", "--verbose", "-A", "dead_code", "--diagnostic-width=140"];

/// Makes trybuild check the cases' dependencies once, not twice.
///
/// trybuild runs cargo twice: first to build the dependencies, with its base flags, then to build
/// the cases, with `--diagnostic-width=140` added. The flags are part of each unit's hash, so the
/// second run checked every dependency again (cuda-embed, the runtime, cudarc, the macro core,
/// syn, ...: the dependencies took 84 s of CPU on a cold target, 53 s checked once).
/// `CARGO_ENCODED_RUSTFLAGS` outranks the `--config` rustflags trybuild passes, so setting it to
/// the cases' flags gives both runs the same flags: the cases build exactly as before. Left alone
/// when the caller chose rustflags of their own (`RUSTFLAGS` or `CARGO_ENCODED_RUSTFLAGS`). A
/// trybuild that passes other flags would have them replaced by these: update the list with
/// trybuild (Cargo.lock pins it; a changed flag shows in the `.stderr` files).
fn one_set_of_flags() {
    if std::env::var_os("RUSTFLAGS").is_none() && std::env::var_os("CARGO_ENCODED_RUSTFLAGS").is_none() {
        std::env::set_var("CARGO_ENCODED_RUSTFLAGS", TRYBUILD_CASE_FLAGS.join("\x1f"));
    }
}

#[test]
fn ui() {
    place_case_files();
    // `cases/cutlass_headers_missing.rs` is about a machine without the CUTLASS headers
    // (`scripts/with-cuda` sets this once `--with-cutlass` installed them).
    std::env::remove_var("CUDA_EMBED_CUTLASS_DIR");
    one_set_of_flags();
    let t = trybuild::TestCases::new();
    let mut total = cases("cases");
    t.compile_fail("cases/*.rs");
    match find_nvrtc() {
        Ok(Ok(n)) => {
            eprintln!("ui: {} at {}: running cases/nvrtc_build too", n.name(), n.path.display());
            t.compile_fail("cases/nvrtc_build/*.rs");
            total += cases("cases/nvrtc_build");
        }
        other => {
            let why = match other {
                Ok(Err(why)) | Err(why) => why,
                Ok(Ok(_)) => unreachable!(),
            };
            assert!(
                std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(),
                "CUDA_EMBED_REQUIRE_TOOLKIT is set but the macro finds no libnvrtc: {why}"
            );
            eprintln!("ui: skipping cases/nvrtc_build ({why})");
        }
    }
    match find_nvcc() {
        Ok(Ok(nvcc)) => {
            eprintln!("ui: nvcc {} at {}: running cases/nvcc too", nvcc.version, nvcc.path.display());
            t.compile_fail("cases/nvcc/*.rs");
            total += cases("cases/nvcc");
        }
        other => {
            let why = match other {
                Ok(Err(no)) => no.to_string(),
                Err(e) => e,
                Ok(Ok(_)) => unreachable!(),
            };
            if std::env::var_os("CUDA_EMBED_UI_REQUIRE_NVCC")
                .or_else(|| std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT"))
                .is_some_and(|v| !v.is_empty() && v != "0")
            {
                panic!("CUDA_EMBED_UI_REQUIRE_NVCC is set but the macro will not use nvcc: {why}");
            }
            eprintln!("ui: skipping cases/nvcc ({why}); put nvcc on PATH to run them");
        }
    }
    progress(&format!(
        "ui: trybuild is compiling {total} compile-fail cases (two to four minutes on two cores the first time)"
    ));
}

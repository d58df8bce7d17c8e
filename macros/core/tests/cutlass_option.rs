//! `cutlass = true`: the CUTLASS/CuTe include directory from `CUDA_EMBED_CUTLASS_DIR` (set by
//! `scripts/with-cuda --with-cutlass`), an error naming the install command when it is missing,
//! and the cache keying of that directory by its version rather than header by header.
//!
//! One test, as it sets process environment variables.

use cuda_embed_macros_core::front::input::Input;
use cuda_embed_source::includes::Scanner;
use cuda_embed_source::options::{cutlass_identity, include_dirs, CUTLASS_DIR_VAR};
use std::path::PathBuf;

fn parse(tokens: &str) -> Result<Input, String> {
    syn::parse_str::<Input>(tokens).map_err(|e| e.to_string())
}

#[test]
fn cutlass_option_finds_the_headers_or_names_the_install_command() {
    let src = r##"r#"extern "C" __global__ void k(float* x) { x[0] = 1.0f; }"#, cutlass = true"##;

    std::env::remove_var(CUTLASS_DIR_VAR);
    let e = parse(src).err().expect("no CUTLASS directory is an error");
    assert!(e.contains("`cutlass = true` needs the CUTLASS headers"), "{e}");
    assert!(e.contains("scripts/with-cuda --with-cutlass cargo build") && e.contains(CUTLASS_DIR_VAR), "{e}");

    let not_cutlass = tempfile::tempdir().unwrap();
    std::env::set_var(CUTLASS_DIR_VAR, not_cutlass.path());
    let e = parse(src).err().expect("a directory without CUTLASS is an error");
    assert!(e.contains("holds no cutlass/version.h"), "{e}");

    // A stand-in install: the two files that mark a CUTLASS include directory.
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().into();
    std::fs::create_dir_all(root.join("cutlass")).unwrap();
    std::fs::create_dir_all(root.join("cute")).unwrap();
    std::fs::write(root.join("cutlass/version.h"), "#define CUTLASS_MAJOR 4\n").unwrap();
    std::fs::write(root.join("cute/config.hpp"), "#pragma once\n").unwrap();
    std::fs::write(root.join("cute/tensor.hpp"), "#pragma once\n#include <cute/config.hpp>\n").unwrap();
    std::env::set_var(CUTLASS_DIR_VAR, &root);
    let input = parse(src).expect("parses with the headers there");
    assert!(input.options.contains(&format!("-I{}", root.display())), "{:?}", input.options);
    assert!(input.options.iter().any(|o| o == "--expt-relaxed-constexpr"), "{:?}", input.options);
    assert!(input.include_dirs.is_empty(), "a -I option, not a scanned include_dirs entry");

    // The directory is keyed by its version.h, and its headers are not scanned one by one.
    let id = cutlass_identity(&include_dirs(&input.options));
    assert_eq!(id.len(), 1, "{id:?}");
    std::fs::write(root.join("cutlass/version.h"), "#define CUTLASS_MAJOR 5\n").unwrap();
    assert_ne!(cutlass_identity(&include_dirs(&input.options)), id, "another version, another key");
    let scan = Scanner::new(std::slice::from_ref(&root)).scan("#include <cute/tensor.hpp>\n", None);
    assert!(scan.headers.is_empty(), "CUTLASS headers are left to the compiler: {:?}", scan.headers.len());
    std::env::remove_var(CUTLASS_DIR_VAR);
}

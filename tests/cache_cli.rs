//! The cache's command-line tool on a cache directory of its own.

use cuda_embed_source::cache::{Entry, Store};
use std::process::Command;

fn tool(dir: &std::path::Path, arg: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cuda-embed-cache")).arg(arg).env("CUDA_EMBED_CACHE_DIR", dir).output().unwrap()
}

#[test]
fn usage_and_clear_from_the_command_line() {
    // Test binaries copied to a machine without the build (the GPU machine) lack the tool.
    if !std::path::Path::new(env!("CARGO_BIN_EXE_cuda-embed-cache")).exists() {
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "the cuda-embed-cache binary is missing");
        eprintln!("cache_cli: the cuda-embed-cache binary is not here (a copied test binary) — not run");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let entry = Entry { blobs: vec![vec![0u8; 4096]], strings: vec![], deps: vec![] };
    let written = Store::new(d.path().join("nvrtc"), "cubin").write_atomic("abc", &entry).unwrap();
    // The cache directory is a project's (`CUDA_EMBED_CACHE_DIR=.` in a CMake project): its
    // files are not the cache's, even where they sit in `build/` or look like entries.
    let foreign = [
        ("build/CMakeCache.txt", b"CMAKE_BUILD_TYPE:STRING=Release\n".as_slice()),
        ("build/my_results.dat", &[1u8; 4096]),
        ("build/CMakeFiles/k.dir/k.cu.o", b"\x7fELF"),
        ("nvrtc/def.cubin", &[0u8; 4096]),
        ("nvrtc/ghi.cubin", b"cuda-embed cache entry v4\nkey abc\n"),
        ("notes.txt", b"keep"),
    ];
    for (name, bytes) in foreign {
        let f = d.path().join(name);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, bytes).unwrap();
    }
    let out = tool(d.path(), "usage");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains(" 1 entries"), "{text}");
    let out = tool(d.path(), "clear");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!written.exists());
    for (name, bytes) in foreign {
        assert_eq!(std::fs::read(d.path().join(name)).ok().as_deref(), Some(bytes), "{name} was deleted or changed");
    }
    assert!(String::from_utf8_lossy(&tool(d.path(), "usage").stdout).contains(" 0 entries"));
    let out = tool(d.path(), "frobnicate");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: cuda-embed-cache"));
}

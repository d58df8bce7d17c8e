//! The cache's command-line tool on a cache directory of its own.

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
    std::fs::create_dir_all(d.path().join("nvrtc")).unwrap();
    std::fs::write(d.path().join("nvrtc/abc.cubin"), vec![0u8; 4096]).unwrap();
    let out = tool(d.path(), "usage");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 entries"), "{text}");
    let out = tool(d.path(), "clear");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!d.path().join("nvrtc/abc.cubin").exists());
    assert!(String::from_utf8_lossy(&tool(d.path(), "usage").stdout).contains("0 entries"));
    let out = tool(d.path(), "frobnicate");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: cuda-embed-cache"));
}

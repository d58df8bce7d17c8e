//! The NVRTC fallback's compiler and disk cache, exercised without a GPU (NVRTC itself needs none).
//! Skipped when libnvrtc is absent, unless CUDA_EMBED_REQUIRE_TOOLKIT is set (the test script sets it).

use cuda_embed_runtime::{nvrtc, Error};

fn available() -> bool {
    if nvrtc::is_available() {
        return true;
    }
    assert!(
        std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(),
        "CUDA_EMBED_REQUIRE_TOOLKIT is set but libnvrtc cannot be loaded (LD_LIBRARY_PATH?)"
    );
    eprintln!("libnvrtc not found: skipping");
    false
}

const SRC: &str = r#"
#include <cuda_fp16.h>
namespace k { __global__ void scale(__half* x, float by) { x[threadIdx.x] = __float2half(__half2float(x[threadIdx.x]) * by); } }
extern "C" __global__ void plain(int* x) { x[0] = 1; }
"#;

#[test]
fn compiles_resolves_names_and_caches_on_disk() {
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("CUDA_EMBED_CACHE_DIR", dir.path());
    let first = nvrtc::compile("test.rs:1", SRC, &["-DUNUSED=1"], &[], &["&k::scale", "plain"], 80).unwrap();
    assert!(!first.from_cache);
    assert_eq!(first.symbols, ["_ZN1k5scaleEP6__halff", "plain"]);
    assert_eq!(&first.cubin[..4], b"\x7fELF", "a cubin is an ELF image");
    let file = first.cache_file.clone().expect("cache written");
    assert!(file.starts_with(dir.path().join("nvrtc")));

    let second = nvrtc::compile("test.rs:1", SRC, &["-DUNUSED=1"], &[], &["&k::scale", "plain"], 80).unwrap();
    assert!(second.from_cache, "second compile must hit the disk cache");
    assert_eq!(second.cubin, first.cubin);
    assert_eq!(second.symbols, first.symbols);

    // Another architecture or option is another entry.
    let other = nvrtc::compile("test.rs:1", SRC, &["-DUNUSED=2"], &[], &["&k::scale", "plain"], 90).unwrap();
    assert!(!other.from_cache);
    assert_eq!(std::fs::read_dir(dir.path().join("nvrtc")).unwrap().count(), 2);

    // A syntax error is an Error carrying NVRTC's log and the origin.
    let err = nvrtc::compile("lib.rs:7", "#line 7 \"lib.rs\"\n__global__ void k( { }", &[], &[], &[], 80).unwrap_err();
    assert!(matches!(err, Error::Nvrtc { origin: "lib.rs:7", arch: 80, .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("lib.rs(7)") && msg.contains("error"), "{msg}");
}

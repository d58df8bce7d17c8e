//! What the macro core's tests that expand through both build-time compilers share (included with
//! `#[path]` by nvrtc_build.rs and modern_templates.rs): the lock around the process's
//! environment, the expansion's environment set once, the check that nvcc and libnvrtc are there,
//! and the call site the expansions name.

use cuda_embed_macros_core::{oracle::nvcc, oracle::nvrtc, CallSite};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, Once};

/// Held by every test: the environment is process-wide, and expansions read it.
pub fn lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Once per process: a build cache of the test's own (`cache`, under the test target's temporary
/// folder) and none of the variables that would choose archs or a compiler.
pub fn isolate(cache: &str) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_var("CUDA_EMBED_CACHE_DIR", PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(cache));
        std::env::remove_var("CUDA_EMBED_ARCHS");
        std::env::remove_var("CUDA_EMBED_FORCE_NVRTC");
        std::env::remove_var("CUDA_EMBED_NO_NVCC");
        std::env::remove_var("CUDA_EMBED_REQUIRE_COMPILER");
    });
}

/// Whether both compilers are there; a missing one fails when the toolkit is required.
pub fn have_both() -> bool {
    let nvcc = nvcc::find_nvcc().map(|r| r.map_err(|e| e.to_string()));
    let why = match (nvcc, nvrtc::find_nvrtc()) {
        (Ok(Ok(_)), Ok(Ok(_))) => return true,
        (Ok(Err(w)) | Err(w), _) | (_, Ok(Err(w)) | Err(w)) => w,
    };
    assert!(std::env::var_os("CUDA_EMBED_REQUIRE_TOOLKIT").is_none(), "toolkit required but {why}");
    eprintln!("skipping: {why}");
    false
}

/// The call site every expansion names.
pub fn site() -> CallSite {
    CallSite { file: "src/lib.rs".into(), line: 10, dir: None }
}

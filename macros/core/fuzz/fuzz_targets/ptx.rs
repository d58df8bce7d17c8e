//! The PTX reader never panics or hangs on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let entries = cuda_embed_macros_core::oracle::ptx::entries(&text);
    let _ = cuda_embed_macros_core::oracle::ptx::find(&entries, &["ns".to_string()], "k", false);
    let _ = cuda_embed_macros_core::oracle::ptx::find(&entries, &[], "k", true);
});

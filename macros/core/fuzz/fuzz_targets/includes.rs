//! The include scanner never panics or hangs on any text (no directory: only the text's own
//! directives are read, nothing on disk).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = cuda_embed_macros_core::front::includes::scan(&text, None, &[]);
    let _ = cuda_embed_source::includes::directives(&text);
    let _ = cuda_embed_source::includes::guarded(&text);
});

//! The signature reader and the struct reader never panic or hang on any text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = cuda_embed_macros_core::signature::parse(&text);
    let _ = cuda_embed_macros_core::oracle::structs::structs(&text);
});

//! The `cuda_kernel!` macro of [cuda-embed](https://docs.rs/cuda-embed). All logic lives in
//! `cuda-embed-macros-core`; this crate only hands it the tokens and the call site.

use proc_macro::TokenStream;

/// Compiles inline CUDA C++ at build time and generates a typed launcher per `__global__`
/// function. See the `cuda-embed` crate for the full documentation.
#[proc_macro]
pub fn cuda_kernel(input: TokenStream) -> TokenStream {
    let site = call_site(&input);
    cuda_embed_macros_core::expand(input.into(), site).into()
}

/// File and line of the first token (the source literal), so `#line` maps CUDA diagnostics to
/// the Rust file.
fn call_site(input: &TokenStream) -> cuda_embed_macros_core::CallSite {
    let span = input.clone().into_iter().next().map(|t| t.span()).unwrap_or_else(proc_macro::Span::call_site);
    let file = span.file();
    let dir = span.local_file().and_then(|f| {
        let f = if f.is_absolute() { f } else { std::env::current_dir().ok()?.join(f) };
        f.parent().map(|p| p.to_path_buf())
    });
    cuda_embed_macros_core::CallSite { file, line: span.line(), dir }
}

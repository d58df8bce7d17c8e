//! `#[cuda_embed::kernel]`: a kernel written as a Rust function, translated to CUDA C++ and built
//! through the same pipeline as `cuda_kernel!`.
//!
//! - [`syntax`]: the attribute's options and the function's signature.
//! - [`types`]: the types a kernel can name and their C++ spellings.
//! - [`emit`]: the body, checked against the supported subset, typed and written as C++
//!   (statements in `emit/mod.rs`, expressions in `expr.rs`, calls in `calls.rs`, literals and
//!   C++ spellings in `lit.rs`).
//! - [`generic`]: `fn k<T>` with `instances = [...]`: one kernel per type, a `Listed` trait.
//! - [`launcher`]: the public module: launchers taking one buffer per slice (the length is
//!   passed by the launcher), `check_errors`, the generated source.
//!
//! The C++ goes to [`crate::expand::expand_generated`], so compilation (nvcc, build-time or
//! run-time NVRTC), the build cache, the PTX signature cross-check and the hidden launcher are
//! those of `cuda_kernel!`.

pub mod emit;
pub mod generic;
pub mod launcher;
pub mod syntax;
pub mod types;

#[cfg(test)]
mod tests;

use crate::expand::{expand_generated, CallSite};
use crate::front::report::Failure;
use proc_macro2::TokenStream;
use quote::quote;
use std::fmt::Write as _;
use syn::LitStr;
use syntax::{Attr, KernelFn};
use types::Ty;

/// Expands `#[cuda_embed::kernel(attr)] item`. `site` is the function's file and line.
pub fn expand(attr: TokenStream, item: TokenStream, site: CallSite) -> TokenStream {
    let uses = launcher::device_uses(&item);
    let out = expand_fn(attr, item, site);
    quote!(#uses #out)
}

fn expand_fn(attr: TokenStream, item: TokenStream, site: CallSite) -> TokenStream {
    let attr: Attr = match syn::parse2(attr) {
        Ok(a) => a,
        Err(e) => return with_fallback(e, &item),
    };
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => {
            return syn::Error::new(
                e.span(),
                "`#[cuda_embed::kernel]` goes on a function: `fn saxpy(a: f32, x: &[f32], y: &mut [f32]) { ... }`",
            )
            .to_compile_error()
        }
    };
    if !func.sig.generics.params.is_empty() || !attr.instances.is_empty() {
        let (name, vis) = (func.sig.ident.clone(), func.vis.clone());
        return match generic::expand(&attr, &func, &site) {
            Ok(ts) => ts,
            Err(e) => {
                let err = e.to_compile_error();
                quote! { #err #[allow(non_snake_case, dead_code)] #vis mod #name {} }
            }
        };
    }
    let kernel = match syntax::kernel_fn(func) {
        Ok(k) => k,
        Err(e) => return with_fallback(e, &item),
    };
    match expand_kernel(&attr, &kernel, &site) {
        Ok(ts) => ts,
        Err(e) => {
            let name = &kernel.name;
            let vis = &kernel.vis;
            let err = e.to_compile_error();
            quote! { #err #[allow(non_snake_case, dead_code)] #vis mod #name {} }
        }
    }
}

/// The error and an empty module of the function's name, so uses of it do not cascade.
fn with_fallback(e: syn::Error, item: &TokenStream) -> TokenStream {
    let err = e.to_compile_error();
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(f) => {
            let (name, vis) = (&f.sig.ident, &f.vis);
            quote! { #err #[allow(non_snake_case, dead_code)] #vis mod #name {} }
        }
        Err(_) => err,
    }
}

/// The translated module: its C++ source and what the launchers need.
pub struct Translated {
    /// The CUDA C++ source (helpers, user C++, device functions, `extern "C" __global__` kernels).
    pub source: String,
}

/// Translates one kernel to CUDA C++.
pub fn translate(attr: &Attr, kernel: &KernelFn, file: &str, line: usize) -> syn::Result<Translated> {
    translate_module(attr, std::slice::from_ref(kernel), &[], file, line)
}

/// The C++ parameter list of `f` (slices as pointer and length; a device function with bounds
/// checks also takes the caller's failure flag and slot).
fn cpp_params(f: &KernelFn, is_device: bool, device_checks: bool) -> String {
    let mut params: Vec<String> = f
        .params
        .iter()
        .map(|p| {
            let name = emit::cpp_ident(&p.name.to_string());
            // `__restrict__` on kernel slices only: the launchers never pass an output that
            // overlaps another operand (`&mut` borrows; graph nodes check), so no two slices of a
            // launch alias in a way the kernel could observe. Device functions never get it: they
            // are inlined into the kernel, where it would add nothing, and their slices come from
            // the body, which is not borrow-checked (calls that pass one slice twice, one of them
            // `&mut`, are refused in `device_call`, but a sub-slice could still alias).
            let restrict = if is_device { "" } else { " __restrict__" };
            match &p.ty {
                Ty::Slice { elem, mutable: false } => {
                    format!("const {}*{restrict} {name}, size_t {name}__len", elem.cpp())
                }
                Ty::Slice { elem, mutable: true } => format!("{}*{restrict} {name}, size_t {name}__len", elem.cpp()),
                t => format!("{} {name}", t.cpp()),
            }
        })
        .collect();
    if device_checks {
        params.push("bool& __ce_bad".into());
        params.push("unsigned long long* __ce_slot".into());
    }
    params.join(", ")
}

/// Translates kernels and the `#[device]` functions they call into one CUDA C++ source.
pub fn translate_module(
    attr: &Attr,
    kernels: &[KernelFn],
    devices: &[KernelFn],
    file: &str,
    line: usize,
) -> syn::Result<Translated> {
    let sigs: Vec<emit::DeviceSig> = devices
        .iter()
        .map(|d| emit::DeviceSig {
            name: d.name.to_string(),
            params: d.params.iter().map(|p| p.ty.clone()).collect(),
            ret: d.ret.clone(),
        })
        .collect();
    let settings = emit::Settings {
        bounds_checks: attr.bounds_checks,
        cpp_functions: attr.cpp.is_some() || !attr.includes.is_empty(),
        device_fns: sigs,
        returns: None,
        slot: String::new(),
    };
    let file_fwd = file.replace('\\', "/");
    let mut src = String::new();
    let names: Vec<String> = kernels.iter().map(|k| format!("`fn {}`", k.name)).collect();
    let _ = writeln!(src, "// Generated by #[cuda_embed::kernel] from {} ({file_fwd}:{line}).", names.join(", "));
    for inc in &attr.includes {
        let _ = writeln!(src, "#include \"{}\"", inc.value().replace('"', ""));
    }
    if let Some(cpp) = &attr.cpp {
        let l = cpp.span().start().line;
        if l != 0 {
            let _ = writeln!(src, "#line {l} \"{file_fwd}\"");
        }
        let _ = writeln!(src, "{}", cpp.value());
    }
    src.push_str(HELPERS);
    if attr.bounds_checks {
        src.push_str(BOUNDS_HELPERS);
        for k in kernels {
            let _ = writeln!(src, "__device__ unsigned long long __ce_oob_{}[3];", k.name);
        }
    }
    // The bodies first: the tuple structs they use are declared before all of them.
    let mut device_bodies = Vec::new();
    for d in devices {
        let s = emit::Settings { returns: Some(d.ret.clone()), slot: "__ce_slot".into(), ..settings.clone() };
        device_bodies.push(emit::body(d, file, &s)?);
    }
    let mut kernel_bodies = Vec::new();
    for k in kernels {
        let s = emit::Settings { slot: format!("__ce_oob_{}", k.name), ..settings.clone() };
        kernel_bodies.push(emit::body(k, file, &s)?);
    }
    // Each tuple struct once, a nested one before the tuple holding it.
    let mut tuples: Vec<Vec<Ty>> = Vec::new();
    for d in devices {
        types::tuples_used(&d.ret, &mut tuples);
    }
    for ts in device_bodies.iter().chain(&kernel_bodies).flat_map(|b| &b.tuples) {
        types::tuples_used(&Ty::Tuple(ts.clone()), &mut tuples);
    }
    for ts in &tuples {
        let _ = writeln!(src, "{}", types::tuple_decl(ts));
    }
    for (d, body) in devices.iter().zip(device_bodies) {
        let l = d.name.span().start().line;
        if l != 0 {
            let _ = writeln!(src, "#line {l} \"{file_fwd}\"");
        }
        let ret = if d.ret == Ty::Unit { "void".to_string() } else { d.ret.cpp() };
        let _ = writeln!(
            src,
            "static __device__ __forceinline__ {ret} {}({}) {{",
            d.name,
            cpp_params(d, true, attr.bounds_checks)
        );
        src.push_str(&body.code);
        src.push_str("}\n");
    }
    for (k, body) in kernels.iter().zip(kernel_bodies) {
        let l = k.name.span().start().line;
        let _ = writeln!(src, "#line {} \"{file_fwd}\"", if l != 0 { l } else { line });
        let _ = writeln!(src, "extern \"C\" __global__ void {}({}) {{", k.name, cpp_params(k, false, false));
        src.push_str(&body.code);
        src.push_str("}\n");
    }
    Ok(Translated { source: with_half_headers(src) })
}

/// `src` with `cuda_fp16.h`/`cuda_bf16.h` included where it calls their functions without
/// naming their types (`Half2::new(a, b).x` is `__halves2half2(...).x`): the pipeline includes a
/// header for the type names only (`front::automatic_includes`).
fn with_half_headers(src: String) -> String {
    let words: Vec<&str> = crate::front::words(&src).collect();
    let uses = |names: &[&str]| words.iter().any(|w| names.contains(w));
    let mut head = String::new();
    if uses(&["__halves2half2", "__float2half", "__half2float"]) && !uses(&["__half", "__half2"]) {
        head.push_str("#include <cuda_fp16.h>\n");
    }
    if uses(&["__halves2bfloat162", "__float2bfloat16", "__bfloat162float"])
        && !uses(&["__nv_bfloat16", "__nv_bfloat162"])
    {
        head.push_str("#include <cuda_bf16.h>\n");
    }
    if head.is_empty() {
        return src;
    }
    // After the first line (the "Generated by" comment): no `#line` directive comes before it.
    let at = src.find('\n').map_or(0, |i| i + 1);
    let mut out = src;
    out.insert_str(at, &head);
    out
}

/// Helpers every translated kernel may use.
const HELPERS: &str = r#"template <typename T> static __device__ __forceinline__ T __ce_min(T a, T b) { return b < a ? b : a; }
template <typename T> static __device__ __forceinline__ T __ce_max(T a, T b) { return a < b ? b : a; }
"#;

/// The bounds check: the first out-of-range index of a launch is recorded in the kernel's slot
/// `__ce_oob_NAME` (Rust line, index, length), the access goes to a scratch word instead, and the
/// thread returns at the end of the statement (`__ce_bad`). No `__trap()`: the context stays
/// usable. The scratch word is as large and as aligned as the largest element a kernel indexes
/// (`double3`, 24 bytes; `float4`, 16-byte aligned).
const BOUNDS_HELPERS: &str = r#"__device__ __align__(16) unsigned long long __ce_scratch[4];
template <typename T>
static __device__ __forceinline__ T& __ce_at(T* p, size_t len, size_t i, bool& bad, unsigned int line, unsigned long long* slot) {
    if (__builtin_expect(i < len, 1)) return p[i];
    if (atomicCAS(&slot[0], 0ull, (unsigned long long)line) == 0ull) {
        slot[1] = (unsigned long long)i;
        slot[2] = (unsigned long long)len;
    }
    bad = true;
    return *reinterpret_cast<T*>(__ce_scratch);
}
"#;

fn expand_kernel(attr: &Attr, kernel: &KernelFn, site: &CallSite) -> syn::Result<TokenStream> {
    let translated = translate(attr, kernel, &site.file, site.line)?;
    let lit = LitStr::new(&translated.source, kernel.name.span());
    let generated = expand_generated(lit, site, &attr.options, Vec::new()).map_err(|Failure { error, .. }| error)?;
    let tokens = &generated.tokens;
    let hidden = &generated.hidden;
    let public: syn::Visibility = syn::parse_quote!(pub);
    let wrapper = launcher::module(
        kernel,
        attr.bounds_checks,
        site,
        &translated.source,
        &quote!(super::#hidden),
        &quote!(super),
        &public,
    );
    Ok(launcher::enclosed(&kernel.name, &kernel.vis, &kernel.params, quote! { #tokens #wrapper }))
}

/// Expands `#[cuda_embed::kernels(attr)] mod m { ... }`: its `#[kernel]` and `#[device]`
/// functions become one CUDA module (kernels call the device functions); other items stay.
pub fn expand_module(attr: TokenStream, item: TokenStream, site: CallSite) -> TokenStream {
    match expand_module_inner(attr, item.clone(), &site) {
        Ok(ts) => ts,
        Err(e) => {
            // The module, emptied of its functions' bodies, so its `use`s and other items stay.
            let err = e.to_compile_error();
            match syn::parse2::<syn::ItemMod>(item) {
                Ok(m) => {
                    let (attrs, vis, ident) = (&m.attrs, &m.vis, &m.ident);
                    let items = m.content.map(|c| c.1).unwrap_or_default();
                    let uses = launcher::device_uses(&quote!(#(#items)*));
                    let kept = items.iter().filter(|i| !matches!(i, syn::Item::Fn(f) if marker(f).is_some()));
                    quote! { #err #(#attrs)* #vis mod #ident { #(#kept)* #uses } }
                }
                Err(_) => err,
            }
        }
    }
}

/// Which of `#[kernel]`/`#[device]` (any path ending so) marks `f`, with the attribute.
fn marker(f: &syn::ItemFn) -> Option<(&'static str, &syn::Attribute)> {
    f.attrs.iter().find_map(|a| {
        let last = a.path().segments.last()?.ident.to_string();
        match last.as_str() {
            "kernel" => Some(("kernel", a)),
            "device" => Some(("device", a)),
            _ => None,
        }
    })
}

fn expand_module_inner(attr: TokenStream, item: TokenStream, site: &CallSite) -> syn::Result<TokenStream> {
    let attr: Attr = syn::parse2(attr)?;
    if let Some(first) = attr.instances.first() {
        return Err(syn::Error::new_spanned(
            first,
            "`instances` goes on a generic kernel of its own: `#[cuda_embed::kernel(instances = [...])] fn k<T>(...)`; \
             kernels of a `#[cuda_embed::kernels]` module are not generic",
        ));
    }
    let mut m: syn::ItemMod = syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            "`#[cuda_embed::kernels]` goes on an inline module: `mod gpu { #[kernel] fn k(...) { ... } }`",
        )
    })?;
    let Some((brace, items)) = m.content.take() else {
        return Err(syn::Error::new_spanned(
            &m,
            "`#[cuda_embed::kernels]` needs the module's items inline: `mod gpu { ... }`",
        ));
    };
    // Signatures too: a vector type named only in a parameter counts as used.
    let uses = launcher::device_uses(&quote!(#(#items)*));
    let (mut kernels, mut devices, mut rest) = (Vec::new(), Vec::new(), Vec::new());
    for it in items {
        match it {
            syn::Item::Fn(mut f) => match marker(&f).map(|(k, a)| (k, a.clone())) {
                Some((kind, a)) => {
                    if !matches!(a.meta, syn::Meta::Path(_)) {
                        return Err(syn::Error::new_spanned(
                            &a,
                            "options go on the module: `#[cuda_embed::kernels(bounds_checks = false)] mod gpu { ... }`",
                        ));
                    }
                    f.attrs.retain(|x| {
                        let last = x.path().segments.last().map(|s| s.ident.to_string());
                        !matches!(last.as_deref(), Some("kernel" | "device"))
                    });
                    let func = syntax::function(f, kind == "device")?;
                    if kind == "kernel" {
                        kernels.push(func)
                    } else {
                        devices.push(func)
                    }
                }
                None => rest.push(syn::Item::Fn(f)),
            },
            other => rest.push(other),
        }
    }
    if kernels.is_empty() {
        return Err(syn::Error::new(brace.span.join(), "the module has no `#[kernel]` function"));
    }
    let translated = translate_module(&attr, &kernels, &devices, &site.file, site.line)?;
    let lit = LitStr::new(&translated.source, m.ident.span());
    let generated = expand_generated(lit, site, &attr.options, Vec::new()).map_err(|Failure { error, .. }| error)?;
    let tokens = &generated.tokens;
    let hidden = &generated.hidden;
    let hidden = quote!(super::#hidden);
    let wrappers = kernels
        .iter()
        .map(|k| launcher::module(k, attr.bounds_checks, site, &translated.source, &hidden, &quote!(super), &k.vis));
    let (attrs, vis, ident) = (&m.attrs, &m.vis, &m.ident);
    Ok(quote! {
        #(#attrs)*
        #vis mod #ident {
            #(#rest)*
            #tokens
            #uses
            #(#wrappers)*
        }
    })
}

//! Code generation: the checked IR to Rust items. Reads the IR, decides nothing: every error was
//! found by the checker (the ones generated here are where the checker said to put them).
//!
//! - [`paths`]: every path into the runtime crate.
//! - [`buffer_args`]: the per-parameter buffer traits of the elementwise and reduction launchers.
//! - [`future_args`]: the arguments of the `*_async` launchers.
//! - [`kernel`]: one kernel's module (launchers, attributes; a template's instance impls).
//! - this file: the hidden module with the `ModuleSpec`, the globals and the re-exports.

pub mod buffer_args;
pub mod future_args;
mod host_only;
pub mod kernel;
pub mod params;
pub mod paths;

use crate::front::ir::{rust_name, Checked, GenericArg, Global, Image, Module};
use crate::front::types::{Mapped, RustPath, RustType};
use kernel::{kernel_module, template_gen, KernelGen};
use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// The Rust type for `t`.
pub fn rust_type(t: &RustType) -> TokenStream {
    match t {
        RustType::Builtin(b) => match b.rust {
            RustPath::Primitive(p) => {
                let id = format_ident!("{}", p);
                quote!(#id)
            }
            RustPath::Crate(name) => paths::crate_type(name),
        },
        RustType::Generic(name) => {
            let id = generic_ident(name);
            quote!(#id)
        }
    }
}

/// The Rust generic parameter for a template parameter (`T`; `P_fn` for a name Rust reserves).
pub fn generic_ident(name: &str) -> syn::Ident {
    syn::parse_str::<syn::Ident>(name).unwrap_or_else(|_| format_ident!("P_{}", name))
}

/// One generic argument of an instance (`f32`, `super::super::Params`, `256`, `{ -1 }`).
pub fn generic_arg(a: &GenericArg) -> TokenStream {
    match a {
        GenericArg::Type(t) => rust_type(t),
        GenericArg::User(name) => {
            let ty = format_ident!("{}", name);
            quote!(super::super::#ty)
        }
        GenericArg::Bool(b) => quote!(#b),
        GenericArg::Signed(n) => {
            let n = Literal::i64_unsuffixed(*n);
            quote!({ #n })
        }
        GenericArg::Unsigned(n) => {
            let n = Literal::u64_unsuffixed(*n);
            quote!(#n)
        }
    }
}

/// A launcher argument's name: the parameter's, unless Rust or the launcher reserves it.
pub fn param_ident(name: &str, index: usize) -> syn::Ident {
    param_ident_reserving(name, index, &[])
}

/// [`param_ident`] for launchers with arguments of their own besides `stream`, `config`, ...:
/// a parameter named like one of `extra` (or like those of [`param_ident`], or starting with
/// `__`, the generated code's own names) becomes `NAME_INDEX`; a Rust keyword becomes a raw
/// identifier (`r#type`).
pub fn param_ident_reserving(name: &str, index: usize, extra: &[&str]) -> syn::Ident {
    const RESERVED: &[&str] = &[
        "stream", "config", "cluster", "graph", "exec", "node", "NAME", "KERNEL", "self", "Self", "super", "crate", "_",
    ];
    if RESERVED.contains(&name) || extra.contains(&name) || name.starts_with("__") {
        return format_ident!("{}_{}", name.trim_start_matches('_'), index);
    }
    syn::parse_str::<syn::Ident>(name).unwrap_or_else(|_| syn::Ident::new_raw(name, Span::call_site()))
}

/// The embedded image as an expression.
fn image_expr(image: &Image, checked: &Checked) -> TokenStream {
    let image_ty = paths::image();
    match image {
        Image::Fatbin { bytes, targets, release, limits, advisories } => {
            let n = bytes.len();
            let bytes = Literal::byte_string(bytes);
            // Per cubin, each kernel's block limit in the spec's kernel order (0: not known).
            let limits = limits.iter().map(|(target, kernels)| {
                let threads = checked.kernels.iter().map(|t| {
                    let symbol = t.symbol.as_deref();
                    let n = kernels.iter().find(|(s, _)| Some(s.as_str()) == symbol).map_or(0, |&(_, n)| n);
                    Literal::u32_unsuffixed(n)
                });
                // The architecture as a number (`sm_90a`: 90): what the runtime compares with
                // the GPU's compute capability.
                let arch = cuda_embed_source::options::Arch::parse(target).map_or(0, |a| a.number);
                let arch = Literal::u32_unsuffixed(arch);
                quote! { (#arch, &[#(#threads),*]) }
            });
            let warnings = advisory_warnings(advisories);
            quote! {{
                #warnings
                #[repr(C, align(16))]
                struct __Aligned([u8; #n]);
                static __IMAGE: __Aligned = __Aligned(*#bytes);
                // SAFETY: the bytes are the complete fatbin nvcc built for this source, 16-byte
                // aligned; the limits were read from its cubins.
                unsafe { #image_ty::fatbin(&__IMAGE.0, &[#(#targets),*], #release, &[#(#limits),*]) }
            }}
        }
        Image::Cubins { cubins, ptx, ptx_target, release } => {
            let statics = cubins.iter().enumerate().map(|(i, (_, bytes))| {
                let id = format_ident!("__CUBIN_{}", i);
                let n = bytes.len();
                let bytes = Literal::byte_string(bytes);
                quote! { static #id: __Aligned<#n> = __Aligned(*#bytes); }
            });
            let entries = cubins.iter().enumerate().map(|(i, (sm, _))| {
                let id = format_ident!("__CUBIN_{}", i);
                quote! { (#sm, &#id.0) }
            });
            let k = cubins.len();
            quote! {{
                #[repr(C, align(16))]
                struct __Aligned<const N: usize>([u8; N]);
                #(#statics)*
                static __CUBINS: [(&str, &[u8]); #k] = [#(#entries),*];
                // SAFETY: each blob is the complete cubin NVRTC built for this source and its
                // architecture, 16-byte aligned; the text is the PTX of the same build.
                unsafe { #image_ty::cubins(&__CUBINS, #ptx, #ptx_target, #release) }
            }}
        }
        Image::Linked { units, headers, lto, reason } => {
            let unit_ty = paths::linked_unit();
            let host_code = units
                .iter()
                .map(|u| host_only::host_only_warning(&u.text, headers.iter()))
                .find(|w| !w.is_empty())
                .unwrap_or_default();
            let units = units.iter().map(|u| {
                let crate::front::ir::LinkedUnit { name, text, options, exprs } = u;
                quote! { #unit_ty { name: #name, source: #text, options: &[#(#options),*], exprs: &[#(#exprs),*] } }
            });
            let header_names = headers.iter().map(|h| &h.0);
            let header_texts = headers.iter().map(|h| &h.1);
            let image = quote! {
                #image_ty::linked(&[#(#units),*], &[#((#header_names, #header_texts)),*], #lto, #reason)
            };
            preceded_by(silent_fallback_warning(reason), preceded_by(host_code, image))
        }
        Image::Source { text, options, headers, reason } => {
            let header_names = headers.iter().map(|h| &h.0);
            let header_texts = headers.iter().map(|h| &h.1);
            let (probe, checks) = crate::oracle::firstload::plan(checked);
            // The type check as `static_assert`s after the source: the module's one NVRTC
            // compile at first use is then also its check, and the probe is compiled (with the
            // asserts left out) only to say what a parameter that failed it really is.
            let statics = cuda_embed_source::typecode::static_checks(
                &probe,
                checks.iter().map(|c| (c.symbol.as_str(), c.mask, c.value)),
            );
            // `own_len`: where the check starts (the include scan of a cache hit stops there).
            let own_len = text.len();
            let text = &match statics {
                Some(asserts) if !probe.is_empty() => format!("{text}{asserts}"),
                _ => text.clone(),
            };
            let check_ty = paths::param_check();
            let checks = checks.iter().map(|c| {
                let crate::oracle::firstload::Check { kernel, param, name, cxx, rust, symbol, mask, value } = c;
                quote! {
                    #check_ty { kernel: #kernel, param: #param, name: #name, cxx: #cxx, rust: #rust, symbol: #symbol,
                        mask: #mask, value: #value }
                }
            });
            // What a passed first-load check is recorded under in the cubin's cache entry, and
            // the digest of the compile's fixed inputs that its cache key hashes, computed here so
            // a cache hit does not hash the source and the probe.
            let mark = cuda_embed_source::key::checks_mark(text, &probe);
            // The name expressions as the runtime lists them: the kernels', then the globals'.
            let exprs: Vec<String> = checked
                .kernels
                .iter()
                .map(kernel_name_expression)
                .chain(checked.globals.iter().map(global_name_expression))
                .collect();
            let unit = cuda_embed_source::key::nvrtc_unit_digest(
                cuda_embed_source::key::NVRTC_KERNEL_NAME,
                text,
                options,
                headers,
                &exprs,
            );
            let image = quote! {
                #image_ty::source_checked(#text, &[#(#options),*], &[#((#header_names, #header_texts)),*], #reason,
                    #probe, &[#(#checks),*], #mark, #unit, #own_len)
            };
            let host_code = host_only::host_only_warning(&text[..own_len], headers);
            preceded_by(silent_fallback_warning(reason), preceded_by(host_code, image))
        }
    }
}

/// The NVRTC name expression of a kernel: its name when `extern "C"`, else its address.
fn kernel_name_expression(t: &crate::front::ir::TypedKernel) -> String {
    if t.unit.kernel.extern_c {
        t.unit.kernel.name.clone()
    } else {
        format!("&{}", t.unit.expr.trim_start_matches("::"))
    }
}

/// The NVRTC name expression of a `__device__`/`__constant__` variable: its address.
fn global_name_expression(g: &Global) -> String {
    format!("&{}", g.var.qualified_name())
}

/// `Some("text")` or `None`, as an expression.
fn option(s: Option<&str>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// One global: its `GlobalSpec` and its items (checks, the `static`).
fn global_items(g: &Global, gi: usize, span: Span) -> (TokenStream, TokenStream) {
    let (ty, check) = match &g.elem {
        Mapped::Value(t) => {
            let ty = rust_type(t);
            // A toolkit struct (`cudaExtent`): its Rust twin's fields against the compiler's.
            let check = match &g.fields {
                Some(fields) => crate::oracle::structs::layout_check(ty.clone(), &g.var.elem.base, fields, span),
                None => quote!(),
            };
            (ty, check)
        }
        Mapped::User { name, .. } => {
            let ty = format_ident!("{}", name, span = span);
            // The field check requires `DeviceSafe` itself: one unsatisfied bound, one error.
            let check = match &g.fields {
                Some(fields) => {
                    crate::oracle::structs::layout_check(quote_spanned!(span=> super::#ty), name, fields, span)
                }
                None => {
                    let assert = paths::assert_device_safe(span);
                    quote_spanned!(span=> const _: () = #assert::<super::#ty>();)
                }
            };
            (quote!(super::#ty), check)
        }
        _ => (paths::raw_device_ptr(), quote!()),
    };
    let id = rust_name(&g.var.name).unwrap_or_else(|_| format_ident!("invalid_global_name"));
    let qualified = g.var.qualified_name();
    let symbol = option(g.symbol.as_deref());
    let expr = global_name_expression(g);
    let bytes = match g.bytes {
        Some(b) => quote!(::core::option::Option::Some(#b)),
        None => quote!(::core::option::Option::None),
    };
    let space = &g.var.space;
    let dims: String = g.var.dims.iter().map(|d| format!("[{d}]")).collect();
    let doc = format!(
        "Handle to the CUDA {space} variable `{qualified}{dims}` (elements of `{}`): write it from the host, read it \
         back, or get its device address, per device.",
        g.elem.describe()
    );
    let mut items = Vec::new();
    if let Some(msg) = &g.size_error {
        items.push(quote_spanned!(span=> ::core::compile_error!(#msg);));
    }
    if let Mapped::User { .. } = &g.elem {
        match (g.bytes, g.var.literal_len()) {
            // The element count is known (a scalar is 1): the struct's size must be exact.
            (Some(b), Some(n)) if n > 0 && b % n == 0 => {
                let (n, size) = (n as usize, (b / n) as usize);
                let msg = format!(
                    "the Rust type for {space} `{qualified}` must be {size} bytes, the size of the CUDA struct (use #[repr(C)] and the CUDA struct's fields)"
                );
                items.push(quote_spanned!(span=>
                    const _: () = ::core::assert!(#n * ::core::mem::size_of::<#ty>() == #b as usize, #msg);
                ));
            }
            (Some(b), _) => {
                let msg = format!(
                    "the Rust type for {space} `{qualified}` must divide its {b} bytes (use #[repr(C)] and the CUDA struct's fields)"
                );
                items.push(quote_spanned!(span=>
                    const _: () = ::core::assert!(#b as usize % ::core::mem::size_of::<#ty>() == 0, #msg);
                ));
            }
            (None, _) => {}
        }
    }
    let (global_spec, global) = (paths::global_spec(), paths::global());
    let spec = quote! {
        #global_spec {
            name: #qualified,
            symbol: #symbol,
            name_expression: #expr,
            bytes: #bytes,
            elem_size: ::core::mem::size_of::<#ty>(),
        }
    };
    items.push(quote! {
        #check
        #[doc = #doc]
        // SAFETY: global #gi of __MODULE, whose element type the checker mapped to this Rust type.
        pub static #id: #global<#ty> = unsafe { #global::new(&__MODULE, #gi) };
    });
    (spec, quote!(#(#items)*))
}

/// The Rust twins of the module's structs (`pub mod __twins { ... }` in the hidden module) and
/// their glob re-export where the macro was invoked: a glob import is shadowed by an item of the
/// same name, so a twin the user wrote wins, and the generated one is used where there is none.
fn twin_items(checked: &Checked, hidden: &syn::Ident, span: Span) -> (TokenStream, TokenStream) {
    if checked.twins.is_empty() && checked.missing_twins.is_empty() {
        return (quote!(), quote!());
    }
    let root = paths::crate_type("DeviceSafe");
    let structs = checked.twins.iter().map(|(name, fields)| {
        let id = format_ident!("{}", name);
        let rows = fields.iter().map(|f| {
            let fid = format_ident!("{}", f.name);
            let elem = match &f.elem {
                Some(b) => rust_type(&RustType::Builtin(*b)),
                None => paths::raw_device_ptr(),
            };
            let ty = if f.count == 1 {
                elem
            } else {
                let n = f.count as usize;
                quote!([#elem; #n])
            };
            quote!(pub #fid: #ty)
        });
        let doc = format!(
            "The Rust twin of the CUDA struct `{name}`, generated from the layout the compiler gave it (fields in \
             declaration order, pointers as raw device addresses). Write your own `#[repr(C)]` `{name}` with \
             `#[derive(Clone, Copy, DeviceSafe)]` next to the `cuda_kernel!` to use it instead."
        );
        quote! {
            #[doc = #doc]
            #[repr(C)]
            #[derive(Clone, Copy, Debug, PartialEq, #root)]
            pub struct #id { #(#rows),* }
        }
    });
    let (stand_ins, checks): (Vec<_>, Vec<_>) = checked.missing_twins.iter().map(|t| missing_twin(t, span)).unzip();
    (
        quote! {
            /// Rust twins of the source's structs (re-exported by a glob, which the user's own type
            /// of the same name shadows).
            pub mod __twins { #(#structs)* #(#stand_ins)* }
        },
        quote! {
            #[allow(unused_imports)]
            pub use #hidden::__twins::*;
            #(#checks)*
        },
    )
}

/// For a struct passed by value that got no Rust twin: a stand-in of its name (the CUDA size and
/// alignment, so the launchers and their layout checks compile around it) and a `const` check
/// beside the glob export that panics, naming the struct, why no twin was generated and what to
/// write, when the name resolves to the stand-in, i.e. when the user wrote no type of that name.
/// One error at the kernel source instead of `cannot find type ... in module super::super`.
fn missing_twin(t: &crate::front::ir::MissingTwin, span: Span) -> (TokenStream, TokenStream) {
    let id = format_ident!("{}", t.name, span = span);
    let body = match t.layout {
        Some((size, align)) => {
            let (size, align) = (size as usize, Literal::usize_unsuffixed(align.max(1) as usize));
            quote_spanned!(span=> #[repr(C, align(#align))] pub struct #id(pub [u8; #size]);)
        }
        None => quote_spanned!(span=> #[repr(C)] pub struct #id(pub ());),
    };
    let root = paths::crate_type("DeviceSafe");
    let fields = match &t.members {
        Some(m) if !m.is_empty() => {
            format!(
                " with the CUDA struct's fields in the CUDA order ({})",
                m.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            )
        }
        _ => " with the CUDA struct's fields in the CUDA order".to_string(),
    };
    let message = format!(
        "no Rust type for the CUDA struct `{name}`, which {used_by} takes by value: no Rust twin was generated \
         because {why}; write `#[repr(C)] #[derive(Clone, Copy, cuda_embed::DeviceSafe)] struct {name} {{ ... }}`{fields} \
         next to the macro (its size, alignment and field offsets are checked against the compiler's)",
        name = t.name,
        used_by = t.used_by,
        why = t.why,
    );
    let fallback = quote_spanned!(span=> ::cuda_embed::__private::NoTwinFallback);
    (
        quote_spanned! {span=>
            #[doc(hidden)]
            #[allow(dead_code)]
            #[derive(Clone, Copy)]
            #body
            impl #id {
                /// This is the macro's stand-in, not a usable twin (see `NoTwinFallback`).
                pub const __CUDA_EMBED_NO_TWIN: bool = true;
            }
            // SAFETY: plain bytes of the CUDA struct's size and alignment, with no invariants; and
            // never passed to a kernel: the check beside the export stops the build whenever this
            // stand-in is the type the launchers use.
            unsafe impl #root for #id {}
        },
        quote_spanned! {span=>
            const _: () = {
                #[allow(unused_imports)]
                use #fallback as _;
                if <#id>::__CUDA_EMBED_NO_TWIN {
                    ::core::panic!("{}", #message)
                }
            };
        },
    )
}

/// Generates everything for a checked module: a hidden module holding the `ModuleSpec`, the
/// globals and one module per kernel, re-exported where the macro was invoked.
pub fn generate(
    module: &Module,
    checked: &Checked,
    image: &Image,
    deps: &[PathBuf],
    template_items: TemplateItems<'_>,
) -> TokenStream {
    let (hidden, items) = generate_hidden(module, checked, image, deps, template_items);
    let kernels = module.kernel_names().iter().filter_map(|k| rust_name(k).ok()).collect::<Vec<_>>();
    let globals =
        checked.globals.iter().map(|g| rust_name(&g.var.name).unwrap_or_else(|_| format_ident!("invalid_global_name")));
    // A kernel and a global of one name in two namespaces (`a::f` and `b::f`) are a module and a
    // static of one Rust name: one `use` re-exports both.
    let mut names: Vec<syn::Ident> = Vec::new();
    for id in kernels.into_iter().chain(globals) {
        if !names.contains(&id) {
            names.push(id);
        }
    }
    quote! {
        #items
        #[allow(unused_imports)]
        pub use #hidden::{#(#names),*};
    }
}

/// Items a feature adds to the module of template `ti` (`tune`'s `tuned` launcher): the driver
/// passes the feature's generator, so this stage never imports a feature.
pub type TemplateItems<'a> = &'a dyn Fn(&Module, &Checked, usize) -> TokenStream;

/// No items for any template.
pub fn no_items(_: &Module, _: &Checked, _: usize) -> TokenStream {
    TokenStream::new()
}

/// The first time in a crate's build that a module falls back to NVRTC at run time because no
/// CUDA compiler was found (not because one was asked for), a `deprecated` item whose use makes
/// rustc print a warning on the user's build: such a binary compiles its kernels on every user's
/// machine, and `cargo build` would otherwise say nothing. Once per crate (per proc-macro process).
pub(crate) fn silent_fallback_warning(reason: &str) -> TokenStream {
    use crate::oracle::REQUIRE_COMPILER_VAR;
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if reason == crate::oracle::nvcc::NoNvcc::Forced.to_string()
        || WARNED.swap(true, std::sync::atomic::Ordering::Relaxed)
    {
        return TokenStream::new();
    }
    let note = format!(
        "cuda-embed: no CUDA compiler was found while building this crate ({reason}), so its kernels will be \
         compiled by NVRTC on every user's machine at first use, without the build-time checks; install the \
         CUDA toolkit (nvcc), or run cargo through cuda-embed's `scripts/with-cuda`, or set \
         {REQUIRE_COMPILER_VAR}=1 to make this an error (`compiler = \"nvrtc\"` on the macro says it is meant)"
    );
    build_warning("NoCudaCompilerAtBuildTime", &note)
}

/// `image` (an expression) with `items` before it in a block, or alone when there are none.
fn preceded_by(items: TokenStream, image: TokenStream) -> TokenStream {
    if items.is_empty() {
        image
    } else {
        quote! {{ #items #image }}
    }
}

/// A warning rustc prints at the macro on the user's build: a `deprecated` item named `item`
/// (what the warning is about) with `note`, used at once. A proc macro has no warnings of its own
/// on stable Rust; this is how the build's warnings (no compiler, ptxas's advisories, host code
/// for NVRTC) reach the user.
pub(crate) fn build_warning(item: &str, note: &str) -> TokenStream {
    let item = format_ident!("{}", item);
    quote! {
        const _: () = {
            #[deprecated(note = #note)]
            struct #item;
            let _ = #item;
        };
    }
}

/// ptxas's performance advisories about a module's build (`nvcc::Output::advisories`), as
/// `deprecated` items whose use makes rustc print each as a warning at the macro: nvcc prints
/// them on a successful build, where nobody reads its log (`wgmma` serialized by a call in the
/// pipeline costs a CUTLASS GEMM about 10%).
pub(crate) fn advisory_warnings(advisories: &[String]) -> TokenStream {
    let items = advisories.iter().map(|a| {
        // C7510 (wgmma serialized by a call in the pipeline): in CUTLASS/CuTe, device asserts.
        let hint = if a.contains("C7510") {
            " (in CUTLASS/CuTe kernels: define NDEBUG, `defines = [\"NDEBUG\"]`, so device asserts are not \
             calls inside the wgmma pipeline)"
        } else {
            ""
        };
        build_warning("PtxasPerformanceAdvisory", &format!("cuda-embed: ptxas: {a}{hint}"))
    });
    quote! { #(#items)* }
}

/// The hidden module alone (its name and its tokens), without the re-exports: for macros that
/// wrap the kernels in their own module (`elementwise_kernel!`).
pub fn generate_hidden(
    module: &Module,
    checked: &Checked,
    image: &Image,
    deps: &[PathBuf],
    template_items: TemplateItems<'_>,
) -> (syn::Ident, TokenStream) {
    let span = module.span();
    let site = &module.site;
    // The tag must not depend on where the checkout lives (reproducible builds, stable
    // diagnostics): the file's name, the line and the source are enough to tell invocations apart.
    let file_name = site.file.rsplit(['/', '\\']).next().unwrap_or(&site.file);
    let mut h = Sha256::new();
    h.update(file_name.as_bytes());
    h.update(site.line.to_le_bytes());
    // `#line` directives of generated sources name the Rust file by its path: left out.
    for line in module.source.lines().filter(|l| !l.trim_start().starts_with("#line")) {
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    let tag: String = h.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect();
    let hidden = format_ident!("__cuda_embed_{}", tag);

    let kernel_spec = paths::kernel_spec();
    let specs = checked.kernels.iter().map(|t| {
        let name = &t.unit.display;
        let symbol = option(t.symbol.as_deref());
        let expr = kernel_name_expression(t);
        let sizes = t.params.iter().map(|m| match (m, m.size()) {
            (_, Some(s)) => quote!(#s),
            (Mapped::User { name, .. }, None) => {
                let ty = format_ident!("{}", name);
                quote!(::core::mem::size_of::<super::#ty>() as u32)
            }
            _ => quote!(0u32),
        });
        quote! {
            #kernel_spec { name: #name, symbol: #symbol, name_expression: #expr, param_sizes: &[#(#sizes),*] }
        }
    });

    let mut modules: Vec<TokenStream> = Vec::new();
    for (index, t) in checked.kernels.iter().enumerate().filter(|(_, t)| t.unit.instance.is_none()) {
        let gen = KernelGen {
            decl: &t.unit.kernel,
            name: module.module_name(&t.unit.kernel),
            params: &t.params,
            fields: t.fields.clone(),
            index: quote!(#index),
            generics: Vec::new(),
            where_clause: quote!(),
            items: quote!(),
        };
        modules.push(kernel_module(&gen, span));
    }
    for (ti, sig) in checked.templates.iter().enumerate() {
        match sig {
            Ok(params) => {
                let mut gen = template_gen(module, checked, ti, params);
                gen.items.extend(template_items(module, checked, ti));
                modules.push(kernel_module(&gen, span))
            }
            Err(e) => modules.push(syn::Error::new(span, e).to_compile_error()),
        }
    }
    let mut global_items = Vec::new();
    let mut global_specs = Vec::new();
    for (gi, g) in checked.globals.iter().enumerate() {
        let (spec, items) = self::global_items(g, gi, span);
        global_specs.push(spec);
        global_items.push(items);
    }
    // Cargo rebuilds the crate when the CUDA file or a header it includes changes.
    let tracked = deps.iter().filter_map(|d| d.to_str()).map(|d| {
        quote!(
            const _: &[u8] = include_bytes!(#d);
        )
    });
    let (twins, twin_export) = twin_items(checked, &hidden, span);
    let image = image_expr(image, checked);
    let (module_ty, module_spec) = (paths::module(), paths::module_spec());
    let origin = &module.origin;
    // Everything lives in one hidden module (so the macro also works inside a function body) and
    // the kernel modules are re-exported where the macro was invoked.
    let items = quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, non_upper_case_globals)]
        mod #hidden {
            #(#tracked)*
            pub(super) static __MODULE: #module_ty = {
                static __SPEC: #module_spec = #module_spec {
                    origin: #origin,
                    image: #image,
                    kernels: &[#(#specs),*],
                    globals: &[#(#global_specs),*],
                };
                // SAFETY: the spec was generated from the compiled code: symbols and parameter
                // sizes are the compiler's (checked against its PTX on the nvcc path, at load
                // on the NVRTC path).
                unsafe { #module_ty::new(&__SPEC) }
            };
            #(#global_items)*
            #(#modules)*
            #twins
        }
        #twin_export
    };
    (hidden, items)
}

#[cfg(test)]
mod tests {
    /// Each ptxas advisory becomes one `deprecated` item (a warning on the user's build) that
    /// quotes it and says what to do for CUTLASS kernels.
    #[test]
    fn advisories_become_warnings() {
        let a = vec!["(C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized".to_string()];
        let tokens = super::advisory_warnings(&a).to_string();
        assert_eq!(tokens.matches("deprecated").count(), 1, "{tokens}");
        assert!(tokens.contains("C7510") && tokens.contains("NDEBUG"), "{tokens}");
        assert!(super::advisory_warnings(&[]).is_empty());
        let other = vec!["(C7508) Potential Performance Loss: 'setmaxnreg' ignored".to_string()];
        assert!(!super::advisory_warnings(&other).to_string().contains("NDEBUG"));
    }
}

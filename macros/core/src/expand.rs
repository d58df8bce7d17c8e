//! From macro input to Rust items: parse, compile, check, generate.

use crate::compile::{self, Arch, Nvcc, Request};
use crate::input::{Compiler, Input};
use crate::ptx;
use crate::signature::{self, Kernel, Parsed};
use crate::types::{self, Builtin, Mapped, Probed};
use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;

/// Where the macro was invoked, as rustc reports it.
#[derive(Debug, Clone, Default)]
pub struct CallSite {
    /// The Rust file as rustc names it in diagnostics (`src/main.rs`).
    pub file: String,
    /// 1-based line of the source literal's first character.
    pub line: usize,
    /// The file's directory on disk, for `#include "..."` next to the Rust file.
    pub dir: Option<PathBuf>,
}

/// Expands `cuda_kernel!`. Errors become `compile_error!`s plus fallback items, so the user sees
/// the real error and not a cascade of "cannot find `saxpy`".
pub fn expand(tokens: TokenStream, site: CallSite) -> TokenStream {
    let input: Input = match syn::parse2(tokens) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match expand_input(&input, &site) {
        Ok(ts) => ts,
        Err((e, mut names)) => {
            names.sort();
            names.dedup();
            let fallback = names.iter().filter_map(|n| kernel_ident(n).ok()).map(|id| {
                quote! { #[allow(non_snake_case, dead_code)] pub mod #id {} }
            });
            let err = e.to_compile_error();
            quote! { #err #(#fallback)* }
        }
    }
}

type Failure = (syn::Error, Vec<String>);

/// A kernel with its mapped parameters.
struct Typed<'a> {
    kernel: &'a Kernel,
    params: Vec<Mapped>,
    symbol: String,
}

fn expand_input(input: &Input, site: &CallSite) -> Result<TokenStream, Failure> {
    let lit = &input.source;
    let span = lit.span();
    let source = lit.value();
    let err = |msg: String| (syn::Error::new(span, msg), Vec::new());
    if source.trim().is_empty() {
        return Err(err("the CUDA source is empty: write at least one `__global__` function".into()));
    }
    let parsed = signature::parse(&source).map_err(|e| err(format!("cannot read the CUDA source: {}", e.0)))?;
    let names: Vec<String> = parsed.kernels.iter().map(|k| k.name.clone()).collect();
    let fail = |msg: String| (syn::Error::new(span, msg), names.clone());
    if let Some(o) = parsed.overloaded.first() {
        return Err(fail(format!(
            "kernel `{o}` is overloaded: give each overload its own name (a launcher needs one signature)"
        )));
    }
    if parsed.kernels.is_empty() {
        let msg = if parsed.templates.is_empty() {
            "no `__global__` function in the CUDA source: write e.g. `extern \"C\" __global__ void k(float* x) { ... }`"
                .to_string()
        } else {
            format!(
                "the CUDA source has only template kernels ({}): template instantiation lists are not supported yet; \
                 write a non-template `__global__` wrapper that calls the instance you need",
                parsed.templates.join(", ")
            )
        };
        return Err(fail(msg));
    }
    let mut seen = HashMap::new();
    for k in &parsed.kernels {
        if let Err(e) = kernel_ident(&k.name) {
            return Err(fail(e));
        }
        if let Some(prev) = seen.insert(k.name.clone(), k.qualified_name()) {
            return Err(fail(format!(
                "kernels `{prev}` and `{}` would both generate a Rust module named `{}`: rename one",
                k.qualified_name(),
                k.name
            )));
        }
    }

    let archs = match &input.archs {
        Some((a, _)) => a.clone(),
        None => compile::archs_from_env().map_err(fail)?,
    };
    let nvcc = match input.compiler {
        Compiler::Nvrtc => Err(compile::NoNvcc::Forced),
        Compiler::Auto => compile::find_nvcc().map_err(fail)?,
        Compiler::Nvcc => match compile::find_nvcc().map_err(fail)? {
            Ok(n) => Ok(n),
            Err(why) => {
                return Err(fail(format!(
                    "`compiler = \"nvcc\"` but {why}: install the CUDA toolkit, set NVCC or CUDA_PATH, or use `compiler = \"auto\"`"
                )))
            }
        },
    };
    let line_directive = format!("#line {} \"{}\"", site.line, site.file.replace('\\', "/"));
    let origin = format!("{}:{}", site.file, site.line);

    let mut typed = Vec::new();
    let image: TokenStream = match nvcc {
        Ok(nvcc) => {
            let built = build_with_nvcc(&nvcc, &source, &line_directive, input, &archs, site, &parsed).map_err(fail)?;
            let entries = ptx::entries(&built.ptx);
            let probes = crate::probe::read_values(&built.ptx);
            let mut errors: Vec<String> = Vec::new();
            for (ki, k) in parsed.kernels.iter().enumerate() {
                let mut params = Vec::new();
                for (pi, p) in k.params.iter().enumerate() {
                    let probed: Option<Probed> = probes.get(&(ki, pi)).map(|v| types::decode_probe(*v));
                    match types::map(p, &parsed, probed.as_ref()) {
                        Ok(m) => params.push(m),
                        Err(e) => errors.push(format!("kernel `{}` ({}): {e}", k.name, rust_line(site, k))),
                    }
                }
                let Some(entry) = ptx::find(&entries, &k.namespaces, &k.name, k.extern_c) else {
                    errors.push(format!(
                        "kernel `{}` was not found in the compiled PTX (is it inside `#if 0`, or declared but never defined?)",
                        k.qualified_name()
                    ));
                    continue;
                };
                if params.len() == k.params.len() {
                    if let Err(e) = cross_check(k, &mut params, entry) {
                        errors.push(e);
                    }
                }
                typed.push(Typed { kernel: k, params, symbol: entry.symbol.clone() });
            }
            if !errors.is_empty() {
                return Err(fail(errors.join("\n")));
            }
            let bytes = Literal::byte_string(&built.fatbin);
            let n = built.fatbin.len();
            let targets = &built.targets;
            let release = nvcc.release();
            quote! {{
                #[repr(C, align(16))]
                struct __Aligned([u8; #n]);
                static __IMAGE: __Aligned = __Aligned(*#bytes);
                ::cuda_embed::Image::Fatbin { bytes: &__IMAGE.0, targets: &[#(#targets),*], compiler: #release }
            }}
        }
        Err(why) => {
            let mut errors = Vec::new();
            for k in &parsed.kernels {
                let mut params = Vec::new();
                for p in &k.params {
                    match types::map(p, &parsed, None) {
                        Ok(m) => params.push(m),
                        Err(e) => errors.push(format!("kernel `{}` ({}): {e}", k.name, rust_line(site, k))),
                    }
                }
                typed.push(Typed { kernel: k, params, symbol: String::new() });
            }
            if !errors.is_empty() {
                return Err(fail(errors.join("\n")));
            }
            let text = format!("{line_directive}\n{source}");
            let options = &input.options;
            let reason = why.to_string();
            quote! {
                ::cuda_embed::Image::Source { source: #text, options: &[#(#options),*], reason: #reason }
            }
        }
    };
    Ok(generate(&typed, image, &origin, site, &source, span))
}

struct Built {
    fatbin: Vec<u8>,
    ptx: String,
    targets: Vec<String>,
}

fn build_with_nvcc(
    nvcc: &Nvcc,
    source: &str,
    line_directive: &str,
    input: &Input,
    archs: &[Arch],
    site: &CallSite,
    parsed: &Parsed,
) -> Result<Built, String> {
    // Probe every parameter whose type name is not a known spelling.
    let wanted: Vec<(usize, usize)> = parsed
        .kernels
        .iter()
        .enumerate()
        .flat_map(|(ki, k)| {
            k.params
                .iter()
                .enumerate()
                .filter(|(_, p)| types::builtin(&p.base).is_none() && p.base != "void" && !p.reference)
                .map(move |(pi, _)| (ki, pi))
        })
        .collect();
    let include_dirs: Vec<PathBuf> = site.dir.iter().cloned().collect();
    let run = |src: &str| {
        compile::compile(
            nvcc,
            &Request { source: src, line_directive, options: &input.options, archs, include_dirs: &include_dirs },
        )
    };
    let probe = crate::probe::code(&parsed.kernels, &wanted);
    let out = if probe.is_empty() {
        run(source)
    } else {
        let probed = format!("{source}\n#line 1 \"cuda-embed-type-probe\"\n{probe}");
        // If the probe itself does not compile (an unusual declaration), fall back to the plain
        // source: its errors are the user's, and the PTX check still guards the layout.
        run(&probed).or_else(|_| run(source))
    };
    let out = out.map_err(|log| format!("nvcc {} failed to compile the CUDA source:\n{log}", nvcc.version))?;
    Ok(Built { fatbin: out.fatbin, ptx: out.ptx, targets: out.targets })
}

/// Compares the parsed signature with the compiled entry: parameter count, each size, and the
/// alignment of by-value structs. Learns user-struct layouts from the PTX.
fn cross_check(k: &Kernel, params: &mut [Mapped], entry: &ptx::Entry) -> Result<(), String> {
    if entry.params.len() != params.len() {
        return Err(format!(
            "kernel `{}`: the source declares {} parameter(s) but the compiled kernel takes {}; \
             a macro or typedef in the parameter list changed it: write the parameter list out",
            k.name,
            params.len(),
            entry.params.len()
        ));
    }
    for (i, (m, e)) in params.iter_mut().zip(&entry.params).enumerate() {
        let p = &k.params[i];
        if let Mapped::User { layout, .. } = m {
            match layout {
                Some((s, _)) if *s != e.size => {}
                _ => {
                    *layout = Some((e.size, e.align));
                    continue;
                }
            }
        }
        if let Some(size) = m.size() {
            if size != e.size {
                return Err(format!(
                    "kernel `{}`, parameter `{}` (`{}`): the compiled kernel takes {} bytes but `{}` is {size} bytes; \
                     the type the compiler saw differs from the written one (check typedefs and macros)",
                    k.name,
                    p.name,
                    p.text,
                    e.size,
                    m.describe()
                ));
            }
        }
    }
    Ok(())
}

/// `file.rs:LINE` of a kernel's `__global__` inside the Rust file.
fn rust_line(site: &CallSite, k: &Kernel) -> String {
    format!("{}:{}", site.file, site.line + k.line.saturating_sub(1))
}

/// The Rust module name for a kernel: raw identifiers for Rust keywords (`r#move`), an error for
/// the few names that cannot be modules at all.
fn kernel_ident(name: &str) -> Result<syn::Ident, String> {
    if ["self", "Self", "super", "crate", "_"].contains(&name) {
        return Err(format!("a kernel named `{name}` cannot become a Rust module: rename the kernel"));
    }
    Ok(syn::parse_str::<syn::Ident>(name).unwrap_or_else(|_| syn::Ident::new_raw(name, Span::call_site())))
}

fn rust_type(b: &Builtin) -> TokenStream {
    let path = b.rust.replace("$crate", "::cuda_embed");
    syn::parse_str::<syn::Type>(&path).map(|t| quote!(#t)).unwrap_or_else(|e| e.to_compile_error())
}

fn param_ident(name: &str, index: usize) -> syn::Ident {
    const RESERVED: &[&str] = &["stream", "config", "cluster", "self", "Self", "super", "crate", "_"];
    if RESERVED.contains(&name) || name.starts_with("__") {
        return format_ident!("{}_{}", name.trim_start_matches('_'), index);
    }
    syn::parse_str::<syn::Ident>(name).unwrap_or_else(|_| syn::Ident::new_raw(name, Span::call_site()))
}

fn generate(
    typed: &[Typed<'_>],
    image: TokenStream,
    origin: &str,
    site: &CallSite,
    source: &str,
    span: Span,
) -> TokenStream {
    // The tag must not depend on where the checkout lives (reproducible builds, stable
    // diagnostics): the file's name, the line and the source are enough to tell invocations apart.
    let file_name = site.file.rsplit(['/', '\\']).next().unwrap_or(&site.file);
    let mut h = Sha256::new();
    h.update(file_name.as_bytes());
    h.update(site.line.to_le_bytes());
    h.update(source.as_bytes());
    let tag: String = h.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect();
    let hidden = format_ident!("__cuda_embed_{}", tag);

    let specs = typed.iter().map(|t| {
        let name = t.kernel.qualified_name();
        let symbol = &t.symbol;
        let expr = if t.kernel.extern_c { t.kernel.name.clone() } else { format!("&{}", name) };
        let sizes = t.params.iter().map(|m| match (m, m.size()) {
            (_, Some(s)) => quote!(#s),
            (Mapped::User { name, .. }, None) => {
                let ty = format_ident!("{}", name);
                quote!(::core::mem::size_of::<super::#ty>() as u32)
            }
            _ => quote!(0u32),
        });
        quote! {
            ::cuda_embed::KernelSpec { name: #name, symbol: #symbol, name_expression: #expr, param_sizes: &[#(#sizes),*] }
        }
    });

    let kernels: Vec<TokenStream> = typed.iter().enumerate().map(|(index, t)| kernel_module(index, t, span)).collect();
    let names: Vec<syn::Ident> = typed.iter().filter_map(|t| kernel_ident(&t.kernel.name).ok()).collect();
    // Everything lives in one hidden module (so the macro also works inside a function body) and
    // the kernel modules are re-exported where the macro was invoked.
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, non_upper_case_globals)]
        mod #hidden {
            pub(super) static MODULE: ::cuda_embed::Module = {
                static __SPEC: ::cuda_embed::ModuleSpec = ::cuda_embed::ModuleSpec {
                    origin: #origin,
                    image: #image,
                    kernels: &[#(#specs),*],
                };
                ::cuda_embed::Module::new(&__SPEC)
            };
            #(#kernels)*
        }
        #[allow(unused_imports)]
        pub use #hidden::{#(#names),*};
    }
}

fn kernel_module(index: usize, t: &Typed<'_>, span: Span) -> TokenStream {
    let k = t.kernel;
    let name = kernel_ident(&k.name).unwrap_or_else(|_| format_ident!("invalid_kernel_name"));
    let qualified = k.qualified_name();
    let mut generics = Vec::new();
    let mut args = Vec::new();
    let mut prelude = Vec::new();
    let mut packed = Vec::new();
    let mut checks = Vec::new();
    let mut doc_rows = String::new();
    for (i, (p, m)) in k.params.iter().zip(&t.params).enumerate() {
        let id = param_ident(&p.name, i);
        let sync = format_ident!("__sync_{}", i);
        doc_rows.push_str(&format!("| `{}` | `{}` | `{}` |\n", id, p.text.replace('|', "\\|"), m.describe()));
        match m {
            Mapped::Value(b) => {
                let ty = rust_type(b);
                args.push(quote!(#id: #ty));
                packed.push(quote!(&#id as *const #ty as *mut ::cuda_embed::__private::c_void));
            }
            Mapped::User { name: tn, layout } => {
                let ty = format_ident!("{}", tn, span = span);
                args.push(quote!(#id: super::super::#ty));
                packed.push(quote!(&#id as *const super::super::#ty as *mut ::cuda_embed::__private::c_void));
                checks.push(quote_spanned! {span=>
                    const _: () = ::cuda_embed::__private::assert_device_safe::<super::super::#ty>();
                });
                if let Some((size, align)) = layout {
                    let (size, align) = (*size as usize, *align as usize);
                    let msg = format!(
                        "`{tn}` must have the CUDA struct's layout for parameter `{}` of kernel `{}`: size {size}, alignment {align} (use #[repr(C)] and the same fields)",
                        p.name, k.name
                    );
                    checks.push(quote_spanned! {span=>
                        const _: () = ::core::assert!(
                            ::core::mem::size_of::<super::super::#ty>() == #size && ::core::mem::align_of::<super::super::#ty>() == #align,
                            #msg
                        );
                    });
                }
            }
            Mapped::Pointer { elem, mutable } => {
                let ty = match elem {
                    Some(b) => rust_type(b),
                    None => {
                        let g = format_ident!("T{}", i);
                        generics.push(g.clone());
                        quote!(#g)
                    }
                };
                if *mutable {
                    args.push(quote!(#id: &mut impl ::cuda_embed::__private::DevicePtrMut<#ty>));
                    prelude.push(
                        quote!(let (#id, #sync) = ::cuda_embed::__private::DevicePtrMut::device_ptr_mut(#id, stream);),
                    );
                } else {
                    args.push(quote!(#id: &impl ::cuda_embed::__private::DevicePtr<#ty>));
                    prelude
                        .push(quote!(let (#id, #sync) = ::cuda_embed::__private::DevicePtr::device_ptr(#id, stream);));
                }
                packed.push(quote!(&#id as *const u64 as *mut ::cuda_embed::__private::c_void));
            }
            Mapped::RawPointer => {
                args.push(quote!(#id: ::cuda_embed::RawDevicePtr));
                packed.push(quote!(&#id as *const ::cuda_embed::RawDevicePtr as *mut ::cuda_embed::__private::c_void));
            }
        }
    }
    let n = packed.len();
    let bounds = if k.launch_bounds.is_empty() {
        String::new()
    } else {
        format!(
            "\n\n`__launch_bounds__({})`: at most {} threads per block.",
            k.launch_bounds.join(", "),
            k.launch_bounds[0]
        )
    };
    let doc = format!(
        "Launcher for the CUDA kernel `{qualified}({})`{}.\n\n\
         | Rust argument | CUDA parameter | Rust type |\n|---|---|---|\n{doc_rows}{bounds}",
        k.signature,
        if k.extern_c { " (extern \"C\")" } else { "" },
    );
    let launch_doc = format!(
        "Launches `{qualified}` on `stream` with `config`.\n\n\
         Loads the module on the stream's device at first use. Device buffers are borrowed for the \
         launch: `const` pointers as shared borrows, others as exclusive ones.\n\n\
         # Safety\nThe kernel runs arbitrary device code: it must stay within the buffers it is \
         given and the grid must match what it expects."
    );
    let generics = if generics.is_empty() { quote!() } else { quote!(<#(#generics),*>) };
    // The launch variants differ only in name, docs, an optional extra parameter, the return type
    // and the Module method they end in; the argument packing is the same for all.
    let safety = "\n\n# Safety\nAs for `launch`.";
    let variants = [
        (quote!(launch), launch_doc, quote!(), quote!(()), quote!(launch(#index, stream, &config, &mut __args))),
        (
            quote!(launch_timed),
            format!("Like `launch`, and returns the kernel's GPU time in milliseconds (an event pair around it on `stream`; waits for the kernel to finish).{safety}"),
            quote!(),
            quote!(f32),
            quote!(launch_timed(#index, stream, &config, &mut __args)),
        ),
        (
            quote!(launch_cooperative),
            format!("Launches cooperatively, so the kernel may synchronise the whole grid (`cooperative_groups::this_grid().sync()`). A grid larger than what fits on the device at once is an Error, never silently clamped.{safety}"),
            quote!(),
            quote!(()),
            quote!(launch_cooperative(#index, stream, &config, &mut __args)),
        ),
        (
            quote!(launch_cluster),
            format!("Launches with thread-block clusters of shape `cluster` (sm_90 and newer); an older GPU or a grid that is not a whole number of clusters is an Error.{safety}"),
            quote!(cluster: ::cuda_embed::ClusterDim,),
            quote!(()),
            quote!(launch_cluster(#index, stream, &config, cluster, &mut __args)),
        ),
    ];
    let launchers = variants.into_iter().map(|(fname, fdoc, extra, ret, call)| {
        quote! {
            #[doc = #fdoc]
            #[inline]
            pub unsafe fn #fname #generics (
                stream: &::cuda_embed::CudaStream,
                config: ::cuda_embed::LaunchConfig,
                #extra
                #(#args),*
            ) -> ::cuda_embed::Result<#ret> {
                #(#prelude)*
                let mut __args: [*mut ::cuda_embed::__private::c_void; #n] = [#(#packed),*];
                // SAFETY: one pointer per parameter, each to a live local of the parameter's exact
                // type (checked against the compiled kernel at build time).
                unsafe { super::MODULE.#call }
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments, clippy::missing_safety_doc)]
        pub mod #name {
            #(#checks)*

            /// The kernel's name in the CUDA source.
            pub const NAME: &str = #qualified;

            /// The module (shared by every kernel of the same `cuda_kernel!`).
            pub fn module() -> &'static ::cuda_embed::Module {
                &super::MODULE
            }

            #(#launchers)*

            /// Registers, thread and memory limits of this kernel on `ctx`'s device.
            pub fn attributes(ctx: &::std::sync::Arc<::cuda_embed::CudaContext>) -> ::cuda_embed::Result<::cuda_embed::KernelAttributes> {
                super::MODULE.attributes(#index, ctx)
            }

            /// Lets this kernel use up to `bytes` of dynamic shared memory per block on `ctx`'s
            /// device (needed above 48 KiB).
            pub fn set_max_dynamic_shared_memory(ctx: &::std::sync::Arc<::cuda_embed::CudaContext>, bytes: u32) -> ::cuda_embed::Result<()> {
                super::MODULE.set_max_dynamic_shared_memory(#index, ctx, bytes)
            }

            /// Sets the preferred L1/shared-memory carveout (percent) on `ctx`'s device.
            pub fn set_preferred_shared_carveout(ctx: &::std::sync::Arc<::cuda_embed::CudaContext>, percent: u32) -> ::cuda_embed::Result<()> {
                super::MODULE.set_preferred_shared_carveout(#index, ctx, percent)
            }

            /// A 1-D configuration covering `n` threads with the occupancy-maximising block size on
            /// `ctx`'s device, with `dynamic_shared_bytes` of dynamic shared memory per block.
            pub fn occupancy_config(
                ctx: &::std::sync::Arc<::cuda_embed::CudaContext>,
                n: u32,
                dynamic_shared_bytes: u32,
            ) -> ::cuda_embed::Result<::cuda_embed::LaunchConfig> {
                super::MODULE.occupancy_config(#index, ctx, n, dynamic_shared_bytes)
            }
        }
    }
}

//! The public module of a Rust-syntax kernel: the launchers of `cuda_kernel!` with one buffer
//! argument per slice parameter (the launcher passes its length as the hidden `size_t`
//! parameter), the kernel's handles re-exported from the hidden module, `check_errors` and the
//! generated source.

use super::syntax::KernelFn;
use super::types::Ty;
use crate::expand::CallSite;
use crate::gen::paths;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};

/// Each `cuda_embed::device` function the tokens call by its bare name, and each CUDA vector type
/// (`Float4`) they name bare, named once in a `const` at the call site: the user's `use cuda_embed::device::*` then counts as used (the body itself
/// never reaches rustc), and a missing import is rustc's own "cannot find function" at the call,
/// with its suggestion of the `use`.
pub fn device_uses(tokens: &TokenStream) -> TokenStream {
    fn scan(tokens: TokenStream, seen: &mut Vec<String>, out: &mut Vec<TokenStream>) {
        let mut after_colons = false;
        for t in tokens {
            match &t {
                proc_macro2::TokenTree::Ident(i) => {
                    let name = i.to_string();
                    let vector = super::types::Vector::from_name(&name).is_some();
                    if !after_colons && vector && !seen.contains(&name) {
                        seen.push(name.clone());
                        let id = i.clone();
                        out.push(quote_spanned!(i.span()=> let _: ::core::option::Option<#id> = ::core::option::Option::None;));
                    }
                    if !after_colons && super::emit::is_device_fn(&name) && !seen.contains(&name) {
                        seen.push(name.clone());
                        let generics = match name.as_str() {
                            "shared" => quote!(::<u8, 1>),
                            n if n.starts_with("atomic_") || n.starts_with("shfl") => quote!(::<u32>),
                            _ => quote!(),
                        };
                        let id = i.clone();
                        out.push(quote_spanned!(i.span()=> let _ = #id #generics;));
                    }
                    after_colons = false;
                }
                proc_macro2::TokenTree::Punct(p) => after_colons = p.as_char() == ':',
                proc_macro2::TokenTree::Group(g) => {
                    after_colons = false;
                    scan(g.stream(), seen, out);
                }
                proc_macro2::TokenTree::Literal(_) => after_colons = false,
            }
        }
    }
    let (mut seen, mut out) = (Vec::new(), Vec::new());
    scan(tokens.clone(), &mut seen, &mut out);
    if out.is_empty() {
        return quote!();
    }
    quote!(#[allow(unused)] const _: () = { #(#out)* };)
}

/// `hidden` is the path to the hidden module from inside the generated one (`super::__cuda_embed_..`).
/// `scope` is the path to the user's scope (where struct parameter types are named).
pub fn module(
    kernel: &KernelFn,
    bounds_checks: bool,
    site: &CallSite,
    source: &str,
    hidden: &TokenStream,
    scope: &TokenStream,
    vis: &syn::Visibility,
) -> TokenStream {
    let name = &kernel.name;
    let inner = format_ident!("{}", name.to_string().trim_start_matches("r#"));
    let (stream_ty, config_ty, result) = (paths::stream(), paths::launch_config(), paths::result());
    let (buf, buf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let (cluster_dim, private) = (paths::cluster_dim(), quote!(::cuda_embed::__private));
    let mut args = Vec::new();
    let mut async_args = Vec::new();
    let mut node_args = Vec::new();
    let mut sig = Vec::new();
    let mut lens = Vec::new();
    let mut pass = Vec::new();
    let mut rows = String::new();
    for (i, p) in kernel.params.iter().enumerate() {
        let id = &p.name;
        let span = p.name.span();
        match &p.ty {
            Ty::Scalar(s) => {
                let ty = s.rust_tokens();
                args.push(quote_spanned!(span=> #id: #ty));
                async_args.push(quote_spanned!(span=> #id: #ty));
                node_args.push(quote_spanned!(span=> #id: #ty));
                sig.push(quote!(#ty));
                pass.push(quote!(#id));
                rows.push_str(&format!("| `{id}` | `{}` | `{}` |\n", s.rust(), s.rust()));
            }
            Ty::Vector(v) => {
                let ty = v.rust_tokens();
                args.push(quote_spanned!(span=> #id: #ty));
                async_args.push(quote_spanned!(span=> #id: #ty));
                node_args.push(quote_spanned!(span=> #id: #ty));
                sig.push(quote!(#ty));
                pass.push(quote!(#id));
                rows.push_str(&format!("| `{id}` | `{0}` | `cuda_embed::{0}` |\n", v.rust));
            }
            Ty::Slice { elem, mutable } => {
                let ty = elem.rust_tokens();
                let len = format_ident!("__len_{}", i);
                let usize_ty = quote!(usize);
                if *mutable {
                    node_args.push(quote_spanned!(span=> #id: &'__g (impl #buf<#ty> + #buf_mut<#ty>)));
                    sig.push(paths::marker("Out", Some(quote!(#ty))));
                    sig.push(usize_ty);
                    args.push(quote_spanned!(span=> #id: &mut impl #buf_mut<#ty>));
                    async_args.push(quote_spanned!(span=> #id: &'__a mut impl #buf_mut<#ty>));
                    rows.push_str(&format!(
                        "| `{id}` | `&mut [{0}]` | `&mut CudaSlice<{0}>`, `&mut CudaViewMut<{0}>` |\n",
                        elem.rust()
                    ));
                } else {
                    node_args.push(quote_spanned!(span=> #id: &'__g impl #buf<#ty>));
                    sig.push(paths::marker("In", Some(quote!(#ty))));
                    sig.push(usize_ty);
                    args.push(quote_spanned!(span=> #id: &impl #buf<#ty>));
                    async_args.push(quote_spanned!(span=> #id: &'__a impl #buf<#ty>));
                    rows.push_str(&format!(
                        "| `{id}` | `&[{0}]` | `&CudaSlice<{0}>`, `&CudaView<{0}>` |\n",
                        elem.rust()
                    ));
                }
                lens.push(quote!(let #len: usize = #private::DeviceSlice::len(&*#id);));
                pass.push(quote!(#id, #len));
            }
            Ty::Struct(n) => {
                let ty = format_ident!("{}", n, span = span);
                args.push(quote_spanned!(span=> #id: #scope::#ty));
                async_args.push(quote_spanned!(span=> #id: #scope::#ty));
                node_args.push(quote_spanned!(span=> #id: #scope::#ty));
                sig.push(quote!(#scope::#ty));
                pass.push(quote!(#id));
                rows.push_str(&format!("| `{id}` | `{n}` | `{n}` (by value) |\n"));
            }
            _ => unreachable!("parameters are scalars, vectors, slices or structs"),
        }
    }
    let checks = if bounds_checks { "on" } else { "off (`bounds_checks = false`)" };
    let doc = format!(
        "The Rust-syntax kernel `{name}` (`#[cuda_embed::kernel]` at {}:{}), translated to CUDA C++ \
         ([`CUDA_SOURCE`]) and built like a `cuda_kernel!`.\n\n\
         | Rust argument | kernel parameter | launcher takes |\n|---|---|---|\n{rows}\n\
         Bounds checks: {checks}.",
        site.file, site.line
    );
    let user_docs = &kernel.docs;
    let launch_doc = "Launches the kernel on `stream` with `config`; each slice's length is passed with it.\n\n\
        # Safety\nThe body is translated, not borrow-checked across threads: every thread of the grid \
        holds the same `&mut [T]`. The caller promises that the kernel, for this grid, (1) never lets two \
        threads touch one element where one of them writes, unless through atomics or separated by \
        `sync_threads()` (within a block) or by the end of the launch (across blocks): `y[0] += 1.0` run \
        by every thread is a data race; and (2) with `bounds_checks = false`, stays within its slices \
        (with bounds checks an index out of range is reported by `check_errors`, not performed). \
        What the launcher itself guarantees: the buffers are memory of the stream's device, live, and \
        no output overlaps another operand (`&mut` borrows); a `#[device]` function is never given the \
        same slice twice where one is `&mut` (a compile error).";
    let variants = [
        (quote!(launch), launch_doc.to_string(), quote!(), quote!(()), quote!()),
        (
            quote!(launch_timed),
            "Like `launch`, and returns the kernel's GPU time in milliseconds.\n\n# Safety\nAs for `launch`.".into(),
            quote!(),
            quote!(f32),
            quote!(),
        ),
        (
            quote!(launch_cooperative),
            "Launches cooperatively (see the `cuda_kernel!` launcher of the same name).\n\n# Safety\nAs for `launch`."
                .into(),
            quote!(),
            quote!(()),
            quote!(),
        ),
        (
            quote!(launch_cluster),
            "Launches with thread-block clusters of shape `cluster` (sm_90 and newer).\n\n# Safety\nAs for `launch`."
                .into(),
            quote!(cluster: #cluster_dim,),
            quote!(()),
            quote!(cluster,),
        ),
    ];
    let file = &site.file;
    let kname = name.to_string();
    let slot = format_ident!("__ce_oob_{}", inner);
    // A checked kernel registers its report slot for `cuda_embed::synchronize` on its first launch.
    let (watched_flag, watch) = if bounds_checks {
        (
            quote! {
                #[doc(hidden)]
                static __CE_WATCHED: ::core::sync::atomic::AtomicBool = ::core::sync::atomic::AtomicBool::new(false);
            },
            quote!(#private::rust_kernel::watch_once(&__CE_WATCHED, &#hidden::#slot, #kname, #file);),
        )
    } else {
        (quote!(), quote!())
    };
    let launchers = variants.into_iter().map(|(f, fdoc, extra, ret, extra_pass)| {
        quote! {
            #[doc = #fdoc]
            #[inline]
            pub unsafe fn #f(stream: &#stream_ty, config: #config_ty, #extra #(#args),*) -> #result<#ret> {
                #watch
                #(#lens)*
                // SAFETY: forwarded from the caller; the lengths are the buffers' own.
                unsafe { #hidden::#inner::#f(stream, config, #extra_pass #(#pass),*) }
            }
        }
    });
    let check_after = if bounds_checks {
        quote!(#private::rust_kernel::check_bounds(&#hidden::#slot, stream, #kname, #file))
    } else {
        quote!(::core::result::Result::Ok(()))
    };
    let async_doc = "`launch` as a future: the kernel is queued now (checked and bound as `launch` does); the \
        future resolves when the GPU has finished it, to the launch's result: a refusal, the error the work \
        raised on the GPU, or (bounds checks on) this kernel's first out-of-range index as \
        `Error::IndexOutOfBounds`, read once the work is done, as `check_errors` reads it. The buffers stay \
        borrowed until the future is dropped; dropping or forgetting it early is sound (see \
        `cuda_embed::future`).\n\n# Safety\nAs for `launch`.";
    let launch_async = quote! {
        #[doc = #async_doc]
        #[inline]
        pub unsafe fn launch_async<'__a>(
            stream: &'__a #stream_ty,
            config: #config_ty,
            #(#async_args),*
        ) -> impl ::core::future::Future<Output = #result<()>> + '__a {
            #watch
            #(#lens)*
            // SAFETY: forwarded from the caller; the lengths are the buffers' own.
            let __done = unsafe { #hidden::#inner::launch_async(stream, config, #(#pass),*) };
            async move {
                __done.await?;
                #check_after
            }
        }
    };
    let (graph, exec, knode) = (paths::graph(), paths::graph_exec(), paths::kernel_node());
    let sig_ty = quote!((#(#sig,)*));
    let graph_fns = quote! {
        /// Adds a node launching this kernel to `graph`: the arguments as `launch` takes them,
        /// except that buffers are borrowed (shared) for the graph's lifetime, also those the
        /// kernel writes. The dependencies are inferred from what it reads and writes.
        pub fn node<'__g>(graph: &mut #graph<'__g>, config: #config_ty, #(#node_args),*) -> #result<#knode<#sig_ty>> {
            #watch
            #(#lens)*
            #hidden::#inner::node(graph, config, #(#pass),*)
        }

        /// Changes the configuration and arguments of `node` (made by `node`) in the
        /// instantiated graph `exec`.
        pub fn update<'__g>(exec: &mut #exec<'__g>, node: &#knode<#sig_ty>, config: #config_ty, #(#node_args),*) -> #result<()> {
            #(#lens)*
            #hidden::#inner::update(exec, node, config, #(#pass),*)
        }
    };
    let check = if bounds_checks {
        quote! {
            #private::rust_kernel::check_bounds(&#hidden::#slot, stream, #kname, #file)
        }
    } else {
        quote! {
            let _ = stream;
            ::core::result::Result::Ok(())
        }
    };
    quote! {
        #(#user_docs)*
        #[doc = #doc]
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments, clippy::missing_safety_doc)]
        #vis mod #name {
            pub use #hidden::#inner::{NAME, module, function, attributes, set_max_dynamic_shared_memory, set_preferred_shared_carveout, occupancy_config};

            /// The CUDA C++ this kernel was translated to (what nvcc or NVRTC compiled).
            pub const CUDA_SOURCE: &str = #source;

            #watched_flag

            #(#launchers)*

            #launch_async

            #graph_fns

            /// Waits for `stream` and reports the first out-of-range index of this kernel's
            /// launches since the last check, as `Error::IndexOutOfBounds` (kernel, Rust
            /// file:line, index, length), and clears it. The context stays usable: the kernel
            /// does not trap, the offending thread returns. `Ok(())` with `bounds_checks = false`.
            /// `cuda_embed::synchronize(&stream)` checks every launched kernel at once.
            pub fn check_errors(stream: &#stream_ty) -> #result<()> {
                #check
            }
        }
    }
}

/// A kernel's items inside a module of their own that sees the call site's names (`use
/// super::*`), its public module re-exported under the kernel's name: the paths between the
/// generated modules are then relative to that module, so a kernel may also be declared inside a
/// function body.
///
/// The struct types of the parameters are imported by name: that wins over the compiler-made
/// twins the hidden module exports by a glob.
pub fn enclosed(
    name: &syn::Ident,
    vis: &syn::Visibility,
    params: &[super::syntax::Param],
    items: TokenStream,
) -> TokenStream {
    let outer = format_ident!("__cuda_embed_rust_kernel_{}", name.to_string().trim_start_matches("r#"));
    let mut structs: Vec<String> =
        params.iter().filter_map(|p| if let Ty::Struct(n) = &p.ty { Some(n.clone()) } else { None }).collect();
    structs.sort();
    structs.dedup();
    let structs = structs.iter().map(|n| format_ident!("{}", n));
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, unused_imports)]
        mod #outer {
            use super::*;
            #(use super::#structs;)*
            #items
        }
        #vis use #outer::#name;
    }
}

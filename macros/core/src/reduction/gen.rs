//! The Rust module `reduction_kernel!` generates around its three kernels: `launch`,
//! `launch_rows`, `launch_cols`, each checking lengths, planning, and launching one kernel.

use crate::expand::{CallSite, Generated};
use crate::gen::buffer_args::{BufferArgs, Family};
use crate::gen::paths;
use cuda_embed_source::params::{Param, ParamKind, ParamLists};
use cuda_embed_source::reduction::kernel_names;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// The module `pub mod NAME { ... }` with the hidden kernels inside.
pub fn wrapper(
    name: &Ident,
    lists: &ParamLists,
    placeholders: &[String],
    generated: &Generated,
    site: &CallSite,
    param_type: fn(&Param) -> TokenStream,
    instances: &[(String, Vec<TokenStream>)],
) -> TokenStream {
    let hidden = &generated.hidden;
    let tokens = &generated.tokens;
    let (stream_ty, result) = (paths::stream(), paths::result());
    let (device_ptr, device_ptr_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let (red, plan_kind, device_slice, error) = (
        paths::reduction("reduce"),
        paths::reduction("PlanKind"),
        paths::reduction("DeviceSlice"),
        paths::reduction("Error"),
    );
    let mut kernels: Vec<Ident> = kernel_names(&name.to_string()).iter().map(|k| format_ident!("{}", k)).collect();
    let axes_kernel = format_ident!("{}", cuda_embed_source::ndarray::reduction::axes_kernel_name(&name.to_string()));
    kernels.push(axes_kernel.clone());
    let generics: Vec<Ident> = placeholders.iter().map(|p| format_ident!("{}", p)).collect();
    let (gen_decl, turbofish) =
        if generics.is_empty() { (quote!(), quote!()) } else { (quote!(<#(#generics),*>), quote!(::<#(#generics),*>)) };
    // `Listed`: the reduction's own trait for the instances of `types = [...]`, so that an
    // unlisted instance is one error in the reduction's words (not three about hidden kernels).
    // With one placeholder it has the kernels' traits as supertraits and is the only bound; with
    // several the kernels' `Instance` markers differ, so their bounds follow it.
    let built: Vec<&str> = instances.iter().map(|(n, _)| n.as_str()).collect();
    let message = format!("reduction `{name}` was not built for `{{Self}}`");
    let note = format!(
        "types built: {}; add the one you need to `types = [...]` of the reduction_kernel! at {}:{}",
        built.join(", "),
        site.file,
        site.line
    );
    let mut in_args = Vec::new();
    // The same arguments borrowed for the lifetime `'__a` of `launch_async`'s future.
    let (mut async_ins, mut async_outs) = (Vec::new(), Vec::new());
    let mut fwd = Vec::new();
    let mut sizes = Vec::new();
    let mut checks = Vec::new();
    let first_array = lists.inputs.iter().find(|p| p.kind == ParamKind::Array);
    let first_id = first_array.map(|p| crate::reduction::param_id(lists, p));
    let first_name = first_array.map(|p| p.name.clone()).unwrap_or_default();
    // Each array parameter's own trait (over `DeviceBuffer`/`DeviceBufferMut`), so a wrong element
    // type is reported at the argument, naming the parameter.
    let mut params = BufferArgs::new(format!("reduction `{name}`"));
    for p in &lists.inputs {
        let id = crate::reduction::param_id(lists, p);
        let ty = param_type(p);
        if p.kind == ParamKind::Scalar {
            in_args.push(quote!(#id: #ty));
            async_ins.push(quote!(#id: #ty));
        } else {
            let bound = params.bound(p, &id, &ty, Family::Flat, &device_ptr);
            in_args.push(quote!(#id: &impl #bound));
            async_ins.push(quote!(#id: &'__a impl #bound));
            sizes.push(quote!(::core::mem::size_of::<#ty>()));
            let pname = &p.name;
            checks.push(quote! {
                if #id.len() != __len {
                    return ::core::result::Result::Err(__length_error(stream, ::std::format!(
                        "input `{}` has {} elements but `{}` has {}", #pname, #id.len(), #first_name, __len)));
                }
            });
        }
        fwd.push(quote!(#id));
    }
    let mut out_args = Vec::new();
    let mut out_lens = Vec::new();
    for p in &lists.outputs {
        let id = crate::reduction::param_id(lists, p);
        let ty = param_type(p);
        let bound = params.bound(p, &id, &ty, Family::Flat, &device_ptr_mut);
        out_args.push(quote!(#id: &mut impl #bound));
        async_outs.push(quote!(#id: &'__a mut impl #bound));
        let pname = &p.name;
        out_lens.push(quote!((#pname, #id.len())));
        fwd.push(quote!(#id));
    }
    let origin = format!("reduction_kernel! `{name}` at {}:{}", site.file, site.line);
    let reduction = name.to_string();
    let [kfull, krows, kcols] = [&kernels[0], &kernels[1], &kernels[2]];
    let ins = &in_args;
    let outs = &out_args;
    let fwd_names = &fwd;
    let first_id = first_id.map_or(quote!(), |f| quote!(#f));
    let sig = quote!(#(#ins,)*);
    let (listed, where_clause, call) = match generics.len() {
        0 => (quote!(), quote!(), quote!(__run)),
        1 => {
            let g = &generics[0];
            let impls = instances.iter().map(|(doc, tys)| quote!(#[doc = #doc] impl Listed for #(#tys),* {}));
            let listed = quote! {
                /// Implemented for each type in `types = [...]`: the launchers are generic over it.
                #[diagnostic::on_unimplemented(message = #message, label = "not in `types = [...]`", note = #note)]
                pub trait Listed: #(#hidden::#kernels::Listed)+* {}
                #(#impls)*
            };
            (listed, quote!(where #g: Listed), quote!(__run::<#g>))
        }
        _ => {
            // The kernels' `Instance` markers differ from the reduction's, so their bounds cannot be
            // supertraits of `Listed`: each listed instance's impl runs `__run` with its concrete
            // types instead, and the launchers are bounded by `Listed` alone (one error for an
            // unlisted instance).
            let self_ins: Vec<TokenStream> = ins.iter().map(|t| selfify(t.clone(), &generics)).collect();
            let self_outs: Vec<TokenStream> = outs.iter().map(|t| selfify(t.clone(), &generics)).collect();
            let impls = instances.iter().map(|(doc, tys)| {
                quote! {
                    #[doc = #doc]
                    impl Listed for Instance<#(#tys),*> {
                        #(type #generics = #tys;)*
                        fn __run(
                            stream: &::std::sync::Arc<#stream_ty>, shape: #red::Shape, cols: usize, #(#self_ins,)* #(#self_outs),*
                        ) -> #result<()> {
                            __run::<#(#tys),*>(stream, shape, cols, #(#fwd_names),*)
                        }
                    }
                }
            });
            let listed = quote! {
                /// Names one instance by its Rust types; those in `types = [...]` implement [`Listed`].
                pub struct Instance<#(#generics),*>(::core::marker::PhantomData<fn() -> (#(#generics,)*)>);
                /// Implemented for each instance in `types = [...]`: the launchers are generic over it.
                #[diagnostic::on_unimplemented(message = #message, label = "not in `types = [...]`", note = #note)]
                pub trait Listed {
                    #(
                        /// The instance's Rust type for this placeholder.
                        type #generics;
                    )*
                    /// Runs the reduction at this instance (the launchers call it).
                    #[doc(hidden)]
                    fn __run(
                        stream: &::std::sync::Arc<#stream_ty>, shape: #red::Shape, cols: usize, #(#self_ins,)* #(#self_outs),*
                    ) -> #result<()>;
                }
                #(#impls)*
            };
            (
                listed,
                quote!(where Instance<#(#generics),*>: Listed<#(#generics = #generics),*>),
                quote!(<Instance<#(#generics),*> as Listed>::__run),
            )
        }
    };
    let run_where = if generics.len() > 1 {
        let bounds = kernels.iter().map(|k| quote!(#hidden::#k::Instance<#(#generics),*>: #hidden::#k::Listed));
        quote!(where #(#bounds),*)
    } else {
        where_clause.clone()
    };
    // The graph nodes call the hidden kernels' typed `node`s directly, so with several
    // placeholders they need the kernels' bounds as well as `Listed`.
    let node_where = if generics.len() > 1 {
        let bounds = kernels.iter().map(|k| quote!(#hidden::#k::Instance<#(#generics),*>: #hidden::#k::Listed));
        quote!(where Instance<#(#generics),*>: Listed<#(#generics = #generics),*>, #(#bounds),*)
    } else {
        where_clause.clone()
    };
    let node_shared = crate::reduction::node::Shared {
        name,
        hidden,
        kernels: &kernels,
        generics: &generics,
        turbofish: &turbofish,
        where_clause: &node_where,
    };
    let node_fns = crate::reduction::node::node_fns(lists, param_type, &node_shared);
    // `launch_axes` and `node_axes`: with several placeholders they call the hidden kernels (and
    // `__run`) at the generic instance, so they carry the kernels' bounds as the nodes do.
    let (axes_where, axes_call) = if generics.len() <= 1 {
        (where_clause.clone(), call.clone())
    } else {
        (node_where.clone(), quote!(__run #turbofish))
    };
    let axes_fn = crate::reduction::axes::launch_axes(
        lists,
        param_type,
        &crate::reduction::axes::AxesShared {
            name,
            hidden,
            kernel: &axes_kernel,
            generics: &generics,
            gen_decl: &gen_decl,
            turbofish: &turbofish,
            where_clause: &axes_where,
            call: &axes_call,
        },
        &mut params,
    );
    let axes_node = crate::reduction::axes_node::node_axes(lists, param_type, &node_shared);
    let params = params.items();
    let doc_launch = format!(
        "Reduces every element of the inputs into element 0 of each output (each output has length 1). \
         An empty input gives `post_map(identity)`. Deterministic: the same input gives bit-identical output on every run.\n\n\
         Lengths are checked (every array input as long as `{first_name}`); a mismatch is an `Error` naming the parameters."
    );
    let doc_rows = format!(
        "Reduces each contiguous row of `cols` elements (CuPy's `axis=-1` on a 2-D array): `{first_name}.len()` must be a \
         multiple of `cols` and each output has one element per row (`{first_name}.len() / cols`; with `cols == 0` the \
         inputs are empty and each output element gets `post_map(identity)`)."
    );
    let doc_cols = format!(
        "Reduces each column of the row-major matrix with `cols` columns (CuPy's `axis=0`): `{first_name}.len()` must be a \
         multiple of `cols` and each output has `cols` elements (an input with zero rows gives `post_map(identity)` in each)."
    );
    let future = paths::gpu_future();
    let async_decl = if generics.is_empty() { quote!(<'__a>) } else { quote!(<'__a, #(#generics),*>) };
    let doc_async = "`launch` as a future: the reduction is queued now (lengths checked, planned and bound as \
        `launch` does), and the future resolves when the GPU has finished it, to the launch's result (a length \
        or device error, or the error the work raised on the GPU). The arrays stay borrowed until the future is \
        dropped; dropping or forgetting it early is sound (see `cuda_embed::future`).";
    quote! {
        #[doc = concat!("The reduction `", #reduction, "` (generated by `reduction_kernel!`): `launch`, `launch_rows`, `launch_cols`.")]
        #[allow(non_snake_case, dead_code, unused_imports, unused_variables, clippy::too_many_arguments)]
        pub mod #name {
            use super::*;
            #tokens
            #listed
            #params

            /// Where the reduction was declared, for errors.
            pub const ORIGIN: &str = #origin;

            fn __length_error(stream: &#stream_ty, cause: ::std::string::String) -> #error {
                #red::length_error(#reduction, ORIGIN, stream, cause)
            }

            #node_fns

            #axes_fn

            #axes_node

            #[doc = #doc_launch]
            pub fn launch #gen_decl (stream: &::std::sync::Arc<#stream_ty>, #sig #(#outs),*) -> #result<()> #where_clause {
                #call(stream, #red::Shape::Full, 0, #(#fwd_names),*)
            }

            #[doc = #doc_async]
            pub fn launch_async #async_decl (
                stream: &::std::sync::Arc<#stream_ty>,
                #(#async_ins,)*
                #(#async_outs),*
            ) -> #future<'__a> #where_clause {
                let __queued = #call(stream, #red::Shape::Full, 0, #(#fwd_names),*);
                #future::after_named(stream, __queued, #reduction, ORIGIN)
            }

            #[doc = #doc_rows]
            pub fn launch_rows #gen_decl (stream: &::std::sync::Arc<#stream_ty>, #sig cols: usize, #(#outs),*) -> #result<()> #where_clause {
                #call(stream, #red::Shape::Rows, cols, #(#fwd_names),*)
            }

            #[doc = #doc_cols]
            pub fn launch_cols #gen_decl (stream: &::std::sync::Arc<#stream_ty>, #sig cols: usize, #(#outs),*) -> #result<()> #where_clause {
                #call(stream, #red::Shape::Cols, cols, #(#fwd_names),*)
            }

            fn __run #gen_decl (
                stream: &::std::sync::Arc<#stream_ty>,
                shape: #red::Shape,
                cols: usize,
                #sig
                #(#outs),*
            ) -> #result<()> #run_where {
                use #red as __r;
                use #red::Shape;
                use #device_slice as _;
                let __len = #first_id.len();
                #(#checks)*
                let __outs: &[(&str, usize)] = &[#(#out_lens),*];
                let (__rows, __n, __want) = match shape {
                    Shape::Full => (1usize, __len, 1usize),
                    Shape::Rows | Shape::Cols if cols == 0 => {
                        if __len != 0 {
                            return ::core::result::Result::Err(__length_error(stream, ::std::format!(
                                "`cols` is 0 but `{}` has {} elements", #first_name, __len)));
                        }
                        let rows = if shape == Shape::Rows { __outs[0].1 } else { 0 };
                        (rows, 0, rows)
                    }
                    _ => {
                        if __len % cols != 0 {
                            return ::core::result::Result::Err(__length_error(stream, ::std::format!(
                                "`{}` has {} elements, not a multiple of `cols` = {}", #first_name, __len, cols)));
                        }
                        let rows = __len / cols;
                        (rows, cols, if shape == Shape::Rows { rows } else { cols })
                    }
                };
                for (out, len) in __outs {
                    if *len != __want {
                        return ::core::result::Result::Err(__length_error(stream, ::std::format!(
                            "output `{}` has {} elements but the reduction gives {}", out, len, __want)));
                    }
                }
                if __want == 0 {
                    return ::core::result::Result::Ok(());
                }
                let __plan = __r::plan(stream, shape, __rows as u64, __n as u64, &[#(#sizes),*])?;
                let __cfg = __r::config(&__plan);
                let (__rows, __n, __aux) = (__rows as i64, __n as i64, __plan.aux as i32);
                __r::with_scratch(stream, &__plan, |__scratch, __off| {
                    // SAFETY: the lengths were checked above (every array input has `__len` elements,
                    // each output one element per reduced segment); the plan's grid and the kernels'
                    // bounds keep every access within them, and the scratch buffer holds the plan's
                    // counters before `__off` and its partials after it.
                    unsafe {
                        match __plan.kind {
                            #plan_kind::Segments => #hidden::#kfull::launch #turbofish (
                                stream, __cfg, #(#fwd_names,)* __rows, __n, __aux, __scratch, __off),
                            #plan_kind::Rows => #hidden::#krows::launch #turbofish (
                                stream, __cfg, #(#fwd_names,)* __rows, __n, __aux),
                            #plan_kind::Cols => #hidden::#kcols::launch #turbofish (
                                stream, __cfg, #(#fwd_names,)* __rows, __n, __scratch, __off),
                        }
                    }
                })
            }
        }
    }
}

/// `ty` with every placeholder `T` written `Self::T` (the `Listed` trait's associated types).
fn selfify(ty: TokenStream, generics: &[Ident]) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    ty.into_iter()
        .flat_map(|tt| -> Vec<TokenTree> {
            match tt {
                TokenTree::Ident(id) if generics.contains(&id) => quote!(Self::#id).into_iter().collect(),
                TokenTree::Group(g) => {
                    let mut ng = Group::new(g.delimiter(), selfify(g.stream(), generics));
                    ng.set_span(g.span());
                    vec![TokenTree::Group(ng)]
                }
                other => vec![other],
            }
        })
        .collect()
}

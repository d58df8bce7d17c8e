//! `node`, `node_rows`, `node_cols` of a reduction: the reduction as a node of a CUDA graph, with
//! the arguments and checks of `launch`, `launch_rows`, `launch_cols` (arrays borrowed for the
//! graph's lifetime, outputs shared-borrowed as for `cuda_kernel!` nodes).
//!
//! The node is the kernel the reduction's launch plan picks for the graph's device (the plan
//! `launch` uses), added through that hidden kernel's own typed `node`; a plan kernel with scratch
//! memory gets a zeroed buffer owned by the graph (`Graph::__scratch`).

use crate::gen::paths;
use cuda_embed_source::params::{Param, ParamKind, ParamLists};
use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

/// What the node functions (these and `node_axes`) share with the reduction's launchers.
pub struct Shared<'a> {
    /// The reduction's name.
    pub name: &'a Ident,
    /// The hidden module of the kernels.
    pub hidden: &'a Ident,
    /// The full, rows, cols and axes kernels, in that order.
    pub kernels: &'a [Ident],
    /// The placeholders as generic parameters.
    pub generics: &'a [Ident],
    /// `::<T, ...>` (empty without placeholders).
    pub turbofish: &'a TokenStream,
    /// The launchers' `where` clause.
    pub where_clause: &'a TokenStream,
}

/// The node functions, inside the reduction's module (next to `ORIGIN`).
pub fn node_fns(lists: &ParamLists, param_type: fn(&Param) -> TokenStream, s: &Shared<'_>) -> TokenStream {
    let (result, graph, node) = (paths::result(), paths::graph(), paths::graph_node());
    // Inputs as `launch` takes them; outputs as `&y`, so not through `DeviceBufferMut`, whose
    // error message asks for `&mut`.
    let (dbuf, dbuf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let (red, plan_kind, device_slice) =
        (paths::reduction("reduce"), paths::reduction("PlanKind"), paths::reduction("DeviceSlice"));
    let support = quote!(::cuda_embed::graph::generated);
    let (mut ins, mut outs, mut fwd, mut in_lens, mut out_lens, mut sizes) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for p in &lists.inputs {
        let (id, ty, pname) = (crate::reduction::param_id(lists, p), param_type(p), &p.name);
        if p.kind == ParamKind::Scalar {
            ins.push(quote!(#id: #ty));
        } else {
            ins.push(quote!(#id: &'__g impl #dbuf<#ty>));
            in_lens.push(quote!((#pname, #id.len())));
            sizes.push(quote!(::core::mem::size_of::<#ty>()));
        }
        fwd.push(quote!(#id));
    }
    for p in &lists.outputs {
        let (id, ty, pname) = (crate::reduction::param_id(lists, p), param_type(p), &p.name);
        outs.push(quote!(#id: &'__g (impl #dbuf<#ty> + #dbuf_mut<#ty>)));
        out_lens.push(quote!((#pname, #id.len())));
        fwd.push(quote!(#id));
    }
    let Shared { name, hidden, kernels, generics, turbofish, where_clause } = s;
    let reduction = name.to_string();
    let [kfull, krows, kcols] = [&kernels[0], &kernels[1], &kernels[2]];
    let doc = |what: &str, launcher: &str| {
        format!(
            "Adds the reduction {what} to `graph`, as `{launcher}` computes it: the arguments as `{launcher}` takes \
             them, except that arrays are borrowed (shared) for the graph's lifetime, also the outputs (`&y`, \
             not `&mut y`; see `Graph`). Lengths are checked as `{launcher}` checks them. The node is the kernel \
             the launch plan picks for the graph's device; its scratch memory (when the plan needs some) is a \
             buffer of its own that the graph and its instantiations own. Its dependencies are inferred from \
             the arrays it reads and writes. When there is nothing to compute the node is an empty node."
        )
    };
    let (doc_full, doc_rows, doc_cols) =
        (doc("of every element", "launch"), doc("of each row", "launch_rows"), doc("of each column", "launch_cols"));
    quote! {
        #[doc = #doc_full]
        pub fn node<'__g, #(#generics),*>(graph: &mut #graph<'__g>, #(#ins,)* #(#outs),*) -> #result<#node> #where_clause {
            __node #turbofish (graph, #red::Shape::Full, 0, #(#fwd),*)
        }

        #[doc = #doc_rows]
        pub fn node_rows<'__g, #(#generics),*>(graph: &mut #graph<'__g>, #(#ins,)* cols: usize, #(#outs),*) -> #result<#node> #where_clause {
            __node #turbofish (graph, #red::Shape::Rows, cols, #(#fwd),*)
        }

        #[doc = #doc_cols]
        pub fn node_cols<'__g, #(#generics),*>(graph: &mut #graph<'__g>, #(#ins,)* cols: usize, #(#outs),*) -> #result<#node> #where_clause {
            __node #turbofish (graph, #red::Shape::Cols, cols, #(#fwd),*)
        }

        fn __node<'__g, #(#generics),*>(
            graph: &mut #graph<'__g>,
            shape: #red::Shape,
            cols: usize,
            #(#ins,)*
            #(#outs),*
        ) -> #result<#node> #where_clause {
            use #device_slice as _;
            let (__rows, __n, __want) = #support::reduction_shape(
                graph.context().ordinal(), (#reduction, self::ORIGIN), shape, cols, &[#(#in_lens),*], &[#(#out_lens),*])?;
            if __want == 0 {
                return graph.empty();
            }
            let __plan = #red::plan(&graph.context().default_stream(), shape, __rows as u64, __n as u64, &[#(#sizes),*])?;
            let __cfg = #red::config(&__plan);
            let __off = __plan.partial_offset() as i64;
            let (__rows, __n, __aux) = (__rows as i64, __n as i64, __plan.aux as i32);
            let __node = match __plan.kind {
                #plan_kind::Segments => {
                    let __scratch = graph.__scratch(__plan.scratch_bytes())?;
                    *#hidden::#kfull::node #turbofish (graph, __cfg, #(#fwd,)* __rows, __n, __aux, __scratch, __off)?
                }
                #plan_kind::Rows => *#hidden::#krows::node #turbofish (graph, __cfg, #(#fwd,)* __rows, __n, __aux)?,
                #plan_kind::Cols => {
                    let __scratch = graph.__scratch(__plan.scratch_bytes())?;
                    *#hidden::#kcols::node #turbofish (graph, __cfg, #(#fwd,)* __rows, __n, __scratch, __off)?
                }
            };
            ::core::result::Result::Ok(__node)
        }
    }
}

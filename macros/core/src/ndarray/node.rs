//! `node_nd`: an `elementwise_kernel!`'s N-D launch as one node of a CUDA graph. The operands and
//! checks of `launch_nd` (the same host plan, `cuda_embed::__private::NdLaunch`), borrowed for the
//! graph's lifetime as the flat `node` borrows them (the operands from one generator,
//! [`super::operands`]); the node is the flat kernel when every operand is one contiguous run, else the strided kernel for the plan's rank.
//! `update_nd`: the same operands and plan on an instantiated graph, written into the node when
//! they need its kernel and launch configuration (`cuda_embed::__private::NdUpdate`).

use super::operands::{self, Operands, Target};
use super::NdShared;
use crate::gen::paths;
use cuda_embed_source::params::{ParamKind, ParamLists};
use proc_macro2::TokenStream;
use quote::quote;

/// The `node_nd` function, or nothing when the kernel has no array parameter.
pub fn node_nd(lists: &ParamLists, s: &NdShared<'_>) -> TokenStream {
    if !lists.all().any(|p| p.kind == ParamKind::Array) {
        return quote!();
    }
    let private = quote!(::cuda_embed::__private);
    let (result, graph, node) = (paths::result(), paths::graph(), paths::graph_node());
    let (generics, where_clause, turbofish, index) = (s.generics, s.where_clause, s.turbofish, s.index);
    let Operands { args, layouts, operands, n_inputs, arrays, pointers, flat_args, nd_args, .. } =
        operands::operands(lists, s.elems, Target::Node, (index, s.instances, s.hidden));
    let (unsafety, safety) = super::raw_safety(lists);
    let doc = format!(
        "Adds the N-D launch to `graph` as one kernel node: the operands as `launch_nd` takes them \
         (`NdView`/`NdViewMut` or flat buffers, inputs broadcast to the first output's shape), except that \
         they are borrowed (shared) for the graph's lifetime, also the outputs (`&y`, not `&mut y`; see \
         `Graph`). Shapes are checked as `launch_nd` checks them (an `Error::Shape` naming the operands, \
         before anything is added). The node runs the kernel `launch_nd` would run: the flat one when \
         every operand is contiguous, else the strided one for the merged rank. Its dependencies \
         are inferred from the buffers behind the views (each view's whole buffer, read or written). With \
         no element the node is an empty node.{safety}"
    );
    quote! {
        #[doc = #doc]
        pub #unsafety fn node_nd<'__g, #(#generics),*>(graph: &mut #graph<'__g>, #(#args),*) -> #result<#node> #where_clause {
            let __kernel = self::kernel_ref #turbofish ();
            let __ctx = ::std::sync::Arc::clone(graph.context());
            #layouts
            let __plan = #private::NdLaunch::<#arrays>::elementwise(__kernel, #operands, #n_inputs)?;
            if __plan.n == 0 {
                return graph.empty();
            }
            let mut __b = graph.__node_builder();
            #pointers
            let __n64 = __plan.n as i64;
            if __plan.flat {
                #flat_args
                let __config = self::__AUTO[#index].config(__kernel, &__ctx.default_stream(), __plan.n, __per_thread)?;
                // SAFETY: one pointer per parameter of the flat kernel, each to a live local of its
                // type; every operand is one contiguous run of `n` elements inside its buffer (the
                // views were checked when made, the plan found them contiguous), and each buffer
                // was recorded as read or written.
                unsafe { __b.kernel(__kernel, &__config, &mut __args) }
            } else {
                #nd_args
                // SAFETY: one pointer per parameter of the N-D kernel, each to a live local of its
                // type; the kernel touches element `offset + sum(coord * stride)` of each operand
                // for coordinates within the planned shape, inside each view's buffer (checked
                // when the view was made), and each buffer was recorded as read or written.
                unsafe { __b.kernel(__nd, &__plan.config, &mut __args) }
            }
        }
    }
}

/// The `update_nd` function of the kernel `name` (the update counterpart of `node_nd` on an
/// instantiated graph), or nothing when the kernel has no array parameter.
pub fn update_nd(lists: &ParamLists, s: &NdShared<'_>, name: &syn::Ident) -> TokenStream {
    if !lists.all().any(|p| p.kind == ParamKind::Array) {
        return quote!();
    }
    let private = quote!(::cuda_embed::__private);
    let (result, node, exec) = (paths::result(), paths::graph_node(), quote!(::cuda_embed::GraphExec));
    let (generics, where_clause, turbofish, index) = (s.generics, s.where_clause, s.turbofish, s.index);
    let Operands { args, layouts, operands, n_inputs, arrays, pointers, flat_args, nd_args, .. } =
        operands::operands(lists, s.elems, Target::Update, (index, s.instances, s.hidden));
    let (unsafety, safety) = super::raw_safety(lists);
    let doc = format!(
        "Points the N-D node `node` (made by `node_nd` on the graph `exec` was instantiated from) at new \
         operands, taken as `node_nd` takes them and borrowed for the graph's lifetime \
         (`cuGraphExecKernelNodeSetParams`): other buffers or views, and new scalar values. Shapes are \
         checked as `node_nd` checks them (an `Error::Shape` naming the operands). The new operands must \
         need the node's kernel and launch configuration: the same layout class and merged rank (all \
         contiguous: the flat kernel, with the same vector width; or strided with the same merged rank) \
         and the same grid and block (another shape of that class is taken when it keeps the grid: the \
         element count and shape are kernel arguments). Anything else (a shape that changes the grid or \
         the rank, a strided operand where all were contiguous, elements for the empty node of an empty \
         launch, a node of another kernel) is an `Error::Graph` saying to build the graph again, and the \
         node is left as it was. The graph's edges stay as they were built: keep the new operands' reads and \
         writes compatible with them (e.g. swap one buffer for another that no other node uses).{safety}"
    );
    let name = name.to_string();
    quote! {
        #[doc = #doc]
        pub #unsafety fn update_nd<'__g, #(#generics),*>(exec: &mut #exec<'__g>, node: #node, #(#args),*) -> #result<()> #where_clause {
            let __kernel = self::kernel_ref #turbofish ();
            let __ctx = ::std::sync::Arc::clone(exec.context());
            #layouts
            let __plan = #private::NdLaunch::<#arrays>::elementwise(__kernel, #operands, #n_inputs)?;
            let mut __b = exec.__nd_update(node)?;
            if __plan.n == 0 {
                return __b.empty(#name);
            }
            #pointers
            let __n64 = __plan.n as i64;
            if __plan.flat {
                #flat_args
                let __config = self::__AUTO[#index].config(__kernel, &__ctx.default_stream(), __plan.n, __per_thread)?;
                // SAFETY: one pointer per parameter of the flat kernel, each to a live local of its
                // type; every operand is one contiguous run of `n` elements inside its buffer (the
                // views were checked when made, the plan found them contiguous), borrowed for the
                // graph's lifetime.
                unsafe { __b.kernel(#name, __kernel, &__config, &mut __args) }
            } else {
                #nd_args
                // SAFETY: one pointer per parameter of the N-D kernel, each to a live local of its
                // type; the kernel touches element `offset + sum(coord * stride)` of each operand
                // for coordinates within the planned shape, inside each view's buffer (checked
                // when the view was made), borrowed for the graph's lifetime.
                unsafe { __b.kernel(#name, __nd, &__plan.config, &mut __args) }
            }
        }
    }
}

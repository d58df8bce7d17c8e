//! `node_nd`: an `elementwise_kernel!`'s N-D launch as one node of a CUDA graph. The operands and
//! checks of `launch_nd` (the same host plan, `cuda_embed::__private::NdLaunch`), borrowed for the
//! graph's lifetime as the flat `node` borrows them (the operands from one generator,
//! [`super::operands`]); the node is the flat kernel when every operand is one contiguous run, else the strided kernel for the plan's rank.

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
    let Operands { args, layouts, operands, n_inputs, arrays, pointers, flat_args, nd_args } =
        operands::operands(lists, s.elems, Target::Node, (index, s.instances, s.hidden));
    let raw = lists.has_raw();
    let unsafety = if raw { quote!(unsafe) } else { quote!() };
    let safety = if raw {
        "\n\n# Safety\nThe kernel has `raw` parameters: the operation indexes them itself, so it must stay \
         within each raw array's length."
    } else {
        ""
    };
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

//! `node_nd`: an `elementwise_kernel!`'s N-D launch as one node of a CUDA graph. The operands and
//! checks of `launch_nd` (the same host plan, `cuda_embed::__private::NdLaunch`), borrowed for the
//! graph's lifetime as the flat `node` borrows them; the node is the flat vectorised kernel when
//! every operand is one contiguous run, else the strided kernel for the plan's rank.

use super::NdShared;
use crate::gen::{param_ident, paths};
use cuda_embed_source::ndarray::nd_arg_count;
use cuda_embed_source::params::{ParamKind, ParamLists, Role};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The `node_nd` function, or nothing when the kernel has no array parameter.
pub fn node_nd(lists: &ParamLists, s: &NdShared<'_>) -> TokenStream {
    if !lists.all().any(|p| p.kind == ParamKind::Array) {
        return quote!();
    }
    let private = quote!(::cuda_embed::__private);
    let (result, c_void, kernel_ref) = (paths::result(), paths::c_void(), paths::kernel_ref());
    let (graph, node) = (paths::graph(), paths::graph_node());
    let (dptr, dptr_mut) = (paths::device_ptr(), paths::device_ptr_mut());
    let (generics, where_clause, turbofish, index, hidden) =
        (s.generics, s.where_clause, s.turbofish, s.index, s.hidden);
    let (mut args, mut memories, mut operands, mut prelude, mut packed, mut extra, mut sizes, mut ptrs) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut n_inputs = 0usize;
    for (k, (p, ty)) in lists.all().zip(s.elems).enumerate() {
        let id = param_ident(&p.name, k);
        let (mem, layout) = (format_ident!("__mem_{}", k), format_ident!("__layout_{}", k));
        let pname = &p.name;
        match (p.kind, p.role) {
            (ParamKind::Scalar, _) => {
                args.push(quote!(#id: #ty));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
            }
            (ParamKind::Array, role) => {
                let tr = if role == Role::Input {
                    n_inputs += 1;
                    args.push(quote!(#id: &'__g impl #private::NdNodeInput<#ty>));
                    quote!(#private::NdNodeInput::<#ty>)
                } else {
                    args.push(quote!(#id: &'__g impl #private::NdNodeOutput<#ty>));
                    quote!(#private::NdNodeOutput::<#ty>)
                };
                memories.push(quote! {
                    let #mem = #tr::__memory(#id, &__ctx)?;
                    let #layout = #tr::node_layout(#id);
                });
                operands.push(quote!((#pname, &#layout)));
                prelude.push(quote!(let #id: u64 = #mem.record(&mut __b, #layout.offset());));
                sizes.push(quote!(::core::mem::size_of::<#ty>()));
                ptrs.push(quote!((#id, ::core::mem::size_of::<#ty>())));
                packed.push(quote!(&#id as *const u64 as *mut #c_void));
            }
            (ParamKind::Raw, role) => {
                let len = format_ident!("__len_{}", k);
                if role == Role::Input {
                    args.push(quote!(#id: &'__g impl #dptr<#ty>));
                    prelude.push(quote! {
                        let #len: i64 = #private::DeviceSlice::len(#id) as i64;
                        let #id: u64 = __b.read::<#ty, _>(#id)?;
                    });
                } else {
                    args.push(quote!(#id: &'__g (impl #dptr<#ty> + #dptr_mut<#ty>)));
                    prelude.push(quote! {
                        let #len: i64 = #private::DeviceSlice::len(#id) as i64;
                        let #id: u64 = __b.write::<#ty, _>(#id)?;
                    });
                }
                extra.push(quote!(&#len as *const i64 as *mut #c_void));
                packed.push(quote!(&#id as *const u64 as *mut #c_void));
            }
        }
    }
    let arrays = operands.len();
    let flat_count = packed.len() + extra.len() + 2;
    let nd_count = nd_arg_count(lists);
    let dims = cuda_embed_source::ndarray::DIMS;
    let shape_args: Vec<TokenStream> =
        (0..dims).map(|d| quote!(&__plan.shape[#d] as *const i64 as *mut #c_void)).collect();
    let stride_args: Vec<TokenStream> = (0..arrays)
        .flat_map(|a| (0..dims).map(move |d| (a, d)))
        .map(|(a, d)| quote!(&__plan.strides[#a][#d] as *const i64 as *mut #c_void))
        .collect();
    let instances = s.instances;
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
         before anything is added). The node runs the kernel `launch_nd` would run: the flat vectorised \
         one when every operand is contiguous, else the strided one for the merged rank. Its dependencies \
         are inferred from the buffers behind the views (each view's whole buffer, read or written). With \
         no element the node is an empty node.{safety}"
    );
    quote! {
        #[doc = #doc]
        pub #unsafety fn node_nd<'__g, #(#generics),*>(graph: &mut #graph<'__g>, #(#args),*) -> #result<#node> #where_clause {
            let __kernel = self::kernel_ref #turbofish ();
            let __ctx = ::std::sync::Arc::clone(graph.context());
            #(#memories)*
            let __plan = #private::NdLaunch::<#arrays>::elementwise(__kernel, [#(#operands),*], #n_inputs)?;
            if __plan.n == 0 {
                return graph.empty();
            }
            let mut __b = graph.__node_builder();
            #(#prelude)*
            let __n64 = __plan.n as i64;
            if __plan.flat {
                let (__vector, __per_thread) = #private::flat_mode(#private::vector_width(&[#(#sizes),*]), &[#(#ptrs),*]);
                let mut __args: [*mut #c_void; #flat_count] = [
                    #(#packed,)* #(#extra,)*
                    &__n64 as *const i64 as *mut #c_void,
                    &__vector as *const i32 as *mut #c_void,
                ];
                let __config = self::__AUTO[#index].config(__kernel, &__ctx.default_stream(), __plan.n, __per_thread)?;
                // SAFETY: one pointer per parameter of the flat kernel, each to a live local of its
                // type; every operand is one contiguous run of `n` elements inside its buffer (the
                // views were checked when made, the plan found them contiguous), and each buffer
                // was recorded as read or written.
                unsafe { __b.kernel(__kernel, &__config, &mut __args) }
            } else {
                // SAFETY: the instances are compiled in the order NAME<..>, NAME_types<..>,
                // NAME_nd1<..>, NAME_nd2<..>, ... (see `launch_nd`).
                let __nd = unsafe {
                    #kernel_ref::new(&super::#hidden::__MODULE, #index + (2 + __plan.variant) * #instances)
                };
                let mut __args: [*mut #c_void; #nd_count] = [
                    #(#packed,)* #(#extra,)*
                    &__n64 as *const i64 as *mut #c_void,
                    &__plan.rows as *const i64 as *mut #c_void,
                    #(#shape_args,)*
                    #(#stride_args,)*
                ];
                // SAFETY: one pointer per parameter of the N-D kernel, each to a live local of its
                // type; the kernel touches element `offset + sum(coord * stride)` of each operand
                // for coordinates within the planned shape, inside each view's buffer (checked
                // when the view was made), and each buffer was recorded as read or written.
                unsafe { __b.kernel(__nd, &__plan.config, &mut __args) }
            }
        }
    }
}

//! `node_axes`: a `reduction_kernel!`'s reduction over axes as a node of a CUDA graph. The
//! operands, checks and plan of `launch_axes` (`cuda_embed::__private::AxesPlan`), borrowed for the
//! graph's lifetime as the flat `node` borrows them. A contiguous plan (full, rows, columns) adds
//! the kernel the reduction's launch plan picks, through the hidden kernel's typed `node`, with
//! scratch memory owned by the graph when that kernel needs some (as `node` does); a strided plan
//! adds the `NAME_axes` kernel with its arguments packed here (it has more parameters than a typed
//! `node` takes).

use crate::gen::paths;
use crate::reduction::node::Shared;
use cuda_embed_source::ndarray::reduction::AXES_DIMS;
use cuda_embed_source::params::{Param, ParamKind, ParamLists};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The `node_axes` function.
pub fn node_axes(lists: &ParamLists, param_type: fn(&Param) -> TokenStream, s: &Shared<'_>) -> TokenStream {
    let private = quote!(::cuda_embed::__private);
    let (result, graph, node, c_void) = (paths::result(), paths::graph(), paths::graph_node(), paths::c_void());
    let (red, plan_kind) = (paths::reduction("reduce"), paths::reduction("PlanKind"));
    let Shared { name, hidden, kernels, generics, turbofish, where_clause } = s;
    let [kfull, krows, kcols, kaxes] = [&kernels[0], &kernels[1], &kernels[2], &kernels[3]];
    let op = format!("reduction `{name}`");
    let (mut args_in, mut args_out, mut memories, mut in_ops, mut out_ops) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut regions, mut fwd, mut sizes, mut strided_prelude, mut packed) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut tail_in, mut tail_out) = (vec![], vec![]);
    let field = |e: TokenStream| quote!(&#e as *const i64 as *mut #c_void);
    let dims = |e: TokenStream| -> Vec<TokenStream> { (0..AXES_DIMS).map(|d| field(quote!(#e[#d]))).collect() };
    let mut ni = 0usize;
    for p in &lists.inputs {
        let (id, ty, pname) = (crate::reduction::param_id(lists, p), param_type(p), &p.name);
        fwd.push(quote!(#id));
        if p.kind == ParamKind::Scalar {
            args_in.push(quote!(#id: #ty));
            packed.push(quote!(&#id as *const #ty as *mut #c_void));
            continue;
        }
        let (mem, layout) = (format_ident!("__m_{}", id), format_ident!("__l_{}", id));
        let tr = quote!(#private::NdNodeInput::<#ty>);
        args_in.push(quote!(#id: &'__g impl #private::NdNodeInput<#ty>));
        memories.push(quote!(let #mem = #tr::__memory(#id, &__ctx)?; let #layout = #tr::node_layout(#id);));
        in_ops.push(quote!((#pname, &#layout)));
        let k = ni;
        regions.push(quote!(let #id = #mem.region(#op, __plan.inputs[#k].0 as usize, __kr)?;));
        sizes.push(quote!(::core::mem::size_of::<#ty>()));
        strided_prelude.push(quote!(let #id: u64 = #mem.record(&mut __b, 0);));
        packed.push(quote!(&#id as *const u64 as *mut #c_void));
        tail_in.push(field(quote!(__plan.inputs[#k].0)));
        tail_in.extend(dims(quote!(__plan.inputs[#k].1)));
        tail_in.extend(dims(quote!(__plan.inputs[#k].2)));
        ni += 1;
    }
    for (k, p) in lists.outputs.iter().enumerate() {
        let (id, ty, pname) = (crate::reduction::param_id(lists, p), param_type(p), &p.name);
        fwd.push(quote!(#id));
        let (mem, layout) = (format_ident!("__m_{}", id), format_ident!("__l_{}", id));
        let tr = quote!(#private::NdNodeOutput::<#ty>);
        args_out.push(quote!(#id: &'__g impl #private::NdNodeOutput<#ty>));
        memories.push(quote!(let #mem = #tr::__memory(#id, &__ctx)?; let #layout = #tr::node_layout(#id);));
        out_ops.push(quote!((#pname, &#layout)));
        regions.push(quote!(let #id = #mem.region(#op, __plan.outputs[#k].0 as usize, __k)?;));
        strided_prelude.push(quote!(let #id: u64 = #mem.record(&mut __b, 0);));
        packed.push(quote!(&#id as *const u64 as *mut #c_void));
        tail_out.push(field(quote!(__plan.outputs[#k].0)));
        tail_out.extend(dims(quote!(__plan.outputs[#k].1)));
    }
    let no = lists.outputs.len();
    let mut strided_args = packed;
    strided_args.push(field(quote!(__plan.kept)));
    strided_args.push(field(quote!(__plan.reduced)));
    strided_args.push(quote!(&__plan.mode as *const i32 as *mut #c_void));
    strided_args.extend(dims(quote!(__plan.kept_shape)));
    strided_args.extend(dims(quote!(__plan.reduced_shape)));
    strided_args.extend(tail_in);
    strided_args.extend(tail_out);
    let count = strided_args.len();
    let doc = "Adds the reduction over `axes` to `graph`, as `launch_axes` computes it: the operands as \
        `launch_axes` takes them (`NdView`/`NdViewMut` or flat buffers), except that they are borrowed \
        (shared) for the graph's lifetime, also the outputs (`&y`, not `&mut y`; see `Graph`). Shapes and \
        axes are checked as `launch_axes` checks them (an `Error::Shape`, before anything is added). The \
        node is the kernel `launch_axes` would run on the graph's device: for contiguous rows, columns or \
        a full reduction the kernel of `node_rows`, `node_cols` or `node` (its scratch memory, when it needs \
        some, a buffer the graph and its instantiations own), else the strided kernel. Its dependencies are \
        inferred from the buffers behind the views. With no output element the node is an empty node.";
    quote! {
        #[doc = #doc]
        pub fn node_axes<'__g, #(#generics),*>(
            graph: &mut #graph<'__g>,
            #(#args_in,)*
            axes: &[usize],
            #(#args_out),*
        ) -> #result<#node> #where_clause {
            let __ctx = ::std::sync::Arc::clone(graph.context());
            let __stream = __ctx.default_stream();
            #(#memories)*
            let __sms = #red::sm_count(&__stream)?;
            let __plan = #private::AxesPlan::<#ni, #no>::new(#op, __sms, [#(#in_ops),*], axes, [#(#out_ops),*])?;
            let __k = __plan.kept as usize;
            let __kr = (__plan.kept * __plan.reduced) as usize;
            let (__shape, __rows, __n) = match __plan.route {
                #private::AxesRoute::Empty => return graph.empty(),
                #private::AxesRoute::Full => (#red::Shape::Full, 1usize, __kr),
                #private::AxesRoute::Rows { cols } => (#red::Shape::Rows, __kr / cols, cols),
                #private::AxesRoute::Cols { cols } => (#red::Shape::Cols, __kr / cols, cols),
                #private::AxesRoute::Strided => {
                    let mut __b = graph.__node_builder();
                    #(#strided_prelude)*
                    let mut __args: [*mut #c_void; #count] = [#(#strided_args),*];
                    // SAFETY: one pointer per parameter of `NAME_axes` (the user's parameters, then
                    // the extents and each operand's offset and strides), each to a live local of
                    // its type; the kernel touches element `offset + sum(coord * stride)` of each
                    // buffer for coordinates within the views' own (merged) shapes, checked to lie
                    // in the buffers when the views were made; every buffer was recorded.
                    return unsafe { __b.kernel(#hidden::#kaxes::__kernel_ref #turbofish (), &__plan.config, &mut __args) };
                }
            };
            #(#regions)*
            let __rp = #red::plan(&__stream, __shape, __rows as u64, __n as u64, &[#(#sizes),*])?;
            let __cfg = #red::config(&__rp);
            let __off = __rp.partial_offset() as i64;
            let (__rows, __n, __aux) = (__rows as i64, __n as i64, __rp.aux as i32);
            let __node = match __rp.kind {
                #plan_kind::Segments => {
                    let __scratch = graph.__scratch(__rp.scratch_bytes())?;
                    *#hidden::#kfull::node #turbofish (graph, __cfg, #(#fwd,)* __rows, __n, __aux, __scratch, __off)?
                }
                #plan_kind::Rows => *#hidden::#krows::node #turbofish (graph, __cfg, #(#fwd,)* __rows, __n, __aux)?,
                #plan_kind::Cols => {
                    let __scratch = graph.__scratch(__rp.scratch_bytes())?;
                    *#hidden::#kcols::node #turbofish (graph, __cfg, #(#fwd,)* __rows, __n, __scratch, __off)?
                }
            };
            ::core::result::Result::Ok(__node)
        }
    }
}

//! `launch_axes`: the N-D launcher of a `reduction_kernel!` module.
//! The host plan (`cuda_embed::__private::AxesPlan`) sends contiguous rows, columns and full
//! reductions to the module's existing kernels (through its `__run`) and everything else to the
//! strided `NAME_axes` kernel generated beside them.

use crate::gen::buffer_args::{BufferArgs, Family};
use crate::gen::paths;
use cuda_embed_source::params::{Param, ParamKind, ParamLists};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// What `launch_axes` shares with the reduction's other launchers.
pub struct AxesShared<'a> {
    /// The reduction's name.
    pub name: &'a Ident,
    /// The hidden module holding the kernels.
    pub hidden: &'a Ident,
    /// The strided kernel's module in `hidden`.
    pub kernel: &'a Ident,
    /// The placeholders (`T`), declared by `gen_decl`.
    pub generics: &'a [Ident],
    /// `<T>` or empty.
    pub gen_decl: &'a TokenStream,
    /// `::<T>` or empty.
    pub turbofish: &'a TokenStream,
    /// `where T: Listed` or empty.
    pub where_clause: &'a TokenStream,
    /// `__run` or `__run::<T>`: the contiguous path.
    pub call: &'a TokenStream,
}

/// The `launch_axes` function; its array arguments are bounded by their parameters' traits in
/// `params`.
pub fn launch_axes(
    lists: &ParamLists,
    param_type: fn(&Param) -> TokenStream,
    s: &AxesShared<'_>,
    params: &mut BufferArgs,
) -> TokenStream {
    let private = quote!(::cuda_embed::__private);
    let (stream_ty, result) = (paths::stream(), paths::result());
    let red = paths::reduction("reduce");
    let (name, hidden, kernel, gen_decl, turbofish, where_clause, call) =
        (s.name, s.hidden, s.kernel, s.gen_decl, s.turbofish, s.where_clause, s.call);
    let mut in_args = Vec::new();
    let mut out_args = Vec::new();
    let mut views = Vec::new();
    let mut in_ops = Vec::new();
    let mut out_ops = Vec::new();
    let mut contig = Vec::new();
    let mut run_args = Vec::new();
    let mut kernel_args = Vec::new();
    let mut tail_in = Vec::new();
    let mut tail_out = Vec::new();
    let (mut ni, mut no) = (0usize, 0usize);
    let region = |id: &Ident, len: TokenStream, off: TokenStream, mutable: bool| {
        let (sub, whole) = (format_ident!("__c_{}", id), format_ident!("__w_{}", id));
        let op = format!("reduction `{name}`");
        // A writable view lends its buffer by value (a new view of the same memory, so the view's
        // own buffer can never be replaced), kept in a local while the region borrows it.
        let (method, bind, take) = if mutable {
            (quote!(try_slice_mut), quote!(mut), quote!(let mut #whole = #id.buffer_mut();))
        } else {
            (quote!(try_slice), quote!(), quote!(let #whole = #id.buffer();))
        };
        quote! {
            #take
            let #bind #sub = #whole.#method(#off..#off + #len).ok_or_else(|| ::cuda_embed::Error::Shape {
                op: #op.into(), detail: "internal error: a contiguous region outside its view".into() })?;
        }
    };
    for p in &lists.inputs {
        let id = crate::reduction::param_id(lists, p);
        let ty = param_type(p);
        let pname = &p.name;
        if p.kind == ParamKind::Scalar {
            in_args.push(quote!(#id: #ty));
            run_args.push(quote!(#id));
            kernel_args.push(quote!(#id));
        } else {
            let layout = format_ident!("__l_{}", id);
            let bound = params.bound(p, &id, &ty, Family::Nd, &quote!(#private::NdInput));
            in_args.push(quote!(#id: &impl #bound));
            views.push(quote!(let #id = #private::NdInput::nd(#id); let #layout = *#id.layout();));
            in_ops.push(quote!((#pname, &#layout)));
            let k = ni;
            contig.push(region(&id, quote!(__kr), quote!((__plan.inputs[#k].0 as usize)), false));
            let sub = format_ident!("__c_{}", id);
            run_args.push(quote!(&#sub));
            kernel_args.push(quote!(#id.buffer()));
            tail_in.push(quote! {
                __plan.inputs[#k].0,
                __plan.inputs[#k].1[0], __plan.inputs[#k].1[1], __plan.inputs[#k].1[2], __plan.inputs[#k].1[3],
                __plan.inputs[#k].2[0], __plan.inputs[#k].2[1], __plan.inputs[#k].2[2], __plan.inputs[#k].2[3]
            });
            ni += 1;
        }
    }
    for p in &lists.outputs {
        let id = crate::reduction::param_id(lists, p);
        let ty = param_type(p);
        let pname = &p.name;
        let layout = format_ident!("__l_{}", id);
        let bound = params.bound(p, &id, &ty, Family::Nd, &quote!(#private::NdOutput));
        out_args.push(quote!(#id: &mut impl #bound));
        views.push(quote!(let mut #id = #private::NdOutput::nd_mut(#id); let #layout = *#id.layout();));
        out_ops.push(quote!((#pname, &#layout)));
        let k = no;
        contig.push(region(&id, quote!(__k), quote!((__plan.outputs[#k].0 as usize)), true));
        let sub = format_ident!("__c_{}", id);
        run_args.push(quote!(&mut #sub));
        kernel_args.push(quote!(&mut #id.buffer_mut()));
        tail_out.push(quote! {
            __plan.outputs[#k].0,
            __plan.outputs[#k].1[0], __plan.outputs[#k].1[1], __plan.outputs[#k].1[2], __plan.outputs[#k].1[3]
        });
        no += 1;
    }
    let op = format!("reduction `{name}`");
    let doc = "Reduces the inputs over `axes` (any set of distinct axes of the first array input, whose \
        shape the other array inputs broadcast to): each input is an `NdView` (any strides) or a flat \
        buffer (1-D). Each output is an `NdViewMut` (or a flat buffer) whose shape is the input's without \
        the reduced axes, or with them as 1 (keepdims: decided by the output's shape); anything else is \
        an `Error::Shape` naming the shapes. `i` in `map` is the flat index over the reduced axes and `n` \
        their element count. Dimensions contiguous for every operand are merged; contiguous rows, \
        columns and full reductions run the kernels of `launch_rows`, `launch_cols` and `launch`, \
        everything else a strided kernel. Deterministic: the plan depends on the shapes only.";
    let future = paths::gpu_future();
    let async_ins = in_args.iter().map(crate::gen::future_args::borrowed);
    let async_outs = out_args.iter().map(crate::gen::future_args::borrowed);
    let in_names = in_args.iter().map(crate::gen::future_args::name);
    let out_names = out_args.iter().map(crate::gen::future_args::name);
    let generics = s.generics;
    let async_doc = "`launch_axes` as a future: the reduction is queued now (shapes and axes checked, planned and \
        bound as `launch_axes` does), and the future resolves when the GPU has finished it, to the launch's \
        result. The operands stay borrowed until the future is dropped; dropping or forgetting it early is \
        sound (see `cuda_embed::future`).";
    let reduction = name.to_string();
    quote! {
        #[doc = #async_doc]
        pub fn launch_axes_async<'__a, #(#generics),*>(
            stream: &::std::sync::Arc<#stream_ty>,
            #(#async_ins,)*
            axes: &[usize],
            #(#async_outs),*
        ) -> #future<'__a> #where_clause {
            let __queued = self::launch_axes #turbofish (stream, #(#in_names,)* axes, #(#out_names),*);
            #future::after_named(stream, __queued, #reduction, ORIGIN)
        }

        #[doc = #doc]
        pub fn launch_axes #gen_decl (
            stream: &::std::sync::Arc<#stream_ty>,
            #(#in_args,)*
            axes: &[usize],
            #(#out_args),*
        ) -> #result<()> #where_clause {
            #(#views)*
            let __sms = #red::sm_count(stream)?;
            let __plan = #private::AxesPlan::<#ni, #no>::new(#op, __sms, [#(#in_ops),*], axes, [#(#out_ops),*])?;
            let __k = __plan.kept as usize;
            let __kr = (__plan.kept * __plan.reduced) as usize;
            let (__shape, __cols) = match __plan.route {
                #private::AxesRoute::Empty => return ::core::result::Result::Ok(()),
                #private::AxesRoute::Full => (#red::Shape::Full, 0usize),
                #private::AxesRoute::Rows { cols } => (#red::Shape::Rows, cols),
                #private::AxesRoute::Cols { cols } => (#red::Shape::Cols, cols),
                #private::AxesRoute::Strided => {
                    let __cfg = __plan.config;
                    let [__k0, __k1, __k2, __k3] = __plan.kept_shape;
                    let [__r0, __r1, __r2, __r3] = __plan.reduced_shape;
                    // SAFETY: the views were checked to lie in their buffers when made; the kernel
                    // touches element `offset + sum(coord * stride)` of each for coordinates within
                    // the planned kept and reduced extents, which are the views' own (merged)
                    // shapes and strides; the outputs do not overlap themselves (NdViewMut).
                    return unsafe {
                        #hidden::#kernel::launch #turbofish (
                            stream, __cfg, #(#kernel_args,)*
                            __plan.kept, __plan.reduced, __plan.mode,
                            __k0, __k1, __k2, __k3, __r0, __r1, __r2, __r3,
                            #(#tail_in,)* #(#tail_out),*
                        )
                    };
                }
            };
            #(#contig)*
            #call(stream, __shape, __cols, #(#run_args),*)
        }
    }
}

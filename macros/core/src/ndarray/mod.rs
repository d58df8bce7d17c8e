//! `launch_nd`: the N-D launcher of an `elementwise_kernel!` module. Inputs are N-D views (or
//! flat buffers, 1-D) broadcast to the first output's shape; the host plan
//! (`cuda_embed::__private::NdLaunch`) collapses dimensions and picks the flat vectorised kernel
//! `NAME` when every operand is one contiguous run, else the strided kernel `NAME_nd` of the same
//! instance (generated beside it by `cuda_embed_source::ndarray`).

pub mod axes_node;
pub mod node;
pub mod reduction;

use crate::gen::buffer_args::{BufferArgs, Family};
use crate::gen::{param_ident, paths};
use cuda_embed_source::ndarray::nd_arg_count;
use cuda_embed_source::params::{ParamKind, ParamLists, Role};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// What `launch_nd` shares with the module's other launchers.
pub struct NdShared<'a> {
    /// The Rust element type of each parameter, in declaration order.
    pub elems: &'a [TokenStream],
    /// `<T>` or empty.
    pub gen_params: &'a TokenStream,
    /// The placeholders as generic parameters (the graph node adds its lifetime before them).
    pub generics: &'a [syn::Ident],
    /// `where T: Listed` or empty.
    pub where_clause: &'a TokenStream,
    /// `::<T>` or empty.
    pub turbofish: &'a TokenStream,
    /// The flat kernel's index in the module (an expression).
    pub index: &'a TokenStream,
    /// The hidden module holding `__MODULE`.
    pub hidden: &'a syn::Ident,
    /// Instances built (1 without placeholders): each kernel of the source (flat, carrier, one per
    /// rank) is compiled once per instance, in that order.
    pub instances: usize,
}

/// The `launch_nd` function, or nothing when the kernel has no array parameter. Its array
/// arguments are bounded by their parameters' traits in `params`.
pub fn launch_nd(lists: &ParamLists, s: &NdShared<'_>, params: &mut BufferArgs) -> TokenStream {
    if !lists.all().any(|p| p.kind == ParamKind::Array) {
        return quote!();
    }
    let private = quote!(::cuda_embed::__private);
    let (stream_ty, result, c_void) = (paths::stream(), paths::result(), paths::c_void());
    let (kernel_ref, kind) = (paths::kernel_ref(), paths::launch_kind());
    let (dptr, dptr_mut) = (paths::device_ptr(), paths::device_ptr_mut());
    // Raw arrays' bounds: this crate's `unsafe` buffer traits, which vouch for `len()`.
    let (dbuf, dbuf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let (gen_params, where_clause, turbofish, index, hidden) =
        (s.gen_params, s.where_clause, s.turbofish, s.index, s.hidden);
    let mut args = Vec::new();
    let mut views = Vec::new();
    let mut operands = Vec::new();
    let mut prelude = Vec::new();
    let mut packed = Vec::new();
    let mut extra = Vec::new();
    let mut sizes = Vec::new();
    let mut ptrs = Vec::new();
    let mut n_inputs = 0usize;
    for (k, (p, ty)) in lists.all().zip(s.elems).enumerate() {
        let id = param_ident(&p.name, k);
        let guard = format_ident!("__guard_{}", k);
        let layout = format_ident!("__layout_{}", k);
        let pname = &p.name;
        match (p.kind, p.role) {
            (ParamKind::Scalar, _) => {
                args.push(quote!(#id: #ty));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
            }
            (ParamKind::Array, role) => {
                if role == Role::Input {
                    n_inputs += 1;
                    let bound = params.bound(p, &id, ty, Family::Nd, &quote!(#private::NdInput));
                    args.push(quote!(#id: &impl #bound));
                    views.push(quote!(let #id = #private::NdInput::nd(#id); let #layout = *#id.layout();));
                    prelude.push(quote!(let (#id, #guard) = #id.device_ptr(&__binding);));
                } else {
                    let bound = params.bound(p, &id, ty, Family::Nd, &quote!(#private::NdOutput));
                    args.push(quote!(#id: &mut impl #bound));
                    views.push(quote!(let mut #id = #private::NdOutput::nd_mut(#id); let #layout = *#id.layout();));
                    prelude.push(quote!(let (#id, #guard) = #id.device_ptr_mut(&__binding);));
                }
                operands.push(quote!((#pname, &#layout)));
                sizes.push(quote!(::core::mem::size_of::<#ty>()));
                ptrs.push(quote!((#id, ::core::mem::size_of::<#ty>())));
                packed.push(quote!(&#id as *const u64 as *mut #c_void));
            }
            (ParamKind::Raw, role) => {
                let len = format_ident!("__len_{}", k);
                if role == Role::Input {
                    let bound = params.bound(p, &id, ty, Family::Flat, &dbuf);
                    args.push(quote!(#id: &impl #bound));
                    prelude.push(quote! {
                        let #len: i64 = #private::DeviceSlice::len(#id) as i64;
                        let (#id, #guard) = #dptr::device_ptr(#id, &__binding);
                    });
                } else {
                    let bound = params.bound(p, &id, ty, Family::Flat, &dbuf_mut);
                    args.push(quote!(#id: &mut impl #bound));
                    prelude.push(quote! {
                        let #len: i64 = #private::DeviceSlice::len(#id) as i64;
                        let (#id, #guard) = #dptr_mut::device_ptr_mut(#id, &__binding);
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
        "\n\nSafe: the generated code alone decides which elements are touched (each view's elements, \
         checked to lie in its buffer when the view was made)."
    };
    let doc = format!(
        "Runs the operation once per element of the first output's shape, on N-D operands: each array \
         input is an `NdView` (or `NdViewMut`, or a flat buffer read as 1-D) broadcast to that shape by \
         NumPy's rules, each output an `NdViewMut` (or a flat buffer) of exactly that shape; any strides. \
         `i` is the flat row-major index in the output and `n` the number of elements. A shape that does \
         not broadcast is an `Error::Shape` naming the operands and shapes. Dimensions contiguous for \
         every operand are merged first; when all operands are contiguous the flat vectorised kernel \
         runs, else the strided kernel specialised for the merged rank.{safety}"
    );
    quote! {
        #[doc = #doc]
        pub #unsafety fn launch_nd #gen_params (stream: &#stream_ty, #(#args),*) -> #result<()> #where_clause {
            let __kernel = self::kernel_ref #turbofish ();
            #(#views)*
            let __plan = #private::NdLaunch::<#arrays>::elementwise(__kernel, [#(#operands),*], #n_inputs)?;
            if __plan.n == 0 {
                return ::core::result::Result::Ok(());
            }
            // Buffers are bound on a side stream while `stream` captures (launch/capture.rs).
            let __binding = #private::kernel_binding(stream, __kernel)?;
            #(#prelude)*
            let __n64 = __plan.n as i64;
            if __plan.flat {
                let (__vector, __per_thread) = #private::flat_mode(#private::vector_width(&[#(#sizes),*]), &[#(#ptrs),*]);
                let mut __args: [*mut #c_void; #flat_count] = [
                    #(#packed,)* #(#extra,)*
                    &__n64 as *const i64 as *mut #c_void,
                    &__vector as *const i32 as *mut #c_void,
                ];
                // SAFETY: one pointer per parameter of the flat kernel, each to a live local of its
                // type; every operand is one contiguous run of `n` elements inside its buffer (the
                // views were checked when made and the plan found them contiguous).
                unsafe { self::__AUTO[#index].launch(__kernel, stream, __plan.n, __per_thread, &mut __args) }
            } else {
                // SAFETY: the instances are compiled in the order NAME<..>, NAME_types<..>,
                // NAME_nd1<..>, NAME_nd2<..>, ... (one kernel each without placeholders), so the
                // N-D kernel of this instance for the plan's rank is that many kernels after the
                // flat one.
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
                // type; the kernel reads and writes element `offset + sum(coord * stride)` of each
                // operand for coordinates within the planned shape, which the views' checks keep
                // inside each buffer.
                unsafe { __nd.launch_raw(stream, &__plan.config, #kind::Plain, &mut __args).map(drop) }
            }
        }
    }
}

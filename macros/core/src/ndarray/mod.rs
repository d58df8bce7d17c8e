//! `launch_nd`: the N-D launcher of an `elementwise_kernel!` module. Inputs are N-D views (or
//! flat buffers, 1-D) broadcast to the first output's shape; the host plan
//! (`cuda_embed::__private::NdLaunch`) collapses dimensions and picks the flat kernel
//! `NAME` when every operand is one contiguous run, else the strided kernel `NAME_nd` of the same
//! instance (generated beside it by `cuda_embed_source::ndarray`).

pub mod node;
pub mod operands;

use crate::gen::buffer_args::BufferArgs;
use crate::gen::paths;
use cuda_embed_source::params::{ParamKind, ParamLists};
use operands::{Operands, Target};
use proc_macro2::TokenStream;
use quote::quote;

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

/// `unsafe` and the rustdoc `# Safety` section of the N-D functions (`launch_nd`, `node_nd`,
/// `update_nd`) of a kernel with `raw` parameters, which the operation indexes itself; nothing
/// and an empty section for any other kernel.
pub(crate) fn raw_safety(lists: &ParamLists) -> (TokenStream, &'static str) {
    if lists.has_raw() {
        (
            quote!(unsafe),
            "\n\n# Safety\nThe kernel has `raw` parameters: the operation indexes them itself, so it must stay \
             within each raw array's length.",
        )
    } else {
        (quote!(), "")
    }
}

/// The `launch_nd` function, or nothing when the kernel has no array parameter. Its array
/// arguments are bounded by their parameters' traits in `params`.
pub fn launch_nd(lists: &ParamLists, s: &NdShared<'_>, params: &mut BufferArgs) -> TokenStream {
    if !lists.all().any(|p| p.kind == ParamKind::Array) {
        return quote!();
    }
    let private = quote!(::cuda_embed::__private);
    let (stream_ty, result, kind) = (paths::stream(), paths::result(), paths::launch_kind());
    let (gen_params, where_clause, turbofish, index) = (s.gen_params, s.where_clause, s.turbofish, s.index);
    let Operands { args, layouts, operands, n_inputs, arrays, checks, pointers, flat_args, nd_args } =
        operands::operands(lists, s.elems, Target::Launch(params), (index, s.instances, s.hidden));
    let (unsafety, safety) = match raw_safety(lists) {
        (unsafety, "") => (
            unsafety,
            "\n\nSafe: the generated code alone decides which elements are touched (each view's elements, \
             checked to lie in its buffer when the view was made).",
        ),
        raw => raw,
    };
    let doc = format!(
        "Runs the operation once per element of the first output's shape, on N-D operands: each array \
         input is an `NdView` (or `NdViewMut`, or a flat buffer read as 1-D) broadcast to that shape by \
         NumPy's rules, each output an `NdViewMut` (or a flat buffer) of exactly that shape; any strides. \
         `i` is the flat row-major index in the output and `n` the number of elements. A shape that does \
         not broadcast is an `Error::Shape` naming the operands and shapes. Dimensions contiguous for \
         every operand are merged first; when all operands are contiguous the flat kernel runs \
         (vectorised when every operand is aligned for it), else the strided kernel specialised for the \
         merged rank.{safety}"
    );
    let future = paths::gpu_future();
    let async_args = args.iter().map(crate::gen::future_args::borrowed);
    let names = args.iter().map(crate::gen::future_args::name);
    let generics = s.generics;
    let async_doc = format!(
        "`launch_nd` as a future: the kernel is queued now (shapes checked, planned and bound as \
         `launch_nd` does), and the future resolves when the GPU has finished it, to the launch's result. \
         The operands stay borrowed until the future is dropped; dropping or forgetting it early is sound \
         (see `cuda_embed::future`).{safety}"
    );
    quote! {
        #[doc = #async_doc]
        pub #unsafety fn launch_nd_async<'__a, #(#generics),*>(stream: &#stream_ty, #(#async_args),*) -> #future<'__a> #where_clause {
            #[allow(unused_unsafe)]
            // SAFETY: forwarded from the caller (a kernel without `raw` parameters has no contract).
            let __queued = unsafe { self::launch_nd #turbofish (stream, #(#names),*) };
            #future::after_launch(stream, __queued, self::kernel_ref #turbofish ())
        }

        #[doc = #doc]
        pub #unsafety fn launch_nd #gen_params (stream: &#stream_ty, #(#args),*) -> #result<()> #where_clause {
            let __kernel = self::kernel_ref #turbofish ();
            #layouts
            let __plan = #private::NdLaunch::<#arrays>::elementwise(__kernel, #operands, #n_inputs)?;
            if __plan.n == 0 {
                return ::core::result::Result::Ok(());
            }
            // Every operand's device is checked before any driver call (`bind`); buffers are then
            // bound on a side stream while `stream` captures (bind/capture.rs).
            #checks
            let __binding = #private::kernel_binding(stream, __kernel)?;
            #pointers
            let __n64 = __plan.n as i64;
            if __plan.flat {
                #flat_args
                // SAFETY: one pointer per parameter of the flat kernel, each to a live local of its
                // type; every operand is one contiguous run of `n` elements inside its buffer (the
                // views were checked when made and the plan found them contiguous).
                unsafe { self::__AUTO[#index].launch(__kernel, stream, __plan.n, __per_thread, &mut __args) }
            } else {
                #nd_args
                // SAFETY: one pointer per parameter of the N-D kernel, each to a live local of its
                // type; the kernel reads and writes element `offset + sum(coord * stride)` of each
                // operand for coordinates within the planned shape, which the views' checks keep
                // inside each buffer.
                unsafe { __nd.launch_raw(stream, &__plan.config, #kind::Plain, &mut __args).map(drop) }
            }
        }
    }
}

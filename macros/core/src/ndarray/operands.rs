//! The operands of an `elementwise_kernel!`'s N-D launch, one generator for `launch_nd` (a
//! launch on a stream) and `node_nd` (a graph node): the Rust parameters, the code that reads each
//! operand's layout for the host plan, the device pointers, and the argument arrays of the flat
//! and the strided kernel. The two differ only in how an operand is taken (a view to bind on a
//! stream, or memory borrowed for the graph) and what is done with the arguments.

use crate::gen::buffer_args::{BufferArgs, Family};
use crate::gen::{param_ident, paths};
use cuda_embed_source::ndarray::nd_arg_count;
use cuda_embed_source::params::{ParamKind, ParamLists, Role};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// Where the operands go.
pub enum Target<'a> {
    /// `launch_nd`: array arguments bounded by their parameters' traits in these `BufferArgs`,
    /// views bound to `__binding` (the stream, or a side stream under capture).
    Launch(&'a mut BufferArgs),
    /// `node_nd`: arguments borrowed for the graph's lifetime `'__g`, each buffer recorded on the
    /// node builder `__b` as read or written.
    Node,
    /// `update_nd`: arguments as for `Node`, their addresses taken through the update `__b`
    /// (an `NdUpdate`), nothing recorded (the node's edges stay as built).
    Update,
}

/// The generated pieces, in the order a launcher uses them.
pub struct Operands {
    /// The Rust parameters after the stream or graph.
    pub args: Vec<TokenStream>,
    /// Statements that take each array operand and its layout (`__layout_k`), before the plan.
    pub layouts: TokenStream,
    /// `[(name, &layout), ...]`: the plan's operands (`NdLaunch::elementwise`).
    pub operands: TokenStream,
    /// How many array inputs come first among the operands.
    pub n_inputs: usize,
    /// How many array operands there are (the plan's const parameter).
    pub arrays: usize,
    /// `launch_nd`: the device check of every buffer (`bind`), after the plan and before the
    /// binding stream is asked for; empty for the graph targets, whose checks are in `pointers`.
    pub checks: TokenStream,
    /// Statements that bind or record every buffer (a `u64` device pointer per array and raw
    /// parameter, and each raw array's length), after the plan.
    pub pointers: TokenStream,
    /// Statements that make `__vector`, `__per_thread` and `__args` for the flat kernel.
    pub flat_args: TokenStream,
    /// Statements that make `__nd` (the strided kernel for the plan's rank) and `__args` for it.
    pub nd_args: TokenStream,
}

/// The operands of an elementwise kernel's N-D launch, for `target`; `elems` are the Rust element
/// types in declaration order, `index` the flat kernel's index in the module, `instances` the
/// number of instances built, `hidden` the module holding `__MODULE`.
pub fn operands(
    lists: &ParamLists,
    elems: &[TokenStream],
    target: Target<'_>,
    (index, instances, hidden): (&TokenStream, usize, &syn::Ident),
) -> Operands {
    let private = quote!(::cuda_embed::__private);
    let (c_void, kernel_ref) = (paths::c_void(), paths::kernel_ref());
    let (dptr, dptr_mut) = (paths::device_ptr(), paths::device_ptr_mut());
    // Raw arrays' bounds in `launch_nd`: this crate's `unsafe` buffer traits, which vouch for `len()`.
    let (dbuf, dbuf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let mut target = target;
    let (mut args, mut layouts, mut operands, mut checks, mut pointers) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut packed, mut extra, mut sizes, mut ptrs) = (vec![], vec![], vec![], vec![]);
    let mut n_inputs = 0usize;
    for (k, (p, ty)) in lists.all().zip(elems).enumerate() {
        let id = param_ident(&p.name, k);
        let (guard, mem, layout) =
            (format_ident!("__guard_{}", k), format_ident!("__mem_{}", k), format_ident!("__layout_{}", k));
        let pname = &p.name;
        let input = p.role == Role::Input;
        match p.kind {
            ParamKind::Scalar => {
                args.push(quote!(#id: #ty));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
            }
            ParamKind::Array => {
                n_inputs += usize::from(input);
                match &mut target {
                    Target::Launch(params) => {
                        // The one checked path (`bind`): the view's device, then its address.
                        let checked = format_ident!("__checked_{}", k);
                        let pshown = format!("`{pname}`");
                        let (base, take, check) = if input {
                            (
                                quote!(#private::NdInput),
                                quote!(let #id = #private::NdInput::nd(#id);),
                                quote!(let #checked = #private::bind::nd_input(&#id, stream, __kernel, #pshown)?;),
                            )
                        } else {
                            (
                                quote!(#private::NdOutput),
                                quote!(let mut #id = #private::NdOutput::nd_mut(#id);),
                                quote!(let #checked = #private::bind::nd_output(&mut #id, stream, __kernel, #pshown)?;),
                            )
                        };
                        let bound = params.bound(p, &id, ty, Family::Nd, &base);
                        args.push(if input { quote!(#id: &impl #bound) } else { quote!(#id: &mut impl #bound) });
                        layouts.push(quote!(#take let #layout = *#id.layout();));
                        checks.push(check);
                        pointers.push(quote!(let (#id, #guard) = #checked.bind(&__binding);));
                    }
                    Target::Node | Target::Update => {
                        let tr = if input {
                            quote!(#private::NdNodeInput::<#ty>)
                        } else {
                            quote!(#private::NdNodeOutput::<#ty>)
                        };
                        args.push(if input {
                            quote!(#id: &'__g impl #private::NdNodeInput<#ty>)
                        } else {
                            quote!(#id: &'__g impl #private::NdNodeOutput<#ty>)
                        });
                        layouts.push(quote! {
                            let #mem = #tr::__memory(#id, &__ctx)?;
                            let #layout = #tr::node_layout(#id);
                        });
                        pointers.push(if matches!(target, Target::Update) {
                            quote!(let #id: u64 = #mem.update(&mut __b, #layout.offset());)
                        } else {
                            quote!(let #id: u64 = #mem.record(&mut __b, #layout.offset());)
                        });
                    }
                }
                operands.push(quote!((#pname, &#layout)));
                sizes.push(quote!(::core::mem::size_of::<#ty>()));
                ptrs.push(quote!((#id, ::core::mem::size_of::<#ty>())));
                packed.push(quote!(&#id as *const u64 as *mut #c_void));
            }
            ParamKind::Raw => {
                let len = format_ident!("__len_{}", k);
                let length = quote!(let #len: i64 = #private::DeviceSlice::len(#id) as i64;);
                let pshown = format!("`{pname}`");
                let (arg, take) = match (&mut target, input) {
                    (Target::Launch(params), true) => {
                        let bound = params.bound(p, &id, ty, Family::Flat, &dbuf);
                        let check = quote!(#private::bind::input::<#ty, _>(#id, stream, __kernel, #pshown)?);
                        checks.push(quote!(#length let #id = #check;));
                        (quote!(#id: &impl #bound), quote!(let (#id, #guard) = #id.bind(&__binding);))
                    }
                    (Target::Launch(params), false) => {
                        let bound = params.bound(p, &id, ty, Family::Flat, &dbuf_mut);
                        let check = quote!(#private::bind::output::<#ty, _>(#id, stream, __kernel, #pshown)?);
                        checks.push(quote!(#length let #id = #check;));
                        (quote!(#id: &mut impl #bound), quote!(let (#id, #guard) = #id.bind(&__binding);))
                    }
                    (Target::Node | Target::Update, true) => {
                        (quote!(#id: &'__g impl #dptr<#ty>), quote!(let #id: u64 = __b.read::<#ty, _>(#id)?;))
                    }
                    (Target::Node | Target::Update, false) => (
                        quote!(#id: &'__g (impl #dptr<#ty> + #dptr_mut<#ty>)),
                        quote!(let #id: u64 = __b.write::<#ty, _>(#id)?;),
                    ),
                };
                args.push(arg);
                if matches!(target, Target::Launch(_)) {
                    pointers.push(take);
                } else {
                    pointers.push(quote!(#length #take));
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
    let shape_args = (0..dims).map(|d| quote!(&__plan.shape[#d] as *const i64 as *mut #c_void));
    let stride_args = (0..arrays)
        .flat_map(|a| (0..dims).map(move |d| (a, d)))
        .map(|(a, d)| quote!(&__plan.strides[#a][#d] as *const i64 as *mut #c_void));
    let flat_args = quote! {
        let (__vector, __per_thread) = #private::flat_mode(#private::vector_width(&[#(#sizes),*]), &[#(#ptrs),*]);
        let mut __args: [*mut #c_void; #flat_count] = [
            #(#packed,)* #(#extra,)*
            &__n64 as *const i64 as *mut #c_void,
            &__vector as *const i32 as *mut #c_void,
        ];
    };
    let nd_args = quote! {
        // SAFETY: the instances are compiled in the order NAME<..>, NAME_types<..>, NAME_nd1<..>,
        // NAME_nd2<..>, ... (one kernel each without placeholders), so the N-D kernel of this
        // instance for the plan's rank is that many kernels after the flat one.
        let __nd = unsafe { #kernel_ref::new(&super::#hidden::__MODULE, #index + (2 + __plan.variant) * #instances) };
        let mut __args: [*mut #c_void; #nd_count] = [
            #(#packed,)* #(#extra,)*
            &__n64 as *const i64 as *mut #c_void,
            &__plan.rows as *const i64 as *mut #c_void,
            #(#shape_args,)*
            #(#stride_args,)*
        ];
    };
    Operands {
        args,
        layouts: quote!(#(#layouts)*),
        operands: quote!([#(#operands),*]),
        n_inputs,
        arrays,
        checks: quote!(#(#checks)*),
        pointers: quote!(#(#pointers)*),
        flat_args,
        nd_args,
    }
}

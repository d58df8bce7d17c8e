//! `NAME::node` and `NAME::node_with` of an elementwise kernel: the kernel as one node of a CUDA
//! graph, with the arguments and checks of `launch` (buffers borrowed for the graph's lifetime,
//! outputs shared-borrowed as for `cuda_kernel!` nodes; lengths checked; the configuration chosen
//! as `launch` chooses it, or the caller's).

use crate::gen::{param_ident, paths};
use cuda_embed_source::params::{ParamKind, ParamLists, Role};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// What the node functions share with the launchers of the module.
pub struct Shared<'a> {
    /// The Rust element type of each parameter, in order.
    pub elems: &'a [TokenStream],
    /// `<T, ...>` of the launchers (empty without placeholders).
    pub generics: &'a [syn::Ident],
    /// Their `where` clause.
    pub where_clause: &'a TokenStream,
    /// `::<T, ...>` (empty without placeholders).
    pub turbofish: &'a TokenStream,
    /// The instance's index into `__AUTO`.
    pub index: &'a TokenStream,
}

/// The node functions, inside the kernel's public module (next to `kernel_ref` and `__AUTO`).
pub fn node_fns(lists: &ParamLists, s: &Shared<'_>) -> TokenStream {
    let (config_ty, result, c_void) = (paths::launch_config(), paths::result(), paths::c_void());
    // This crate's `unsafe` buffer traits: their implementations vouch for the lengths checked.
    let (dbuf, dbuf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let (graph, node) = (paths::graph(), paths::graph_node());
    let private = quote!(::cuda_embed::__private);
    let has_array = lists.all().any(|p| p.kind == ParamKind::Array);
    let (mut args, mut names, mut lengths, mut prelude, mut packed, mut extra, mut sizes, mut ptrs) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for (k, (p, ty)) in lists.all().zip(s.elems).enumerate() {
        let id = param_ident(&p.name, k);
        names.push(quote!(#id));
        let pname = &p.name;
        if p.kind == ParamKind::Scalar {
            args.push(quote!(#id: #ty));
            packed.push(quote!(&#id as *const #ty as *mut #c_void));
            continue;
        }
        args.push(match p.role {
            Role::Input => quote!(#id: &'__g impl #dbuf<#ty>),
            Role::Output => quote!(#id: &'__g (impl #dbuf<#ty> + #dbuf_mut<#ty>)),
        });
        if p.kind == ParamKind::Array {
            lengths.push(quote!((#pname, #private::DeviceSlice::len(#id))));
            sizes.push(quote!(::core::mem::size_of::<#ty>()));
            ptrs.push(quote!((#id, ::core::mem::size_of::<#ty>())));
        } else {
            let len = format_ident!("__len_{}", k);
            prelude.push(quote!(let #len: i64 = #private::DeviceSlice::len(#id) as i64;));
            extra.push(quote!(&#len as *const i64 as *mut #c_void));
        }
        prelude.push(match p.role {
            Role::Input => quote!(let #id: u64 = __b.read::<#ty, _>(#id)?;),
            Role::Output => quote!(let #id: u64 = __b.write::<#ty, _>(#id)?;),
        });
        packed.push(quote!(&#id as *const u64 as *mut #c_void));
    }
    let n_param = if has_array { quote!() } else { quote!(n: usize,) };
    let n_call = if has_array { quote!() } else { quote!(n,) };
    let n_expr = if has_array { quote!(#private::common_length(__kernel, &[#(#lengths),*])?) } else { quote!(n) };
    let count = packed.len() + extra.len() + 2;
    let Shared { generics, where_clause, turbofish, index, .. } = s;
    let doc = "Adds the kernel to `graph` as one kernel node: the arguments as `launch` takes them, except \
               that arrays are borrowed (shared) for the graph's lifetime, also the outputs (`&y`, not \
               `&mut y`; see `Graph`). Lengths are checked as `launch` checks them; the launch configuration \
               is chosen as `launch` chooses it, for the graph's device. The node's dependencies are \
               inferred from the arrays it reads and writes. With `n = 0` the node is an empty node.\n\n\
               To run it with other arguments, build the graph again and update the instantiation \
               (`GraphExec::update`).";
    let with_doc = "Like `node`, with the caller's launch configuration (checked against the kernel's limits).";
    quote! {
        #[doc = #doc]
        pub fn node<'__g, #(#generics),*>(graph: &mut #graph<'__g>, #n_param #(#args),*) -> #result<#node> #where_clause {
            __node_impl #turbofish (graph, ::core::option::Option::None, #n_call #(#names),*)
        }

        #[doc = #with_doc]
        pub fn node_with<'__g, #(#generics),*>(
            graph: &mut #graph<'__g>,
            config: #config_ty,
            #n_param
            #(#args),*
        ) -> #result<#node> #where_clause {
            __node_impl #turbofish (graph, ::core::option::Option::Some(config), #n_call #(#names),*)
        }

        fn __node_impl<'__g, #(#generics),*>(
            graph: &mut #graph<'__g>,
            config: ::core::option::Option<#config_ty>,
            #n_param
            #(#args),*
        ) -> #result<#node> #where_clause {
            let __kernel = self::kernel_ref #turbofish ();
            let __n: usize = #n_expr;
            if __n == 0 {
                return graph.empty();
            }
            let mut __b = graph.__node_builder();
            #(#prelude)*
            let (__vector, __per_thread) = #private::flat_mode(#private::vector_width(&[#(#sizes),*]), &[#(#ptrs),*]);
            let __n64 = __n as i64;
            let mut __args: [*mut #c_void; #count] = [
                #(#packed,)* #(#extra,)*
                &__n64 as *const i64 as *mut #c_void,
                &__vector as *const i32 as *mut #c_void,
            ];
            let __config = match config {
                ::core::option::Option::Some(c) => {
                    // The generated index is 1-D (x only): threads along y or z would repeat it.
                    #private::bind::one_d(__kernel, __b.context().ordinal(), &c)?;
                    c
                }
                ::core::option::Option::None => {
                    self::__AUTO[#index].config(__kernel, &__b.context().default_stream(), __n, __per_thread)?
                }
            };
            // SAFETY: one pointer per kernel parameter, each to a live local of its exact type (the
            // parameter order of the generated source); every array was recorded as read or written.
            unsafe { __b.kernel(__kernel, &__config, &mut __args) }
        }
    }
}

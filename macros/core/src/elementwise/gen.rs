//! The public module of an elementwise kernel: `launch` (configuration chosen and cached per
//! device), `launch_with` (the caller's `LaunchConfig`), the instance trait and the kernel handle.

use super::Input;
use crate::expand::Generated;
use crate::front::types::Mapped;
use crate::gen::buffer_args::{BufferArgs, Family};
use crate::gen::{generic_ident, param_ident, paths, rust_type};
use cuda_embed_source::elementwise::types_kernel;
use cuda_embed_source::params::{ParamKind, ParamLists, Role};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The Rust type of each parameter's element, from the `_types` kernel's signature.
fn element_types(name: &str, generated: &Generated) -> Result<Vec<TokenStream>, String> {
    let tk = types_kernel(name);
    let sig = match generated.signatures.iter().find(|(n, _)| *n == tk) {
        Some((_, Ok(sig))) => sig,
        Some((_, Err(e))) => return Err(e.clone()),
        None => return Err(format!("internal error: no `{tk}` kernel in the generated module")),
    };
    sig.iter()
        .map(|m| match m {
            Mapped::Value(t) => Ok(rust_type(t)),
            Mapped::User { name, .. } => {
                let id = format_ident!("{}", name);
                Ok(quote!(super::#id))
            }
            other => Err(format!("an element type maps to {}, which is not a value type", other.describe())),
        })
        .collect()
}

/// What the kernel's public `Listed` trait says and who implements it (with placeholders).
pub struct PublicListed {
    /// `on_unimplemented` message, label and note, in the elementwise kernel's words.
    pub message: String,
    /// The label under the failing call.
    pub label: String,
    /// The note: the instances built and where to add one.
    pub note: String,
    /// Per instance: its doc line and its Rust types, one per placeholder.
    pub impls: Vec<(String, Vec<TokenStream>)>,
}

/// The module `NAME` with its launchers.
pub fn module(
    input: &Input,
    lists: &ParamLists,
    listed: &PublicListed,
    generated: &Generated,
) -> Result<TokenStream, String> {
    let instances = listed.impls.len().max(1);
    let name = &input.name;
    let kname = name.to_string();
    let hidden = &generated.hidden;
    let inner = format_ident!("{}", kname);
    let elems = element_types(&kname, generated)?;
    let (stream_ty, config_ty, result, c_void) =
        (paths::stream(), paths::launch_config(), paths::result(), paths::c_void());
    let (kernel_ref, kind) = (paths::kernel_ref(), paths::launch_kind());
    // The arguments' bounds: this crate's `unsafe` buffer traits, whose implementations vouch
    // for `len()` (the length the safe launchers' checks rely on), not cudarc's safe ones.
    let (dbuf, dbuf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let private = quote!(::cuda_embed::__private);
    let placeholders = lists.placeholders();
    let generics: Vec<_> = placeholders.iter().map(|p| generic_ident(p)).collect();
    let turbofish = if generics.is_empty() { quote!() } else { quote!(::<#(#generics),*>) };
    let (gen_params, where_clause, index) = match generics.len() {
        0 => (quote!(), quote!(), quote!(0usize)),
        1 => {
            let t = &generics[0];
            (quote!(<#t>), quote!(where #t: Listed), quote!(<#t as super::#hidden::#inner::Listed>::INDEX))
        }
        _ => (
            quote!(<#(#generics),*>),
            quote!(where Instance<#(#generics),*>: Listed),
            quote!(<Instance<#(#generics),*> as super::#hidden::#inner::Listed>::INDEX),
        ),
    };
    let has_array = lists.all().any(|p| p.kind == ParamKind::Array);
    let raw = lists.has_raw();
    let mut args = Vec::new();
    let mut async_args = Vec::new();
    let mut names = Vec::new();
    let mut lengths = Vec::new();
    let mut prelude = Vec::new();
    let (mut device_checks, mut binds) = (Vec::new(), Vec::new());
    let mut packed = Vec::new();
    let mut extra = Vec::new();
    let mut sizes = Vec::new();
    let mut ptrs = Vec::new();
    let mut rows = String::new();
    let mut params = BufferArgs::new(format!("elementwise kernel `{kname}`"));
    for (k, (p, ty)) in lists.all().zip(&elems).enumerate() {
        let id = param_ident(&p.name, k);
        let guard = format_ident!("__guard_{}", k);
        names.push(quote!(#id));
        let pname = &p.name;
        // Each array parameter's own trait (over cudarc's `DevicePtr`/`DevicePtrMut`), so a
        // wrong element type is reported at the argument, naming the parameter.
        let (rust, borrowed, kind_doc) = match (p.kind, p.role) {
            (ParamKind::Scalar, _) => (quote!(#id: #ty), quote!(#id: #ty), "scalar"),
            (kind, Role::Input) => {
                let bound = params.bound(p, &id, ty, Family::Flat, &dbuf);
                (
                    quote!(#id: &impl #bound),
                    quote!(#id: &'__a impl #bound),
                    if kind == ParamKind::Raw { "raw input array" } else { "input array" },
                )
            }
            (kind, Role::Output) => {
                let bound = params.bound(p, &id, ty, Family::Flat, &dbuf_mut);
                (
                    quote!(#id: &mut impl #bound),
                    quote!(#id: &'__a mut impl #bound),
                    if kind == ParamKind::Raw { "raw output array" } else { "output array" },
                )
            }
        };
        args.push(rust);
        async_args.push(borrowed);
        rows.push_str(&format!("| `{id}` | `{}` | {kind_doc} |\n", p.ty));
        match p.kind {
            ParamKind::Scalar => packed.push(quote!(&#id as *const #ty as *mut #c_void)),
            ParamKind::Array | ParamKind::Raw => {
                if p.kind == ParamKind::Array {
                    lengths.push(quote!((#pname, #private::DeviceSlice::len(#id))));
                    sizes.push(quote!(::core::mem::size_of::<#ty>()));
                    ptrs.push(quote!((#id, ::core::mem::size_of::<#ty>())));
                } else {
                    let len = format_ident!("__len_{}", k);
                    prelude.push(quote!(let #len: i64 = #private::DeviceSlice::len(#id) as i64;));
                    extra.push(quote!(&#len as *const i64 as *mut #c_void));
                }
                // The one checked path (`bind`): device memory of another context than the stream's
                // is an Error, before the driver; every check comes before the first bind.
                let pshown = format!("`{pname}`");
                let check = paths::bind(if p.role == Role::Input { "input" } else { "output" });
                device_checks.push(quote!(let #id = #check::<#ty, _>(#id, stream, __kernel, #pshown)?;));
                // Bound on `__binding`: the stream, or a side stream under capture (bind/capture.rs).
                binds.push(quote!(let (#id, #guard) = #id.bind(&__binding);));
                packed.push(quote!(&#id as *const u64 as *mut #c_void));
            }
        }
    }
    let n_param = if has_array { quote!() } else { quote!(n: usize,) };
    let n_expr = if has_array { quote!(#private::common_length(__kernel, &[#(#lengths),*])?) } else { quote!(n) };
    let n_doc = if has_array { "" } else { "\n\nNo parameter is an array, so the number of indices is given: `n`." };
    let count = packed.len() + extra.len() + 2;
    // The kernel's own `Listed` (not the hidden module's), so an unlisted instance is reported
    // as `NAME::Listed`; the hidden trait, which holds each instance's index, is its supertrait.
    let (message, label, note) = (&listed.message, &listed.label, &listed.note);
    let hidden_listed = quote!(super::#hidden::#inner::Listed);
    let public_listed = quote! {
        /// Implemented for each instance in `types = [...]`: the launchers are generic over it.
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        pub trait Listed: #hidden_listed {}
    };
    let exports = match generics.len() {
        0 => quote!(),
        1 => {
            let impls = listed.impls.iter().map(|(doc, tys)| quote!(#[doc = #doc] impl Listed for #(#tys),* {}));
            quote!(#public_listed #(#impls)*)
        }
        _ => {
            let impls =
                listed.impls.iter().map(|(doc, tys)| quote!(#[doc = #doc] impl Listed for Instance<#(#tys),*> {}));
            quote!(pub use super::#hidden::#inner::Instance; #public_listed #(#impls)*)
        }
    };
    let n_call = if has_array { quote!() } else { quote!(n,) };
    let (unsafety, safety_doc, call) = if raw {
        (
            quote!(unsafe),
            "\n\n# Safety\nThe kernel has `raw` parameters: the operation indexes them itself, so it must \
             stay within each raw array's length (`x.size()`)."
                .to_string(),
            quote!(unsafe { self::launch_impl #turbofish (stream, __config, #n_call #(#names),*) }),
        )
    } else {
        (
            quote!(),
            "\n\nSafe: the generated code alone decides which elements are touched (element `i` of every \
             array, `i < n`, after the lengths were checked), and the operation sees register copies \
             of the elements, not pointers into the arrays."
                .to_string(),
            quote!(
                // SAFETY: no raw parameters: every access is the generated loop's, within the
                // checked common length (see the docs above).
                unsafe { self::launch_impl #turbofish (stream, __config, #n_call #(#names),*) }
            ),
        )
    };
    let doc = format!(
        "The elementwise kernel `{kname}` (`elementwise_kernel!`).\n\n| Rust argument | CUDA type | kind |\n|---|---|---|\n{rows}"
    );
    let launch_doc = format!(
        "Runs the operation for every index `i < n` on `stream`, `n` the common length of the array \
         arguments (a different length is an `Error::Length` naming them; `n = 0` launches nothing). \
         The launch configuration is chosen on the first launch on each device (occupancy) and \
         cached.{n_doc}{safety_doc}"
    );
    let with_doc = format!(
        "Like `launch`, with the caller's launch configuration: any 1-D grid and block work (the \
         kernel loops over the indices with a grid-stride loop); a grid or block with more than one \
         row or layer (`y`/`z` above 1) is an `Error::Launch`, since the index is 1-D.{safety_doc}"
    );
    let async_doc = format!(
        "`launch` as a future: the kernel is queued now (checked and bound as `launch` does), and the \
         future resolves when the GPU has finished it, to the launch's result (a length or device error, \
         or the error the work raised on the GPU). The arrays stay borrowed until the future is dropped; \
         dropping or forgetting it early is sound (see `cuda_embed::future`).{safety_doc}"
    );
    let future = paths::gpu_future();
    let async_generics = if generics.is_empty() { quote!(<'__a>) } else { quote!(<'__a, #(#generics),*>) };
    let auto = quote!(#private::AutoConfig);
    let shared = super::node::Shared {
        elems: &elems,
        generics: &generics,
        where_clause: &where_clause,
        turbofish: &turbofish,
        index: &index,
    };
    let node_fns = super::node::node_fns(lists, &shared);
    let nd_shared = crate::ndarray::NdShared {
        elems: &elems,
        gen_params: &gen_params,
        generics: &generics,
        where_clause: &where_clause,
        turbofish: &turbofish,
        index: &index,
        hidden,
        instances,
    };
    let nd_fns = crate::ndarray::launch_nd(lists, &nd_shared, &mut params);
    let nd_node = crate::ndarray::node::node_nd(lists, &nd_shared);
    let nd_update = crate::ndarray::node::update_nd(lists, &nd_shared, name);
    let params = params.items();
    let tokens = &generated.tokens;
    Ok(quote! {
        #tokens
        #[doc = #doc]
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments, clippy::missing_safety_doc)]
        pub mod #name {
            #exports

            #params

            static __AUTO: [#auto; #instances] = [const { #auto::new() }; #instances];

            /// The kernel of one instance, as an untyped handle (attributes, occupancy, the module).
            pub fn kernel_ref #gen_params () -> #kernel_ref #where_clause {
                // SAFETY: the instance's index in the generated module.
                unsafe { #kernel_ref::new(&super::#hidden::__MODULE, #index) }
            }

            #[doc = #launch_doc]
            #[inline]
            pub #unsafety fn launch #gen_params (stream: &#stream_ty, #n_param #(#args),*) -> #result<()> #where_clause {
                let __config: ::core::option::Option<#config_ty> = ::core::option::Option::None;
                #call
            }

            #[doc = #async_doc]
            #[inline]
            pub #unsafety fn launch_async #async_generics (stream: &#stream_ty, #n_param #(#async_args),*) -> #future<'__a> #where_clause {
                let __config: ::core::option::Option<#config_ty> = ::core::option::Option::None;
                let __queued = #call;
                #future::after_launch(stream, __queued, self::kernel_ref #turbofish ())
            }

            #[doc = #with_doc]
            #[inline]
            pub #unsafety fn launch_with #gen_params (stream: &#stream_ty, config: #config_ty, #n_param #(#args),*) -> #result<()> #where_clause {
                let __config = ::core::option::Option::Some(config);
                #call
            }

            #[inline(always)]
            unsafe fn launch_impl #gen_params (
                stream: &#stream_ty,
                config: ::core::option::Option<#config_ty>,
                #n_param
                #(#args),*
            ) -> #result<()> #where_clause {
                let __kernel = self::kernel_ref #turbofish ();
                let __n: usize = #n_expr;
                if __n == 0 {
                    return ::core::result::Result::Ok(());
                }
                if let ::core::option::Option::Some(c) = &config {
                    // The generated index is 1-D (x only): threads along y or z would repeat it.
                    #private::bind::one_d(__kernel, stream.context().ordinal(), c)?;
                }
                #(#prelude)*
                #(#device_checks)*
                let __binding = #private::kernel_binding(stream, __kernel)?;
                #(#binds)*
                let (__vector, __per_thread) = #private::flat_mode(#private::vector_width(&[#(#sizes),*]), &[#(#ptrs),*]);
                let __n64 = __n as i64;
                let mut __args: [*mut #c_void; #count] = [
                    #(#packed,)* #(#extra,)*
                    &__n64 as *const i64 as *mut #c_void,
                    &__vector as *const i32 as *mut #c_void,
                ];
                // SAFETY: one pointer per kernel parameter, each to a live local of its exact type
                // (the parameter order of the generated source); the caller vouches for the rest.
                match config {
                    ::core::option::Option::None => unsafe {
                        self::__AUTO[#index].launch(__kernel, stream, __n, __per_thread, &mut __args)
                    },
                    ::core::option::Option::Some(c) => unsafe {
                        __kernel.launch_raw(stream, &c, #kind::Plain, &mut __args).map(drop)
                    },
                }
            }

            #node_fns

            #nd_fns

            #nd_node

            #nd_update
        }
    })
}

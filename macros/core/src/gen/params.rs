//! One kernel's parameters lowered once for every launcher of its module: the launchers'
//! arguments, the checks, binds and packing of each parameter (through the one checked path,
//! `bind`), the typed value's markers, the graph functions' arguments and the docs table.

use super::kernel::KernelGen;
use super::paths;
use super::{param_ident, rust_type};
use crate::front::types::{self, Mapped};
use crate::oracle::structs;
use crate::signature::Kernel;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// What a kernel's parameters become in its Rust module: the launchers' arguments and the code
/// that checks, binds and packs them, the markers of the typed `Kernel<Sig>` value, the
/// arguments of the graph functions, compile-time struct checks and the docs table.
#[derive(Default)]
pub(crate) struct Lowered {
    /// Type parameters of the launchers: the template's, then one per `void*`-like pointer.
    pub(crate) generics: Vec<TokenStream>,
    pub(crate) args: Vec<TokenStream>,
    pub(crate) prelude: Vec<TokenStream>,
    pub(crate) packed: Vec<TokenStream>,
    pub(crate) checks: Vec<TokenStream>,
    pub(crate) doc_rows: String,
    /// One marker per parameter for the typed `Kernel<Sig>` value.
    pub(crate) sig: Vec<TokenStream>,
    /// The arguments of `node`/`update`: values as in `launch`, buffers borrowed for the graph.
    pub(crate) node_args: Vec<TokenStream>,
    pub(crate) ids: Vec<TokenStream>,
    /// The arguments of `launch_async`: those of `launch`, buffers borrowed for the future's
    /// lifetime `'__a`.
    pub(crate) async_args: Vec<TokenStream>,
    /// Each argument's name, to pass them on.
    pub(crate) names: Vec<TokenStream>,
}

/// Lowers every parameter of the kernel (see [`Lowered`]).
pub(crate) fn lower_params(gen: &KernelGen<'_>, span: Span) -> Lowered {
    let c_void = paths::c_void();
    let raw = paths::raw_device_ptr();
    let (device_buffer, device_buffer_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    // Buffers take the one checked path (`bind`): every device check before the binding stream
    // is asked for and any pointer taken (no driver call before the last check), then the binds.
    let (mut device_checks, mut binds) = (Vec::new(), Vec::new());
    let kernel_ref = paths::kernel_ref();
    let k = gen.decl;
    let index = &gen.index;
    let by_value = paths::by_value();
    let node_arg = paths::node_arg();
    let Lowered {
        mut generics,
        mut args,
        mut prelude,
        mut packed,
        mut checks,
        mut doc_rows,
        mut sig,
        mut node_args,
        mut ids,
        mut async_args,
        mut names,
    } = Lowered { generics: gen.generics.clone(), ..Lowered::default() };
    let mut bound = false;
    for (i, (p, m)) in k.params.iter().zip(gen.params).enumerate() {
        let id = param_ident(&p.name, i);
        let sync = format_ident!("__sync_{}", i);
        doc_rows.push_str(&format!("| `{}` | `{}` | `{}` |\n", id, p.text.replace('|', "\\|"), m.describe()));
        match m {
            Mapped::Value(t) if types::is_tensor_map(t) => {
                // `const __grid_constant__ CUtensorMap`: `&TensorMap` / `&mut TensorMapMut`, bound
                // like a buffer (device check, then cudarc's ordering), passed by value.
                let ty = rust_type(t);
                let (arg_trait, check) = (paths::tensor_map_arg(), paths::bind("descriptor"));
                args.push(quote!(#id: impl #arg_trait));
                async_args.push(quote!(#id: impl #arg_trait + '__a));
                node_args.push(quote!(#id: impl #node_arg<'__g, #ty>));
                let pname = if p.name.is_empty() { format!("#{i}") } else { format!("`{}`", p.name) };
                let handle = quote!(unsafe { #kernel_ref::new(&super::__MODULE, #index) });
                device_checks.push(quote!(let #id = #check(#id, stream, #handle, #pname)?;));
                if !bound {
                    let binding = paths::binding();
                    binds.push(quote!(let __binding = #binding(stream, #handle)?;));
                    bound = true;
                }
                binds.push(quote!(let (#id, #sync) = #id.bind(&__binding);));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
                sig.push(ty.clone());
            }
            Mapped::Value(t) if is_object(t) => {
                // `cudaTextureObject_t` / `cudaSurfaceObject_t`: the owned `&Texture`/`&Surface`
                // (context checked against the stream's) or a raw handle.
                let ty = rust_type(t);
                let (object, object_arg) = (paths::object_arg_trait(), paths::object_arg());
                args.push(quote!(#id: impl #object<#ty>));
                async_args.push(quote!(#id: impl #object<#ty> + '__a));
                node_args.push(quote!(#id: impl #node_arg<'__g, #ty>));
                let pname = if p.name.is_empty() { format!("#{i}") } else { format!("`{}`", p.name) };
                let handle = quote!(unsafe { #kernel_ref::new(&super::__MODULE, #index) });
                prelude.push(quote!(let #id: #ty = #object_arg(#id, stream, #handle, #pname)?;));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
                sig.push(ty.clone());
            }
            Mapped::Value(t) if is_condition(t) => {
                // `cudaGraphConditionalHandle`: only a graph's kernel nodes take one (`&Condition`,
                // checked against the node's graph); the stream launchers take an argument of a
                // trait nothing implements, so calling them does not compile.
                let ty = rust_type(t);
                let never = paths::launch_condition();
                args.push(quote!(#id: impl #never));
                async_args.push(quote!(#id: impl #never));
                node_args.push(quote!(#id: impl #node_arg<'__g, #ty>));
                prelude.push(quote!(let #id: #ty = #never::handle(&#id);));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
                sig.push(ty.clone());
            }
            Mapped::Value(t) => {
                let ty = rust_type(t);
                // A toolkit struct (`cudaExtent`): its Rust twin's fields against the compiler's.
                if let Some(fields) = gen.fields.get(i).and_then(Option::as_ref) {
                    checks.push(structs::layout_check(ty.clone(), &p.base, fields, span));
                }
                args.push(quote!(#id: #ty));
                async_args.push(quote!(#id: #ty));
                node_args.push(quote!(#id: #ty));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
                sig.push(ty.clone());
            }
            Mapped::User { name: tn, layout } => {
                let ty = format_ident!("{}", tn, span = span);
                args.push(quote!(#id: super::super::#ty));
                async_args.push(quote!(#id: super::super::#ty));
                node_args.push(quote!(#id: super::super::#ty));
                packed.push(quote!(&#id as *const super::super::#ty as *mut #c_void));
                sig.push(quote!(super::super::#ty));
                checks.extend(user_struct_checks(gen, i, p, tn, *layout, span));
            }
            Mapped::Pointer { elem, mutable } => {
                sig.push(match (elem, mutable) {
                    (Some(t), true) => paths::marker("Out", Some(rust_type(t))),
                    (Some(t), false) => paths::marker("In", Some(rust_type(t))),
                    (None, true) => paths::marker("OutAny", None),
                    (None, false) => paths::marker("InAny", None),
                });
                let marker = sig.last().cloned().unwrap_or_default();
                node_args.push(quote!(#id: impl #node_arg<'__g, #marker>));
                let ty = match elem {
                    Some(t) => rust_type(t),
                    None => {
                        let g = pointer_generic(k, i);
                        generics.push(quote!(#g));
                        quote!(#g)
                    }
                };
                // Device memory of another context than the stream's is an Error, before the driver.
                let pname = if p.name.is_empty() { format!("#{i}") } else { format!("`{}`", p.name) };
                let handle = quote!(unsafe { #kernel_ref::new(&super::__MODULE, #index) });
                let check = paths::bind(if *mutable { "output" } else { "input" });
                device_checks.push(quote!(let #id = #check::<#ty, _>(#id, stream, #handle, #pname)?;));
                if !bound {
                    // Under stream capture with cudarc's event tracking, buffers are bound on a side
                    // stream (bind/capture.rs); otherwise on `stream` itself.
                    let binding = paths::binding();
                    binds.push(quote!(let __binding = #binding(stream, #handle)?;));
                    bound = true;
                }
                binds.push(quote!(let (#id, #sync) = #id.bind(&__binding);));
                if *mutable {
                    args.push(quote!(#id: &mut impl #device_buffer_mut<#ty>));
                    async_args.push(quote!(#id: &'__a mut impl #device_buffer_mut<#ty>));
                } else {
                    args.push(quote!(#id: &impl #device_buffer<#ty>));
                    async_args.push(quote!(#id: &'__a impl #device_buffer<#ty>));
                }
                packed.push(quote!(&#id as *const u64 as *mut #c_void));
            }
            Mapped::RawPointer => {
                args.push(quote!(#id: #raw));
                async_args.push(quote!(#id: #raw));
                node_args.push(quote!(#id: #raw));
                packed.push(quote!(&#id as *const #raw as *mut #c_void));
                sig.push(raw.clone());
            }
        }
        names.push(quote!(#id));
        ids.push(match m {
            Mapped::Pointer { .. } => quote!(#id),
            Mapped::Value(t) if is_object(t) || is_condition(t) || types::is_tensor_map(t) => quote!(#id),
            _ => quote!(#by_value(#id)),
        });
    }
    prelude.extend(device_checks);
    prelude.extend(binds);
    Lowered { generics, args, prelude, packed, checks, doc_rows, sig, node_args, ids, async_args, names }
}

/// The launchers' type parameter for the `void*`-like parameter `i`: `T{i}`, with `_` appended
/// while a template parameter of the kernel has that name (`template <typename T1>` beside a
/// `void*` second parameter).
pub(crate) fn pointer_generic(k: &Kernel, i: usize) -> syn::Ident {
    let taken: Vec<syn::Ident> =
        k.template.as_deref().unwrap_or_default().iter().map(|tp| super::generic_ident(&tp.name)).collect();
    let mut name = format!("T{i}");
    while taken.iter().any(|t| *t == name) {
        name.push('_');
    }
    format_ident!("{}", name)
}

/// The compile-time checks of a struct parameter's Rust type: `DeviceSafe`, and the CUDA struct's
/// size, alignment and (when the compiler described it) every field.
pub(super) fn user_struct_checks(
    gen: &KernelGen<'_>,
    i: usize,
    p: &cuda_embed_source::signature::Param,
    tn: &str,
    layout: Option<(u32, u32)>,
    span: Span,
) -> Vec<TokenStream> {
    let k = gen.decl;
    let ty = format_ident!("{}", tn, span = span);
    let mut checks = Vec::new();
    // The field check requires `DeviceSafe` itself: one unsatisfied bound, one error.
    match gen.fields.get(i).and_then(Option::as_ref) {
        Some(fields) => checks.push(structs::layout_check(quote_spanned!(span=> super::super::#ty), tn, fields, span)),
        None => {
            let assert = paths::assert_device_safe(span);
            checks.push(quote_spanned! {span=>
                const _: () = #assert::<super::super::#ty>();
            });
        }
    }
    if let Some((size, align)) = layout {
        let (size, align) = (size as usize, align as usize);
        let msg = format!(
            "`{tn}` must have the CUDA struct's layout for parameter `{}` of kernel `{}`: size {size}, alignment {align} (use #[repr(C)] and the same fields)",
            p.name, k.name
        );
        checks.push(quote_spanned! {span=>
            const _: () = ::core::assert!(
                ::core::mem::size_of::<super::super::#ty>() == #size && ::core::mem::align_of::<super::super::#ty>() == #align,
                #msg
            );
        });
    }
    checks
}

/// Whether a by-value parameter is a texture or surface object, which the launcher takes as
/// `&Texture`/`&Surface` or a raw handle.
pub(super) fn is_object(t: &types::RustType) -> bool {
    use cuda_embed_source::ctypes::RustPath;
    matches!(t, types::RustType::Builtin(b) if matches!(b.rust, RustPath::Crate("TextureObject" | "SurfaceObject")))
}

/// Whether a by-value parameter is a graph condition (`cudaGraphConditionalHandle`), which only
/// graph nodes take.
pub(super) fn is_condition(t: &types::RustType) -> bool {
    use cuda_embed_source::ctypes::RustPath;
    matches!(t, types::RustType::Builtin(b) if b.rust == RustPath::Crate("ConditionalHandle"))
}

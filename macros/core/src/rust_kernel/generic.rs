//! Generic Rust-syntax kernels: `#[cuda_embed::kernel(instances = ["f32", "f64"])] fn k<T>(...)`.
//! Each listed type gets its own kernel (`T` replaced, named `k__f32`), all in one CUDA module;
//! the module `k` launches the instance of `T` through the `Listed` trait, which only the listed
//! types implement (an unlisted one is a compile error naming the instances built).

use super::launcher;
use super::syntax::{self, Attr};
use super::types::Ty;
use crate::check::report::Failure;
use crate::expand::{expand_generated, CallSite};
use crate::gen::paths;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::LitStr;

/// Expands a generic kernel.
pub fn expand(attr: &Attr, func: &syn::ItemFn, site: &CallSite) -> syn::Result<TokenStream> {
    if attr.instances.is_empty() {
        return Err(syn::Error::new_spanned(
            &func.sig.generics,
            "a generic kernel lists the types it is built for: `#[cuda_embed::kernel(instances = [\"f32\", \"f64\"])]`",
        ));
    }
    if func.sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &func.sig.ident,
            "`instances` is for a generic kernel `fn k<T>(...)`; this one has no type parameter",
        ));
    }
    let mut kernels = Vec::new();
    let mut types = Vec::new();
    let mut param = None;
    for lit in &attr.instances {
        let (f, p, s) = syntax::instance(func, lit)?;
        if types.contains(&s) {
            return Err(syn::Error::new_spanned(lit, format!("`{}` is listed twice", s.rust())));
        }
        types.push(s);
        param = Some(p);
        kernels.push(syntax::kernel_fn(f)?);
    }
    let param = param.ok_or_else(|| syn::Error::new_spanned(&func.sig.ident, "no instances"))?;
    let translated = super::translate_module(attr, &kernels, &[], &site.file, site.line)?;
    let lit = LitStr::new(&translated.source, func.sig.ident.span());
    let generated = expand_generated(lit, site, &attr.options, Vec::new()).map_err(|Failure { error, .. }| error)?;
    let hidden = &generated.hidden;
    let inner_path = quote!(super::super::#hidden);
    let instance_mods = kernels.iter().map(|k| {
        let public: syn::Visibility = syn::parse_quote!(pub);
        let m = launcher::module(
            k,
            attr.bounds_checks,
            site,
            &translated.source,
            &inner_path,
            &quote!(super::super),
            &public,
        );
        quote!(#[doc(hidden)] #m)
    });
    // Which parameters are generic (their type names `T`), from the function as written.
    let generic: Vec<bool> = func
        .sig
        .inputs
        .iter()
        .map(|a| matches!(a, syn::FnArg::Typed(pt) if syntax::mentions(&pt.ty, &param)))
        .collect();
    let (buf, buf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let (stream_ty, config_ty, result) = (paths::stream(), paths::launch_config(), paths::result());
    let module_ty = paths::module();
    let tparam = format_ident!("{}", param);
    let args = |elem_of: &dyn Fn(bool) -> TokenStream| -> Vec<TokenStream> {
        kernels[0]
            .params
            .iter()
            .zip(&generic)
            .map(|(p, g)| {
                let id = &p.name;
                match &p.ty {
                    Ty::Scalar(s) => {
                        let ty = if *g { elem_of(true) } else { s.rust_tokens() };
                        quote!(#id: #ty)
                    }
                    Ty::Slice { elem, mutable } => {
                        let ty = if *g { elem_of(true) } else { elem.rust_tokens() };
                        if *mutable {
                            quote!(#id: &mut impl #buf_mut<#ty>)
                        } else {
                            quote!(#id: &impl #buf<#ty>)
                        }
                    }
                    Ty::Vector(v) => {
                        let ty = v.rust_tokens();
                        quote!(#id: #ty)
                    }
                    Ty::Struct(n) => {
                        let ty = format_ident!("{}", n);
                        quote!(#id: super::#ty)
                    }
                    _ => quote!(),
                }
            })
            .collect()
    };
    let self_args = args(&|_| quote!(Self));
    let t_args = args(&|_| quote!(#tparam));
    let names: Vec<_> = kernels[0].params.iter().map(|p| &p.name).collect();
    let name = &func.sig.ident;
    let built: Vec<&str> = types.iter().map(|t| t.rust()).collect();
    let message = format!("generic kernel `{name}` was not instantiated for `{{Self}}`");
    let note = format!(
        "instances built: {}; add the one you need to `instances = [...]` of the #[cuda_embed::kernel] at {}:{}",
        built.join(", "),
        site.file,
        site.line
    );
    let impls = kernels.iter().zip(&types).map(|(k, t)| {
        let (ty, m) = (t.rust_tokens(), &k.name);
        quote! {
            impl Listed for #ty {
                unsafe fn __launch(stream: &#stream_ty, config: #config_ty, #(#self_args),*) -> #result<()> {
                    // SAFETY: forwarded from the caller.
                    unsafe { #m::launch(stream, config, #(#names),*) }
                }
                unsafe fn __launch_timed(stream: &#stream_ty, config: #config_ty, #(#self_args),*) -> #result<f32> {
                    // SAFETY: forwarded from the caller.
                    unsafe { #m::launch_timed(stream, config, #(#names),*) }
                }
                fn __check_errors(stream: &#stream_ty) -> #result<()> {
                    #m::check_errors(stream)
                }
                fn __module() -> &'static #module_ty {
                    #m::module()
                }
            }
        }
    });
    let (vis, docs) = (&func.vis, func.attrs.iter().filter(|a| a.path().is_ident("doc")));
    let source = &translated.source;
    let tokens = &generated.tokens;
    let doc = format!(
        "The generic Rust-syntax kernel `{name}<{param}>`, built for {} (`#[cuda_embed::kernel]` at {}:{}): \
         `{name}::launch::<f32>(...)` launches one instance.",
        built.join(", "),
        site.file,
        site.line
    );
    let public: syn::Visibility = syn::parse_quote!(pub);
    let items = quote! {
        #tokens
        #(#docs)*
        #[doc = #doc]
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments, clippy::missing_safety_doc)]
        #public mod #name {
            #(#instance_mods)*

            /// The CUDA C++ the instances were translated to.
            pub const CUDA_SOURCE: &str = #source;

            /// Implemented for each type in `instances = [...]`: the launchers are generic over it.
            #[diagnostic::on_unimplemented(message = #message, label = "no such instance in `instances = [...]`", note = #note)]
            pub trait Listed: Copy + 'static {
                #[doc(hidden)]
                unsafe fn __launch(stream: &#stream_ty, config: #config_ty, #(#self_args),*) -> #result<()>;
                #[doc(hidden)]
                unsafe fn __launch_timed(stream: &#stream_ty, config: #config_ty, #(#self_args),*) -> #result<f32>;
                #[doc(hidden)]
                fn __check_errors(stream: &#stream_ty) -> #result<()>;
                #[doc(hidden)]
                fn __module() -> &'static #module_ty;
            }

            #(#impls)*

            /// Launches the instance for `T` on `stream` with `config`.
            ///
            /// # Safety
            /// As for a `#[cuda_embed::kernel]` launcher: the grid must be what the kernel expects.
            #[inline]
            pub unsafe fn launch<#tparam: Listed>(stream: &#stream_ty, config: #config_ty, #(#t_args),*) -> #result<()> {
                // SAFETY: forwarded from the caller.
                unsafe { <#tparam as Listed>::__launch(stream, config, #(#names),*) }
            }

            /// Like `launch`, and returns the kernel's GPU time in milliseconds.
            ///
            /// # Safety
            /// As for `launch`.
            #[inline]
            pub unsafe fn launch_timed<#tparam: Listed>(stream: &#stream_ty, config: #config_ty, #(#t_args),*) -> #result<f32> {
                // SAFETY: forwarded from the caller.
                unsafe { <#tparam as Listed>::__launch_timed(stream, config, #(#names),*) }
            }

            /// The bounds-check report of the instance for `T` (see a kernel's `check_errors`).
            pub fn check_errors<#tparam: Listed>(stream: &#stream_ty) -> #result<()> {
                <#tparam as Listed>::__check_errors(stream)
            }

            /// The module holding every instance.
            pub fn module<#tparam: Listed>() -> &'static #module_ty {
                <#tparam as Listed>::__module()
            }
        }
    };
    Ok(launcher::enclosed(name, vis, &kernels[0].params, items))
}

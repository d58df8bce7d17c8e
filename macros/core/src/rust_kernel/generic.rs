//! Generic Rust-syntax kernels: `#[cuda_embed::kernel(instances = ["f32", "f64"])] fn k<T>(...)`,
//! `#[cuda_embed::kernel(instances = [128, 256])] fn k<const N: usize>(...)`, or both
//! (`instances = [("f32", 128), ("f64", 256)]`). Each instance gets its own kernel (`T` replaced
//! by the type, `N` by a typed literal such as `128usize`, named `k__f32__128`), all in one CUDA
//! module: the value of `N` is a constant to nvcc, as a C++ template argument would be, so it
//! sizes shared arrays and unrolls loops. The module `k` launches the instance through the
//! `Listed` trait, which only the listed instances implement (an unlisted one is a compile error
//! naming the instances built): on the type (`k::launch::<f32>`), or on `k::Const<N>`
//! (`k::launch::<128>`, `k::launch::<f32, 128>`).

use super::launcher;
use super::syntax::{self, Attr, KernelFn};
use super::types::{Scalar, Ty};
use crate::expand::{expand_generated, CallSite};
use crate::front::report::Failure;
use crate::gen::paths;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Expr, Ident, Lit, LitStr};

/// A generic parameter of the kernel.
enum Generic {
    /// `T`: built for scalar types.
    Type(Ident),
    /// `const N: usize`: built for integer values of the integer type.
    Const(Ident, Scalar),
}

/// One listed instance: the value of each generic parameter, in the order declared.
struct Instance {
    ty: Option<Scalar>,
    value: Option<i128>,
}

/// The kernel's generic parameters: one type parameter, one const parameter of an integer type,
/// or one of each.
fn generics(func: &syn::ItemFn) -> syn::Result<Vec<Generic>> {
    let help = "a generic kernel has one type parameter (`fn k<T>`), one const parameter of an integer type \
        (`fn k<const N: usize>`), or one of each (`fn k<T, const N: usize>`)";
    let mut out = Vec::new();
    for p in &func.sig.generics.params {
        match p {
            syn::GenericParam::Type(t) if !out.iter().any(|g| matches!(g, Generic::Type(_))) => {
                out.push(Generic::Type(t.ident.clone()))
            }
            syn::GenericParam::Const(c) if !out.iter().any(|g| matches!(g, Generic::Const(..))) => {
                let s = syntax::scalar_type(&c.ty).filter(|s| s.is_int()).ok_or_else(|| {
                    syn::Error::new_spanned(
                        &c.ty,
                        "a const parameter of a kernel is an integer (`usize`, `u32`, `i32`, ...)",
                    )
                })?;
                if let Some(d) = &c.default {
                    return Err(syn::Error::new_spanned(
                        d,
                        "a kernel's const parameter has no default: list its values in `instances`",
                    ));
                }
                out.push(Generic::Const(c.ident.clone(), s))
            }
            other => return Err(syn::Error::new_spanned(other, help)),
        }
    }
    Ok(out)
}

/// The integer value of `e` (`256`, `-4`, `256usize`), which must fit `s`.
fn const_value(e: &Expr, name: &Ident, s: Scalar) -> syn::Result<i128> {
    let wrong = || {
        syn::Error::new_spanned(
            e,
            format!("`{name}` is a `{}`: its instance is an integer literal, e.g. `256`", s.rust()),
        )
    };
    let (neg, lit) = match e {
        Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => (false, i),
        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => match &**expr {
            Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => (true, i),
            _ => return Err(wrong()),
        },
        Expr::Group(g) => return const_value(&g.expr, name, s),
        _ => return Err(wrong()),
    };
    if !lit.suffix().is_empty() && lit.suffix() != s.rust() {
        return Err(syn::Error::new_spanned(
            e,
            format!("mismatched types: `{name}` is a `{}`, found `{}`", s.rust(), lit.suffix()),
        ));
    }
    let v: i128 = lit.base10_parse::<u128>().ok().and_then(|v| i128::try_from(v).ok()).ok_or_else(wrong)?;
    let v = if neg { -v } else { v };
    let bits = if matches!(s, Scalar::Usize | Scalar::Isize) { 64 } else { s.bits() };
    let (lo, hi) =
        if s.is_signed_int() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
    if v < lo || v > hi {
        return Err(syn::Error::new_spanned(e, format!("`{v}` does not fit `{name}`'s type `{}`", s.rust())));
    }
    Ok(v)
}

/// A const value as a typed Rust literal (`256usize`, `(-4i32)`).
fn const_tokens(v: i128, s: Scalar) -> TokenStream {
    let lit = syn::LitInt::new(&format!("{}{}", v.unsigned_abs(), s.rust()), proc_macro2::Span::call_site());
    if v < 0 {
        quote!((-#lit))
    } else {
        quote!(#lit)
    }
}

/// Reads the listed instances against the generic parameters.
fn instances(attr: &Attr, gens: &[Generic], func: &syn::ItemFn) -> syn::Result<Vec<Instance>> {
    let example = match gens {
        [Generic::Type(_)] => "`instances = [\"f32\", \"f64\"]`",
        [Generic::Const(..)] => "`instances = [128, 256]`",
        [Generic::Type(_), Generic::Const(..)] => "`instances = [(\"f32\", 128), (\"f64\", 256)]`",
        _ => "`instances = [(128, \"f32\"), (256, \"f64\")]`",
    };
    let mut out: Vec<Instance> = Vec::new();
    for e in &attr.instances {
        let parts: Vec<&Expr> = match e {
            Expr::Tuple(t) => t.elems.iter().collect(),
            Expr::Paren(p) => vec![&*p.expr],
            other => vec![other],
        };
        if parts.len() != gens.len() {
            let sig = &func.sig.generics;
            return Err(syn::Error::new_spanned(
                e,
                format!(
                    "`{}{}` takes {} value(s) per instance, found {}: {example}",
                    func.sig.ident,
                    quote!(#sig).to_string().replace(" < ", "<").replace(" >", ">").replace(" :", ":"),
                    gens.len(),
                    parts.len()
                ),
            ));
        }
        let mut inst = Instance { ty: None, value: None };
        for (g, part) in gens.iter().zip(parts) {
            match g {
                Generic::Type(name) => {
                    let Expr::Lit(syn::ExprLit { lit: Lit::Str(lit), .. }) = part else {
                        return Err(syn::Error::new_spanned(
                            part,
                            format!("`{name}` is a type parameter: its instance is a type as a string, e.g. `\"f32\"`"),
                        ));
                    };
                    inst.ty = Some(scalar_instance(lit)?);
                }
                Generic::Const(name, s) => inst.value = Some(const_value(part, name, *s)?),
            }
        }
        if out.iter().any(|o| o.ty == inst.ty && o.value == inst.value) {
            return Err(syn::Error::new_spanned(e, "this instance is listed twice"));
        }
        out.push(inst);
    }
    Ok(out)
}

fn scalar_instance(lit: &LitStr) -> syn::Result<Scalar> {
    Scalar::from_name(&lit.value()).filter(|s| *s != Scalar::Bool).ok_or_else(|| {
        syn::Error::new_spanned(
            lit,
            format!("`{}` is not a number type: an instance is `f32`, `f64`, `i32`, `u32`, ...", lit.value()),
        )
    })
}

/// The instances of a generic kernel, each a plain kernel (`k__f32__128`), with the generics and
/// the listed values they were built from.
fn instantiate(attr: &Attr, func: &syn::ItemFn) -> syn::Result<(Vec<Generic>, Vec<Instance>, Vec<KernelFn>)> {
    if attr.instances.is_empty() {
        return Err(syn::Error::new_spanned(
            &func.sig.generics,
            "a generic kernel lists what it is built for: `#[cuda_embed::kernel(instances = [\"f32\", \"f64\"])]` \
             for `fn k<T>`, `instances = [128, 256]` for `fn k<const N: usize>`",
        ));
    }
    if func.sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &func.sig.ident,
            "`instances` is for a generic kernel `fn k<T>(...)` or `fn k<const N: usize>(...)`; this one has no generic parameter",
        ));
    }
    let gens = generics(func)?;
    let insts = instances(attr, &gens, func)?;
    let mut kernels = Vec::new();
    for inst in &insts {
        let mut subst = Vec::new();
        let mut suffix = String::new();
        for g in &gens {
            match g {
                Generic::Type(t) => {
                    let s = inst.ty.unwrap_or(Scalar::F32);
                    let id = format_ident!("{}", s.rust());
                    subst.push((t.clone(), quote!(#id)));
                    suffix.push_str(&format!("__{}", s.rust()));
                }
                Generic::Const(c, s) => {
                    let v = inst.value.unwrap_or(0);
                    subst.push((c.clone(), const_tokens(v, *s)));
                    suffix.push_str(&format!("__{}{}", if v < 0 { "m" } else { "" }, v.unsigned_abs()));
                }
            }
        }
        let name = format_ident!("{}{}", func.sig.ident, suffix, span = func.sig.ident.span());
        kernels.push(syntax::kernel_fn(syntax::instance(func, &subst, name)?)?);
    }
    Ok((gens, insts, kernels))
}

/// Translates a generic kernel's instances to one CUDA C++ source (for the snapshot tests).
pub fn translate(attr: &Attr, func: &syn::ItemFn, file: &str, line: usize) -> syn::Result<super::Translated> {
    let (_, _, kernels) = instantiate(attr, func)?;
    super::translate_module(attr, &kernels, &[], file, line)
}

/// Expands a generic kernel.
pub fn expand(attr: &Attr, func: &syn::ItemFn, site: &CallSite) -> syn::Result<TokenStream> {
    let (gens, insts, kernels) = instantiate(attr, func)?;
    let tparam = gens.iter().find_map(|g| if let Generic::Type(t) = g { Some(t.clone()) } else { None });
    let cparam = gens.iter().find_map(|g| if let Generic::Const(c, s) = g { Some((c.clone(), *s)) } else { None });
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
        .map(|a| match (a, &tparam) {
            (syn::FnArg::Typed(pt), Some(t)) => syntax::mentions(&pt.ty, t),
            _ => false,
        })
        .collect();
    let (buf, buf_mut) = (paths::device_buffer(), paths::device_buffer_mut());
    let (stream_ty, config_ty, result) = (paths::stream(), paths::launch_config(), paths::result());
    let module_ty = paths::module();
    let args = |elem_of: &dyn Fn() -> TokenStream| -> Vec<TokenStream> {
        kernels[0]
            .params
            .iter()
            .zip(&generic)
            .map(|(p, g)| {
                let id = &p.name;
                match &p.ty {
                    Ty::Scalar(s) => {
                        let ty = if *g { elem_of() } else { s.rust_tokens() };
                        quote!(#id: #ty)
                    }
                    Ty::Slice { elem, mutable } => {
                        let ty = if *g { elem_of() } else { elem.rust_tokens() };
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
    let names: Vec<_> = kernels[0].params.iter().map(|p| &p.name).collect();
    let name = &func.sig.ident;
    let built: Vec<String> = insts
        .iter()
        .map(|i| {
            let parts: Vec<String> = gens
                .iter()
                .map(|g| match g {
                    Generic::Type(_) => i.ty.map(|t| t.rust().to_string()).unwrap_or_default(),
                    Generic::Const(..) => i.value.unwrap_or(0).to_string(),
                })
                .collect();
            if parts.len() == 1 {
                parts[0].clone()
            } else {
                format!("({})", parts.join(", "))
            }
        })
        .collect();
    // The trait's shape: on the type (`impl Listed for f32`), on `Const<N>` (`impl Listed for
    // Const<128usize>`), or on `Const<N>` with the type as its parameter (`impl Listed<f32> for
    // Const<128usize>`).
    let t_id = tparam.clone().unwrap_or_else(|| format_ident!("T"));
    let (trait_params, trait_bound, decl_elem) = match (&tparam, &cparam) {
        (Some(_), None) => (quote!(), quote!(: Copy + 'static), quote!(Self)),
        (Some(t), Some(_)) => (quote!(<#t: Copy + 'static>), quote!(), quote!(#t)),
        _ => (quote!(), quote!(), quote!()),
    };
    let decl_args = args(&|| decl_elem.clone());
    let t_args = args(&|| quote!(#t_id));
    let const_struct = cparam.as_ref().map(|(c, s)| {
        let ty = format_ident!("{}", s.rust());
        let doc = format!("Names the instance `{c}` of `{name}`: `{name}::launch::<..., 128>` is `Listed` through it.");
        quote! {
            #[doc = #doc]
            #[derive(Clone, Copy, Debug, Default)]
            pub struct Const<const #c: #ty>;
        }
    });
    let impls = kernels.iter().zip(&insts).map(|(k, inst)| {
        let m = &k.name;
        let concrete = inst.ty.map(|t| t.rust_tokens()).unwrap_or_default();
        let self_args = args(&|| concrete.clone());
        let header = match (&cparam, inst.value) {
            (Some((_, s)), Some(v)) => {
                let lit = const_tokens(v, *s);
                let key = if v < 0 { quote!(Const<{ #lit }>) } else { quote!(Const<#lit>) };
                if tparam.is_some() {
                    quote!(impl Listed<#concrete> for #key)
                } else {
                    quote!(impl Listed for #key)
                }
            }
            _ => quote!(impl Listed for #concrete),
        };
        quote! {
            #header {
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
    // The launchers' generics, in the order the kernel declares them, and the bound that picks
    // the instance.
    let fn_generics: Vec<TokenStream> = gens
        .iter()
        .map(|g| match (g, &cparam) {
            (Generic::Type(t), None) => quote!(#t: Listed),
            (Generic::Type(t), Some(_)) => quote!(#t: Copy + 'static),
            (Generic::Const(c, s), _) => {
                let ty = format_ident!("{}", s.rust());
                quote!(const #c: #ty)
            }
        })
        .collect();
    let (bound, via) = match (&tparam, &cparam) {
        (Some(t), None) => (quote!(), quote!(<#t as Listed>)),
        (Some(t), Some((c, _))) => (quote!(where Const<#c>: Listed<#t>), quote!(<Const<#c> as Listed<#t>>)),
        (None, Some((c, _))) => (quote!(where Const<#c>: Listed), quote!(<Const<#c> as Listed>)),
        (None, None) => (quote!(), quote!()),
    };
    let what = match (&tparam, &cparam) {
        (Some(_), None) => "`{Self}`".to_string(),
        (Some(t), Some(_)) => format!("`{t} = {{{t}}}` with `{{Self}}`"),
        _ => "`{Self}`".to_string(),
    };
    let message = format!("generic kernel `{name}` was not instantiated for {what}");
    let note = format!(
        "instances built: {}; add the one you need to `instances = [...]` of the #[cuda_embed::kernel] at {}:{}",
        built.join(", "),
        site.file,
        site.line
    );
    let (vis, docs) = (&func.vis, func.attrs.iter().filter(|a| a.path().is_ident("doc")));
    let source = &translated.source;
    let tokens = &generated.tokens;
    let sig = &func.sig.generics;
    let sig_text =
        quote!(#sig).to_string().replace(" < ", "<").replace("< ", "<").replace(" >", ">").replace(" :", ":");
    let turbofish: Vec<String> = gens
        .iter()
        .map(|g| match g {
            Generic::Type(_) => insts[0].ty.map(|t| t.rust().to_string()).unwrap_or_default(),
            Generic::Const(..) => insts[0].value.unwrap_or(0).to_string(),
        })
        .collect();
    let doc = format!(
        "The generic Rust-syntax kernel `{name}{sig_text}`, built for {} (`#[cuda_embed::kernel]` at {}:{}): \
         `{name}::launch::<{}>(...)` launches one instance.",
        built.join(", "),
        site.file,
        site.line,
        turbofish.join(", ")
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

            #const_struct

            /// Implemented for each instance in `instances = [...]`: the launchers are generic over it.
            #[diagnostic::on_unimplemented(message = #message, label = "no such instance in `instances = [...]`", note = #note)]
            pub trait Listed #trait_params #trait_bound {
                #[doc(hidden)]
                unsafe fn __launch(stream: &#stream_ty, config: #config_ty, #(#decl_args),*) -> #result<()>;
                #[doc(hidden)]
                unsafe fn __launch_timed(stream: &#stream_ty, config: #config_ty, #(#decl_args),*) -> #result<f32>;
                #[doc(hidden)]
                fn __check_errors(stream: &#stream_ty) -> #result<()>;
                #[doc(hidden)]
                fn __module() -> &'static #module_ty;
            }

            #(#impls)*

            /// Launches the listed instance on `stream` with `config`.
            ///
            /// # Safety
            /// As for a `#[cuda_embed::kernel]` launcher: the grid must be what the kernel expects.
            #[inline]
            pub unsafe fn launch<#(#fn_generics),*>(stream: &#stream_ty, config: #config_ty, #(#t_args),*) -> #result<()> #bound {
                // SAFETY: forwarded from the caller.
                unsafe { #via::__launch(stream, config, #(#names),*) }
            }

            /// Like `launch`, and returns the kernel's GPU time in milliseconds.
            ///
            /// # Safety
            /// As for `launch`.
            #[inline]
            pub unsafe fn launch_timed<#(#fn_generics),*>(stream: &#stream_ty, config: #config_ty, #(#t_args),*) -> #result<f32> #bound {
                // SAFETY: forwarded from the caller.
                unsafe { #via::__launch_timed(stream, config, #(#names),*) }
            }

            /// The bounds-check report of the instance (see a kernel's `check_errors`).
            pub fn check_errors<#(#fn_generics),*>(stream: &#stream_ty) -> #result<()> #bound {
                #via::__check_errors(stream)
            }

            /// The module holding every instance.
            pub fn module<#(#fn_generics),*>() -> &'static #module_ty #bound {
                #via::__module()
            }
        }
    };
    Ok(launcher::enclosed(name, vis, &kernels[0].params, items))
}

//! The kernel as written: the attribute's options and the function's signature, read into plain
//! data; every parameter type outside the supported subset is an error at its own span.

use super::types::{Elem, Scalar, Ty, Vector, DEPRECATED_VECTORS};
use crate::front::input::{string_list, Options};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Token};

/// What a parameter may be, for errors.
pub const PARAMS_HELP: &str = "a kernel parameter is a scalar (`f32`, `f64`, `f16`, `bf16`, `i8`..`i64`, \
    `u8`..`u64`, `isize`, `usize`, `bool`), a CUDA vector type (`Float4`, `Int2`, `Double2`, ...), a slice \
    `&[T]` (read) or `&mut [T]` (written) of either, or a `DeviceSafe` struct by value declared in C++ with \
    `cpp`/`include`";

/// `#[cuda_embed::kernel(...)]`'s options.
pub struct Attr {
    /// `bounds_checks = false` turns the index checks off (default on).
    pub bounds_checks: bool,
    /// `cpp = "..."`: CUDA C++ compiled before the kernel (its `__device__` functions are callable).
    pub cpp: Option<LitStr>,
    /// `include = "x.cuh"` or `include = ["a.cuh", "b.cuh"]`: headers included before the kernel.
    pub includes: Vec<LitStr>,
    /// `instances = ["f32", "f64"]`, `[128, 256]` or `[("f32", 128), ...]`: what a generic kernel
    /// `fn k<T>(...)`, `fn k<const N: usize>(...)` or `fn k<T, const N: usize>(...)` is built for
    /// (checked against the generics in `generic.rs`).
    pub instances: Vec<syn::Expr>,
    /// The compiler options every kernel macro takes.
    pub options: Options,
}

const KEYS_HELP: &str = "`bounds_checks = false`, `cpp = \"__device__ float f(float x) { ... }\"`, \
    `include = \"header.cuh\"`, `instances = [\"f32\", \"f64\"]` (or `[128, 256]` for `const N: usize`)";

impl Parse for Attr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut attr = Attr {
            bounds_checks: true,
            cpp: None,
            includes: Vec::new(),
            instances: Vec::new(),
            options: Options::default(),
        };
        while !input.is_empty() {
            let key: Ident = input.parse().map_err(|e| {
                syn::Error::new(e.span(), format!("expected one of {KEYS_HELP} or {}", Options::KEYS_HELP))
            })?;
            input
                .parse::<Token![=]>()
                .map_err(|e| syn::Error::new(e.span(), format!("`{key}` needs a value: `{key} = ...`")))?;
            match key.to_string().as_str() {
                "bounds_checks" => {
                    let v: syn::LitBool = input
                        .parse()
                        .map_err(|e| syn::Error::new(e.span(), "`bounds_checks` takes `true` or `false`"))?;
                    attr.bounds_checks = v.value;
                }
                "cpp" => {
                    attr.cpp = Some(input.parse().map_err(|e| {
                        syn::Error::new(e.span(), "`cpp` takes a string literal of CUDA C++ (`__device__` functions)")
                    })?)
                }
                "instances" => {
                    let content;
                    syn::bracketed!(content in input);
                    let list = syn::punctuated::Punctuated::<syn::Expr, Token![,]>::parse_terminated(&content)
                        .map_err(|e| {
                            syn::Error::new(
                                e.span(),
                                "`instances` lists types as strings (`[\"f32\", \"f64\"]`), const values as integers \
                                 (`[128, 256]`), or both as tuples (`[(\"f32\", 128)]`)",
                            )
                        })?;
                    attr.instances.extend(list);
                }
                "include" => {
                    if input.peek(syn::token::Bracket) {
                        attr.includes.extend(string_list(input, "header (e.g. \"math.cuh\")")?);
                    } else {
                        attr.includes.push(input.parse().map_err(|e| {
                            syn::Error::new(e.span(), "`include` takes a header name, e.g. `include = \"math.cuh\"`")
                        })?);
                    }
                }
                _ => {
                    if !attr.options.parse_option(&key, input)? {
                        return Err(syn::Error::new_spanned(
                            &key,
                            format!("unknown option `{key}`: expected one of {KEYS_HELP} or {}", Options::KEYS_HELP),
                        ));
                    }
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(attr)
    }
}

/// One parameter.
pub struct Param {
    /// Its name (the launcher's argument of the same name).
    pub name: Ident,
    /// Its type.
    pub ty: Ty,
}

/// The kernel's signature and body.
pub struct KernelFn {
    /// The function's name: the generated module's.
    pub name: Ident,
    /// The parameters in order.
    pub params: Vec<Param>,
    /// The body.
    pub body: syn::Block,
    /// Doc comments, carried to the module.
    pub docs: Vec<syn::Attribute>,
    /// The function's visibility, given to the module.
    pub vis: syn::Visibility,
    /// The return type: `Ty::Unit` for a kernel; a scalar or `Ty::Unit` for a device function.
    pub ret: Ty,
}

/// Reads the kernel, or the first error about its signature.
pub fn kernel_fn(item: syn::ItemFn) -> syn::Result<KernelFn> {
    function(item, false)
}

/// Reads a kernel (`device == false`) or a `#[device]` function, which may return a scalar.
pub fn function(item: syn::ItemFn, device: bool) -> syn::Result<KernelFn> {
    let sig = &item.sig;
    if let Some(t) = &sig.asyncness {
        return Err(syn::Error::new_spanned(t, "a kernel cannot be `async`"));
    }
    if let Some(u) = &sig.unsafety {
        return Err(syn::Error::new_spanned(u, "write the kernel without `unsafe`: its launcher is `unsafe` already"));
    }
    if let Some(g) = sig.generics.params.first() {
        return Err(syn::Error::new_spanned(
            g,
            "a generic kernel has one type parameter, one const parameter or both, and lists its instances: \
             `#[cuda_embed::kernel(instances = [\"f32\", \"f64\"])] fn k<T>(a: T, x: &[T])`, \
             `#[cuda_embed::kernel(instances = [128, 256])] fn k<const N: usize>(x: &[f32])`",
        ));
    }
    let ret = match (&sig.output, device) {
        (syn::ReturnType::Default, _) => Ty::Unit,
        (syn::ReturnType::Type(_, t), false) => {
            return Err(syn::Error::new_spanned(
                t,
                "a kernel returns nothing: write results into a `&mut [T]` parameter",
            ))
        }
        (syn::ReturnType::Type(_, t), true) => match value_type(t)? {
            Some(ty) => ty,
            None => {
                return Err(syn::Error::new_spanned(
                    t,
                    "a device function returns a scalar (`f32`, `u32`, `bool`, ...), a CUDA vector type (`Float4`, `Half2`, ...), a tuple of these (`(f32, u32)`, `((f32, u32), Float4)`) or nothing",
                ))
            }
        },
    };
    let mut params = Vec::new();
    for input in &sig.inputs {
        let syn::FnArg::Typed(pt) = input else {
            return Err(syn::Error::new_spanned(input, "a kernel is a free function: it takes no `self`"));
        };
        let name = match &*pt.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
            other => {
                return Err(syn::Error::new_spanned(other, "a kernel parameter is a plain name, e.g. `x: &[f32]`"))
            }
        };
        params.push(Param { name, ty: param_type(&pt.ty)? });
    }
    let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc")).cloned().collect();
    if let Some(a) = item.attrs.iter().find(|a| !a.path().is_ident("doc")) {
        return Err(syn::Error::new_spanned(a, "a kernel takes only doc comments as further attributes"));
    }
    Ok(KernelFn { name: sig.ident.clone(), params, body: *item.block, docs, vis: item.vis, ret })
}

/// A parameter's type, or why it is not supported.
pub fn param_type(ty: &syn::Type) -> syn::Result<Ty> {
    match ty {
        syn::Type::Reference(r) => {
            if let syn::Type::Slice(s) = &*r.elem {
                let elem = match (scalar_type(&s.elem), vector_type(&s.elem)?) {
                    (Some(e), _) => Elem::Scalar(e),
                    (None, Some(v)) => Elem::Vector(v),
                    (None, None) if matches!(&*s.elem, syn::Type::Reference(_) | syn::Type::Slice(_)) => {
                        return Err(syn::Error::new_spanned(
                            &s.elem,
                            "a slice of slices is not supported: pass one flat `&[T]` and index it as `x[row * width + col]`",
                        ))
                    }
                    (None, None) => return Err(unsupported_type(&s.elem)),
                };
                return Ok(Ty::Slice { elem, mutable: r.mutability.is_some() });
            }
            if let syn::Type::TraitObject(_) = &*r.elem {
                return Err(unsupported_type(&r.elem));
            }
            if let syn::Type::Path(p) = &*r.elem {
                if p.path.is_ident("str") {
                    return Err(unsupported_type(&r.elem));
                }
            }
            Err(syn::Error::new_spanned(
                ty,
                format!("a reference to one value is not supported: pass the value itself, or a slice; {PARAMS_HELP}"),
            ))
        }
        _ => match (scalar_type(ty), vector_type(ty)?, struct_name(ty)) {
            (Some(s), ..) => Ok(Ty::Scalar(s)),
            (None, Some(v), _) => Ok(Ty::Vector(v)),
            (None, None, Some(name)) => Ok(Ty::Struct(name)),
            _ => Err(unsupported_type(ty)),
        },
    }
}

/// A CUDA vector type written as `Float4` or `cuda_embed::Float4`, if `ty` is one; an error for
/// the 4-component 64-bit ones.
pub fn vector_type(ty: &syn::Type) -> syn::Result<Option<Vector>> {
    let syn::Type::Path(p) = ty else {
        return Ok(None);
    };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let name = match segs.as_slice() {
        [n] => n,
        [c, n] if c == "cuda_embed" => n,
        _ => return Ok(None),
    };
    if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_none()) {
        return Ok(None);
    }
    if DEPRECATED_VECTORS.contains(&name.as_str()) {
        return Err(syn::Error::new_spanned(
            ty,
            format!(
                "`{name}` is not supported in a kernel: CUDA 13 deprecates its C++ type `{}`; pass two `{}2` values, or a slice of them",
                name.to_ascii_lowercase(),
                &name[..name.len() - 1]
            ),
        ));
    }
    Ok(Vector::from_name(name))
}

/// A struct passed by value: a plain capitalised name other than the heap and string types
/// (its C++ declaration comes from `cpp`/`include`, its Rust one derives `DeviceSafe`).
fn struct_name(ty: &syn::Type) -> Option<String> {
    let syn::Type::Path(p) = ty else { return None };
    let id = p.path.get_ident()?.to_string();
    let capital = id.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    (capital && !["Vec", "String", "Box", "Rc", "Arc", "Option", "Self"].contains(&id.as_str())).then_some(id)
}

/// A tuple of two or more scalars, vectors or tuples (`(f32, u32)`, `((f32, u32), Float4)`), if
/// `ty` is one.
pub fn tuple_type(ty: &syn::Type) -> syn::Result<Option<Vec<Ty>>> {
    match ty {
        syn::Type::Tuple(t) if t.elems.len() >= 2 => {
            let mut out = Vec::new();
            for e in &t.elems {
                match value_type(e)? {
                    Some(t) => out.push(t),
                    None => return Ok(None),
                }
            }
            Ok(Some(out))
        }
        syn::Type::Paren(p) => tuple_type(&p.elem),
        _ => Ok(None),
    }
}

/// The type of a value a local, a tuple or a device function's result can hold: a scalar, a
/// CUDA vector type or a tuple of these; `None` for other types (an error for the vectors
/// kernels refuse).
pub fn value_type(ty: &syn::Type) -> syn::Result<Option<Ty>> {
    if let Some(s) = scalar_type(ty) {
        return Ok(Some(Ty::Scalar(s)));
    }
    if let Some(v) = vector_type(ty)? {
        return Ok(Some(Ty::Vector(v)));
    }
    Ok(tuple_type(ty)?.map(Ty::Tuple))
}

/// A scalar type written in Rust, if `ty` is one.
pub fn scalar_type(ty: &syn::Type) -> Option<Scalar> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => Scalar::from_name(&p.path.get_ident()?.to_string()),
        syn::Type::Paren(p) => scalar_type(&p.elem),
        _ => None,
    }
}

/// The error for a type outside the subset, naming the common ones.
pub fn unsupported_type(ty: &syn::Type) -> syn::Error {
    let head = match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        _ => String::new(),
    };
    let what = match (ty, head.as_str()) {
        (syn::Type::TraitObject(_), _) => {
            "a trait object is not supported: kernels have no dynamic dispatch".to_string()
        }
        (_, "Vec") => "`Vec` is not supported in a kernel (no heap): take a slice, `&[T]` or `&mut [T]`".to_string(),
        (_, "String" | "str") => "strings are not supported in a kernel".to_string(),
        (_, "Box") => "`Box` is not supported in a kernel (no heap)".to_string(),
        _ => format!("the type `{}` is not supported in a kernel", quote::quote!(#ty).to_string().replace(' ', "")),
    };
    syn::Error::new(ty.span(), format!("{what}; {PARAMS_HELP}"))
}

/// One instance of a generic kernel: the function with each generic parameter replaced by its
/// value everywhere (a type parameter by the scalar's name, a const parameter by a typed literal
/// such as `256usize`), without generics, named `name`.
pub fn instance(
    item: &syn::ItemFn,
    subst: &[(Ident, proc_macro2::TokenStream)],
    name: Ident,
) -> syn::Result<syn::ItemFn> {
    let mut f = item.clone();
    f.sig.generics = syn::Generics::default();
    let mut tokens = quote::quote!(#f);
    for (from, to) in subst {
        tokens = replace_ident(tokens, from, to);
    }
    let mut f: syn::ItemFn = syn::parse2(tokens)?;
    f.sig.ident = name;
    Ok(f)
}

fn replace_ident(
    tokens: proc_macro2::TokenStream,
    from: &Ident,
    to: &proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    use proc_macro2::{Group, TokenTree};
    tokens
        .into_iter()
        .flat_map(|t| -> Vec<TokenTree> {
            match t {
                TokenTree::Ident(i) if i == *from => respan(to.clone(), i.span()).into_iter().collect(),
                TokenTree::Group(g) => {
                    let mut n = Group::new(g.delimiter(), replace_ident(g.stream(), from, to));
                    n.set_span(g.span());
                    vec![TokenTree::Group(n)]
                }
                other => vec![other],
            }
        })
        .collect()
}

/// `tokens` with every span set to `span` (a substituted value points at the name it replaced).
fn respan(tokens: proc_macro2::TokenStream, span: proc_macro2::Span) -> proc_macro2::TokenStream {
    use proc_macro2::{Group, TokenTree};
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => {
                let mut n = Group::new(g.delimiter(), respan(g.stream(), span));
                n.set_span(span);
                TokenTree::Group(n)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// Whether `ty` names the type parameter `param`.
pub fn mentions(ty: &syn::Type, param: &Ident) -> bool {
    fn walk(ts: proc_macro2::TokenStream, p: &Ident) -> bool {
        ts.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == *p,
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), p),
            _ => false,
        })
    }
    walk(quote::quote!(#ty), param)
}

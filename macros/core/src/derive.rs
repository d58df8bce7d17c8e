//! `#[derive(DeviceSafe)]`: the two `unsafe impl`s a struct passed by value to a kernel needs,
//! written only after checking what makes them sound.
//!
//! The input must be a struct with named or tuple fields, `#[repr(C)]` (optionally with
//! `align(N)`) or `#[repr(transparent)]`, and without lifetime parameters. The expansion:
//!
//! - `unsafe impl ::cuda_embed::DeviceSafe for T` with `LAYOUT = Some(&[FieldLayout { name, offset,
//!   size }, ...])`, the fields in declaration order (`core::mem::offset_of!`, `size_of`);
//! - `unsafe impl ::cuda_embed::cudarc::driver::DeviceRepr for T` (the same promise, in cudarc's
//!   words: the type may be copied to device memory and passed as a kernel argument);
//! - an assertion, spanned on each field's type, that the field's type is `DeviceSafe` itself, so
//!   `&T`, `Vec<T>`, `Box<T>` or a raw host pointer is a compile error at that field.
//!
//! Type and const parameters are allowed; each type parameter gets a `DeviceSafe` bound.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Fields, GenericParam, Member};

/// The derive's entry point: tokens in, the impls (or the errors as `compile_error!`) out.
pub fn derive(input: TokenStream) -> TokenStream {
    match syn::parse2::<DeriveInput>(input) {
        Ok(input) => expand(&input).unwrap_or_else(|e| e.to_compile_error()),
        Err(e) => e.to_compile_error(),
    }
}

/// Checks `input` and generates the impls; every problem found is reported, each at its own span.
pub fn expand(input: &DeriveInput) -> syn::Result<TokenStream> {
    let mut errors: Vec<syn::Error> = Vec::new();
    let name = &input.ident;
    let fields = match &input.data {
        Data::Struct(s) => Some(&s.fields),
        Data::Enum(e) => {
            errors.push(syn::Error::new(
                e.enum_token.span,
                "`#[derive(DeviceSafe)]` works on structs only: for a C++ enum parameter, pass its underlying \
                 integer type (e.g. `i32`) instead",
            ));
            None
        }
        Data::Union(u) => {
            errors.push(syn::Error::new(
                u.union_token.span,
                format!(
                    "`#[derive(DeviceSafe)]` works on structs only: check that every member of the union is plain \
                     data, then write `unsafe impl cuda_embed::DeviceSafe for {name} {{}}` by hand"
                ),
            ));
            None
        }
    };
    if let Err(e) = check_repr(input) {
        errors.push(e);
    }
    for param in &input.generics.params {
        if let GenericParam::Lifetime(l) = param {
            errors.push(syn::Error::new_spanned(
                &l.lifetime,
                format!(
                    "a `DeviceSafe` struct cannot borrow: remove the lifetime `{}` (a kernel cannot follow \
                     references to host memory)",
                    l.lifetime
                ),
            ));
        }
    }
    let members = match fields {
        Some(Fields::Named(f)) if !f.named.is_empty() => members(fields.into_iter().flatten()),
        Some(Fields::Unnamed(f)) if !f.unnamed.is_empty() => members(fields.into_iter().flatten()),
        Some(_) => {
            errors.push(syn::Error::new(
                name.span(),
                format!(
                    "`#[derive(DeviceSafe)]` needs a struct with fields, like the C++ struct it mirrors: \
                     `struct {name} {{ a: f32, ... }}` (an empty C++ struct is 1 byte, an empty Rust struct 0)"
                ),
            ));
            Vec::new()
        }
        None => Vec::new(),
    };
    if let Some(e) = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        return Err(e);
    }

    let mut generics = input.generics.clone();
    for param in &mut generics.params {
        if let GenericParam::Type(t) = param {
            t.bounds.push(syn::parse_quote!(::cuda_embed::DeviceSafe));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let layout = members.iter().map(|(member, label, ty)| {
        quote! {
            ::cuda_embed::FieldLayout {
                name: #label,
                offset: ::core::mem::offset_of!(Self, #member),
                size: ::core::mem::size_of::<#ty>(),
            }
        }
    });
    let asserts = members.iter().map(|(_, _, ty)| {
        quote_spanned! {ty.span()=>
            __cuda_embed_field_is_device_safe::<#ty>();
        }
    });
    let safety = format!(
        "SAFETY: `#[derive(DeviceSafe)]` checked that `{name}` is `#[repr(C)]` or `#[repr(transparent)]` \
         and borrows nothing; the function below checks that every field type is `DeviceSafe` (plain data \
         with the C layout), so `{name}` has the C layout of a struct of those fields."
    );
    let safety_repr = "SAFETY: the same reasons: plain data with the C layout, valid to copy to the device byte \
                       for byte.";
    Ok(quote! {
        #[doc = #safety]
        unsafe impl #impl_generics ::cuda_embed::DeviceSafe for #name #ty_generics #where_clause {
            const LAYOUT: ::core::option::Option<&'static [::cuda_embed::FieldLayout]> =
                ::core::option::Option::Some(&[#(#layout),*]);
        }
        #[doc = #safety_repr]
        unsafe impl #impl_generics ::cuda_embed::cudarc::driver::DeviceRepr for #name #ty_generics #where_clause {}
        const _: () = {
            #[allow(dead_code)]
            fn __cuda_embed_field_is_device_safe<F: ::cuda_embed::DeviceSafe>() {}
            /// Compile-time proof that every field of the struct is `DeviceSafe`: an error here
            /// points at the offending field's type.
            #[allow(dead_code, clippy::extra_unused_type_parameters)]
            fn __cuda_embed_fields_are_device_safe #impl_generics () #where_clause {
                #(#asserts)*
            }
        };
    })
}

/// `(member, name as written without r#, type)` for each field, in declaration order.
fn members<'a>(fields: impl Iterator<Item = &'a syn::Field>) -> Vec<(Member, String, &'a syn::Type)> {
    fields
        .enumerate()
        .map(|(i, f)| match &f.ident {
            Some(id) => (Member::Named(id.clone()), id.unraw().to_string(), &f.ty),
            None => (Member::Unnamed(syn::Index { index: i as u32, span: f.ty.span() }), i.to_string(), &f.ty),
        })
        .collect()
}

/// Accepts `#[repr(C)]`, `#[repr(C, align(N))]` (also split over two attributes) and
/// `#[repr(transparent)]`; anything else is an error saying what to write.
fn check_repr(input: &DeriveInput) -> syn::Result<()> {
    let name = &input.ident;
    let mut c_like = false;
    let mut align: Option<syn::LitInt> = None;
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for attr in input.attrs.iter().filter(|a| a.path().is_ident("repr")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("C") || meta.path.is_ident("transparent") {
                c_like = true;
            } else if meta.path.is_ident("align") {
                let content;
                syn::parenthesized!(content in meta.input);
                align = Some(content.parse()?);
            } else if meta.path.is_ident("packed") {
                if meta.input.peek(syn::token::Paren) {
                    let content;
                    syn::parenthesized!(content in meta.input);
                    let _: TokenStream = content.parse()?;
                }
                push(syn::Error::new_spanned(
                    &meta.path,
                    "`#[derive(DeviceSafe)]` does not support `packed`: CUDA aligns every struct member \
                     naturally; remove `packed` and use `#[repr(C)]`",
                ));
            } else {
                push(syn::Error::new_spanned(
                    &meta.path,
                    "`#[derive(DeviceSafe)]` supports `#[repr(C)]`, `#[repr(C, align(N))]` and \
                     `#[repr(transparent)]` only",
                ));
            }
            Ok(())
        });
        if let Err(e) = parsed {
            push(e);
        }
    }
    if !c_like {
        let write = match &align {
            Some(n) => format!("#[repr(C, align({n}))]"),
            None => "#[repr(C)]".to_string(),
        };
        let span = align.as_ref().map_or(name.span(), |n| n.span());
        push(syn::Error::new(
            span,
            format!(
                "`#[derive(DeviceSafe)]` needs `{write}` on `{name}`: without it Rust may reorder the fields, so \
                 they would not match the C++ struct's"
            ),
        ));
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(input: TokenStream) -> String {
        let input: DeriveInput = syn::parse2(input).unwrap();
        let file: syn::File = syn::parse2(expand(&input).unwrap()).unwrap();
        prettyplease::unparse(&file)
    }

    fn error(input: TokenStream) -> String {
        let input: DeriveInput = syn::parse2(input).unwrap();
        let e = expand(&input).unwrap_err();
        e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn named_struct_gets_both_impls_layout_and_field_checks() {
        let out = expanded(quote! {
            #[repr(C)]
            #[derive(Clone, Copy)]
            struct Params { scale: f32, r#type: i32, v: [u16; 3] }
        });
        assert!(out.contains("unsafe impl ::cuda_embed::DeviceSafe for Params {"), "{out}");
        assert!(out.contains("unsafe impl ::cuda_embed::cudarc::driver::DeviceRepr for Params {}"), "{out}");
        assert!(out.contains("SAFETY: `#[derive(DeviceSafe)]` checked that `Params`"), "{out}");
        let squashed: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
        for want in [
            "name: \"scale\", offset: ::core::mem::offset_of!(Self, scale), size: ::core::mem::size_of::<f32>(),",
            "name: \"type\", offset: ::core::mem::offset_of!(Self, r#type), size: ::core::mem::size_of::<i32>(),",
            "size: ::core::mem::size_of::<[u16; 3]>(),",
            "__cuda_embed_field_is_device_safe::<[u16; 3]>();",
        ] {
            assert!(squashed.contains(want), "missing `{want}` in\n{out}");
        }
        let order: Vec<usize> = ["\"scale\"", "\"type\"", "\"v\""].iter().map(|n| out.find(n).unwrap()).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "declaration order");
    }

    #[test]
    fn tuple_struct_and_generics() {
        let out = expanded(quote! {
            #[repr(C, align(16))]
            #[derive(Clone, Copy)]
            struct Pair<T, const N: usize>(T, [f32; N]);
        });
        let squashed: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            squashed.contains(
                "unsafe impl<T: ::cuda_embed::DeviceSafe, const N: usize> ::cuda_embed::DeviceSafe for Pair<T, N>"
            ),
            "{out}"
        );
        assert!(squashed.contains("name: \"0\", offset: ::core::mem::offset_of!(Self, 0)"), "{out}");
        assert!(squashed.contains("name: \"1\", offset: ::core::mem::offset_of!(Self, 1)"), "{out}");
        assert!(
            squashed.contains("fn __cuda_embed_fields_are_device_safe<T: ::cuda_embed::DeviceSafe, const N: usize>()")
        );
    }

    #[test]
    fn repr_c_split_over_two_attributes_and_transparent_are_accepted() {
        expanded(quote! { #[repr(C)] #[repr(align(8))] #[derive(Clone, Copy)] struct A { x: f32 } });
        expanded(quote! { #[repr(transparent)] #[derive(Clone, Copy)] struct B(u64); });
    }

    #[test]
    fn missing_repr_c_says_what_to_write() {
        let e = error(quote! { #[derive(Clone, Copy)] struct P { a: f32 } });
        assert!(e.contains("needs `#[repr(C)]` on `P`"), "{e}");
        let e = error(quote! { #[repr(align(16))] struct P { a: f32 } });
        assert!(e.contains("needs `#[repr(C, align(16))]` on `P`"), "{e}");
        let e = error(quote! { #[repr(C, packed)] struct P { a: f32 } });
        assert!(e.contains("does not support `packed`"), "{e}");
        let e = error(quote! { #[repr(C)] #[repr(packed(2))] struct P { a: f32 } });
        assert!(e.contains("does not support `packed`"), "{e}");
        let e = error(quote! { #[repr(Rust)] struct P { a: f32 } });
        assert!(e.contains("supports `#[repr(C)]`"), "{e}");
    }

    #[test]
    fn enums_unions_empty_structs_and_lifetimes_are_rejected() {
        let e = error(quote! { #[repr(C)] enum E { A, B } });
        assert!(e.contains("works on structs only: for a C++ enum parameter"), "{e}");
        let e = error(quote! { #[repr(C)] union U { a: f32, b: u32 } });
        assert!(e.contains("unsafe impl cuda_embed::DeviceSafe for U {}"), "{e}");
        let e = error(quote! { #[repr(C)] struct Unit; });
        assert!(e.contains("needs a struct with fields"), "{e}");
        let e = error(quote! { #[repr(C)] struct Empty {} });
        assert!(e.contains("needs a struct with fields"), "{e}");
        let e = error(quote! { #[repr(C)] struct R<'a> { x: &'a f32 } });
        assert!(e.contains("remove the lifetime `'a`"), "{e}");
    }

    #[test]
    fn every_problem_is_reported_at_its_own_span() {
        let e = error(quote! { struct R<'a, 'b> { x: &'a f32, y: &'b f32 } });
        assert_eq!(e.lines().count(), 3, "{e}");
    }

    #[test]
    fn bad_tokens_become_compile_error() {
        let out = derive(quote! { fn not_a_type() {} }).to_string();
        assert!(out.contains("compile_error"), "{out}");
    }
}

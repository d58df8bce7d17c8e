//! One trait per array parameter of an `elementwise_kernel!` or `reduction_kernel!` launcher, so
//! that a buffer of the wrong element type is reported at that argument, in the parameter's words.
//!
//! A launcher argument `x: &impl DevicePtr<T>` given a `CudaSlice<f64>` where `T` is `f32` fails
//! with cudarc's "`CudaSlice<f64>: DevicePtr<f32>` is not satisfied", which names neither the
//! parameter nor the kernel. Each array parameter instead gets its own trait in the launcher
//! module's `params` (`params::x<E>`, `params::__nd::x<E>` for the N-D launchers), implemented for
//! every type with the bound the launcher needs (a blanket impl, so any buffer the launcher took
//! before still works) and carrying an `on_unimplemented` message that names the parameter, its
//! declaration, the element type expected and the buffer given. rustc reports the unsatisfied
//! bound of a blanket impl with the message of the trait the launcher asked for, so the error
//! reads "wrong element type for input `x` of elementwise kernel `relu`: expected a buffer of
//! `f32`, found `CudaSlice<f64>`" at the argument.

use cuda_embed_source::params::{Param, Role};
use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

/// Which launchers a trait serves: the flat ones (device buffers) or the N-D ones (`NdView`s).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `launch`, `launch_with`, `launch_rows`, `launch_cols` and the raw parameters of `launch_nd`.
    Flat,
    /// `launch_nd` and `launch_axes`.
    Nd,
}

/// The traits of one launcher module, declared as the launchers ask for them.
pub struct BufferArgs {
    /// `elementwise kernel `relu`` or `reduction `total``, for the messages.
    what: String,
    flat: Vec<TokenStream>,
    nd: Vec<TokenStream>,
    declared: Vec<(Family, String)>,
}

impl BufferArgs {
    /// No traits yet, for the kernel described by `what` (`elementwise kernel `relu``).
    pub fn new(what: String) -> Self {
        BufferArgs { what, flat: Vec::new(), nd: Vec::new(), declared: Vec::new() }
    }

    /// The bound of array parameter `p` (Rust name `id`, element type `elem`) in a launcher of
    /// `family`, whose buffer must implement `base` (`DevicePtr`, `NdInput`, ...): the path of its
    /// trait applied to `elem`, to be written `impl #bound`.
    pub fn bound(
        &mut self,
        p: &Param,
        id: &Ident,
        elem: &TokenStream,
        family: Family,
        base: &TokenStream,
    ) -> TokenStream {
        let key = (family, id.to_string());
        if !self.declared.contains(&key) {
            let item = self.declare(p, id, family, base);
            match family {
                Family::Flat => self.flat.push(item),
                Family::Nd => self.nd.push(item),
            }
            self.declared.push(key);
        }
        match family {
            Family::Flat => quote!(params::#id<#elem>),
            Family::Nd => quote!(params::__nd::#id<#elem>),
        }
    }

    fn declare(&self, p: &Param, id: &Ident, family: Family, base: &TokenStream) -> TokenStream {
        let role = if p.role == Role::Input { "input" } else { "output" };
        let name = &p.name;
        let decl = format!("{} {}", p.ty, p.name);
        let expected = match (family, p.role) {
            (Family::Flat, Role::Input) => "a device buffer of `{E}`",
            (Family::Flat, Role::Output) => "a writable device buffer of `{E}`",
            (Family::Nd, Role::Input) => "an N-D view or device buffer of `{E}`",
            (Family::Nd, Role::Output) => "a writable N-D view or device buffer of `{E}`",
        };
        let takes = match (family, p.role) {
            (Family::Flat, Role::Input) => "`&CudaSlice<{E}>` or a view of `{E}`",
            (Family::Flat, Role::Output) => "`&mut CudaSlice<{E}>` or a `CudaViewMut<{E}>`",
            (Family::Nd, Role::Input) => "an `NdView<{E}>`, an `NdViewMut<{E}>` or a buffer of `{E}`",
            (Family::Nd, Role::Output) => "an `NdViewMut<{E}>` or a writable buffer of `{E}`",
        };
        // Only `{E}` and `{Self}` may appear as format arguments; anything else is escaped.
        let esc = |s: &str| s.replace('{', "{{").replace('}', "}}");
        let what = esc(&self.what);
        let message =
            format!("wrong element type for {role} `{name}` of {what}: expected {expected}, found `{{Self}}`");
        let label = format!("`{name}` (`{}`) takes {takes}", esc(&decl));
        let note = match p.ty.placeholder() {
            Some(t) => format!(
                "`{t}` is `{{E}}` in this call: the other arguments (or the only type in `types = [...]`) \
                 decided it; every argument declared with `{t}` must hold the same element type, one of \
                 `types = [...]`"
            ),
            None => format!("the CUDA type `{}` is `{{E}}` in Rust: pass device memory of `{{E}}`", esc(p.ty.as_str())),
        };
        // A buffer type of the user's own is taken through cuda-embed's unsafe buffer traits.
        let own = match p.role {
            Role::Input => "DeviceBuffer",
            Role::Output => "DeviceBufferMut",
        };
        let own = format!(
            "a buffer type of your own is taken once it has `unsafe impl cuda_embed::{own}<{{E}}>` (the launch \
             trusts its `len()`)"
        );
        let doc =
            format!("What {role} `{name}` (`{decl}`) of the {} accepts: {}.", self.what, takes.replace("{E}", "E"));
        quote! {
            #[doc = #doc]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note, note = #own)]
            pub trait #id<E>: #base<E> {}
            impl<E, B: ?Sized + #base<E>> #id<E> for B {}
        }
    }

    /// The module `params` holding every trait asked for, or nothing when none was.
    pub fn items(&self) -> TokenStream {
        if self.flat.is_empty() && self.nd.is_empty() {
            return quote!();
        }
        let (flat, nd) = (&self.flat, &self.nd);
        let nd = if nd.is_empty() {
            quote!()
        } else {
            quote! {
                /// The N-D launchers' per-parameter buffer traits.
                pub mod __nd {
                    #(#nd)*
                }
            }
        };
        quote! {
            /// One trait per array parameter: what each launcher argument accepts (any buffer of
            /// the element type); they exist so that a wrong element type is reported at the
            /// argument, naming the parameter.
            #[doc(hidden)]
            #[allow(non_camel_case_types)]
            pub mod params {
                #(#flat)*
                #nd
            }
        }
    }
}

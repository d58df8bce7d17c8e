//! One kernel's Rust module: its launchers, attribute functions and docs; for a template, also
//! the instance marker, the `Listed` trait and one impl per instance.

use super::paths;
use super::{generic_arg, generic_ident, param_ident, rust_type};
use crate::ir::{rust_name, Checked, Module};
use crate::signature::{Kernel, TemplateKind};
use crate::types::{self, Mapped};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// What differs between the module of an ordinary kernel and that of a template.
pub struct KernelGen<'a> {
    /// The declaration (names, docs, launch bounds).
    pub decl: &'a Kernel,
    /// The Rust side of each parameter (generic parameters appear as their Rust name).
    pub params: &'a [Mapped],
    /// The kernel's index in the module, as an expression.
    pub index: TokenStream,
    /// Generic parameters every function of the module takes (`T`, `const B: i32`).
    pub generics: Vec<TokenStream>,
    /// `where Instance<T, B>: Listed`, or nothing.
    pub where_clause: TokenStream,
    /// Extra items (the instance marker, trait and impls).
    pub items: TokenStream,
}

/// The generation of template `ti`'s module, whose generic signature is `params`.
pub fn template_gen<'a>(module: &'a Module, checked: &Checked, ti: usize, params: &'a [Mapped]) -> KernelGen<'a> {
    let decl = &module.parsed.templates[ti];
    let tparams = decl.template.as_deref().unwrap_or_default();
    let mine: Vec<(usize, usize)> = checked
        .kernels
        .iter()
        .enumerate()
        .filter_map(|(index, k)| {
            k.unit.instance.filter(|ii| module.instances[*ii].template == ti).map(|ii| (index, ii))
        })
        .collect();
    let mut generics = Vec::new();
    let mut uses = Vec::new();
    let mut phantom = Vec::new();
    for tp in tparams {
        let id = generic_ident(&tp.name);
        match &tp.kind {
            TemplateKind::Type => {
                generics.push(quote!(#id));
                phantom.push(quote!(#id));
            }
            TemplateKind::Value(ty) => {
                let rust = format_ident!("{}", types::const_generic_type(ty).unwrap_or("i64"));
                generics.push(quote!(const #id: #rust));
            }
            TemplateKind::Unsupported(_) => {}
        }
        uses.push(quote!(#id));
    }
    let qualified = decl.qualified_name();
    let listed: Vec<&str> = mine.iter().map(|(_, ii)| module.instances[*ii].expr.as_str()).collect();
    let message = format!("template kernel `{qualified}` was not instantiated for `{{Self}}`");
    let label = "no such instance in `instances = [...]`".to_string();
    let note = format!(
        "instances built: {}; add the one you need to `instances = [...]` of the cuda_kernel! at {}:{}",
        if listed.is_empty() { "none".to_string() } else { listed.join(", ") },
        module.site.file,
        module.site.line
    );
    let impls = mine.iter().map(|(index, ii)| {
        let inst = &module.instances[*ii];
        let args = checked.instances[*ii].args.iter().map(generic_arg);
        let doc = format!("`{}`", inst.expr);
        let checks = checked.instances[*ii].args.iter().filter_map(|a| match a {
            crate::ir::GenericArg::User(t) => {
                let ty = format_ident!("{}", t);
                let assert = paths::assert_device_safe(inst.lit.span());
                Some(quote_spanned!(inst.lit.span()=> const _: () = #assert::<super::super::#ty>();))
            }
            _ => None,
        });
        quote! {
            #(#checks)*
            #[doc = #doc]
            impl Listed for Instance<#(#args),*> {
                const INDEX: usize = #index;
            }
        }
    });
    let instance_doc = format!(
        "Names one instance of the template kernel `{qualified}` by its Rust generic arguments; \
         only the instances listed in the macro implement [`Listed`]."
    );
    let items = quote! {
        #[doc = #instance_doc]
        pub struct Instance<#(#generics),*>(::core::marker::PhantomData<fn() -> (#(#phantom,)*)>);

        /// Implemented for every instance the macro compiled; gives its index in the module.
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        pub trait Listed {
            /// Index of the instance's kernel in the module.
            #[doc(hidden)]
            const INDEX: usize;
        }

        #(#impls)*
    };
    KernelGen {
        decl,
        params,
        index: quote!(<Instance<#(#uses),*> as Listed>::INDEX),
        generics,
        where_clause: quote!(where Instance<#(#uses),*>: Listed),
        items,
    }
}

/// The Rust module of one kernel (`pub mod saxpy { ... }`).
pub fn kernel_module(gen: &KernelGen<'_>, span: Span) -> TokenStream {
    let (c_void, stream_ty, config_ty, result) =
        (paths::c_void(), paths::stream(), paths::launch_config(), paths::result());
    let (context, module_ty, raw) = (paths::context(), paths::module(), paths::raw_device_ptr());
    let (device_ptr, device_ptr_mut) = (paths::device_ptr(), paths::device_ptr_mut());
    let k = gen.decl;
    let index = &gen.index;
    let where_clause = &gen.where_clause;
    let name = rust_name(&k.name).unwrap_or_else(|_| format_ident!("invalid_kernel_name"));
    let qualified = k.qualified_name();
    let mut generics = gen.generics.clone();
    let mut args = Vec::new();
    let mut prelude = Vec::new();
    let mut packed = Vec::new();
    let mut checks = Vec::new();
    let mut doc_rows = String::new();
    for (i, (p, m)) in k.params.iter().zip(gen.params).enumerate() {
        let id = param_ident(&p.name, i);
        let sync = format_ident!("__sync_{}", i);
        doc_rows.push_str(&format!("| `{}` | `{}` | `{}` |\n", id, p.text.replace('|', "\\|"), m.describe()));
        match m {
            Mapped::Value(t) => {
                let ty = rust_type(t);
                args.push(quote!(#id: #ty));
                packed.push(quote!(&#id as *const #ty as *mut #c_void));
            }
            Mapped::User { name: tn, layout } => {
                let ty = format_ident!("{}", tn, span = span);
                args.push(quote!(#id: super::super::#ty));
                packed.push(quote!(&#id as *const super::super::#ty as *mut #c_void));
                let assert = paths::assert_device_safe(span);
                checks.push(quote_spanned! {span=>
                    const _: () = #assert::<super::super::#ty>();
                });
                if let Some((size, align)) = layout {
                    let (size, align) = (*size as usize, *align as usize);
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
            }
            Mapped::Pointer { elem, mutable } => {
                let ty = match elem {
                    Some(t) => rust_type(t),
                    None => {
                        let g = format_ident!("T{}", i);
                        generics.push(quote!(#g));
                        quote!(#g)
                    }
                };
                if *mutable {
                    args.push(quote!(#id: &mut impl #device_ptr_mut<#ty>));
                    prelude.push(quote!(let (#id, #sync) = #device_ptr_mut::device_ptr_mut(#id, stream);));
                } else {
                    args.push(quote!(#id: &impl #device_ptr<#ty>));
                    prelude.push(quote!(let (#id, #sync) = #device_ptr::device_ptr(#id, stream);));
                }
                packed.push(quote!(&#id as *const u64 as *mut #c_void));
            }
            Mapped::RawPointer => {
                args.push(quote!(#id: #raw));
                packed.push(quote!(&#id as *const #raw as *mut #c_void));
            }
        }
    }
    let n = packed.len();
    let bounds = if k.launch_bounds.is_empty() {
        String::new()
    } else {
        format!(
            "\n\n`__launch_bounds__({})`: at most {} threads per block.",
            k.launch_bounds.join(", "),
            k.launch_bounds[0]
        )
    };
    let template = match &k.template {
        Some(tp) => format!(
            "\n\nA template: `{qualified}::launch::<{}>(...)` launches the instance with those arguments; only \
             the instances listed in the macro's `instances = [...]` compile.",
            tp.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
        None => String::new(),
    };
    let doc = format!(
        "Launcher for the CUDA kernel `{qualified}({})`{}.\n\n\
         | Rust argument | CUDA parameter | Rust type |\n|---|---|---|\n{doc_rows}{bounds}{template}",
        k.signature,
        if k.extern_c { " (extern \"C\")" } else { "" },
    );
    let launch_doc = format!(
        "Launches `{qualified}` on `stream` with `config`.\n\n\
         Loads the module on the stream's device at first use. Device buffers are borrowed for the \
         launch: `const` pointers as shared borrows, others as exclusive ones.\n\n\
         # Safety\nThe kernel runs arbitrary device code: it must stay within the buffers it is \
         given and the grid must match what it expects."
    );
    let all_generics = if generics.is_empty() { quote!() } else { quote!(<#(#generics),*>) };
    let tgenerics = if gen.generics.is_empty() {
        quote!()
    } else {
        let g = &gen.generics;
        quote!(<#(#g),*>)
    };
    // The launch variants differ only in name, docs, an optional extra parameter, the return type
    // and the Module method they end in; the argument packing is the same for all.
    let (cluster_dim, attributes) = (paths::cluster_dim(), paths::kernel_attributes());
    let safety = "\n\n# Safety\nAs for `launch`.";
    let variants = [
        (quote!(launch), launch_doc, quote!(), quote!(()), quote!(launch(#index, stream, &config, &mut __args))),
        (
            quote!(launch_timed),
            format!("Like `launch`, and returns the kernel's GPU time in milliseconds (an event pair around it on `stream`; waits for the kernel to finish).{safety}"),
            quote!(),
            quote!(f32),
            quote!(launch_timed(#index, stream, &config, &mut __args)),
        ),
        (
            quote!(launch_cooperative),
            format!("Launches cooperatively, so the kernel may synchronise the whole grid (`cooperative_groups::this_grid().sync()`). A grid larger than what fits on the device at once is an Error, never silently clamped.{safety}"),
            quote!(),
            quote!(()),
            quote!(launch_cooperative(#index, stream, &config, &mut __args)),
        ),
        (
            quote!(launch_cluster),
            format!("Launches with thread-block clusters of shape `cluster` (sm_90 and newer); an older GPU or a grid that is not a whole number of clusters is an Error.{safety}"),
            quote!(cluster: #cluster_dim,),
            quote!(()),
            quote!(launch_cluster(#index, stream, &config, cluster, &mut __args)),
        ),
    ];
    let launchers = variants.into_iter().map(|(fname, fdoc, extra, ret, call)| {
        quote! {
            #[doc = #fdoc]
            #[inline]
            pub unsafe fn #fname #all_generics (
                stream: &#stream_ty,
                config: #config_ty,
                #extra
                #(#args),*
            ) -> #result<#ret> #where_clause {
                #(#prelude)*
                let mut __args: [*mut #c_void; #n] = [#(#packed),*];
                // SAFETY: one pointer per parameter, each to a live local of the parameter's exact
                // type (checked against the compiled kernel at build time).
                unsafe { super::MODULE.#call }
            }
        }
    });
    let items = &gen.items;
    quote! {
        #[doc = #doc]
        #[allow(non_snake_case, dead_code, clippy::too_many_arguments, clippy::missing_safety_doc)]
        pub mod #name {
            #(#checks)*
            #items

            /// The kernel's name in the CUDA source.
            pub const NAME: &str = #qualified;

            /// The module (shared by every kernel of the same `cuda_kernel!`).
            pub fn module() -> &'static #module_ty {
                &super::MODULE
            }

            #(#launchers)*

            /// Registers, thread and memory limits of this kernel on `ctx`'s device.
            pub fn attributes #tgenerics (ctx: &::std::sync::Arc<#context>) -> #result<#attributes> #where_clause {
                super::MODULE.attributes(#index, ctx)
            }

            /// Lets this kernel use up to `bytes` of dynamic shared memory per block on `ctx`'s
            /// device (needed above 48 KiB).
            pub fn set_max_dynamic_shared_memory #tgenerics (ctx: &::std::sync::Arc<#context>, bytes: u32) -> #result<()> #where_clause {
                super::MODULE.set_max_dynamic_shared_memory(#index, ctx, bytes)
            }

            /// Sets the preferred L1/shared-memory carveout (percent) on `ctx`'s device.
            pub fn set_preferred_shared_carveout #tgenerics (ctx: &::std::sync::Arc<#context>, percent: u32) -> #result<()> #where_clause {
                super::MODULE.set_preferred_shared_carveout(#index, ctx, percent)
            }

            /// A 1-D configuration covering `n` threads with the occupancy-maximising block size on
            /// `ctx`'s device, with `dynamic_shared_bytes` of dynamic shared memory per block.
            pub fn occupancy_config #tgenerics (
                ctx: &::std::sync::Arc<#context>,
                n: u32,
                dynamic_shared_bytes: u32,
            ) -> #result<#config_ty> #where_clause {
                super::MODULE.occupancy_config(#index, ctx, n, dynamic_shared_bytes)
            }
        }
    }
}

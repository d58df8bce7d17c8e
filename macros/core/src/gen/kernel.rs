//! One kernel's Rust module: its launchers, attribute functions and docs; for a template, also
//! the instance marker, the `Listed` trait and one impl per instance.

use super::params::{lower_params, Lowered};
use super::paths;
use super::{generic_arg, generic_ident, param_ident};
use crate::front::ir::{rust_name, Checked, Fields, Module};
use crate::front::types::{self, Mapped};
use crate::oracle::structs;
use crate::signature::{Kernel, TemplateKind};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// What differs between the module of an ordinary kernel and that of a template.
pub struct KernelGen<'a> {
    /// The declaration (names, docs, launch bounds).
    pub decl: &'a Kernel,
    /// The Rust module's name ([`Module::module_name`]).
    pub name: String,
    /// The Rust side of each parameter (generic parameters appear as their Rust name).
    pub params: &'a [Mapped],
    /// For each parameter that is a struct by value, its CUDA members when the compiler told
    /// them: the field-order check.
    pub fields: Vec<Option<Fields>>,
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
    let how = &module.listing;
    let message = format!("{} `{qualified}` was not instantiated for `{{Self}}`", how.kind);
    let label = format!("no such instance in `{} = [...]`", how.key);
    let note = format!(
        "instances built: {}; add the one you need to `{} = [...]` of the {} at {}:{}",
        if listed.is_empty() { "none".to_string() } else { listed.join(", ") },
        how.key,
        how.macro_name,
        module.site.file,
        module.site.line
    );
    // A template with one type parameter implements `Listed` on the type itself, so generic code
    // writes `T: axpy::Listed`; others name the instance through the `Instance` marker.
    let single = matches!(tparams, [p] if matches!(p.kind, TemplateKind::Type));
    let impls = mine.iter().map(|(index, ii)| {
        let inst = &module.instances[*ii];
        let args = checked.instances[*ii].args.iter().map(generic_arg);
        let target = if single { quote!(#(#args),*) } else { quote!(Instance<#(#args),*>) };
        let doc = format!("`{}`", inst.expr);
        let span = inst.lit.span();
        // A struct given as a type argument and passed by value (`T p`, `T = Params`): its fields
        // are checked per instance (the launcher's own parameter is generic). That check requires
        // `DeviceSafe` too, so such a type gets no separate `assert_device_safe`.
        let kernel = &checked.kernels[*index];
        let mut checks: Vec<TokenStream> = Vec::new();
        let mut field_checked: Vec<&str> = Vec::new();
        for (pi, m) in kernel.params.iter().enumerate() {
            if let (Mapped::User { name: tn, .. }, Some(fields), false) =
                (m, &kernel.fields[pi], matches!(params.get(pi), Some(Mapped::User { .. })))
            {
                if !field_checked.contains(&tn.as_str()) {
                    let ty = format_ident!("{}", tn, span = span);
                    checks.push(structs::layout_check(quote_spanned!(span=> super::super::#ty), tn, fields, span));
                    field_checked.push(tn);
                }
            }
        }
        for a in &checked.instances[*ii].args {
            if let crate::front::ir::GenericArg::User(t) = a {
                if !field_checked.contains(&t.as_str()) {
                    let ty = format_ident!("{}", t);
                    let assert = paths::assert_device_safe(span);
                    checks.push(quote_spanned!(span=> const _: () = #assert::<super::super::#ty>();));
                }
            }
        }
        quote! {
            #(#checks)*
            #[doc = #doc]
            impl Listed for #target {
                const INDEX: usize = #index;
            }
        }
    });
    let instance_doc = format!(
        "Names one instance of the template kernel `{qualified}` by its Rust generic arguments; \
         only the instances listed in the macro implement [`Listed`]."
    );
    let marker = if single {
        quote!()
    } else {
        quote! {
            #[doc = #instance_doc]
            pub struct Instance<#(#generics),*>(::core::marker::PhantomData<fn() -> (#(#phantom,)*)>);
        }
    };
    let listed_doc = if single {
        format!(
            "Implemented for every type `{qualified}` was instantiated with; gives the instance's index in the module."
        )
    } else {
        "Implemented for every instance the macro compiled; gives its index in the module.".to_string()
    };
    let items = quote! {
        #marker

        #[doc = #listed_doc]
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        pub trait Listed {
            /// Index of the instance's kernel in the module.
            #[doc(hidden)]
            const INDEX: usize;
        }

        #(#impls)*
    };
    let (index, where_clause) = if single {
        (quote!(<#(#uses),* as Listed>::INDEX), quote!(where #(#uses),*: Listed))
    } else {
        (quote!(<Instance<#(#uses),*> as Listed>::INDEX), quote!(where Instance<#(#uses),*>: Listed))
    };
    // A parameter of one struct type in every instance: checked once, with the first instance's
    // layout (the check.rs template signature made sure they agree on the type).
    let first = mine.first().map(|(index, _)| &checked.kernels[*index]);
    let fields = params
        .iter()
        .enumerate()
        .map(|(pi, m)| match m {
            Mapped::User { .. } => first.and_then(|k| k.fields.get(pi).cloned().flatten()),
            _ => None,
        })
        .collect();
    KernelGen { decl, name: module.module_name(decl), params, fields, index, generics, where_clause, items }
}

/// The docs of the kernel's module (named `module`) and of `launch`.
fn docs(k: &Kernel, module: &str, doc_rows: &str) -> (String, String) {
    let qualified = k.qualified_name();
    // A module named by `rename` or by its namespace path says so, and its launch path.
    let by_path = k.namespaces.iter().chain(std::iter::once(&k.name)).cloned().collect::<Vec<_>>().join("_");
    let (path, named) = if module == k.name {
        (qualified.clone(), String::new())
    } else if module == by_path {
        let why = format!("another kernel of the source is named `{}` too", k.name);
        (module.to_string(), format!("\n\nIn Rust `{module}`, its namespace path: {why}."))
    } else {
        (module.to_string(), format!("\n\nIn Rust `{module}`, as `rename` names it."))
    };
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
            "\n\nA template: `{path}::launch::<{}>(...)` launches the instance with those arguments; only \
             the instances listed in the macro's `instances = [...]` compile.",
            tp.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
        None => String::new(),
    };
    let doc = format!(
        "Launcher for the CUDA kernel `{qualified}({})`{}.\n\n\
         | Rust argument | CUDA parameter | Rust type |\n|---|---|---|\n{doc_rows}{bounds}{template}{named}",
        k.signature,
        if k.extern_c { " (extern \"C\")" } else { "" },
    );
    // The arguments by their CUDA names: rustc's "argument #N of type `T` is missing" only numbers
    // them, and an editor shows this next to the call.
    let args: Vec<String> = k
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| format!("`{}` (`{}`)", param_ident(&p.name, i), p.text.replace('|', "\\|")))
        .collect();
    let args = if args.is_empty() {
        String::new()
    } else {
        format!(" Then one argument per CUDA parameter, in order: {}.", args.join(", "))
    };
    let launch_doc = format!(
        "Launches `{qualified}` on `stream` with `config`.{args}\n\n\
         Loads the module on the stream's device at first use. Device buffers are borrowed for the \
         launch: `const` pointers as shared borrows, others as exclusive ones.\n\n\
         # Safety\nThe kernel runs arbitrary device code: it must stay within the buffers it is \
         given and the grid must match what it expects."
    );
    (doc, launch_doc)
}

/// The launchers (`launch`, `launch_timed`, `launch_cooperative`, `launch_cluster`,
/// `launch_dependent`): they differ
/// only in name, docs, an optional extra parameter, the return type and the launch kind.
fn launchers(gen: &KernelGen<'_>, low: &Lowered, launch_doc: String) -> Vec<TokenStream> {
    let (c_void, stream_ty, config_ty, result) =
        (paths::c_void(), paths::stream(), paths::launch_config(), paths::result());
    let kernel_ref = paths::kernel_ref();
    let (index, where_clause) = (&gen.index, &gen.where_clause);
    let Lowered { generics, args, prelude, packed, .. } = low;
    let n = packed.len();
    let all_generics = if generics.is_empty() { quote!() } else { quote!(<#(#generics),*>) };
    // The argument packing is the same for all, and all end in the one launch routine
    // (`KernelRef::launch_raw`).
    let cluster_dim = paths::cluster_dim();
    let kind = paths::launch_kind();
    let safety = "\n\n# Safety\nAs for `launch`.";
    let variants = [
        (quote!(launch), launch_doc, quote!(), quote!(()), quote!(#kind::Plain), quote!(.map(drop))),
        (
            quote!(launch_timed),
            format!("Like `launch`, and returns the kernel's GPU time in milliseconds (an event pair around it on `stream`; waits for the kernel to finish).{safety}"),
            quote!(),
            quote!(f32),
            quote!(#kind::Timed),
            quote!(.map(|t| t.unwrap_or(0.0))),
        ),
        (
            quote!(launch_cooperative),
            format!("Launches cooperatively, so the kernel may synchronise the whole grid (`cooperative_groups::this_grid().sync()`). A grid larger than what fits on the device at once is an Error, never silently clamped.{safety}"),
            quote!(),
            quote!(()),
            quote!(#kind::Cooperative),
            quote!(.map(drop)),
        ),
        (
            quote!(launch_cluster),
            format!("Launches with thread-block clusters of shape `cluster` (sm_90 and newer); an older GPU or a grid that is not a whole number of clusters is an Error.{safety}"),
            quote!(cluster: #cluster_dim,),
            quote!(()),
            quote!(#kind::Cluster(cluster)),
            quote!(.map(drop)),
        ),
        (
            quote!(launch_dependent),
            "A programmatic dependent launch (`LaunchKind::Dependent`): the kernel may start while the kernel before it on `stream` still runs (sm_90 and newer). It must call `cudaGridDependencySynchronize()` before it touches memory that work writes or reads; a kernel that does not wait is launched as by `launch` when the kernel before it does not call `cudaTriggerProgrammaticLaunchCompletion()`.\n\n# Safety\nAs for `launch`, and the kernel waits for the work before it as said above.".to_string(),
            quote!(),
            quote!(()),
            quote!(#kind::Dependent),
            quote!(.map(drop)),
        ),
    ];
    let mut all: Vec<TokenStream> = variants.into_iter().map(|(fname, fdoc, extra, ret, kind, finish)| {
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
                unsafe { #kernel_ref::new(&super::__MODULE, #index).launch_raw(stream, &config, #kind, &mut __args) } #finish
            }
        }
    })
    .collect();
    all.push(launch_async(gen, low));
    all
}

/// `launch_async`: `launch` (the same checks and binds), then a future of its completion that
/// keeps the buffers borrowed.
fn launch_async(gen: &KernelGen<'_>, low: &Lowered) -> TokenStream {
    let (stream_ty, config_ty, future) = (paths::stream(), paths::launch_config(), paths::gpu_future());
    let kernel_ref = paths::kernel_ref();
    let (index, where_clause) = (&gen.index, &gen.where_clause);
    let Lowered { generics, async_args, names, .. } = low;
    let turbofish = if generics.is_empty() {
        quote!()
    } else {
        let g = generics.iter().map(generic_name);
        quote!(::<#(#g),*>)
    };
    let doc = "`launch` as a future: the kernel is queued now (checked and bound as `launch` does), and the \
               future resolves when the GPU has finished it, to the launch's result (a refusal, or the error the \
               work raised on the GPU). The buffers stay borrowed until the future is dropped; dropping or \
               forgetting it early is sound (see `cuda_embed::future`).\n\n# Safety\nAs for `launch`.";
    quote! {
        #[doc = #doc]
        #[inline]
        pub unsafe fn launch_async<'__a, #(#generics),*>(
            stream: &#stream_ty,
            config: #config_ty,
            #(#async_args),*
        ) -> #future<'__a> #where_clause {
            // SAFETY: the caller's contract, which is `launch`'s.
            let __queued = unsafe { launch #turbofish (stream, config, #(#names),*) };
            // SAFETY: kernel `index` of __MODULE.
            #future::after_launch(stream, __queued, unsafe { #kernel_ref::new(&super::__MODULE, #index) })
        }
    }
}

/// The name of a generic parameter as declared (`T`, `const B: i32`, `T1`), to pass it on.
fn generic_name(declared: &TokenStream) -> TokenStream {
    let mut tokens = declared.clone().into_iter();
    match tokens.next() {
        Some(proc_macro2::TokenTree::Ident(i)) if i == "const" => tokens.next().into_iter().collect(),
        first => first.into_iter().collect(),
    }
}

/// The kernel as a typed value: a `static` for an ordinary kernel, a function for a template's
/// instances; nothing past the largest typed signature.
fn typed_value(gen: &KernelGen<'_>, sig: &[TokenStream], n: usize) -> TokenStream {
    let (index, where_clause) = (&gen.index, &gen.where_clause);
    let kernel_ty = paths::kernel();
    let sig_ty = quote!((#(#sig,)*));
    let tgenerics = template_generics(gen);
    if n > paths::MAX_TYPED_PARAMS {
        quote!()
    } else if gen.generics.is_empty() {
        quote! {
            /// The kernel as a typed, `Copy` value: store it, pass it to generic code, launch it
            /// with a tuple of arguments (`KERNEL.launch(&stream, config, (a, &x, &mut y, n))`).
            // SAFETY: kernel `index` of __MODULE, whose parameters `Sig` describes.
            pub static KERNEL: #kernel_ty<#sig_ty> = unsafe { #kernel_ty::new(&super::__MODULE, #index) };
        }
    } else {
        quote! {
            /// The instance as a typed, `Copy` value: store it, pass it to generic code, launch it
            /// with a tuple of arguments.
            pub fn kernel #tgenerics () -> #kernel_ty<#sig_ty> #where_clause {
                // SAFETY: the instance's index in __MODULE; `Sig` describes its parameters.
                unsafe { #kernel_ty::new(&super::__MODULE, #index) }
            }
        }
    }
}

/// `node` and `update`: the kernel in a typed graph.
fn graph_fns(gen: &KernelGen<'_>, low: &Lowered) -> TokenStream {
    let (config_ty, result) = (paths::launch_config(), paths::result());
    let (index, where_clause) = (&gen.index, &gen.where_clause);
    let kernel_ty = paths::kernel();
    let Lowered { sig, node_args, ids, packed, .. } = low;
    let sig_ty = quote!((#(#sig,)*));
    let n = packed.len();
    if n > paths::MAX_TYPED_PARAMS {
        // No typed `node`: generated graph nodes (`node_axes`) pack the arguments themselves
        // and add the kernel through its handle.
        let (kernel_ref, tgenerics) = (paths::kernel_ref(), template_generics(gen));
        quote! {
            /// The kernel's handle, for generated graph nodes that pack their own arguments.
            #[doc(hidden)]
            pub fn __kernel_ref #tgenerics () -> #kernel_ref #where_clause {
                // SAFETY: kernel `index` of __MODULE.
                unsafe { #kernel_ref::new(&super::__MODULE, #index) }
            }
        }
    } else {
        let (graph, exec, knode) = (paths::graph(), paths::graph_exec(), paths::kernel_node());
        let g = &gen.generics;
        quote! {
            /// Adds a node launching this kernel to `graph`: the arguments as `launch` takes them,
            /// except that buffers are borrowed (shared) for the graph's lifetime, also those the
            /// kernel writes (`&y`, not `&mut y`; see `Graph` for why). The node's dependencies
            /// are inferred from what it reads and writes.
            pub fn node<'__g, #(#g),*>(
                graph: &mut #graph<'__g>,
                config: #config_ty,
                #(#node_args),*
            ) -> #result<#knode<#sig_ty>> #where_clause {
                // SAFETY: kernel `index` of __MODULE, whose parameters `Sig` describes.
                unsafe { #kernel_ty::<#sig_ty>::new(&super::__MODULE, #index) }.node(graph, config, (#(#ids,)*))
            }

            /// Changes the configuration and arguments of `node` (made by `node`) in the
            /// instantiated graph `exec`, typed and checked as `node` is.
            pub fn update<'__g, #(#g),*>(
                exec: &mut #exec<'__g>,
                node: &#knode<#sig_ty>,
                config: #config_ty,
                #(#node_args),*
            ) -> #result<()> #where_clause {
                exec.set(node, config, (#(#ids,)*))
            }
        }
    }
}

/// The template's own type parameters as `<T, U>` (empty for an ordinary kernel).
fn template_generics(gen: &KernelGen<'_>) -> TokenStream {
    if gen.generics.is_empty() {
        quote!()
    } else {
        let g = &gen.generics;
        quote!(<#(#g),*>)
    }
}

/// The Rust module of one kernel (`pub mod saxpy { ... }`).
pub fn kernel_module(gen: &KernelGen<'_>, span: Span) -> TokenStream {
    let (config_ty, result) = (paths::launch_config(), paths::result());
    let (context, module_ty) = (paths::context(), paths::module());
    let (kernel_ref, attributes) = (paths::kernel_ref(), paths::kernel_attributes());
    let k = gen.decl;
    let (index, where_clause) = (&gen.index, &gen.where_clause);
    let name = rust_name(&gen.name).unwrap_or_else(|_| format_ident!("invalid_kernel_name"));
    let qualified = k.qualified_name();
    let low = lower_params(gen, span);
    let (doc, launch_doc) = docs(k, &gen.name, &low.doc_rows);
    let launchers = launchers(gen, &low, launch_doc);
    let value = typed_value(gen, &low.sig, low.packed.len());
    let graph_fns = graph_fns(gen, &low);
    let checks = &low.checks;
    let tgenerics = template_generics(gen);
    // SAFETY of the handle: `index` is this kernel's index in __MODULE.
    let handle = quote!(unsafe { #kernel_ref::new(&super::__MODULE, #index) });
    let items = &gen.items;
    let function_ty = paths::cuda_function();
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
                &super::__MODULE
            }

            #(#launchers)*

            #value

            #graph_fns

            /// cudarc's own handle of this kernel on `ctx`'s device, for cudarc's launch builder and
            /// other cudarc APIs (the same code; see `KernelRef::function` for which loaded module).
            pub fn function #tgenerics (ctx: &::std::sync::Arc<#context>) -> #result<#function_ty> #where_clause {
                #handle.function(ctx)
            }

            /// Registers, thread and memory limits of this kernel on `ctx`'s device.
            pub fn attributes #tgenerics (ctx: &::std::sync::Arc<#context>) -> #result<#attributes> #where_clause {
                #handle.attributes(ctx)
            }

            /// Lets this kernel use up to `bytes` of dynamic shared memory per block on `ctx`'s
            /// device (needed above 48 KiB).
            pub fn set_max_dynamic_shared_memory #tgenerics (ctx: &::std::sync::Arc<#context>, bytes: u32) -> #result<()> #where_clause {
                #handle.set_max_dynamic_shared_memory(ctx, bytes)
            }

            /// Sets the preferred L1/shared-memory carveout (percent) on `ctx`'s device.
            pub fn set_preferred_shared_carveout #tgenerics (ctx: &::std::sync::Arc<#context>, percent: u32) -> #result<()> #where_clause {
                #handle.set_preferred_shared_carveout(ctx, percent)
            }

            /// A 1-D configuration covering `n` threads with the occupancy-maximising block size on
            /// `ctx`'s device, with `dynamic_shared_bytes` of dynamic shared memory per block.
            pub fn occupancy_config #tgenerics (
                ctx: &::std::sync::Arc<#context>,
                n: u32,
                dynamic_shared_bytes: u32,
            ) -> #result<#config_ty> #where_clause {
                #handle.occupancy_config(ctx, n, dynamic_shared_bytes)
            }
        }
    }
}

//! The items `tune = { ... }` adds to the tuned template's module: the embedded `TuneSpec`, the
//! `Tuner` behind `tuner()`, and `tuned(&stream, args...)`, whose arguments are the kernel's own
//! (every variant has the same signature).

use crate::front::ir::{Checked, Module};
use crate::front::tune::resolve::{Op, Plan};
use crate::front::types::{Mapped, RustType};
use crate::gen::kernel::KernelGen;
use crate::gen::params::{lower_params, Lowered};
use crate::gen::{param_ident, paths, rust_type};
use cuda_embed_source::ctypes::RustPath;
use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use sha2::{Digest, Sha256};

/// The tune items for template `ti`, or nothing when the module tunes another (or none).
pub fn items(module: &Module, checked: &Checked, ti: usize) -> TokenStream {
    match &module.tune {
        Some(plan) if plan.template == ti => match tuned(module, checked, plan) {
            Ok(ts) => ts,
            Err(e) => e.to_compile_error(),
        },
        _ => quote!(),
    }
}

fn ops(list: &[Op]) -> TokenStream {
    let op = quote!(::cuda_embed::tune::Op);
    let items = list.iter().map(|o| match o {
        Op::Const(c) => {
            let c = Literal::i64_suffixed(*c);
            quote!(#op::Const(#c))
        }
        Op::Scalar(i) => quote!(#op::Scalar(#i)),
        Op::Param(i) => quote!(#op::Param(#i)),
        Op::Binary(b) => {
            let id = format_ident!(
                "{}",
                match *b {
                    "+" => "Add",
                    "-" => "Sub",
                    "*" => "Mul",
                    "/" => "Div",
                    "%" => "Rem",
                    "min" => "Min",
                    "max" => "Max",
                    _ => "CeilDiv",
                }
            );
            quote!(#op::#id)
        }
    });
    quote!(&[#(#items),*])
}

/// A formula as Rust for one variant: the tune values inlined (so the compiler folds them), each
/// step the runtime's checked `step::*`, `?` on failure (inside a closure returning `Option`).
fn rust_formula(ops: &[Op], values: &[i64]) -> TokenStream {
    let step = quote!(::cuda_embed::tune::expr::step);
    let mut stack: Vec<TokenStream> = Vec::new();
    for o in ops {
        let t = match o {
            Op::Const(c) => {
                let c = Literal::i64_suffixed(*c);
                quote!(#c)
            }
            Op::Scalar(i) => {
                let i = *i as usize;
                quote!(__s[#i])
            }
            Op::Param(j) => {
                let c = Literal::i64_suffixed(values.get(*j as usize).copied().unwrap_or(0));
                quote!(#c)
            }
            Op::Binary(b) => {
                let f = format_ident!(
                    "{}",
                    match *b {
                        "+" => "add",
                        "-" => "sub",
                        "*" => "mul",
                        "/" => "div",
                        "%" => "rem",
                        "min" => "min",
                        "max" => "max",
                        _ => "cdiv",
                    }
                );
                let (rhs, lhs) = (stack.pop().unwrap_or_default(), stack.pop().unwrap_or_default());
                quote!(#step::#f(#lhs, #rhs)?)
            }
        };
        stack.push(t);
    }
    stack.pop().unwrap_or_else(|| quote!(0i64))
}

/// The launch configuration of every variant as a closure `(variant, scalars) -> Option<_>`.
fn config_closure(plan: &Plan) -> TokenStream {
    let step = quote!(::cuda_embed::tune::expr::step);
    let arms = plan.variants.iter().enumerate().map(|(v, var)| {
        let dim = |list: &[Vec<Op>], i: usize| match list.get(i) {
            Some(ops) => {
                let e = rust_formula(ops, &var.values);
                quote!(#step::dim(#e)?)
            }
            None => quote!(1u32),
        };
        let (g0, g1, g2) = (dim(&plan.grid, 0), dim(&plan.grid, 1), dim(&plan.grid, 2));
        let (b0, b1, b2) = (dim(&plan.block, 0), dim(&plan.block, 1), dim(&plan.block, 2));
        let shared = match &plan.shared {
            Some(ops) => {
                let e = rust_formula(ops, &var.values);
                quote!(#step::dim(#e)?)
            }
            None => quote!(0u32),
        };
        let config = paths::launch_config();
        quote! {
            #v => ::core::option::Option::Some(#config {
                grid_dim: (#g0, #g1, #g2),
                block_dim: (#b0, #b1, #b2),
                shared_mem_bytes: #shared,
            }),
        }
    });
    quote! {
        |__v: usize, __s: &[i64]| {
            #[allow(clippy::identity_op, clippy::erasing_op, unused_parens)]
            match __v {
                #(#arms)*
                _ => ::core::option::Option::None,
            }
        }
    }
}

fn dims(list: &[Vec<Op>]) -> TokenStream {
    let d = (0..3).map(|i| list.get(i).map_or_else(|| quote!(&[]), |o| ops(o)));
    quote!([#(#d),*])
}

/// Whether a by-value parameter can feed a formula: an integer or `bool`.
fn is_integer(m: &Mapped) -> bool {
    matches!(m, Mapped::Value(RustType::Builtin(b)) if matches!(b.rust, RustPath::Primitive(p)
        if matches!(p, "i8" | "i16" | "i32" | "i64" | "isize" | "u8" | "u16" | "u32" | "u64" | "usize" | "bool")))
}

fn tuned(module: &Module, checked: &Checked, plan: &Plan) -> syn::Result<TokenStream> {
    let span = plan.spec.span;
    let decl = &module.parsed.templates[plan.template];
    let qualified = decl.qualified_name();
    // Each variant's kernel; all must take the same parameter types.
    let mut indices = Vec::new();
    for v in &plan.variants {
        let Some(k) = checked.kernels.iter().position(|k| k.unit.instance == Some(v.instance)) else {
            return Err(syn::Error::new(span, format!("variant {} is the same kernel as another variant", v.label)));
        };
        indices.push(k);
    }
    let first = &checked.kernels[indices[0]];
    let params = &first.params;
    for (v, &k) in plan.variants.iter().zip(&indices) {
        if checked.kernels[k].params != *params {
            return Err(syn::Error::new(
                span,
                format!(
                    "variants `{}` and `{}` of `{qualified}` take different parameter types: a tuned type parameter \
                     must not change the kernel's parameters (one launcher calls them all)",
                    plan.variants[0].label, v.label
                ),
            ));
        }
    }
    for (name, pi) in &plan.scalars {
        if !is_integer(&params[*pi]) {
            return Err(syn::Error::new(
                reader(plan, name).unwrap_or(span),
                format!(
                    "`{name}` is a `{}` parameter of `{qualified}`: formulas and the key read integer parameters",
                    params[*pi].describe()
                ),
            ));
        }
    }
    // Kinds the tuned launcher does not take yet are refused before anything is lowered.
    for (p, m) in first.unit.kernel.params.iter().zip(params) {
        if let Mapped::Value(RustType::Builtin(b)) = m {
            if matches!(
                b.rust,
                RustPath::Crate("TextureObject" | "SurfaceObject" | "ConditionalHandle" | "RawTensorMap")
            ) {
                return Err(syn::Error::new(
                    span,
                    format!(
                        "`tune` does not support texture, surface, tensor map or graph-condition parameters yet (`{}` of `{qualified}`)",
                        p.name
                    ),
                ));
            }
        }
    }
    let (c_void, stream_ty, result, kind) = (paths::c_void(), paths::stream(), paths::result(), paths::launch_kind());
    let launch_config = paths::launch_config();
    let first_index = indices[0];
    // The parameters lowered as for the kernel's own launchers (`gen::params`, the one checked
    // path through `bind`: every device check, then the binding stream and the binds), for the
    // first variant's kernel: all variants share its parameter types.
    let gen = KernelGen {
        decl: &first.unit.kernel,
        name: module.module_name(&first.unit.kernel),
        params,
        fields: first.fields.clone(),
        index: quote!(#first_index),
        generics: Vec::new(),
        where_clause: quote!(),
        items: quote!(),
    };
    let Lowered { generics, args, prelude, packed, async_args, names, .. } = lower_params(&gen, span);
    // What the tuner needs of each output buffer: its byte size for the scratch copies, its
    // address replaced by a scratch copy's while the variants are timed.
    let (mut outputs, mut bytes, mut rebind) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (p, m)) in first.unit.kernel.params.iter().zip(params).enumerate() {
        if let Mapped::Pointer { elem, mutable: true } = m {
            let id = param_ident(&p.name, i);
            let ty = match elem {
                Some(t) => rust_type(t),
                None => {
                    let g = crate::gen::params::pointer_generic(&first.unit.kernel, i);
                    quote!(#g)
                }
            };
            let j = outputs.len();
            bytes.push(quote!(::cuda_embed::__private::DeviceSlice::<#ty>::num_bytes(#id)));
            outputs.push(quote!(#id));
            rebind.push(quote!(let #id: u64 = __o[#j];));
        }
    }
    let scalar_fn = quote!(::cuda_embed::tune::expr::scalar);
    let scalars = plan.scalars.iter().map(|(name, pi)| {
        let id = param_ident(&decl.params[*pi].name, *pi);
        quote!(#scalar_fn(#id, #qualified, #name)?)
    });
    let scalar_names = plan.scalars.iter().map(|(n, _)| n);
    let (ns, no, np) = (plan.scalars.len(), outputs.len(), packed.len());
    let variants = plan.variants.iter().zip(&indices).map(|(v, index)| {
        let label = &v.label;
        let values = &v.values;
        quote!(::cuda_embed::tune::Variant { label: #label, index: #index, values: &[#(#values),*] })
    });
    let key = &plan.key;
    let exact = plan.spec.exact;
    let (grid, block) = (dims(&plan.grid), dims(&plan.block));
    let shared = plan.shared.as_deref().map_or_else(|| quote!(&[]), ops);
    let formulas = &plan.formulas;
    let source = source_hash(module, plan);
    let all_generics = if generics.is_empty() { quote!() } else { quote!(<#(#generics),*>) };
    let list: Vec<&str> = plan.variants.iter().map(|v| v.label.as_str()).collect();
    let doc = format!(
        "Launches the fastest variant of `{qualified}` for the stream's device and these arguments: \
         {} variants ({}), launched with {formulas}.\n\n\
         The first call for a device and key times every variant on scratch copies of the output buffers \
         and records the winner (see `cuda_embed::tune`); later calls look the choice up and launch it.\n\n\
         # Safety\nThe kernel runs arbitrary device code: every variant must stay within the buffers it is \
         given for the grid the formulas give.",
        list.len(),
        list.join("; ")
    );
    let tuner_ty = quote!(::cuda_embed::tune::Tuner);
    let future = paths::gpu_future();
    let turbofish = if generics.is_empty() { quote!() } else { quote!(::<#(#generics),*>) };
    let async_doc = "`tuned` as a future: the chosen variant is queued now (the first call for a device and key \
        times the variants first, as `tuned` does), and the future resolves when the GPU has finished it, to the \
        launch's result. The buffers stay borrowed until the future is dropped; dropping or forgetting it early \
        is sound (see `cuda_embed::future`).\n\n# Safety\nAs for `tuned`.";
    let config = config_closure(plan);
    Ok(quote_spanned! {Span::call_site()=>
        #[doc(hidden)]
        pub static TUNE_SPEC: ::cuda_embed::tune::TuneSpec = ::cuda_embed::tune::TuneSpec {
            kernel: #qualified,
            source: #source,
            variants: &[#(#variants),*],
            scalars: &[#(#scalar_names),*],
            key: &[#(#key),*],
            exact: #exact,
            grid: #grid,
            block: #block,
            shared: #shared,
            formulas: #formulas,
        };
        static TUNER: #tuner_ty = #tuner_ty::new(&TUNE_SPEC);

        /// The tuner of `tuned`: its variants, the choices made in this process (`forget` to
        /// choose again).
        pub fn tuner() -> &'static #tuner_ty {
            &TUNER
        }

        /// The launch configuration of variant `variant` (in `tuner().variants()` order) for
        /// the scalar arguments the formulas read (`TUNE_SPEC.scalars`), as `tuned` computes it;
        /// `None` when a formula overflows or a dimension does not fit.
        #[doc(hidden)]
        pub fn tuned_config(variant: usize, scalars: &[i64]) -> ::core::option::Option<#launch_config> {
            let __config = #config;
            __config(variant, scalars)
        }

        #[doc = #async_doc]
        #[inline]
        pub unsafe fn tuned_async<'__a, #(#generics),*>(stream: &#stream_ty, #(#async_args),*) -> #future<'__a> {
            // SAFETY: the caller's contract, which is `tuned`'s.
            let __queued = unsafe { tuned #turbofish (stream, #(#names),*) };
            #future::after_named(stream, __queued, #qualified, super::__MODULE.origin())
        }

        #[doc = #doc]
        #[inline]
        pub unsafe fn tuned #all_generics (stream: &#stream_ty, #(#args),*) -> #result<()> {
            let __scalars: [i64; #ns] = [#(#scalars),*];
            let __bytes: [usize; #no] = [#(#bytes),*];
            #(#prelude)*
            let __outputs: [u64; #no] = [#(#outputs),*];
            // SAFETY: the closure launches the kernel it is given with exactly its parameter types
            // (all variants share them), the outputs replaced by addresses of as many bytes.
            unsafe {
                TUNER.launch(&super::__MODULE, stream, &__scalars, &__outputs, &__bytes, #config, |__k, __cfg, __o| {
                    #(#rebind)*
                    let mut __args: [*mut #c_void; #np] = [#(#packed),*];
                    // SAFETY: one pointer per parameter, each to a live local of its exact type.
                    unsafe { __k.launch_raw(stream, __cfg, #kind::Plain, &mut __args) }.map(drop)
                })
            }
        }
    })
}

/// The literal of the first formula or key entry that reads `name`, for errors about it.
fn reader(plan: &Plan, name: &str) -> Option<Span> {
    let spec = &plan.spec;
    let reads = |fs: &[crate::front::tune::Formula]| {
        let mut names = Vec::new();
        fs.iter().for_each(|f| f.names(&mut names));
        names.iter().any(|n| n == name)
    };
    let mut formulas = vec![(&spec.grid.0, spec.grid.1.clone()), (&spec.block.0, spec.block.1.clone())];
    if let Some((lit, f)) = &spec.shared {
        formulas.push((lit, vec![f.clone()]));
    }
    formulas
        .into_iter()
        .find(|(_, fs)| reads(fs))
        .map(|(lit, _)| lit.span())
        .or_else(|| spec.key.iter().find(|(k, _)| k == name).map(|(_, lit)| lit.span()))
}

/// The hash that ties a record to this kernel: the source, the template and the tune option.
fn source_hash(module: &Module, plan: &Plan) -> String {
    let mut h = Sha256::new();
    for line in module.source.lines().filter(|l| !l.trim_start().starts_with("#line")) {
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    h.update(module.parsed.templates[plan.template].qualified_name().as_bytes());
    for v in &plan.variants {
        h.update(v.label.as_bytes());
        h.update(b"\n");
    }
    h.update(plan.formulas.as_bytes());
    h.update(module.options.join(" ").as_bytes());
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

//! The checker: one pass over a [`Module`] that maps every type to Rust and checks it, against
//! what the compiler said when one ran (`None`: no compiler, the source text is all there is).

use crate::front::ir::{Checked, Fields, GenericArg, Global, InstanceArgs, MissingTwin, Module, TypedKernel, Unit};
use crate::front::report::Errors;
use crate::front::types::{self, Mapped, RustType};
use crate::oracle::probe::ProbeKey;
use crate::oracle::ptx;
use crate::oracle::Compiled;
use crate::signature::{self, GlobalVar, Kernel, Param, Parsed, TemplateKind};

/// Maps and checks every kernel, instance and global; every problem is reported, each at the
/// most precise span known (the instance's literal, else the source literal).
pub fn check(module: &Module, compiled: Option<&Compiled>) -> syn::Result<Checked> {
    let span = module.span();
    let parsed = &module.parsed;
    let mut errors = Errors::new();
    let mut kernels = Vec::with_capacity(module.units.len());
    for (ui, unit) in module.units.iter().enumerate() {
        kernels.push(check_kernel(module, ui, unit, compiled, &mut errors));
    }
    let mut instances = Vec::with_capacity(module.instances.len());
    for (ii, inst) in module.instances.iter().enumerate() {
        match instance_args(module, ii, compiled) {
            Ok(args) => instances.push(args),
            Err(e) => {
                errors.error(inst.lit.span(), e);
                instances.push(InstanceArgs::default());
            }
        }
    }
    let mut globals = Vec::new();
    for (gi, g) in parsed.globals.iter().enumerate() {
        let probed = compiled.and_then(|c| c.answers.probed(ProbeKey::GlobalElem(gi)));
        match global_elem(g, parsed, probed.as_ref()) {
            Ok(elem) => {
                let (symbol, bytes) = match compiled {
                    Some(c) => {
                        (c.answers.symbol(ProbeKey::GlobalSymbol(gi)), c.answers.number(ProbeKey::GlobalBytes(gi)))
                    }
                    None => (None, g.literal_len().zip(elem.size()).map(|(n, s)| n * u64::from(s))),
                };
                let size_error = size_error(g, &elem, bytes);
                let fields = struct_fields(&elem, compiled, &g.namespaces, &g.elem);
                globals.push(Global { var: g.clone(), elem, symbol, bytes, size_error, fields });
            }
            Err(e) => errors.error(span, e),
        }
    }
    errors.propagate()?;
    let kernels = dedupe_instances(module, kernels, &instances)?;
    let templates = (0..parsed.templates.len()).map(|ti| template_signature(module, ti, &kernels)).collect();
    let (twins, missing_twins) = twins(&kernels, &globals, compiled);
    Ok(Checked { kernels, instances, templates, globals, twins, missing_twins })
}

/// The Rust twins the compiler's answers allow for the structs passed by value and held in
/// globals, one per Rust name, and the structs that get none (with why).
fn twins(
    kernels: &[TypedKernel],
    globals: &[Global],
    compiled: Option<&Compiled>,
) -> (Vec<(String, Vec<crate::front::ir::TwinField>)>, Vec<MissingTwin>) {
    let mut out: Vec<(String, Vec<crate::front::ir::TwinField>)> = Vec::new();
    let mut missing: Vec<MissingTwin> = Vec::new();
    let by_value = kernels.iter().flat_map(|k| {
        k.params.iter().zip(&k.unit.kernel.params).map(move |(m, p)| {
            (m, p, &k.unit.kernel.namespaces, format!("parameter `{}` of kernel `{}`", p.name, k.unit.display))
        })
    });
    let held = globals.iter().map(|g| (&g.elem, &g.var.elem, &g.var.namespaces, format!("global `{}`", g.var.name)));
    for (m, p, scope, used_by) in by_value.chain(held) {
        let Mapped::User { name, layout } = m else { continue };
        if p.pointer_depth != 0
            || p.reference
            || out.iter().any(|(n, _)| n == name)
            || missing.iter().any(|t| &t.name == name)
        {
            continue;
        }
        let (twin, members) = match compiled {
            Some(c) => (c.twin(scope, &p.base), c.member_names(scope, &p.base).map(<[String]>::to_vec)),
            None => (
                Err("no CUDA compiler ran at build time (twins are generated from the layout nvcc gives the struct; \
                     this build uses NVRTC or compiles at run time)"
                    .to_string()),
                None,
            ),
        };
        match twin {
            Ok(fields) => out.push((name.clone(), fields)),
            Err(why) => missing.push(MissingTwin { name: name.clone(), used_by, why, members, layout: *layout }),
        }
    }
    (out, missing)
}

/// Maps one kernel's parameters and, when a compiler ran, finds it in the PTX and checks the
/// parameter list against it.
fn check_kernel(
    module: &Module,
    ui: usize,
    unit: &Unit,
    compiled: Option<&Compiled>,
    errors: &mut Errors,
) -> TypedKernel {
    let span = module.span();
    let mut params = Vec::new();
    let mut fields = Vec::new();
    for (pi, p) in unit.kernel.params.iter().enumerate() {
        let probed = compiled.and_then(|c| c.answers.probed(ProbeKey::ParamType { kernel: ui, param: pi }));
        match types::map(p, &module.parsed, probed.as_ref()) {
            Ok(m) => {
                if let Err(e) = grid_constant(p, &m) {
                    errors.error(span, format!("kernel `{}` ({}): {e}", unit.display, module.rust_line(&unit.kernel)));
                }
                fields.push(struct_fields(&m, compiled, &unit.kernel.namespaces, p));
                params.push(m);
            }
            Err(e) => {
                errors.error(span, format!("kernel `{}` ({}): {e}", unit.display, module.rust_line(&unit.kernel)))
            }
        }
    }
    let mut symbol = None;
    if let Some(c) = compiled {
        let entry = match unit.instance {
            None => ptx::find(&c.entries, &unit.kernel.namespaces, &unit.kernel.name, unit.kernel.extern_c),
            Some(_) => {
                c.answers.symbol(ProbeKey::KernelSymbol(ui)).and_then(|sym| c.entries.iter().find(|e| e.symbol == sym))
            }
        };
        match entry {
            None => errors.error(
                span,
                format!(
                    "kernel `{}` ({}) was not found in the compiled PTX (is it inside `#if 0`, or declared but never defined?)",
                    unit.display,
                    module.rust_line(&unit.kernel)
                ),
            ),
            Some(entry) => {
                if params.len() == unit.kernel.params.len() {
                    if let Err(e) = cross_check(&unit.kernel, &mut params, entry) {
                        errors.error(span, e);
                    }
                }
                symbol = Some(entry.symbol.clone());
            }
        }
    }
    TypedKernel { unit: unit.clone(), params, fields, symbol }
}

/// The CUDA members of a struct passed by value (`m` is `Mapped::User`, or a toolkit struct of
/// `types::TOOLKIT`), when the compiler told where they lie; `p` is the type as written in
/// namespace `scope`.
fn struct_fields(m: &Mapped, compiled: Option<&Compiled>, scope: &[String], p: &Param) -> Option<Fields> {
    match m {
        Mapped::User { .. } if p.pointer_depth == 0 && !p.reference => compiled?.fields(scope, &p.base),
        // The runtime's plain structs (`cudaExtent`): the toolkit's members, from the global scope.
        Mapped::Value(RustType::Builtin(_)) if p.pointer_depth == 0 && !p.reference => {
            let (name, _, _) = types::toolkit(&p.base)?;
            compiled?.fields(&[], &format!("::{name}"))
        }
        _ => None,
    }
}

/// A `CUtensorMap` parameter must be `const __grid_constant__`: `cp.async.bulk.tensor` reads the
/// descriptor where the launch put it (the kernel's parameter memory, through its generic
/// address); without the qualifier the kernel works on a local copy, which the TMA cannot use.
fn grid_constant(p: &Param, m: &Mapped) -> Result<(), String> {
    let tensor_map = matches!(m, Mapped::Value(t) if types::is_tensor_map(t));
    if !tensor_map || p.text.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "__grid_constant__") {
        return Ok(());
    }
    Err(format!(
        "parameter `{}` (`{}`) is a tensor map: declare it `const __grid_constant__ CUtensorMap {}`, so that \
         `cp.async.bulk.tensor` can address the descriptor in parameter memory (a plain by-value `CUtensorMap` \
         is copied to local memory, which the TMA cannot read)",
        p.name, p.text, p.name
    ))
}

/// Compares the parsed signature with the compiled entry: parameter count, each size, and the
/// alignment of by-value structs. Learns user-struct layouts from the PTX.
fn cross_check(k: &Kernel, params: &mut [Mapped], entry: &ptx::Entry) -> Result<(), String> {
    if entry.params.len() != params.len() {
        return Err(format!(
            "kernel `{}`: the source declares {} parameter(s) but the compiled kernel takes {}; \
             a macro or typedef in the parameter list changed it: write the parameter list out",
            k.name,
            params.len(),
            entry.params.len()
        ));
    }
    for (i, (m, e)) in params.iter_mut().zip(&entry.params).enumerate() {
        let p = &k.params[i];
        if let Mapped::User { layout, .. } = m {
            match layout {
                Some((s, _)) if *s != e.size => {}
                _ => {
                    *layout = Some((e.size, e.align));
                    continue;
                }
            }
        }
        if matches!(m, Mapped::Value(t) if types::is_tensor_map(t)) && e.align < 64 {
            return Err(format!(
                "kernel `{}`, parameter `{}` (`{}`): the compiled kernel takes it aligned to {} bytes, but a \
                 CUtensorMap is aligned to at least 64; the type the compiler saw is not cuda.h's CUtensorMap \
                 (include <cuda.h>, and do not redefine CUtensorMap)",
                k.name, p.name, p.text, e.align
            ));
        }
        if let Some(size) = m.size() {
            if size != e.size {
                return Err(format!(
                    "kernel `{}`, parameter `{}` (`{}`): the compiled kernel takes {} bytes but `{}` is {size} bytes; \
                     the type the compiler saw differs from the written one (check typedefs and macros)",
                    k.name,
                    p.name,
                    p.text,
                    e.size,
                    m.describe()
                ));
            }
        }
    }
    Ok(())
}

/// Works out the Rust generic arguments of instance `ii` (`<f32, 256>`).
fn instance_args(module: &Module, ii: usize, compiled: Option<&Compiled>) -> Result<InstanceArgs, String> {
    let inst = &module.instances[ii];
    let decl = &module.parsed.templates[inst.template];
    let mut args = Vec::new();
    for (ai, (tp, arg)) in decl.template.iter().flatten().zip(&inst.args).enumerate() {
        match &tp.kind {
            TemplateKind::Type => {
                let param = Param {
                    name: tp.name.clone(),
                    base: types::normalise(arg),
                    pointer_depth: 0,
                    pointee_const: false,
                    text: arg.clone(),
                    reference: false,
                };
                let probed = compiled.and_then(|c| c.answers.probed(ProbeKey::TypeArg { instance: ii, arg: ai }));
                match types::map(&param, &module.parsed, probed.as_ref()) {
                    Ok(Mapped::Value(t)) => args.push(GenericArg::Type(t)),
                    Ok(Mapped::User { name, .. }) => args.push(GenericArg::User(name)),
                    Ok(other) => {
                        return Err(format!(
                            "instance `{}`: template argument `{arg}` maps to {}, but a template type argument must be a value type",
                            inst.expr,
                            other.describe()
                        ))
                    }
                    Err(e) => return Err(format!("instance `{}`: {e}", inst.expr)),
                }
            }
            TemplateKind::Value(ty) => {
                let value = match compiled {
                    Some(c) => c.answers.number(ProbeKey::ValueArg { instance: ii, arg: ai }),
                    None => match arg.as_str() {
                        "true" => Some(1),
                        "false" => Some(0),
                        _ => arg.strip_prefix('-').map_or_else(
                            || signature::parse_int(arg),
                            |n| signature::parse_int(n).map(|v| (v as i64).wrapping_neg() as u64),
                        ),
                    },
                };
                let Some(v) = value else {
                    return Err(format!(
                        "instance `{}`: cannot evaluate `{arg}` for template parameter `{ty} {}`{}",
                        inst.expr,
                        tp.name,
                        if compiled.is_none() {
                            ": without nvcc only integer literals and true/false can be read; write the value out"
                        } else {
                            " (see the compiler's message above)"
                        }
                    ));
                };
                args.push(match types::const_generic_type(ty).unwrap_or("i64") {
                    "bool" => GenericArg::Bool(v != 0),
                    "i8" | "i16" | "i32" | "i64" | "isize" => GenericArg::Signed(v as i64),
                    _ => GenericArg::Unsigned(v),
                });
            }
            TemplateKind::Unsupported(_) => unreachable!("rejected by the front end"),
        }
    }
    Ok(InstanceArgs { args })
}

/// The Rust element type of a global.
fn global_elem(g: &GlobalVar, parsed: &Parsed, probed: Option<&types::Probed>) -> Result<Mapped, String> {
    let m = types::map(&g.elem, parsed, probed).map_err(|e| match &g.file {
        Some(file) => format!("{} `{}` ({file}:{}): {e}", g.space, g.qualified_name(), g.line),
        None => format!("{} `{}` (line {}): {e}", g.space, g.qualified_name(), g.line),
    })?;
    Ok(match m {
        Mapped::Pointer { .. } | Mapped::RawPointer => Mapped::RawPointer,
        other => other,
    })
}

/// A global whose size is not a whole number of its elements.
fn size_error(g: &GlobalVar, elem: &Mapped, bytes: Option<u64>) -> Option<String> {
    let (b, s) = (bytes?, elem.size()?);
    (s > 0 && b % u64::from(s) != 0).then(|| {
        format!(
            "{} `{}` is {b} bytes, not a whole number of `{}` ({s} bytes): check its type",
            g.space,
            g.qualified_name(),
            elem.describe()
        )
    })
}

/// Two instances with the same symbol (`k<size_t>` and `k<unsigned long>`) share one compiled
/// kernel; two with the same Rust arguments but different symbols (`k<long>`, `k<long long>`)
/// cannot both be Rust impls: an error when both are listed, and the later one left out when the
/// source's own explicit instantiation made it.
fn dedupe_instances(
    module: &Module,
    kernels: Vec<TypedKernel>,
    args: &[InstanceArgs],
) -> syn::Result<Vec<TypedKernel>> {
    // (template, Rust arguments, symbol, C++ name) of each instance kept.
    let mut seen: Vec<(usize, &InstanceArgs, Option<String>, &str)> = Vec::new();
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        let Some(ii) = k.unit.instance else {
            out.push(k);
            continue;
        };
        let inst = &module.instances[ii];
        if let Some((_, _, sym, other)) = seen.iter().find(|s| s.0 == inst.template && *s.1 == args[ii]) {
            // An instance the source makes itself, that nobody listed, yields to the earlier one
            // (listed ones come first): a library's own instantiations do not refuse the file.
            if (sym.is_none() || *sym != k.symbol) && !module.made_by_source.contains(&ii) {
                return Err(syn::Error::new(
                    inst.lit.span(),
                    format!(
                        "instances `{other}` and `{}` have the same Rust type arguments but are different kernels: list only one",
                        inst.expr
                    ),
                ));
            }
            continue; // the same kernel under another spelling (`int64_t` and `long`)
        }
        seen.push((inst.template, &args[ii], k.symbol.clone(), &inst.expr));
        out.push(k);
    }
    Ok(out)
}

/// The generic launcher signature of template `ti`: parameters of a template type `T` are
/// generic; the others must map to one Rust type for every instance.
fn template_signature(module: &Module, ti: usize, kernels: &[TypedKernel]) -> Result<Vec<Mapped>, String> {
    let decl = &module.parsed.templates[ti];
    let tparams = decl.template.as_deref().unwrap_or_default();
    let mine: Vec<&TypedKernel> =
        kernels.iter().filter(|k| k.unit.instance.is_some_and(|ii| module.instances[ii].template == ti)).collect();
    let type_names: Vec<&str> =
        tparams.iter().filter(|p| matches!(p.kind, TemplateKind::Type)).map(|p| p.name.as_str()).collect();
    let mut params = Vec::new();
    for (pi, p) in decl.params.iter().enumerate() {
        let m = if type_names.contains(&p.base.as_str()) && !p.reference {
            let g = RustType::Generic(p.base.clone());
            match p.pointer_depth {
                0 => Mapped::Value(g),
                1 => Mapped::Pointer { elem: Some(g), mutable: !p.pointee_const },
                _ => Mapped::RawPointer,
            }
        } else if let Some(first) = mine.first() {
            let m = first.params[pi].clone();
            for other in &mine[1..] {
                if other.params[pi].describe() != m.describe() {
                    return Err(format!(
                        "parameter `{}` (`{}`) of template kernel `{}` becomes `{}` in `{}` but `{}` in `{}`: \
                         write it with a template parameter (`T`) directly, or list instances that agree",
                        p.name,
                        p.text,
                        decl.qualified_name(),
                        m.describe(),
                        first.unit.display,
                        other.params[pi].describe(),
                        other.unit.display
                    ));
                }
            }
            m
        } else {
            types::map(p, &module.parsed, None)
                .map_err(|e| format!("template kernel `{}`: {e}", decl.qualified_name()))?
        };
        params.push(m);
    }
    Ok(params)
}

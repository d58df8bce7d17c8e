//! The front end: macro input to [`Module`]. Reads the source (inline or from a file), parses its
//! declarations, checks the names it will generate, resolves `instances = [...]` against the
//! templates and scans the includes. Nothing here asks a compiler or maps a type.

pub mod deduce; // template arguments deduced from an explicit instantiation's parameter list
pub mod headers; // the kernels and globals the included user headers define
pub mod includes; // the headers the source includes
pub mod input; // the macro's arguments
pub mod ir; // the typed IR of one module, as read and as checked
pub mod names; // the Rust module each kernel generates, and which templates generate none
pub mod report; // errors collected and reported together
pub mod tune; // `tune = { ... }`: the option as data, resolved against the templates
pub mod types; // the CUDA-to-Rust type model and tables, and the mapping of one parameter

use crate::front::input::{Input, Source};
use crate::front::ir::{source_line, CallSite, Instance, Module, Unit};
use crate::front::names::Claim;
use crate::front::report::{Errors, Failure};
use crate::signature::{self, Kernel, Parsed, TemplateKind};
use std::collections::HashMap;
use std::path::PathBuf;
use syn::LitStr;

/// The source text, its `#line` directive, the include search path and the `.cu` file.
struct SourceText {
    text: String,
    line_directive: String,
    include_dirs: Vec<PathBuf>,
    file: Option<PathBuf>,
}

/// The crate root: `CARGO_MANIFEST_DIR`, else the current directory.
fn manifest_dir() -> Option<PathBuf> {
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).or_else(|| std::env::current_dir().ok())
}

fn source_text(input: &Input, site: &CallSite) -> Result<SourceText, String> {
    let manifest = manifest_dir();
    let mut include_dirs: Vec<PathBuf> = Vec::new();
    for (d, _) in &input.include_dirs {
        let p = manifest.as_ref().map_or_else(|| PathBuf::from(d), |m| m.join(d));
        if !p.is_dir() {
            return Err(format!(
                "include directory `{d}` does not exist; `include_dirs` are relative to the crate root (the directory holding Cargo.toml)"
            ));
        }
        include_dirs.push(p);
    }
    match &input.source {
        Source::Inline(lit) => {
            let line_directive = format!("#line {} \"{}\"", site.line, site.file.replace('\\', "/"));
            let mut dirs: Vec<PathBuf> = site.dir.iter().cloned().collect();
            dirs.extend(include_dirs);
            Ok(SourceText { text: lit.value(), line_directive, include_dirs: dirs, file: None })
        }
        Source::File(lit) => {
            let rel = lit.value();
            let path = manifest.as_ref().map_or_else(|| PathBuf::from(&rel), |m| m.join(&rel));
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!("cannot read the CUDA file `{rel}`: {e}; `file` is relative to the crate root (the directory holding Cargo.toml)")
            })?;
            let line_directive = format!("#line 1 \"{}\"", rel.replace('\\', "/"));
            let mut dirs: Vec<PathBuf> = path.parent().map(|p| p.to_path_buf()).into_iter().collect();
            dirs.extend(include_dirs);
            Ok(SourceText { text, line_directive, include_dirs: dirs, file: Some(path) })
        }
    }
}

/// The identifier-like words of `text` (runs of letters, digits and `_`; empty pieces too).
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
}

/// The CUDA headers that declare the reduced-precision types the source names, as CuPy adds
/// them: `__half`/`__half2` (`cuda_fp16.h`), `__nv_bfloat16`/`__nv_bfloat162` (`cuda_bf16.h`),
/// `__nv_fp8_*` (`cuda_fp8.h`), so a kernel taking `__half` compiles without the user knowing
/// which header to include. Each is one `#include` line before the `#line` directive (so no
/// line number moves); the headers have include guards, so a source that includes them itself
/// is unaffected. `extra` is text outside the source that names types too (template instances).
pub fn automatic_includes(source: &str, extra: &str) -> String {
    let mut found = [false; 3];
    for text in [source, extra] {
        for word in words(text) {
            match word {
                "__half" | "__half2" | "__half_raw" => found[0] = true,
                "__nv_bfloat16" | "__nv_bfloat162" => found[1] = true,
                w if w.starts_with("__nv_fp8") => found[2] = true,
                _ => {}
            }
        }
    }
    ["cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h"]
        .iter()
        .zip(found)
        .filter(|(_, f)| *f)
        .map(|(h, _)| format!("#include <{h}>\n"))
        .collect()
}

fn instances_text(input: &Input) -> String {
    input.instances.iter().map(|l| l.value()).collect::<Vec<_>>().join(" ")
}

pub use cuda_embed_source::options::defines;

/// Reads the macro input into a [`Module`].
pub fn lower(input: &Input, site: &CallSite) -> Result<Module, Failure> {
    let lit = input.source.lit();
    let span = lit.span();
    let early = |msg: String| Failure::early(syn::Error::new(span, msg));
    let src = source_text(input, site).map_err(early)?;
    if src.text.trim().is_empty() {
        return Err(early("the CUDA source is empty: write at least one `__global__` function".into()));
    }
    let mut headers = includes::scan(
        &src.text,
        src.file.as_ref().and_then(|f| f.parent()).or(site.dir.as_deref()),
        &src.include_dirs,
    )
    .map_err(|error| {
        // Every kernel still gets an (empty) module, so the include error is the only one.
        let names =
            signature::parse(&src.text).map(|p| p.kernels.iter().chain(&p.templates).map(|k| k.name.clone()).collect());
        Failure { error: syn::Error::new(span, error), kernels: names.unwrap_or_default() }
    })?;
    let header_texts: Vec<&str> = headers.iter().map(|h| h.text.as_str()).collect();
    let defines = defines(&input.options);
    let mut parsed = signature::parse_with(&src.text, &defines, &header_texts)
        .map_err(|e| early(format!("cannot read the CUDA source: {}", e.0)))?;
    let header_error =
        crate::front::headers::read(&mut parsed, &mut headers, &defines, manifest_dir().as_deref()).err();
    let kernels: Vec<String> = parsed.kernels.iter().chain(&parsed.templates).map(|k| k.name.clone()).collect();
    let fail = |msg: String| Failure { error: syn::Error::new(span, msg), kernels: kernels.clone() };
    if let Some(e) = header_error {
        return Err(fail(e));
    }
    // With `link`, each instance gets an explicit instantiation in its unit's text (see
    // `crate::link`), which would be one too many for those the source makes itself.
    let explicit = if input.link.enabled() {
        Vec::new()
    } else {
        let at = |i: &signature::Instantiation| source_line(lit, src.file.is_some(), site, i.file.as_deref(), i.line);
        explicit_instances(&parsed, at).map_err(fail)?
    };
    check_declarations(&parsed, input, !explicit.is_empty()).map_err(fail)?;
    let (mut instances, pending) =
        resolve_instances(input, &parsed).map_err(|error| Failure { error, kernels: kernels.clone() })?;
    let listed = instances.len();
    add_explicit_instances(&parsed, &explicit, &mut instances, span);
    let mut made_by_source = listed..instances.len();
    let mut tune = input
        .tune
        .as_ref()
        .map(|spec| crate::front::tune::resolve(spec, &parsed, &mut instances, resolve_instance))
        .transpose()
        .map_err(|error| Failure { error, kernels: kernels.clone() })?;
    let claims = claims(&parsed, &instances, &made_by_source, tune.as_ref(), !pending.is_empty());
    let naming = names::plan(&parsed, &claims, &input.rename, span)
        .map_err(|error| Failure { error, kernels: kernels.clone() })?;
    drop_templates(&mut parsed, &naming.keep, &mut instances, &mut made_by_source, tune.as_mut());
    let archs = match &input.archs {
        Some((a, _)) => a.clone(),
        None => cuda_embed_source::options::archs_from_env().map_err(fail)?,
    };
    let origin = match &src.file {
        Some(_) => format!("{} ({}:{})", lit.value(), site.file, site.line),
        None => format!("{}:{}", site.file, site.line),
    };
    let mut units: Vec<Unit> = parsed
        .kernels
        .iter()
        .map(|k| Unit {
            kernel: k.clone(),
            expr: format!("::{}", k.qualified_name()),
            display: k.qualified_name(),
            instance: None,
        })
        .collect();
    for (ii, inst) in instances.iter().enumerate() {
        units.push(Unit {
            kernel: substitute(&parsed.templates[inst.template], &inst.args),
            expr: inst.expr.clone(),
            display: inst.expr.clone(),
            instance: Some(ii),
        });
    }
    let prologue = format!("{}{}", automatic_includes(&src.text, &instances_text(input)), src.line_directive);
    Ok(Module {
        lit: lit.clone(),
        site: site.clone(),
        source: src.text,
        line_directive: prologue,
        include_dirs: src.include_dirs,
        file: src.file,
        headers,
        parsed,
        units,
        instances,
        made_by_source,
        pending,
        options: input.options.clone(),
        archs,
        origin,
        listing: input.listing.clone(),
        tune,
        module_names: naming.names,
    })
}

/// What must hold of the declarations before anything is generated: kernels to generate, one
/// signature each, and Rust names that do not collide.
fn check_declarations(parsed: &Parsed, input: &Input, explicit: bool) -> Result<(), String> {
    if let Some(o) = parsed.overloaded.first() {
        return Err(format!(
            "kernel `{o}` is overloaded: give each overload its own name (a launcher needs one signature)"
        ));
    }
    if parsed.kernels.is_empty() && parsed.templates.is_empty() && parsed.overloaded_templates.is_empty() {
        return Err(
            "no `__global__` function in the CUDA source: write e.g. `extern \"C\" __global__ void k(float* x) { ... }`"
                .into(),
        );
    }
    if parsed.kernels.is_empty() && input.instances.is_empty() && input.tune.is_none() && !explicit {
        let mut list: Vec<String> = parsed.templates.iter().map(|k| k.qualified_name()).collect();
        list.extend(parsed.overloaded_templates.iter().map(|o| format!("{o} (overloaded)")));
        let example = parsed.templates.first().and_then(|t| t.template.as_ref()).map_or(String::new(), |p| {
            let args: Vec<&str> =
                p.iter().map(|t| if matches!(t.kind, TemplateKind::Type) { "float" } else { "256" }).collect();
            format!("{}<{}>", parsed.templates[0].qualified_name(), args.join(", "))
        });
        let example = if example.is_empty() { "k<float>".to_string() } else { example };
        return Err(format!(
            "the CUDA source has only template kernels ({}): list the instances to build, e.g. `instances = [\"{example}\"]`",
            list.join(", ")
        ));
    }
    let mut global_names = HashMap::new();
    for g in &parsed.globals {
        if let Some(prev) = global_names.insert(g.name.clone(), g.qualified_name()) {
            return Err(format!(
                "globals `{prev}` and `{}` would both become a Rust static named `{}`: rename one",
                g.qualified_name(),
                g.name
            ));
        }
    }
    Ok(())
}

/// The explicit instantiations of the source ([`Parsed::instantiations`]) that can become
/// launchers, as `instances = [...]` entries would be written, their deduced template arguments
/// written out ([`deduce`]); `at` says where one is written, for the error when its arguments
/// cannot be deduced.
fn explicit_instances(
    parsed: &Parsed,
    at: impl Fn(&signature::Instantiation) -> String,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for inst in &parsed.instantiations {
        let Some(text) = deduce::complete(inst, parsed, &at(inst))? else { continue };
        // The probes name an instance from the global scope: inside a namespace, only arguments
        // that mean the same there (builtin types, numbers) are safe to repeat.
        let global = |a: &String| {
            types::builtin(&types::normalise(a)).is_some()
                || signature::parse_int(a).is_some()
                || a == "true"
                || a == "false"
        };
        let Some((_, args)) = split_instance(&text) else { continue };
        if inst.namespaces.is_empty() || args.iter().all(global) {
            out.push(text);
        }
    }
    Ok(out)
}

/// Adds the source's explicit instantiations (`explicit`, see [`explicit_instances`]) to
/// `instances`, after those listed (an instance listed too is built once). One that cannot be
/// launched from Rust (its template overloaded, an argument no Rust generic can stand for, ...)
/// is left out: the source compiles as it is, and listing it in `instances` says why.
fn add_explicit_instances(
    parsed: &Parsed,
    explicit: &[String],
    instances: &mut Vec<Instance>,
    span: proc_macro2::Span,
) {
    for text in explicit {
        if let Ok((template, args, expr)) = resolve_instance(text, parsed, instances) {
            instances.push(Instance { lit: LitStr::new(text, span), template, args, expr });
        }
    }
}

/// How strongly each template wants its Rust module ([`names`]): listed in `instances` or
/// `tune`d, instantiated only by the source itself (`made_by_source`), or not at all. With
/// instances still to resolve against linked files (`pending`) any template may be listed.
fn claims(
    parsed: &Parsed,
    instances: &[Instance],
    made_by_source: &std::ops::Range<usize>,
    tune: Option<&crate::front::tune::Plan>,
    pending: bool,
) -> Vec<Claim> {
    (0..parsed.templates.len())
        .map(|ti| {
            let mine = |ii: &usize| instances[*ii].template == ti;
            let listed = (0..instances.len()).filter(|ii| !made_by_source.contains(ii)).any(|ii| mine(&ii));
            if pending || listed || tune.is_some_and(|t| t.template == ti) {
                Claim::Listed
            } else if made_by_source.clone().any(|ii| mine(&ii)) {
                Claim::Source
            } else {
                Claim::Unused
            }
        })
        .collect()
}

/// Leaves out of `parsed.templates` the templates that generate no module (`keep`, from
/// [`names::plan`]), their instances with them: a library's same-named templates that nothing
/// instantiates, or overloads of a kernel's name, cost nothing until one is used. The compiler
/// still compiles the source as it is. Indices into the templates and the instances are
/// renumbered.
fn drop_templates(
    parsed: &mut Parsed,
    keep: &[bool],
    instances: &mut Vec<Instance>,
    made_by_source: &mut std::ops::Range<usize>,
    mut tune: Option<&mut crate::front::tune::Plan>,
) {
    if keep.iter().all(|k| *k) {
        return;
    }
    let ms = made_by_source.clone();
    let renumber = |keep: &[bool]| {
        let mut next = 0usize;
        keep.iter()
            .map(|k| {
                let at = next;
                next += usize::from(*k);
                at
            })
            .collect::<Vec<usize>>()
    };
    let templates = renumber(keep);
    let kept_instances: Vec<bool> = instances.iter().map(|i| keep[i.template]).collect();
    let new_index = renumber(&kept_instances);
    let mut at = 0;
    parsed.templates.retain(|_| {
        at += 1;
        keep[at - 1]
    });
    let mut at = 0;
    instances.retain(|_| {
        at += 1;
        kept_instances[at - 1]
    });
    for i in instances.iter_mut() {
        i.template = templates[i.template];
    }
    let end = made_by_source.start + kept_instances[ms.clone()].iter().filter(|k| **k).count();
    *made_by_source = made_by_source.start..end;
    if let Some(t) = tune.as_mut() {
        t.template = templates[t.template];
        for v in &mut t.variants {
            v.instance = new_index[v.instance];
        }
    }
}

/// Replaces whole-word template parameter names in `text`.
fn replace_words(text: &str, from: &str, to: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(if word == from { to } else { word });
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The template's parameters with the instance's arguments substituted.
pub(crate) fn substitute(decl: &Kernel, args: &[String]) -> Kernel {
    let mut k = decl.clone();
    for (tp, arg) in decl.template.iter().flatten().zip(args) {
        let arg = if matches!(tp.kind, TemplateKind::Type) { types::normalise(arg) } else { arg.clone() };
        for p in &mut k.params {
            p.base = if p.base == tp.name { arg.clone() } else { replace_words(&p.base, &tp.name, &arg) };
            p.text = replace_words(&p.text, &tp.name, &arg);
        }
    }
    k.template = None;
    k
}

/// Splits `ns::axpy<float, 256>` into (`ns::axpy`, [`float`, `256`]).
fn split_instance(text: &str) -> Option<(String, Vec<String>)> {
    let open = text.find('<')?;
    let close = text.rfind('>')?;
    if close < open || !text[close + 1..].trim().is_empty() {
        return None;
    }
    let name = text[..open].trim().trim_start_matches("::").to_string();
    let inner = &text[open + 1..close];
    let mut args = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                args.push(inner[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner.trim().is_empty() {
        args.push(inner[start..].trim().to_string());
    }
    (!name.is_empty()).then_some((name, args))
}

/// Resolves every entry of `instances = [...]`; each bad one is an error at its literal. With
/// `link` files, an entry naming no kernel of the source is returned apart (the second list),
/// to be resolved against the linked files' templates.
fn resolve_instances(input: &Input, parsed: &Parsed) -> syn::Result<(Vec<Instance>, Vec<LitStr>)> {
    let mut errors = Errors::new();
    let mut out: Vec<Instance> = Vec::new();
    let mut pending = Vec::new();
    for lit in &input.instances {
        if !input.link.files.is_empty() && !names_a_kernel(&lit.value(), parsed) {
            pending.push(lit.clone());
            continue;
        }
        match resolve_instance(&lit.value(), parsed, &out) {
            Ok((template, args, expr)) => out.push(Instance { lit: lit.clone(), template, args, expr }),
            Err(msg) => errors.error(lit.span(), msg),
        }
    }
    errors.propagate()?;
    Ok((out, pending))
}

/// Whether the instance `text` names a template or kernel of `parsed` (a malformed entry does:
/// its error is reported where it is written).
fn names_a_kernel(text: &str, parsed: &Parsed) -> bool {
    let Some((name, _)) = split_instance(text) else { return true };
    parsed.templates.iter().chain(&parsed.kernels).any(|k| k.qualified_name() == name || k.name == name)
        || parsed.overloaded_templates.iter().any(|o| *o == name || o.rsplit("::").next() == Some(name.as_str()))
}

/// One instance: its template, its arguments with defaults filled in, and its C++ name.
pub(crate) fn resolve_instance(
    text: &str,
    parsed: &Parsed,
    earlier: &[Instance],
) -> Result<(usize, Vec<String>, String), String> {
    let (name, mut args) = split_instance(text).ok_or_else(|| {
        format!("`{text}` is not a template instance: write the kernel and its arguments, e.g. \"axpy<float>\"")
    })?;
    let matches: Vec<usize> = parsed
        .templates
        .iter()
        .enumerate()
        .filter(|(_, k)| k.qualified_name() == name || (!name.contains("::") && k.name == name))
        .map(|(i, _)| i)
        .collect();
    let template = match matches.as_slice() {
        [one] => *one,
        [] => {
            let overloaded = parsed
                .overloaded_templates
                .iter()
                .find(|o| **o == name || (!name.contains("::") && o.rsplit("::").next() == Some(name.as_str())));
            if let Some(o) = overloaded {
                return Err(format!(
                    "template kernel `{o}` is overloaded, so `{text}` names no one kernel (a launcher needs one \
                     signature): give the overload you launch its own name, or write a `__global__` template of \
                     another name that calls it and list that"
                ));
            }
            if parsed.kernels.iter().any(|k| k.qualified_name() == name || k.name == name) {
                return Err(format!(
                    "`{name}` is not a template kernel: it is generated without `instances`; remove \"{text}\""
                ));
            }
            let known: Vec<String> = parsed.templates.iter().map(|k| k.qualified_name()).collect();
            return Err(format!(
                "no template kernel `{name}` in the CUDA source{}",
                if known.is_empty() { String::new() } else { format!(" (its template kernels: {})", known.join(", ")) }
            ));
        }
        _ => {
            return Err(format!(
                "`{name}` names template kernels in several namespaces: qualify it (`ns::{name}<...>`)"
            ))
        }
    };
    let decl = &parsed.templates[template];
    let params = decl.template.as_deref().unwrap_or_default();
    if let Some(bad) = params.iter().find_map(|p| match &p.kind {
        TemplateKind::Unsupported(t) => Some(t),
        _ => None,
    }) {
        return Err(format!(
            "template parameter `{bad}` of `{}` cannot become a Rust generic (parameter packs and template template \
             parameters are not supported): write a template with plain type and integer parameters that calls it",
            decl.qualified_name()
        ));
    }
    if args.len() > params.len() {
        return Err(format!(
            "`{text}` gives {} template arguments but `{}` takes {}",
            args.len(),
            decl.qualified_name(),
            params.len()
        ));
    }
    for p in &params[args.len()..] {
        match &p.default {
            Some(d) => args.push(d.clone()),
            None => {
                return Err(format!(
                    "`{text}` gives {} template arguments but `{}` takes {}: add the missing ones",
                    args.len(),
                    decl.qualified_name(),
                    params.len()
                ))
            }
        }
    }
    for (p, a) in params.iter().zip(&args) {
        let looks_like_value = signature::parse_int(a).is_some() || a == "true" || a == "false";
        match &p.kind {
            TemplateKind::Type if looks_like_value => {
                return Err(format!("`{text}`: `{a}` is a value, but template parameter `{}` takes a type", p.name))
            }
            TemplateKind::Type if a.contains('*') || a.contains('&') => {
                return Err(format!(
                    "`{text}`: `{a}` is a pointer or reference; template type arguments must be value types \
                     (write the `*` in the kernel's parameter list instead)"
                ))
            }
            TemplateKind::Value(ty) => {
                if types::builtin(&types::normalise(a)).is_some() {
                    return Err(format!(
                        "`{text}`: `{a}` is a type, but template parameter `{}` takes a `{ty}` value",
                        p.name
                    ));
                }
                if types::const_generic_type(ty).is_none() {
                    return Err(format!(
                        "template parameter `{} {}` of `{}` cannot become a Rust const generic: use an integer or bool parameter",
                        ty,
                        p.name,
                        decl.qualified_name()
                    ));
                }
            }
            _ => {}
        }
    }
    let expr = format!("{}<{}>", decl.qualified_name(), args.join(", "));
    if earlier.iter().any(|o| o.expr == expr) {
        return Err(format!("instance `{expr}` is listed twice"));
    }
    Ok((template, args, expr))
}

//! From macro input to Rust items: parse, compile, check, generate.

use crate::compile::{self, Request};
use crate::includes;
use crate::input::{Compiler, Input, Source};
use crate::probe::Probe;
use crate::ptx;
use crate::signature::{self, GlobalVar, Kernel, Parsed, TemplateKind};
use crate::types::{self, Builtin, Mapped};
use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use syn::LitStr;

/// Where the macro was invoked, as rustc reports it.
#[derive(Debug, Clone, Default)]
pub struct CallSite {
    /// The Rust file as rustc names it in diagnostics (`src/main.rs`).
    pub file: String,
    /// 1-based line of the source literal's first character.
    pub line: usize,
    /// The file's directory on disk, for `#include "..."` next to the Rust file.
    pub dir: Option<PathBuf>,
}

/// Expands `cuda_kernel!`. Errors become `compile_error!`s plus fallback items, so the user sees
/// the real error and not a cascade of "cannot find `saxpy`".
pub fn expand(tokens: TokenStream, site: CallSite) -> TokenStream {
    let input: Input = match syn::parse2(tokens) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match expand_input(&input, &site) {
        Ok(ts) => ts,
        Err((e, mut names)) => {
            names.sort();
            names.dedup();
            let fallback = names.iter().filter_map(|n| kernel_ident(n).ok()).map(|id| {
                quote! { #[allow(non_snake_case, dead_code)] pub mod #id {} }
            });
            let err = e.to_compile_error();
            quote! { #err #(#fallback)* }
        }
    }
}

type Failure = (syn::Error, Vec<String>);

/// One launchable kernel: an ordinary `__global__` function or one instance of a template.
struct Typed {
    /// The kernel with concrete parameter types (template parameters substituted).
    kernel: Kernel,
    params: Vec<Mapped>,
    /// The symbol in the compiled image (nvcc path), else empty.
    symbol: String,
    /// The C++ entity naming it: `::ns::k`, `ns::axpy<float>`.
    expr: String,
    /// For messages and `KernelSpec::name`: `ns::k`, `ns::axpy<float>`.
    display: String,
    /// Index into `instances` for template instances.
    instance: Option<usize>,
}

/// One entry of `instances = [...]`, resolved against the source.
struct Instance {
    lit: LitStr,
    /// Index into `Parsed::templates`.
    template: usize,
    /// Template arguments as written (defaults filled in).
    args: Vec<String>,
    /// `ns::axpy<float>`.
    expr: String,
    /// The Rust generic arguments, once known.
    rust_args: Vec<TokenStream>,
    /// The user structs among them (for device-safety checks).
    user_types: Vec<String>,
}

/// A global variable with what is known about it.
struct Global {
    var: GlobalVar,
    elem: Mapped,
    symbol: String,
    /// Size in bytes, when known at build time.
    bytes: Option<u64>,
}

fn source_text(input: &Input, site: &CallSite) -> Result<(String, String, Vec<PathBuf>, Option<PathBuf>), String> {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).or_else(|| std::env::current_dir().ok());
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
            let line = format!("#line {} \"{}\"", site.line, site.file.replace('\\', "/"));
            let mut dirs: Vec<PathBuf> = site.dir.iter().cloned().collect();
            dirs.extend(include_dirs);
            Ok((lit.value(), line, dirs, None))
        }
        Source::File(lit) => {
            let rel = lit.value();
            let path = manifest.as_ref().map_or_else(|| PathBuf::from(&rel), |m| m.join(&rel));
            let text = std::fs::read_to_string(&path).map_err(|e| {
                format!("cannot read the CUDA file `{rel}`: {e}; `file` is relative to the crate root (the directory holding Cargo.toml)")
            })?;
            let line = format!("#line 1 \"{}\"", rel.replace('\\', "/"));
            let mut dirs: Vec<PathBuf> = path.parent().map(|p| p.to_path_buf()).into_iter().collect();
            dirs.extend(include_dirs);
            Ok((text, line, dirs, Some(path)))
        }
    }
}

fn expand_input(input: &Input, site: &CallSite) -> Result<TokenStream, Failure> {
    let lit = input.source.lit();
    let span = lit.span();
    let err = |msg: String| (syn::Error::new(span, msg), Vec::new());
    let (source, line_directive, include_dirs, file) = source_text(input, site).map_err(err)?;
    if source.trim().is_empty() {
        return Err(err("the CUDA source is empty: write at least one `__global__` function".into()));
    }
    let parsed = signature::parse(&source).map_err(|e| err(format!("cannot read the CUDA source: {}", e.0)))?;
    let names: Vec<String> = parsed.kernels.iter().chain(&parsed.templates).map(|k| k.name.clone()).collect();
    let fail = |msg: String| (syn::Error::new(span, msg), names.clone());
    if let Some(o) = parsed.overloaded.first() {
        return Err(fail(format!(
            "kernel `{o}` is overloaded: give each overload its own name (a launcher needs one signature)"
        )));
    }
    if parsed.kernels.is_empty() && parsed.templates.is_empty() {
        return Err(fail(
            "no `__global__` function in the CUDA source: write e.g. `extern \"C\" __global__ void k(float* x) { ... }`"
                .into(),
        ));
    }
    if parsed.kernels.is_empty() && input.instances.is_empty() {
        let list: Vec<String> = parsed.templates.iter().map(|k| k.qualified_name()).collect();
        let example = parsed.templates[0].template.as_ref().map_or(String::new(), |p| {
            let args: Vec<&str> =
                p.iter().map(|t| if matches!(t.kind, TemplateKind::Type) { "float" } else { "256" }).collect();
            format!("{}<{}>", parsed.templates[0].qualified_name(), args.join(", "))
        });
        return Err(fail(format!(
            "the CUDA source has only template kernels ({}): list the instances to build, e.g. `instances = [\"{example}\"]`",
            list.join(", ")
        )));
    }
    let mut seen = HashMap::new();
    for k in parsed.kernels.iter().chain(&parsed.templates) {
        if let Err(e) = kernel_ident(&k.name) {
            return Err(fail(e));
        }
        if let Some(prev) = seen.insert(k.name.clone(), k.qualified_name()) {
            return Err(fail(format!(
                "kernels `{prev}` and `{}` would both generate a Rust module named `{}`: rename one",
                k.qualified_name(),
                k.name
            )));
        }
    }
    let mut global_names = HashMap::new();
    for g in &parsed.globals {
        if let Some(prev) = global_names.insert(g.name.clone(), g.qualified_name()) {
            return Err(fail(format!(
                "globals `{prev}` and `{}` would both become a Rust static named `{}`: rename one",
                g.qualified_name(),
                g.name
            )));
        }
    }
    let headers =
        includes::scan(&source, file.as_ref().and_then(|f| f.parent()).or(site.dir.as_deref()), &include_dirs)
            .map_err(fail)?;
    let mut instances = resolve_instances(input, &parsed).map_err(|e| (e, names.clone()))?;

    let archs = match &input.archs {
        Some((a, _)) => a.clone(),
        None => compile::archs_from_env().map_err(fail)?,
    };
    let nvcc = match input.compiler {
        Compiler::Nvrtc => Err(compile::NoNvcc::Forced),
        Compiler::Auto => compile::find_nvcc().map_err(fail)?,
        Compiler::Nvcc => match compile::find_nvcc().map_err(fail)? {
            Ok(n) => Ok(n),
            Err(why) => {
                return Err(fail(format!(
                    "`compiler = \"nvcc\"` but {why}: install the CUDA toolkit, set NVCC or CUDA_PATH, or use `compiler = \"auto\"`"
                )))
            }
        },
    };
    let origin = match &file {
        Some(_) => format!("{} ({}:{})", lit.value(), site.file, site.line),
        None => format!("{}:{}", site.file, site.line),
    };

    // Every launchable kernel: the ordinary ones, then one per listed template instance.
    let mut units: Vec<Typed> = parsed
        .kernels
        .iter()
        .map(|k| Typed {
            kernel: k.clone(),
            params: Vec::new(),
            symbol: String::new(),
            expr: format!("::{}", k.qualified_name()),
            display: k.qualified_name(),
            instance: None,
        })
        .collect();
    for (ii, inst) in instances.iter().enumerate() {
        let decl = &parsed.templates[inst.template];
        units.push(Typed {
            kernel: substitute(decl, &inst.args),
            params: Vec::new(),
            symbol: String::new(),
            expr: inst.expr.clone(),
            display: inst.expr.clone(),
            instance: Some(ii),
        });
    }

    let mut deps: Vec<PathBuf> = file.iter().cloned().collect();
    deps.extend(headers.iter().map(|h| h.path.clone()));
    let mut globals: Vec<Global> = Vec::new();
    let image: TokenStream = match nvcc {
        Ok(nvcc) => {
            let req = |src: &str| {
                compile::compile(
                    &nvcc,
                    &Request {
                        source: src,
                        line_directive: &line_directive,
                        options: &input.options,
                        archs: &archs,
                        include_dirs: &include_dirs,
                    },
                )
            };
            let (essential, extra) = probes_for(&units, &instances, &parsed);
            let full = format!(
                "{source}\n#line 1 \"cuda-embed-probe\"\n{}",
                crate::probe::code(&[essential.clone(), extra].concat())
            );
            // If the type probes do not compile (an unusual declaration), retry with what cannot
            // be left out (template instantiations, symbols): errors then are the user's own.
            let built = req(&full).or_else(|_| {
                req(&format!("{source}\n#line 1 \"cuda_kernel! instances\"\n{}", crate::probe::code(&essential)))
            });
            let built = built
                .map_err(|log| fail(format!("nvcc {} failed to compile the CUDA source:\n{log}", nvcc.version)))?;
            deps.extend(built.deps.iter().cloned());
            let answers = crate::probe::read(&built.ptx);
            let entries = ptx::entries(&built.ptx);
            let mut errors: Vec<String> = Vec::new();
            for (ui, u) in units.iter_mut().enumerate() {
                for (pi, p) in u.kernel.params.iter().enumerate() {
                    let probed = crate::probe::number(&answers, &format!("u{ui}_{pi}")).map(types::decode_probe);
                    match types::map(p, &parsed, probed.as_ref()) {
                        Ok(m) => u.params.push(m),
                        Err(e) => errors.push(format!("kernel `{}` ({}): {e}", u.display, rust_line(site, &u.kernel))),
                    }
                }
                let entry = match u.instance {
                    None => ptx::find(&entries, &u.kernel.namespaces, &u.kernel.name, u.kernel.extern_c),
                    Some(_) => crate::probe::symbol(&answers, &format!("i{ui}"))
                        .and_then(|sym| entries.iter().find(|e| e.symbol == sym)),
                };
                let Some(entry) = entry else {
                    errors.push(format!(
                        "kernel `{}` was not found in the compiled PTX (is it inside `#if 0`, or declared but never defined?)",
                        u.display
                    ));
                    continue;
                };
                if u.params.len() == u.kernel.params.len() {
                    if let Err(e) = cross_check(&u.kernel, &mut u.params, entry) {
                        errors.push(e);
                    }
                }
                u.symbol = entry.symbol.clone();
            }
            for (ii, inst) in instances.iter_mut().enumerate() {
                if let Err(e) = instance_rust_args(inst, &parsed, Some(&answers), ii) {
                    errors.push(e);
                }
            }
            for (gi, g) in parsed.globals.iter().enumerate() {
                let probed = crate::probe::number(&answers, &format!("ge{gi}")).map(types::decode_probe);
                let symbol = crate::probe::symbol(&answers, &format!("g{gi}")).unwrap_or_default();
                let bytes = crate::probe::number(&answers, &format!("gs{gi}"));
                match global_elem(g, &parsed, probed.as_ref()) {
                    Ok(elem) => globals.push(Global { var: g.clone(), elem, symbol, bytes }),
                    Err(e) => errors.push(e),
                }
            }
            if !errors.is_empty() {
                return Err(fail(errors.join("\n")));
            }
            let bytes = Literal::byte_string(&built.fatbin);
            let n = built.fatbin.len();
            let targets = &built.targets;
            let release = nvcc.release();
            quote! {{
                #[repr(C, align(16))]
                struct __Aligned([u8; #n]);
                static __IMAGE: __Aligned = __Aligned(*#bytes);
                ::cuda_embed::Image::Fatbin { bytes: &__IMAGE.0, targets: &[#(#targets),*], compiler: #release }
            }}
        }
        Err(why) => {
            let mut errors = Vec::new();
            for u in units.iter_mut() {
                for p in &u.kernel.params {
                    match types::map(p, &parsed, None) {
                        Ok(m) => u.params.push(m),
                        Err(e) => errors.push(format!("kernel `{}` ({}): {e}", u.display, rust_line(site, &u.kernel))),
                    }
                }
            }
            for (ii, inst) in instances.iter_mut().enumerate() {
                if let Err(e) = instance_rust_args(inst, &parsed, None, ii) {
                    errors.push(e);
                }
            }
            for g in &parsed.globals {
                match global_elem(g, &parsed, None) {
                    Ok(elem) => {
                        let bytes = g.literal_len().zip(elem.size()).map(|(n, s)| n * u64::from(s));
                        globals.push(Global { var: g.clone(), elem, symbol: String::new(), bytes })
                    }
                    Err(e) => errors.push(e),
                }
            }
            if !errors.is_empty() {
                return Err(fail(errors.join("\n")));
            }
            let text = format!("{line_directive}\n{source}");
            let options =
                input.options.iter().cloned().chain(include_dirs.iter().map(|d| format!("-I{}", d.display())));
            let reason = why.to_string();
            let header_names = headers.iter().map(|h| &h.include);
            let header_texts = headers.iter().map(|h| &h.text);
            quote! {
                ::cuda_embed::Image::Source {
                    source: #text,
                    options: &[#(#options),*],
                    headers: &[#((#header_names, #header_texts)),*],
                    reason: #reason,
                }
            }
        }
    };
    let units = dedupe_instances(units, &instances).map_err(fail)?;
    deps.sort();
    deps.dedup();
    Ok(generate(&units, &instances, &parsed, &globals, image, &origin, site, &source, &deps, span))
}

/// Questions for the compiler: `essential` ones (symbols of instances and globals, which also
/// instantiate templates, and non-type argument values) and `extra` ones (parameter types).
fn probes_for(units: &[Typed], instances: &[Instance], parsed: &Parsed) -> (Vec<Probe>, Vec<Probe>) {
    let mut essential = Vec::new();
    let mut extra = Vec::new();
    for (ui, u) in units.iter().enumerate() {
        if let Some(ii) = u.instance {
            essential.push(Probe::Address { key: format!("i{ui}"), expr: u.expr.clone() });
            let inst = &instances[ii];
            let decl = &parsed.templates[inst.template];
            for (ai, (tp, arg)) in decl.template.iter().flatten().zip(&inst.args).enumerate() {
                match tp.kind {
                    TemplateKind::Type if types::builtin(&normalise_type(arg)).is_none() => {
                        extra.push(Probe::Type { key: format!("t{ii}_{ai}"), ty: arg.clone() })
                    }
                    TemplateKind::Value(_) => {
                        essential.push(Probe::Value { key: format!("v{ii}_{ai}"), expr: arg.clone() })
                    }
                    _ => {}
                }
            }
        }
        for (pi, p) in u.kernel.params.iter().enumerate() {
            if types::builtin(&p.base).is_none() && p.base != "void" && !p.reference {
                extra.push(crate::probe::param(format!("u{ui}_{pi}"), &u.expr, pi));
            }
        }
    }
    for (gi, g) in parsed.globals.iter().enumerate() {
        let expr = format!("::{}", g.qualified_name());
        essential.push(Probe::Address { key: format!("g{gi}"), expr: expr.clone() });
        essential.push(Probe::Value { key: format!("gs{gi}"), expr: format!("sizeof({expr})") });
        extra.push(Probe::Type { key: format!("ge{gi}"), ty: format!("cuda_embed_probe::RE<decltype({expr})>::t") });
    }
    (essential, extra)
}

/// `std::size_t` -> `size_t`, `unsigned   int` -> `unsigned int`.
fn normalise_type(arg: &str) -> String {
    signature::strip_std(&arg.split_whitespace().collect::<Vec<_>>().join(" "))
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
fn substitute(decl: &Kernel, args: &[String]) -> Kernel {
    let mut k = decl.clone();
    for (tp, arg) in decl.template.iter().flatten().zip(args) {
        let arg = if matches!(tp.kind, TemplateKind::Type) { normalise_type(arg) } else { arg.clone() };
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

fn resolve_instances(input: &Input, parsed: &Parsed) -> Result<Vec<Instance>, syn::Error> {
    let mut out: Vec<Instance> = Vec::new();
    for lit in &input.instances {
        let text = lit.value();
        let e = |msg: String| syn::Error::new(lit.span(), msg);
        let (name, mut args) = split_instance(&text).ok_or_else(|| {
            e(format!("`{text}` is not a template instance: write the kernel and its arguments, e.g. \"axpy<float>\""))
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
                if parsed.kernels.iter().any(|k| k.qualified_name() == name || k.name == name) {
                    return Err(e(format!(
                        "`{name}` is not a template kernel: it is generated without `instances`; remove \"{text}\""
                    )));
                }
                let known: Vec<String> = parsed.templates.iter().map(|k| k.qualified_name()).collect();
                return Err(e(format!(
                    "no template kernel `{name}` in the CUDA source{}",
                    if known.is_empty() {
                        String::new()
                    } else {
                        format!(" (its template kernels: {})", known.join(", "))
                    }
                )));
            }
            _ => {
                return Err(e(format!(
                    "`{name}` names template kernels in several namespaces: qualify it (`ns::{name}<...>`)"
                )))
            }
        };
        let decl = &parsed.templates[template];
        let params = decl.template.as_deref().unwrap_or_default();
        if let Some(bad) = params.iter().find_map(|p| match &p.kind {
            TemplateKind::Unsupported(t) => Some(t),
            _ => None,
        }) {
            return Err(e(format!(
                "template parameter `{bad}` of `{}` cannot become a Rust generic (parameter packs and template template \
                 parameters are not supported): write a template with plain type and integer parameters that calls it",
                decl.qualified_name()
            )));
        }
        if args.len() > params.len() {
            return Err(e(format!(
                "`{text}` gives {} template arguments but `{}` takes {}",
                args.len(),
                decl.qualified_name(),
                params.len()
            )));
        }
        for p in &params[args.len()..] {
            match &p.default {
                Some(d) => args.push(d.clone()),
                None => {
                    return Err(e(format!(
                        "`{text}` gives {} template arguments but `{}` takes {}: add the missing ones",
                        args.len(),
                        decl.qualified_name(),
                        params.len()
                    )))
                }
            }
        }
        for (p, a) in params.iter().zip(&args) {
            let looks_like_value = signature::parse_int(a).is_some() || a == "true" || a == "false";
            match &p.kind {
                TemplateKind::Type if looks_like_value => {
                    return Err(e(format!(
                        "`{text}`: `{a}` is a value, but template parameter `{}` takes a type",
                        p.name
                    )))
                }
                TemplateKind::Type if a.contains('*') || a.contains('&') => {
                    return Err(e(format!(
                        "`{text}`: `{a}` is a pointer or reference; template type arguments must be value types \
                         (write the `*` in the kernel's parameter list instead)"
                    )))
                }
                TemplateKind::Value(ty) => {
                    if types::builtin(&normalise_type(a)).is_some() {
                        return Err(e(format!(
                            "`{text}`: `{a}` is a type, but template parameter `{}` takes a `{ty}` value",
                            p.name
                        )));
                    }
                    if const_generic_type(ty).is_none() {
                        return Err(e(format!(
                            "template parameter `{} {}` of `{}` cannot become a Rust const generic: use an integer or bool parameter",
                            ty,
                            p.name,
                            decl.qualified_name()
                        )));
                    }
                }
                _ => {}
            }
        }
        let qualified = decl.qualified_name();
        let expr = format!("{qualified}<{}>", args.join(", "));
        if out.iter().any(|o| o.expr == expr) {
            return Err(e(format!("instance `{expr}` is listed twice")));
        }
        out.push(Instance { lit: lit.clone(), template, args, expr, rust_args: Vec::new(), user_types: Vec::new() });
    }
    Ok(out)
}

/// The Rust type of a non-type template parameter declared as `ty`.
fn const_generic_type(ty: &str) -> Option<&'static str> {
    let b = types::builtin(ty)?;
    ["bool", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "usize", "isize"].into_iter().find(|r| *r == b.rust)
}

/// Works out the Rust generic arguments of instance `ii` (`<f32, 256>`).
fn instance_rust_args(
    inst: &mut Instance,
    parsed: &Parsed,
    answers: Option<&HashMap<String, crate::probe::Answer>>,
    ii: usize,
) -> Result<(), String> {
    let decl = &parsed.templates[inst.template];
    let mut out = Vec::new();
    for (ai, (tp, arg)) in decl.template.iter().flatten().zip(&inst.args).enumerate() {
        match &tp.kind {
            TemplateKind::Type => {
                let base = normalise_type(arg);
                let param = signature::Param {
                    name: tp.name.clone(),
                    base: base.clone(),
                    pointer_depth: 0,
                    pointee_const: false,
                    text: arg.clone(),
                    reference: false,
                };
                let probed =
                    answers.and_then(|a| crate::probe::number(a, &format!("t{ii}_{ai}"))).map(types::decode_probe);
                match types::map(&param, parsed, probed.as_ref()) {
                    Ok(Mapped::Value(b)) => out.push(rust_type(&b)),
                    Ok(Mapped::User { name, .. }) => {
                        let ty = format_ident!("{}", name);
                        out.push(quote!(super::super::#ty));
                        inst.user_types.push(name);
                    }
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
                let rust = const_generic_type(ty).unwrap_or("i64");
                let value = match answers {
                    Some(a) => crate::probe::number(a, &format!("v{ii}_{ai}")),
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
                        if answers.is_none() {
                            ": without nvcc only integer literals and true/false can be read; write the value out"
                        } else {
                            " (see the compiler's message above)"
                        }
                    ));
                };
                out.push(match rust {
                    "bool" => {
                        let b = v != 0;
                        quote!(#b)
                    }
                    "i8" | "i16" | "i32" | "i64" | "isize" => {
                        let n = Literal::i64_unsuffixed(v as i64);
                        quote!({ #n })
                    }
                    _ => {
                        let n = Literal::u64_unsuffixed(v);
                        quote!(#n)
                    }
                });
            }
            TemplateKind::Unsupported(_) => unreachable!("rejected in resolve_instances"),
        }
    }
    inst.rust_args = out;
    Ok(())
}

/// The Rust element type of a global.
fn global_elem(g: &GlobalVar, parsed: &Parsed, probed: Option<&types::Probed>) -> Result<Mapped, String> {
    let m = types::map(&g.elem, parsed, probed)
        .map_err(|e| format!("{} `{}` (line {}): {e}", g.space, g.qualified_name(), g.line))?;
    Ok(match m {
        Mapped::Pointer { .. } | Mapped::RawPointer => Mapped::RawPointer,
        other => other,
    })
}

/// Two instances with the same symbol (`k<size_t>` and `k<unsigned long>`) share one compiled
/// kernel; two with the same Rust arguments but different symbols (`k<long>`, `k<long long>`)
/// cannot both be Rust impls.
fn dedupe_instances(units: Vec<Typed>, instances: &[Instance]) -> Result<Vec<Typed>, String> {
    let mut seen: Vec<(String, String, String)> = Vec::new(); // (template+rust args, symbol, expr)
    let mut out = Vec::with_capacity(units.len());
    for u in units {
        let Some(ii) = u.instance else {
            out.push(u);
            continue;
        };
        let inst = &instances[ii];
        let key = format!("{}{:?}", inst.template, inst.rust_args.iter().map(|t| t.to_string()).collect::<Vec<_>>());
        if let Some((_, sym, other)) = seen.iter().find(|s| s.0 == key) {
            if sym.is_empty() || *sym != u.symbol {
                return Err(format!(
                    "instances `{other}` and `{}` have the same Rust type arguments but are different kernels: list only one",
                    inst.expr
                ));
            }
            continue; // the same kernel under another spelling (`int64_t` and `long`)
        }
        seen.push((key, u.symbol.clone(), inst.expr.clone()));
        out.push(u);
    }
    Ok(out)
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

/// `file.rs:LINE` of a kernel's `__global__` inside the Rust file.
fn rust_line(site: &CallSite, k: &Kernel) -> String {
    format!("{}:{}", site.file, site.line + k.line.saturating_sub(1))
}

/// The Rust module name for a kernel: raw identifiers for Rust keywords (`r#move`), an error for
/// the few names that cannot be modules at all.
fn kernel_ident(name: &str) -> Result<syn::Ident, String> {
    if ["self", "Self", "super", "crate", "_"].contains(&name) {
        return Err(format!("a kernel named `{name}` cannot become a Rust module: rename the kernel"));
    }
    Ok(syn::parse_str::<syn::Ident>(name).unwrap_or_else(|_| syn::Ident::new_raw(name, Span::call_site())))
}

fn rust_type(b: &Builtin) -> TokenStream {
    let path = b.rust.replace("$crate", "::cuda_embed");
    syn::parse_str::<syn::Type>(&path).map(|t| quote!(#t)).unwrap_or_else(|e| e.to_compile_error())
}

fn param_ident(name: &str, index: usize) -> syn::Ident {
    const RESERVED: &[&str] = &["stream", "config", "cluster", "self", "Self", "super", "crate", "_"];
    if RESERVED.contains(&name) || name.starts_with("__") {
        return format_ident!("{}_{}", name.trim_start_matches('_'), index);
    }
    syn::parse_str::<syn::Ident>(name).unwrap_or_else(|_| syn::Ident::new_raw(name, Span::call_site()))
}

#[allow(clippy::too_many_arguments)]
fn generate(
    units: &[Typed],
    instances: &[Instance],
    parsed: &Parsed,
    globals: &[Global],
    image: TokenStream,
    origin: &str,
    site: &CallSite,
    source: &str,
    deps: &[PathBuf],
    span: Span,
) -> TokenStream {
    // The tag must not depend on where the checkout lives (reproducible builds, stable
    // diagnostics): the file's name, the line and the source are enough to tell invocations apart.
    let file_name = site.file.rsplit(['/', '\\']).next().unwrap_or(&site.file);
    let mut h = Sha256::new();
    h.update(file_name.as_bytes());
    h.update(site.line.to_le_bytes());
    h.update(source.as_bytes());
    let tag: String = h.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect();
    let hidden = format_ident!("__cuda_embed_{}", tag);

    let specs = units.iter().map(|t| {
        let name = &t.display;
        let symbol = &t.symbol;
        let expr = if t.kernel.extern_c { t.kernel.name.clone() } else { format!("&{}", t.expr.trim_start_matches("::")) };
        let sizes = t.params.iter().map(|m| match (m, m.size()) {
            (_, Some(s)) => quote!(#s),
            (Mapped::User { name, .. }, None) => {
                let ty = format_ident!("{}", name);
                quote!(::core::mem::size_of::<super::#ty>() as u32)
            }
            _ => quote!(0u32),
        });
        quote! {
            ::cuda_embed::KernelSpec { name: #name, symbol: #symbol, name_expression: #expr, param_sizes: &[#(#sizes),*] }
        }
    });

    let mut modules: Vec<TokenStream> = Vec::new();
    for (index, t) in units.iter().enumerate().filter(|(_, t)| t.instance.is_none()) {
        let gen = KernelGen {
            decl: &t.kernel,
            params: t.params.clone(),
            index: quote!(#index),
            generics: Vec::new(),
            where_clause: quote!(),
            items: quote!(),
        };
        modules.push(kernel_module(&gen, span));
    }
    for (ti, decl) in parsed.templates.iter().enumerate() {
        match template_gen(ti, decl, units, instances, parsed, site) {
            Ok(gen) => modules.push(kernel_module(&gen, span)),
            Err(e) => modules.push(syn::Error::new(span, e).to_compile_error()),
        }
    }
    let names: Vec<syn::Ident> =
        parsed.kernels.iter().chain(&parsed.templates).filter_map(|k| kernel_ident(&k.name).ok()).collect();

    let mut global_items = Vec::new();
    let mut global_specs = Vec::new();
    let mut global_names = Vec::new();
    for (gi, g) in globals.iter().enumerate() {
        let (ty, check) = match &g.elem {
            Mapped::Value(b) => (rust_type(b), quote!()),
            Mapped::User { name, .. } => {
                let ty = format_ident!("{}", name, span = span);
                (
                    quote!(super::#ty),
                    quote_spanned!(span=> const _: () = ::cuda_embed::__private::assert_device_safe::<super::#ty>();),
                )
            }
            _ => (quote!(::cuda_embed::RawDevicePtr), quote!()),
        };
        let id = kernel_ident(&g.var.name).unwrap_or_else(|_| format_ident!("invalid_global_name"));
        let qualified = g.var.qualified_name();
        let symbol = &g.symbol;
        let expr = format!("&{qualified}");
        let bytes = g.bytes.unwrap_or(0);
        let space = &g.var.space;
        let dims: String = g.var.dims.iter().map(|d| format!("[{d}]")).collect();
        let doc = format!(
            "Handle to the CUDA {space} variable `{qualified}{dims}` (elements of `{}`): write it from the host, read it \
             back, or get its device address, per device.",
            g.elem.describe()
        );
        if let (Some(b), Some(s)) = (g.bytes, g.elem.size()) {
            if s > 0 && b % u64::from(s) != 0 {
                let msg = format!(
                    "{space} `{qualified}` is {b} bytes, not a whole number of `{}` ({s} bytes): check its type",
                    g.elem.describe()
                );
                global_items.push(quote_spanned!(span=> ::core::compile_error!(#msg);));
            }
        }
        if let Mapped::User { .. } = &g.elem {
            if let Some(b) = g.bytes {
                let msg = format!(
                    "the Rust type for {space} `{qualified}` must divide its {b} bytes (use #[repr(C)] and the CUDA struct's fields)"
                );
                global_items.push(quote_spanned!(span=>
                    const _: () = ::core::assert!(#b as usize % ::core::mem::size_of::<#ty>() == 0, #msg);
                ));
            }
        }
        global_specs.push(quote! {
            ::cuda_embed::GlobalSpec {
                name: #qualified,
                symbol: #symbol,
                name_expression: #expr,
                bytes: #bytes,
                elem_size: ::core::mem::size_of::<#ty>(),
            }
        });
        global_items.push(quote! {
            #check
            #[doc = #doc]
            pub static #id: ::cuda_embed::Global<#ty> = ::cuda_embed::Global::new(&MODULE, #gi);
        });
        global_names.push(id);
    }
    // Cargo rebuilds the crate when the CUDA file or a header it includes changes.
    let tracked = deps.iter().filter_map(|d| d.to_str()).map(|d| {
        quote!(
            const _: &[u8] = include_bytes!(#d);
        )
    });
    // Everything lives in one hidden module (so the macro also works inside a function body) and
    // the kernel modules are re-exported where the macro was invoked.
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, non_upper_case_globals)]
        mod #hidden {
            #(#tracked)*
            pub(super) static MODULE: ::cuda_embed::Module = {
                static __SPEC: ::cuda_embed::ModuleSpec = ::cuda_embed::ModuleSpec {
                    origin: #origin,
                    image: #image,
                    kernels: &[#(#specs),*],
                    globals: &[#(#global_specs),*],
                };
                ::cuda_embed::Module::new(&__SPEC)
            };
            #(#global_items)*
            #(#modules)*
        }
        #[allow(unused_imports)]
        pub use #hidden::{#(#names,)* #(#global_names),*};
    }
}

/// What differs between the module of an ordinary kernel and that of a template.
struct KernelGen<'a> {
    /// The declaration (names, docs, launch bounds).
    decl: &'a Kernel,
    /// The Rust side of each parameter (generic parameters appear as their Rust name).
    params: Vec<Mapped>,
    /// The kernel's index in the module, as an expression.
    index: TokenStream,
    /// Generic parameters every function of the module takes (`T`, `const B: i32`).
    generics: Vec<TokenStream>,
    /// `where Instance<T, B>: Listed`, or nothing.
    where_clause: TokenStream,
    /// Extra items (the instance marker, trait and impls).
    items: TokenStream,
}

/// A Rust type name standing for a template type parameter.
fn generic_builtin(name: &str) -> Builtin {
    Builtin { rust: Box::leak(name.to_string().into_boxed_str()), size: 0, align: 0 }
}

fn template_gen<'a>(
    ti: usize,
    decl: &'a Kernel,
    units: &[Typed],
    instances: &[Instance],
    parsed: &Parsed,
    site: &CallSite,
) -> Result<KernelGen<'a>, String> {
    let tparams = decl.template.as_deref().unwrap_or_default();
    let mine: Vec<(usize, &Typed)> =
        units.iter().enumerate().filter(|(_, u)| u.instance.is_some_and(|ii| instances[ii].template == ti)).collect();
    let type_names: Vec<&str> =
        tparams.iter().filter(|p| matches!(p.kind, TemplateKind::Type)).map(|p| p.name.as_str()).collect();
    // The generic signature: parameters of a template type `T` are generic; the others must map
    // to one Rust type for every instance.
    let mut params = Vec::new();
    for (pi, p) in decl.params.iter().enumerate() {
        let m = if type_names.contains(&p.base.as_str()) && !p.reference {
            let g = generic_builtin(&p.base);
            match p.pointer_depth {
                0 => Mapped::Value(g),
                1 => Mapped::Pointer { elem: Some(g), mutable: !p.pointee_const },
                _ => Mapped::RawPointer,
            }
        } else if let Some((_, first)) = mine.first() {
            let m = first.params[pi].clone();
            for (_, other) in &mine[1..] {
                if other.params[pi].describe() != m.describe() {
                    return Err(format!(
                        "parameter `{}` (`{}`) of template kernel `{}` becomes `{}` in `{}` but `{}` in `{}`: \
                         write it with a template parameter (`T`) directly, or list instances that agree",
                        p.name,
                        p.text,
                        decl.qualified_name(),
                        m.describe(),
                        first.display,
                        other.params[pi].describe(),
                        other.display
                    ));
                }
            }
            m
        } else {
            types::map(p, parsed, None).map_err(|e| format!("template kernel `{}`: {e}", decl.qualified_name()))?
        };
        params.push(m);
    }
    let mut generics = Vec::new();
    let mut uses = Vec::new();
    let mut phantom = Vec::new();
    for tp in tparams {
        let id = syn::parse_str::<syn::Ident>(&tp.name).unwrap_or_else(|_| format_ident!("P_{}", tp.name));
        match &tp.kind {
            TemplateKind::Type => {
                generics.push(quote!(#id));
                phantom.push(quote!(#id));
            }
            TemplateKind::Value(ty) => {
                let rust = format_ident!("{}", const_generic_type(ty).unwrap_or("i64"));
                generics.push(quote!(const #id: #rust));
            }
            TemplateKind::Unsupported(_) => {}
        }
        uses.push(quote!(#id));
    }
    let qualified = decl.qualified_name();
    let listed: Vec<String> =
        mine.iter().filter_map(|(_, u)| u.instance.map(|ii| instances[ii].expr.clone())).collect();
    let message = format!("template kernel `{qualified}` was not instantiated for `{{Self}}`");
    let label = "no such instance in `instances = [...]`".to_string();
    let note = format!(
        "instances built: {}; add the one you need to `instances = [...]` of the cuda_kernel! at {}:{}",
        if listed.is_empty() { "none".to_string() } else { listed.join(", ") },
        site.file,
        site.line
    );
    let impls = mine.iter().map(|(index, u)| {
        let inst = &instances[u.instance.expect("instance units only")];
        let args = &inst.rust_args;
        let doc = format!("`{}`", inst.expr);
        let checks = inst.user_types.iter().map(|t| {
            let ty = format_ident!("{}", t);
            quote_spanned!(inst.lit.span()=> const _: () = ::cuda_embed::__private::assert_device_safe::<super::super::#ty>();)
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
    Ok(KernelGen {
        decl,
        params,
        index: quote!(<Instance<#(#uses),*> as Listed>::INDEX),
        generics,
        where_clause: quote!(where Instance<#(#uses),*>: Listed),
        items,
    })
}

fn kernel_module(gen: &KernelGen<'_>, span: Span) -> TokenStream {
    let k = gen.decl;
    let index = &gen.index;
    let where_clause = &gen.where_clause;
    let name = kernel_ident(&k.name).unwrap_or_else(|_| format_ident!("invalid_kernel_name"));
    let qualified = k.qualified_name();
    let mut generics = gen.generics.clone();
    let mut args = Vec::new();
    let mut prelude = Vec::new();
    let mut packed = Vec::new();
    let mut checks = Vec::new();
    let mut doc_rows = String::new();
    for (i, (p, m)) in k.params.iter().zip(&gen.params).enumerate() {
        let id = param_ident(&p.name, i);
        let sync = format_ident!("__sync_{}", i);
        doc_rows.push_str(&format!("| `{}` | `{}` | `{}` |\n", id, p.text.replace('|', "\\|"), m.describe()));
        match m {
            Mapped::Value(b) => {
                let ty = rust_type(b);
                args.push(quote!(#id: #ty));
                packed.push(quote!(&#id as *const #ty as *mut ::cuda_embed::__private::c_void));
            }
            Mapped::User { name: tn, layout } => {
                let ty = format_ident!("{}", tn, span = span);
                args.push(quote!(#id: super::super::#ty));
                packed.push(quote!(&#id as *const super::super::#ty as *mut ::cuda_embed::__private::c_void));
                checks.push(quote_spanned! {span=>
                    const _: () = ::cuda_embed::__private::assert_device_safe::<super::super::#ty>();
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
                    Some(b) => rust_type(b),
                    None => {
                        let g = format_ident!("T{}", i);
                        generics.push(quote!(#g));
                        quote!(#g)
                    }
                };
                if *mutable {
                    args.push(quote!(#id: &mut impl ::cuda_embed::__private::DevicePtrMut<#ty>));
                    prelude.push(
                        quote!(let (#id, #sync) = ::cuda_embed::__private::DevicePtrMut::device_ptr_mut(#id, stream);),
                    );
                } else {
                    args.push(quote!(#id: &impl ::cuda_embed::__private::DevicePtr<#ty>));
                    prelude
                        .push(quote!(let (#id, #sync) = ::cuda_embed::__private::DevicePtr::device_ptr(#id, stream);));
                }
                packed.push(quote!(&#id as *const u64 as *mut ::cuda_embed::__private::c_void));
            }
            Mapped::RawPointer => {
                args.push(quote!(#id: ::cuda_embed::RawDevicePtr));
                packed.push(quote!(&#id as *const ::cuda_embed::RawDevicePtr as *mut ::cuda_embed::__private::c_void));
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
            quote!(cluster: ::cuda_embed::ClusterDim,),
            quote!(()),
            quote!(launch_cluster(#index, stream, &config, cluster, &mut __args)),
        ),
    ];
    let launchers = variants.into_iter().map(|(fname, fdoc, extra, ret, call)| {
        quote! {
            #[doc = #fdoc]
            #[inline]
            pub unsafe fn #fname #all_generics (
                stream: &::cuda_embed::CudaStream,
                config: ::cuda_embed::LaunchConfig,
                #extra
                #(#args),*
            ) -> ::cuda_embed::Result<#ret> #where_clause {
                #(#prelude)*
                let mut __args: [*mut ::cuda_embed::__private::c_void; #n] = [#(#packed),*];
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
            pub fn module() -> &'static ::cuda_embed::Module {
                &super::MODULE
            }

            #(#launchers)*

            /// Registers, thread and memory limits of this kernel on `ctx`'s device.
            pub fn attributes #tgenerics (ctx: &::std::sync::Arc<::cuda_embed::CudaContext>) -> ::cuda_embed::Result<::cuda_embed::KernelAttributes> #where_clause {
                super::MODULE.attributes(#index, ctx)
            }

            /// Lets this kernel use up to `bytes` of dynamic shared memory per block on `ctx`'s
            /// device (needed above 48 KiB).
            pub fn set_max_dynamic_shared_memory #tgenerics (ctx: &::std::sync::Arc<::cuda_embed::CudaContext>, bytes: u32) -> ::cuda_embed::Result<()> #where_clause {
                super::MODULE.set_max_dynamic_shared_memory(#index, ctx, bytes)
            }

            /// Sets the preferred L1/shared-memory carveout (percent) on `ctx`'s device.
            pub fn set_preferred_shared_carveout #tgenerics (ctx: &::std::sync::Arc<::cuda_embed::CudaContext>, percent: u32) -> ::cuda_embed::Result<()> #where_clause {
                super::MODULE.set_preferred_shared_carveout(#index, ctx, percent)
            }

            /// A 1-D configuration covering `n` threads with the occupancy-maximising block size on
            /// `ctx`'s device, with `dynamic_shared_bytes` of dynamic shared memory per block.
            pub fn occupancy_config #tgenerics (
                ctx: &::std::sync::Arc<::cuda_embed::CudaContext>,
                n: u32,
                dynamic_shared_bytes: u32,
            ) -> ::cuda_embed::Result<::cuda_embed::LaunchConfig> #where_clause {
                super::MODULE.occupancy_config(#index, ctx, n, dynamic_shared_bytes)
            }
        }
    }
}

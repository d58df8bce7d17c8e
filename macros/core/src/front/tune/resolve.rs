//! `tune = { ... }` against the source: the template it tunes, one template instance per
//! combination of values, and every name in the formulas and the key checked.

use super::{Formula, Spec};
use crate::front::ir::Instance;
use crate::front::report::Errors;
use crate::signature::{Parsed, TemplateKind};

/// One step of a formula's postfix program (the runtime's `tune::Op`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A literal.
    Const(i64),
    /// The launcher's scalar argument with this index.
    Scalar(u16),
    /// The variant's value of this tune parameter.
    Param(u16),
    /// `+ - * / % min max cdiv`.
    Binary(&'static str),
}

/// One variant: an instance of the tuned template.
#[derive(Clone, Debug)]
pub struct Variant {
    /// `BLOCK=256 ITEMS=2`.
    pub label: String,
    /// Index into `Module::instances`.
    pub instance: usize,
    /// Each tune parameter's value for the formulas (bools 0/1, types 0).
    pub values: Vec<i64>,
}

/// The checked tune option.
#[derive(Clone)]
pub struct Plan {
    /// The option as written (for spans).
    pub spec: Spec,
    /// Index into `Parsed::templates`.
    pub template: usize,
    /// The variants, first parameter varying slowest.
    pub variants: Vec<Variant>,
    /// The kernel parameters the formulas and key read: (name, parameter index).
    pub scalars: Vec<(String, usize)>,
    /// The key: indices into `scalars`.
    pub key: Vec<u16>,
    /// Grid formulas (1 to 3).
    pub grid: Vec<Vec<Op>>,
    /// Block formulas (1 to 3).
    pub block: Vec<Vec<Op>>,
    /// Dynamic shared memory formula.
    pub shared: Option<Vec<Op>>,
    /// The formulas as written, for run-time errors.
    pub formulas: String,
}

/// Resolves `spec` against the parsed source, appending the variants to `instances` (an
/// instance the user listed already is shared). `resolve_instance` is the front end's resolver.
pub fn resolve(
    spec: &Spec,
    parsed: &Parsed,
    instances: &mut Vec<Instance>,
    resolve_instance: impl Fn(&str, &Parsed, &[Instance]) -> Result<(usize, Vec<String>, String), String>,
) -> syn::Result<Plan> {
    let err = |span, msg: String| syn::Error::new(span, msg);
    let names: Vec<String> = parsed.templates.iter().map(|t| t.qualified_name()).collect();
    let template = match &spec.kernel {
        Some(lit) => {
            let want = lit.value();
            parsed.templates.iter().position(|t| t.qualified_name() == want || t.name == want).ok_or_else(|| {
                err(lit.span(), format!("no template kernel `{want}` to tune (template kernels: {})", list(&names)))
            })?
        }
        None => match names.len() {
            1 => 0,
            0 => {
                return Err(err(
                    spec.span,
                    "`tune` needs a template kernel: its variants are template instances (write \
                     `template <int BLOCK> __global__ void k(...)`)"
                        .into(),
                ))
            }
            _ => {
                return Err(err(
                    spec.span,
                    format!("several template kernels ({}): name the one to tune, `kernel = \"...\"`", list(&names)),
                ))
            }
        },
    };
    let decl = &parsed.templates[template];
    let qualified = decl.qualified_name();
    let tparams = decl.template.as_deref().unwrap_or_default();
    let tnames: Vec<&str> = tparams.iter().map(|p| p.name.as_str()).collect();
    let mut errors = Errors::new();
    for p in &spec.params {
        if !tnames.contains(&p.name.as_str()) {
            errors.error(
                p.lit.span(),
                format!(
                    "`{}` is not a template parameter of `{qualified}` (its parameters: {})",
                    p.name,
                    list(&tnames)
                ),
            );
        }
    }
    for tp in tparams {
        if !spec.params.iter().any(|p| p.name == tp.name) {
            let example = if matches!(tp.kind, TemplateKind::Type) { "float" } else { "256" };
            errors.error(
                spec.span,
                format!(
                    "template parameter `{}` of `{qualified}` is not in `params`: list its value(s), e.g. \"{}: {example}\"",
                    tp.name, tp.name
                ),
            );
        }
    }
    errors.propagate()?;
    // The formulas' names: tune parameters with integer values, or kernel parameters.
    let pnames: Vec<&str> = decl.params.iter().map(|p| p.name.as_str()).collect();
    let mut scalars: Vec<(String, usize)> = Vec::new();
    let mut scalar = |name: &str| -> Option<u16> {
        let pi = pnames.iter().position(|p| *p == name)?;
        let at = scalars.iter().position(|(n, _)| n == name).unwrap_or_else(|| {
            scalars.push((name.to_string(), pi));
            scalars.len() - 1
        });
        Some(at as u16)
    };
    let mut key = Vec::new();
    for (name, lit) in &spec.key {
        match scalar(name) {
            Some(i) => key.push(i),
            None => errors.error(
                lit.span(),
                format!("key `{name}` names no parameter of `{qualified}` (its parameters: {})", list(&pnames)),
            ),
        }
    }
    let mut compile = |lit: &syn::LitStr, f: &Formula, errors: &mut Errors| -> Vec<Op> {
        let mut ops = Vec::new();
        postfix(f, &mut ops, &mut |name| {
            if let Some(ti) = spec.params.iter().position(|p| p.name == name) {
                let kind = tparams.iter().find(|t| t.name == name).map(|t| &t.kind);
                if matches!(kind, Some(TemplateKind::Type)) {
                    errors.error(lit.span(), format!("`{name}` is a type parameter: formulas use integer values"));
                }
                return Op::Param(ti as u16);
            }
            match scalar(name) {
                Some(i) => Op::Scalar(i),
                None => {
                    errors.error(
                        lit.span(),
                        format!(
                            "`{name}` in `{}` is neither a tune parameter ({}) nor a parameter of `{qualified}` ({})",
                            lit.value(),
                            list(&spec.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>()),
                            list(&pnames)
                        ),
                    );
                    Op::Const(0)
                }
            }
        });
        ops
    };
    let grid: Vec<Vec<Op>> = spec.grid.1.iter().map(|f| compile(&spec.grid.0, f, &mut errors)).collect();
    let block: Vec<Vec<Op>> = spec.block.1.iter().map(|f| compile(&spec.block.0, f, &mut errors)).collect();
    let shared = spec.shared.as_ref().map(|(lit, f)| compile(lit, f, &mut errors));
    errors.propagate()?;
    let mut formulas = format!("grid = \"{}\", block = \"{}\"", spec.grid.0.value(), spec.block.0.value());
    if let Some((lit, _)) = &spec.shared {
        formulas.push_str(&format!(", shared = \"{}\"", lit.value()));
    }
    // Every combination, first parameter slowest; each an instance in template-parameter order.
    let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
    for p in &spec.params {
        combos =
            combos.into_iter().flat_map(|c| (0..p.values.len()).map(move |i| [c.clone(), vec![i]].concat())).collect();
    }
    if combos.len() > 254 {
        return Err(err(spec.span, format!("{} variants: a tuned kernel has at most 254", combos.len())));
    }
    let mut variants = Vec::new();
    for combo in combos {
        let value = |name: &str| {
            let pi = spec.params.iter().position(|p| p.name == name).unwrap_or(0);
            spec.params[pi].values[combo[pi]].clone()
        };
        let args: Vec<String> = tparams.iter().map(|tp| value(&tp.name)).collect();
        let text = format!("{qualified}<{}>", args.join(", "));
        let label: Vec<String> = spec.params.iter().map(|p| format!("{}={}", p.name, value(&p.name))).collect();
        let values = spec.params.iter().map(|p| number(&value(&p.name))).collect();
        let lit = spec.params[0].lit.clone();
        let instance = match instances.iter().position(|i| i.expr == text) {
            Some(i) => i,
            None => {
                let (t, args, expr) =
                    resolve_instance(&text, parsed, instances).map_err(|m| err(spec.params[0].lit.span(), m))?;
                instances.push(Instance { lit, template: t, args, expr });
                instances.len() - 1
            }
        };
        variants.push(Variant { label: label.join(" "), instance, values });
    }
    Ok(Plan { spec: spec.clone(), template, variants, scalars, key, grid, block, shared, formulas })
}

/// A tune value as the formulas see it: integers as themselves, `true`/`false` as 1/0, types 0.
fn number(v: &str) -> i64 {
    match v {
        "true" => 1,
        "false" => 0,
        _ => {
            let neg = v.trim().starts_with('-');
            let n = cuda_embed_source::cxx::parse_int(v.trim().trim_start_matches('-')).map_or(0, |n| n as i64);
            if neg {
                -n
            } else {
                n
            }
        }
    }
}

fn postfix(f: &Formula, out: &mut Vec<Op>, name: &mut dyn FnMut(&str) -> Op) {
    match f {
        Formula::Const(c) => out.push(Op::Const(*c)),
        Formula::Name(n) => out.push(name(n)),
        Formula::Binary(op, a, b) => {
            postfix(a, out, name);
            postfix(b, out, name);
            out.push(Op::Binary(op));
        }
    }
}

fn list<S: AsRef<str>>(names: &[S]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.iter().map(|s| s.as_ref()).collect::<Vec<_>>().join(", ")
    }
}

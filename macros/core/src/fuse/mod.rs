//! `fuse!`: a chain of typed elementwise steps, optionally ending in a reduction, compiled when
//! the crate builds into one kernel with one typed launcher: no intermediate arrays, no run-time
//! compilation (CuPy's `cupy.fuse`, typed and done at build time).
//!
//! ```text
//! fuse!(weighted_sq_diff,
//!       inputs = "T x, T y, T w",
//!       steps = ["T d = x - y", "T e = d * d * w"],
//!       outputs = "T s",
//!       reduce = "a + b", identity = "0",      // optional: reduce the last step's value
//!       types = ["float"]);
//! ```
//!
//! Each step is `TYPE NAME = EXPR` (a typed local every later step sees) or, without `reduce`,
//! `OUTPUT = EXPR`. Without `reduce` the steps become the operation of an `elementwise_kernel!`;
//! with it, a `__device__` function of the inputs returning the last step's value becomes the
//! `map` of a `reduction_kernel!`. Either way the generated module is that macro's, so it has the
//! same launchers (`launch`, `launch_nd`; `launch`, `launch_rows`, `launch_cols`, `launch_axes`).
//! Each step carries a `#line` of its own string literal, and a compile error in a step (a name
//! that is not declared, a value that does not convert to the step's type) is reported at that
//! step.

use crate::expand::CallSite;
use cuda_embed_source::params::{ParamKind, ParamLists};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::quote;
use std::collections::HashMap;
use syn::{Ident, LitStr};

/// One step: the declared type (none for an output assignment), the name, the expression.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    /// `float` in `float d = x - y`; empty for `z = ...`.
    pub ty: String,
    /// `d`.
    pub name: String,
    /// `x - y`.
    pub expr: String,
}

/// Reads `TYPE NAME = EXPR` or `NAME = EXPR`.
pub fn parse_step(text: &str) -> Result<Step, String> {
    let b = text.as_bytes();
    let eq = (0..b.len()).find(|&k| {
        b[k] == b'='
            && b.get(k + 1) != Some(&b'=')
            && (k == 0
                || !matches!(
                    b[k - 1],
                    b'=' | b'<' | b'>' | b'!' | b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^'
                ))
    });
    let Some(eq) = eq else {
        return Err(format!("a step is `TYPE NAME = EXPR` (or `OUTPUT = EXPR`), but `{text}` has no `=`"));
    };
    let (lhs, expr) = (text[..eq].trim(), text[eq + 1..].trim().trim_end_matches(';').trim());
    let split = lhs.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |k| k + 1);
    let (ty, name) = (lhs[..split].trim(), &lhs[split..]);
    let ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !ident || expr.is_empty() {
        return Err(format!("a step is `TYPE NAME = EXPR` (or `OUTPUT = EXPR`), but `{text}` is not"));
    }
    if name.starts_with("_ce_") || name.starts_with("__") {
        return Err(format!("`{name}`: names starting with `_ce_` or `__` are reserved"));
    }
    Ok(Step { ty: ty.to_string(), name: name.to_string(), expr: expr.to_string() })
}

/// The parsed input: the name, the steps with their literals, and every other `key = value`
/// (passed on to the elementwise or reduction macro).
struct FuseInput {
    name: Ident,
    steps: Vec<(LitStr, Step)>,
    steps_key: Option<Span>,
    keyed: Vec<(Ident, TokenStream)>,
}

fn parse(tokens: TokenStream) -> syn::Result<FuseInput> {
    let mut parts: Vec<Vec<TokenTree>> = vec![Vec::new()];
    for t in tokens {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(Vec::new()),
            _ => parts.last_mut().map(|v| v.push(t)).unwrap_or(()),
        }
    }
    parts.retain(|p| !p.is_empty());
    let hint = "expected the name first: fuse!(name, inputs = \"T x, T y\", steps = [\"T d = x - y\", \"T e = d * d\"], outputs = \"T s\", reduce = \"a + b\", identity = \"0\", types = [\"float\"])";
    let mut it = parts.into_iter();
    let name: Ident = match it.next() {
        Some(first) => syn::parse2(first.into_iter().collect()).map_err(|e| syn::Error::new(e.span(), hint))?,
        None => return Err(syn::Error::new(Span::call_site(), hint)),
    };
    let mut input = FuseInput { name, steps: Vec::new(), steps_key: None, keyed: Vec::new() };
    for part in it {
        let mut toks = part.into_iter();
        let key = match toks.next() {
            Some(TokenTree::Ident(k)) => k,
            other => {
                let span = other.map_or(Span::call_site(), |t| t.span());
                return Err(syn::Error::new(span, "expected `key = value`"));
            }
        };
        match toks.next() {
            Some(TokenTree::Punct(p)) if p.as_char() == '=' => {}
            _ => return Err(syn::Error::new(key.span(), format!("`{key}` needs a value: `{key} = ...`"))),
        }
        let value: TokenStream = toks.collect();
        if key == "steps" {
            let list: syn::ExprArray = syn::parse2(value.clone()).map_err(|_| {
                syn::Error::new_spanned(&value, "`steps` takes a list of strings: `steps = [\"T d = x - y\", ...]`")
            })?;
            for e in list.elems {
                let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = e else {
                    return Err(syn::Error::new_spanned(e, "each step is a string: `\"T d = x - y\"`"));
                };
                let step = parse_step(&s.value()).map_err(|m| syn::Error::new(s.span(), m))?;
                input.steps.push((s, step));
            }
            input.steps_key = Some(key.span());
        } else {
            input.keyed.push((key, value));
        }
    }
    Ok(input)
}

/// Expands `fuse!`. `lines` gives the Rust line of every literal of the input (by its text).
pub fn expand(tokens: TokenStream, site: CallSite, lines: &[(String, usize)]) -> TokenStream {
    let input = match parse(tokens) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let name = &input.name;
    match expand_input(&input, &site, lines) {
        Ok(ts) => ts,
        Err(e) => {
            let err = e.to_compile_error();
            quote! { #err #[allow(non_snake_case, dead_code)] pub mod #name {} }
        }
    }
}

fn value<'a>(input: &'a FuseInput, key: &str) -> Option<&'a TokenStream> {
    input.keyed.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn string(input: &FuseInput, key: &str) -> syn::Result<Option<LitStr>> {
    value(input, key).map(|v| syn::parse2::<LitStr>(v.clone())).transpose()
}

fn expand_input(input: &FuseInput, site: &CallSite, lines: &[(String, usize)]) -> syn::Result<TokenStream> {
    let name = &input.name;
    let key_span = input.steps_key.unwrap_or_else(|| name.span());
    if input.steps.is_empty() {
        return Err(syn::Error::new(key_span, "`fuse!` needs `steps = [\"T d = x - y\", ...]` with at least one step"));
    }
    let inputs = string(input, "inputs")?.map(|l| l.value()).unwrap_or_default();
    let outputs = string(input, "outputs")?
        .ok_or_else(|| syn::Error::new(name.span(), "missing `outputs = \"...\"`, e.g. `outputs = \"T s\"`"))?;
    let lists =
        ParamLists::parse(&inputs, &outputs.value()).map_err(|e| syn::Error::new(outputs.span(), e.to_string()))?;
    let reduce = value(input, "reduce").is_some();
    let file = site.file.replace('\\', "/");
    let line_of = |lit: &LitStr| lines.iter().find(|(t, _)| *t == lit.token().to_string()).map_or(site.line, |l| l.1);
    // Each step on its own `#line`, after an empty statement so the elementwise generator still
    // sees an output assignment as the start of a statement.
    let mut body = String::new();
    for (lit, step) in &input.steps {
        let decl = if step.ty.is_empty() { String::new() } else { format!("{} ", step.ty) };
        body.push_str(&format!("\n#line {} \"{file}\"\n; {decl}{} = {};", line_of(lit), step.name, step.expr));
    }
    body.push('\n');
    let mut keyed: Vec<TokenStream> = Vec::new();
    let pass = |skip: &[&str]| -> Vec<TokenStream> {
        input
            .keyed
            .iter()
            .filter(|(k, _)| !skip.contains(&k.to_string().as_str()))
            .map(|(k, v)| quote!(#k = #v))
            .collect()
    };
    let preamble = string(input, "preamble")?.map(|l| l.value()).unwrap_or_default();
    let result = if reduce {
        let Some((last_lit, last)) = input.steps.last() else {
            return Err(syn::Error::new(key_span, "`fuse!` needs at least one step"));
        };
        if last.ty.is_empty() {
            return Err(syn::Error::new(
                last_lit.span(),
                format!("with `reduce`, the last step declares the value reduced: `TYPE {} = ...`", last.name),
            ));
        }
        let placeholders = lists.placeholders();
        let template = if placeholders.is_empty() {
            String::new()
        } else {
            format!(
                "template<{}> ",
                placeholders.iter().map(|p| format!("typename {p}")).collect::<Vec<_>>().join(", ")
            )
        };
        let targs = if placeholders.is_empty() { String::new() } else { format!("<{}>", placeholders.join(", ")) };
        let params: Vec<String> = lists
            .inputs
            .iter()
            .map(|p| format!("const {} {}", p.ty, p.name))
            .chain(["const long long i".to_string(), "const long long n".to_string()])
            .collect();
        let args: Vec<String> =
            lists.inputs.iter().map(|p| p.name.clone()).chain(["i".to_string(), "n".to_string()]).collect();
        let func = format!("{name}_steps");
        let steps_fn = format!(
            "{preamble}\n{template}__device__ __forceinline__ {} {func}({}) {{\n    (void)i; (void)n;{body}    return {};\n}}\n#line 1 \"fuse! {name} (generated)\"\n",
            last.ty,
            params.join(", "),
            last.name
        );
        if lists.inputs.iter().any(|p| p.kind == ParamKind::Raw) {
            return Err(syn::Error::new(key_span, "`raw` arrays cannot be fused into a reduction"));
        }
        // Converted to the reduce type inside the map, so a value that does not convert is an
        // error on the map's line, which is the last step's.
        let map = LitStr::new(&format!("static_cast<R>({func}{targs}({}))", args.join(", ")), last_lit.span());
        let pre = LitStr::new(&steps_fn, last_lit.span());
        keyed.extend(pass(&["preamble"]));
        let tokens = quote!(#name, map = #map, preamble = #pre, #(#keyed),*);
        let parsed: crate::reduction::ReductionInput = syn::parse2(tokens)?;
        // The map's own line is the last step's: a value that does not convert to the reduce type
        // is reported there.
        let mut lines = lines.to_vec();
        lines.push((map.token().to_string(), line_of(last_lit)));
        crate::reduction::expand_input(&parsed, site, &lines)
    } else {
        for (lit, step) in &input.steps {
            if step.ty.is_empty() && !lists.outputs.iter().any(|o| o.name == step.name) {
                return Err(syn::Error::new(
                    lit.span(),
                    format!(
                        "`{}` is not an output: declare it (`TYPE {} = ...`) or list it in `outputs`",
                        step.name, step.name
                    ),
                ));
            }
        }
        let first = &input.steps[0].0;
        let op = LitStr::new(&body, first.span());
        keyed.extend(pass(&[]));
        let tokens = quote!(#name, operation = #op, #(#keyed),*);
        let parsed: crate::elementwise::Input = syn::parse2(tokens)?;
        let mut at = HashMap::new();
        at.insert("operation".to_string(), line_of(first));
        for key in ["preamble", "loop_prep", "after_loop"] {
            if let Some(l) = string(input, key)? {
                at.insert(key.to_string(), line_of(&l));
            }
        }
        crate::elementwise::expand_input(&parsed, site, &at).map_err(|f| f.error)
    };
    result.map_err(|e| at_step(e, input, lines, site))
}

/// A compiler error whose log names a step's line, reported at that step's literal.
fn at_step(e: syn::Error, input: &FuseInput, lines: &[(String, usize)], site: &CallSite) -> syn::Error {
    let msg = e.to_string();
    let file = site.file.replace('\\', "/");
    let step = input.steps.iter().find(|(lit, _)| {
        lines
            .iter()
            .find(|(t, _)| *t == lit.token().to_string())
            .is_some_and(|(_, l)| msg.contains(&format!("{file}({l}): error")))
    });
    match step {
        Some((lit, _)) => syn::Error::new(lit.span(), msg),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        let s = parse_step("float d = x - y").unwrap();
        assert_eq!((s.ty.as_str(), s.name.as_str(), s.expr.as_str()), ("float", "d", "x - y"));
        let s = parse_step("unsigned long long k = (a == b) ? 1 : 0;").unwrap();
        assert_eq!((s.ty.as_str(), s.name.as_str(), s.expr.as_str()), ("unsigned long long", "k", "(a == b) ? 1 : 0"));
        let s = parse_step("z = x <= y").unwrap();
        assert_eq!((s.ty.as_str(), s.name.as_str()), ("", "z"));
        assert!(parse_step("x + y").unwrap_err().contains("has no `=`"));
        assert!(parse_step("= 3").is_err());
        assert!(parse_step("float d =").is_err());
        assert!(parse_step("float _ce_k = 3").unwrap_err().contains("reserved"));
        let s = parse_step("T* p = &x").unwrap();
        assert_eq!((s.ty.as_str(), s.name.as_str()), ("T*", "p"));
    }

    #[test]
    fn input() {
        let i = parse(quote!(f, inputs = "T x", steps = ["T d = x * 2", "y = d"], outputs = "T y", types = ["float"]))
            .unwrap();
        assert_eq!(i.name, "f");
        assert_eq!(i.steps.len(), 2);
        assert_eq!(i.keyed.len(), 3);
        assert!(parse(quote!(f, steps = "T d = x")).is_err());
        assert!(parse(quote!(f, steps = ["nope"])).is_err());
    }
}

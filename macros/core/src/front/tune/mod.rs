//! `tune = { ... }` of `cuda_kernel!`: autotuned variants of a template kernel.
//!
//! ```text
//! tune = {
//!     params = ["BLOCK: 128, 256, 512", "ITEMS: 1, 2, 4"],   // every combination is a variant
//!     block = "BLOCK",                                       // threads per block: x or (x, y, z)
//!     grid = "cdiv(n, BLOCK * ITEMS)",                       // blocks: x or (x, y, z)
//!     shared = "BLOCK * 4",                                  // dynamic shared bytes (default 0)
//!     key = "n",                                             // or ["m", "n"]; default: none
//!     bucket = "pow2",                                       // or "exact"
//!     kernel = "scale",                                      // needed with several templates
//! }
//! ```
//!
//! - [`Spec`]: the option as written ([`Spec::parse`]), formulas parsed ([`Formula`]).
//! - [`resolve()`]: against the source's templates: the variants as template instances, every name
//!   checked ([`Plan`]).
//! - `crate::tune::gen` (the feature, over the checked IR): the `tuned` launcher, `tuner()` and the
//!   embedded `TuneSpec`.
//!
//! Formulas are integer expressions over the kernel's integer parameters and the tune
//! parameters: literals, names, `+ - * / %`, parentheses, `min(a, b)`, `max(a, b)` and
//! `cdiv(a, b)` (division rounding up). They are checked here and evaluated at launch time by
//! the runtime (`cuda_embed::tune::expr`), each step checked for overflow.

pub mod resolve;

#[cfg(test)]
mod tests;

pub use resolve::{resolve, Plan};

use crate::front::input::string_list;
use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{braced, Ident, LitStr, Token};

/// The option as written.
#[derive(Clone)]
pub struct Spec {
    /// The `tune` key, for errors about the whole option.
    pub span: Span,
    /// `params = [...]`: each entry's literal, name and values as written.
    pub params: Vec<Param>,
    /// `grid = "..."`: one formula per dimension.
    pub grid: (LitStr, Vec<Formula>),
    /// `block = "..."`.
    pub block: (LitStr, Vec<Formula>),
    /// `shared = "..."`, if given.
    pub shared: Option<(LitStr, Formula)>,
    /// `key = ...`: parameter names with their literals.
    pub key: Vec<(String, LitStr)>,
    /// `bucket = "exact"`.
    pub exact: bool,
    /// `kernel = "..."`.
    pub kernel: Option<LitStr>,
}

/// One entry of `params`: `"BLOCK: 128, 256"`.
#[derive(Clone)]
pub struct Param {
    /// The literal.
    pub lit: LitStr,
    /// `BLOCK`.
    pub name: String,
    /// `128`, `256`.
    pub values: Vec<String>,
}

/// An integer formula.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Formula {
    /// A literal.
    Const(i64),
    /// A kernel parameter or tune parameter.
    Name(String),
    /// `a op b` (op one of `+ - * / %`, or `min`, `max`, `cdiv`).
    Binary(&'static str, Box<Formula>, Box<Formula>),
}

impl Formula {
    /// Every name it reads, in order.
    pub fn names(&self, out: &mut Vec<String>) {
        match self {
            Formula::Const(_) => {}
            Formula::Name(n) => out.push(n.clone()),
            Formula::Binary(_, a, b) => {
                a.names(out);
                b.names(out);
            }
        }
    }

    /// The stack depth its postfix program needs.
    pub fn depth(&self) -> usize {
        match self {
            Formula::Const(_) | Formula::Name(_) => 1,
            Formula::Binary(_, a, b) => a.depth().max(b.depth() + 1),
        }
    }
}

const HELP: &str = "integer formulas use the kernel's integer parameters, the tune parameters, literals, \
    `+ - * / %`, parentheses, `min(a, b)`, `max(a, b)` and `cdiv(a, b)`";

/// Parses one formula, or a tuple of up to three (`"(cdiv(n, 32), m)"`) when `dims`.
pub fn parse_formulas(lit: &LitStr, dims: bool) -> syn::Result<Vec<Formula>> {
    let text = lit.value();
    let err = |msg: String| syn::Error::new(lit.span(), msg);
    let expr: syn::Expr = syn::parse_str(&text).map_err(|e| err(format!("`{text}` is not a formula ({e}): {HELP}")))?;
    let parts: Vec<&syn::Expr> = match &expr {
        syn::Expr::Tuple(t) if dims => t.elems.iter().collect(),
        e => vec![e],
    };
    if parts.is_empty() || parts.len() > 3 {
        return Err(err(format!("`{text}`: give one to three dimensions, e.g. \"(cdiv(n, 32), m)\"")));
    }
    let out = parts.into_iter().map(|e| formula(e, &text).map_err(err)).collect::<Result<Vec<_>, _>>()?;
    if let Some(f) = out.iter().find(|f| f.depth() > 16) {
        return Err(err(format!("`{text}` is nested too deeply ({} levels; at most 16)", f.depth())));
    }
    Ok(out)
}

fn formula(e: &syn::Expr, text: &str) -> Result<Formula, String> {
    use syn::{BinOp, Expr, Lit};
    Ok(match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => Formula::Const(
                i.base10_parse::<i64>()
                    .map_err(|_| format!("`{text}`: `{}` does not fit an i64", i.base10_digits()))?,
            ),
            _ => return Err(format!("`{text}`: only integer literals; {HELP}")),
        },
        Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
            Formula::Name(p.path.get_ident().map(|i| i.to_string()).unwrap_or_default())
        }
        Expr::Paren(p) => formula(&p.expr, text)?,
        Expr::Group(g) => formula(&g.expr, text)?,
        Expr::Binary(b) => {
            let op = match b.op {
                BinOp::Add(_) => "+",
                BinOp::Sub(_) => "-",
                BinOp::Mul(_) => "*",
                BinOp::Div(_) => "/",
                BinOp::Rem(_) => "%",
                _ => return Err(format!("`{text}`: unsupported operator; {HELP}")),
            };
            Formula::Binary(op, Box::new(formula(&b.left, text)?), Box::new(formula(&b.right, text)?))
        }
        Expr::Call(c) => {
            let name = match &*c.func {
                Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()).unwrap_or_default(),
                _ => String::new(),
            };
            let op = match name.as_str() {
                "min" => "min",
                "max" => "max",
                "cdiv" => "cdiv",
                _ => return Err(format!("`{text}`: unknown function `{name}`; {HELP}")),
            };
            let args: Vec<&Expr> = c.args.iter().collect();
            let [a, b] = args.as_slice() else {
                return Err(format!("`{text}`: `{op}` takes two arguments"));
            };
            Formula::Binary(op, Box::new(formula(a, text)?), Box::new(formula(b, text)?))
        }
        _ => return Err(format!("`{text}`: unsupported syntax; {HELP}")),
    })
}

/// Parses `"BLOCK: 128, 256, 512"`.
fn parse_param(lit: &LitStr) -> syn::Result<Param> {
    let text = lit.value();
    let err = |msg: String| syn::Error::new(lit.span(), msg);
    let Some((name, values)) = text.split_once(':') else {
        return Err(err(format!(
            "`{text}` is not a tune parameter: write its name and values, e.g. \"BLOCK: 128, 256, 512\""
        )));
    };
    let name = name.trim().to_string();
    if syn::parse_str::<Ident>(&name).is_err() {
        return Err(err(format!("`{name}` is not a template parameter name")));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().all(String::is_empty) {
        return Err(err(format!(
            "tune parameter `{name}` has no values: list at least one, e.g. \"{name}: 128, 256\""
        )));
    }
    if values.iter().any(String::is_empty) {
        return Err(err(format!("`{text}`: an empty value between commas")));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(err(format!("`{text}`: value `{v}` is listed twice")));
        }
    }
    Ok(Param { lit: lit.clone(), name, values })
}

impl Spec {
    /// Parses the braced value of `tune = { ... }` (`key` is the `tune` identifier).
    pub fn parse(key: &Ident, input: ParseStream) -> syn::Result<Spec> {
        let content;
        braced!(content in input);
        let mut params = None;
        let (mut grid, mut block, mut shared, mut kernel) = (None, None, None, None);
        let mut key_names = Vec::new();
        let mut exact = false;
        let mut seen: Vec<String> = Vec::new();
        const KEYS: &str = "`params = [\"BLOCK: 128, 256\"]`, `block = \"BLOCK\"`, `grid = \"cdiv(n, BLOCK)\"`, \
            `shared = \"BLOCK * 4\"`, `key = \"n\"`, `bucket = \"pow2\" | \"exact\"` or `kernel = \"name\"`";
        while !content.is_empty() {
            let k: Ident = content.parse().map_err(|e| syn::Error::new(e.span(), format!("expected one of {KEYS}")))?;
            content
                .parse::<Token![=]>()
                .map_err(|e| syn::Error::new(e.span(), format!("`{k}` needs a value: `{k} = ...`")))?;
            let ks = k.to_string();
            if seen.contains(&ks) {
                return Err(syn::Error::new_spanned(&k, format!("`{ks}` is given twice")));
            }
            seen.push(ks.clone());
            match ks.as_str() {
                "params" => {
                    let list = string_list(&content, "tune parameter (e.g. \"BLOCK: 128, 256\")")?;
                    if list.is_empty() {
                        return Err(syn::Error::new_spanned(
                            &k,
                            "`params` is empty: list the template parameters to tune, e.g. params = [\"BLOCK: 128, 256, 512\"]",
                        ));
                    }
                    let mut out: Vec<Param> = Vec::new();
                    for lit in &list {
                        let p = parse_param(lit)?;
                        if out.iter().any(|o| o.name == p.name) {
                            return Err(syn::Error::new_spanned(
                                lit,
                                format!("tune parameter `{}` is listed twice", p.name),
                            ));
                        }
                        out.push(p);
                    }
                    params = Some(out);
                }
                "grid" | "block" | "shared" | "kernel" | "bucket" => {
                    let lit: LitStr = content
                        .parse()
                        .map_err(|e| syn::Error::new(e.span(), format!("`{ks}` takes a string literal")))?;
                    match ks.as_str() {
                        "grid" => grid = Some((lit.clone(), parse_formulas(&lit, true)?)),
                        "block" => block = Some((lit.clone(), parse_formulas(&lit, true)?)),
                        "shared" => {
                            let f = parse_formulas(&lit, false)?.remove(0);
                            shared = Some((lit, f));
                        }
                        "kernel" => kernel = Some(lit),
                        _ => {
                            exact = match lit.value().as_str() {
                                "pow2" => false,
                                "exact" => true,
                                other => {
                                    return Err(syn::Error::new_spanned(
                                        &lit,
                                        format!("unknown bucket `{other}`: expected \"pow2\" or \"exact\""),
                                    ))
                                }
                            }
                        }
                    }
                }
                "key" => {
                    let lits = if content.peek(syn::token::Bracket) {
                        string_list(&content, "key (a parameter name, e.g. \"n\")")?
                    } else {
                        vec![content.parse::<LitStr>().map_err(|e| {
                            syn::Error::new(e.span(), "`key` takes a parameter name or a list of them: key = \"n\"")
                        })?]
                    };
                    for lit in lits {
                        for name in lit.value().split(',').map(str::trim).filter(|s| !s.is_empty()) {
                            key_names.push((name.to_string(), lit.clone()));
                        }
                    }
                    if key_names.len() > 4 {
                        return Err(syn::Error::new_spanned(&k, "a tuning key has at most 4 parameters"));
                    }
                }
                _ => {
                    return Err(syn::Error::new_spanned(
                        &k,
                        format!("unknown `tune` option `{ks}`: expected one of {KEYS}"),
                    ))
                }
            }
            if !content.is_empty() {
                content.parse::<Token![,]>()?;
            }
        }
        let missing = |what: &str, example: &str| {
            syn::Error::new_spanned(key, format!("`tune` needs `{what}`, e.g. {what} = {example}"))
        };
        Ok(Spec {
            span: key.span(),
            params: params.ok_or_else(|| missing("params", "[\"BLOCK: 128, 256, 512\"]"))?,
            grid: grid.ok_or_else(|| missing("grid", "\"cdiv(n, BLOCK)\""))?,
            block: block.ok_or_else(|| missing("block", "\"BLOCK\""))?,
            shared,
            key: key_names,
            exact,
            kernel,
        })
    }
}

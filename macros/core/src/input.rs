//! The macro's input: `cuda_kernel!(r#"...source..."#, archs = [80, 90], options = ["-DN=4"])`.

use crate::compile::Arch;
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{bracketed, Expr, ExprLit, Ident, Lit, LitStr, Token};

/// Parsed macro input.
pub struct Input {
    /// The CUDA source literal.
    pub source: LitStr,
    /// `archs = [...]`, with the span of the option for errors.
    pub archs: Option<(Vec<Arch>, Span)>,
    /// `options = [...]`: extra compiler options (passed to nvcc at build time and to NVRTC at
    /// run time alike).
    pub options: Vec<String>,
    /// `compiler = "nvrtc"` forces the run-time NVRTC path for this module; `"nvcc"` requires
    /// nvcc; `"auto"` (default) uses nvcc when found.
    pub compiler: Compiler,
}

/// Which compiler path a module takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compiler {
    /// nvcc when found, else NVRTC at run time.
    #[default]
    Auto,
    /// nvcc, or a compile error.
    Nvcc,
    /// NVRTC at run time, even when nvcc is present.
    Nvrtc,
}

const OPTIONS_HELP: &str =
    "expected `archs = [80, 90]`, `options = [\"-DNAME=value\", ...]` or `compiler = \"auto\" | \"nvcc\" | \"nvrtc\"`";

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(input.error(
                "expected the CUDA source as a string literal: cuda_kernel!(r#\"extern \"C\" __global__ void k(float* x) { ... }\"#)",
            ));
        }
        let source: LitStr = match input.parse::<Expr>()? {
            Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => s,
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "expected the CUDA source as a string literal, e.g. cuda_kernel!(r#\"...\"#); \
                     macros and constants cannot be read at expansion time",
                ))
            }
        };
        let mut archs = None;
        let mut options = Vec::new();
        let mut compiler = Compiler::Auto;
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.parse().map_err(|e| syn::Error::new(e.span(), OPTIONS_HELP))?;
            if !input.peek(Token![=]) {
                return Err(syn::Error::new_spanned(&key, format!("`{key}` needs a value: {OPTIONS_HELP}")));
            }
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "archs" => {
                    let content;
                    bracketed!(content in input);
                    let mut list = Vec::new();
                    while !content.is_empty() {
                        let lit: Lit = content.parse().map_err(|e| {
                            syn::Error::new(e.span(), "an architecture is a number like 90 or a string like \"90a\"")
                        })?;
                        let text = match &lit {
                            Lit::Int(i) => i.base10_digits().to_string(),
                            Lit::Str(s) => s.value(),
                            _ => {
                                return Err(syn::Error::new_spanned(
                                    &lit,
                                    "an architecture is a number like 90 or a string like \"90a\"",
                                ))
                            }
                        };
                        list.push(Arch::parse(&text).map_err(|e| syn::Error::new_spanned(&lit, e))?);
                        if !content.is_empty() {
                            content.parse::<Token![,]>()?;
                        }
                    }
                    if list.is_empty() {
                        return Err(syn::Error::new_spanned(
                            &key,
                            "`archs` needs at least one architecture, e.g. archs = [80, 90]",
                        ));
                    }
                    archs = Some((list, key.span()));
                }
                "options" => {
                    let content;
                    bracketed!(content in input);
                    while !content.is_empty() {
                        let s: LitStr = content.parse().map_err(|e| {
                            syn::Error::new(e.span(), "each option is a string literal, e.g. \"-DN=4\"")
                        })?;
                        options.push(s.value());
                        if !content.is_empty() {
                            content.parse::<Token![,]>()?;
                        }
                    }
                }
                "compiler" => {
                    let v: LitStr = input.parse()?;
                    compiler = match v.value().as_str() {
                        "auto" => Compiler::Auto,
                        "nvcc" => Compiler::Nvcc,
                        "nvrtc" => Compiler::Nvrtc,
                        other => {
                            return Err(syn::Error::new_spanned(
                                &v,
                                format!("unknown compiler `{other}`: expected \"auto\", \"nvcc\" or \"nvrtc\""),
                            ))
                        }
                    };
                }
                other => {
                    return Err(syn::Error::new_spanned(&key, format!("unknown option `{other}`: {OPTIONS_HELP}")));
                }
            }
        }
        Ok(Input { source, archs, options, compiler })
    }
}

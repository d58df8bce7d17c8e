//! The macro's input: `cuda_kernel!(r#"...source..."#, archs = [80, 90], options = ["-DN=4"])`.

use cuda_embed_source::options::Arch;
use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{bracketed, Expr, ExprLit, Ident, Lit, LitBool, LitStr, Token};

/// Parsed macro input.
pub struct Input {
    /// Where the CUDA source comes from.
    pub source: Source,
    /// `archs = [...]`, with the span of the option for errors.
    pub archs: Option<(Vec<Arch>, Span)>,
    /// Compiler options, passed to nvcc at build time and to NVRTC alike (as
    /// `options::nvrtc_options` spells them): the typed options (`defines`, `std`, `fast_math`,
    /// `maxrregcount`, `lineinfo`, `extended_lambda`, `relaxed_constexpr`) turned into flags,
    /// followed by the free-form `options = [...]`; `cutlass = true` adds `-I<CUTLASS dir>` and
    /// `--expt-relaxed-constexpr`. Nothing is added that the user did not ask for.
    pub options: Vec<String>,
    /// `include_dirs = ["..."]`, relative to the crate root, made absolute.
    pub include_dirs: Vec<(String, Span)>,
    /// `instances = ["axpy<float>", ...]`: template instances to compile and generate.
    pub instances: Vec<LitStr>,
    /// `compiler = "nvrtc"` forces the run-time NVRTC path for this module; `"nvcc"` requires
    /// nvcc; `"nvrtc-build"` requires libnvrtc at build time; `"auto"` (default) uses nvcc when
    /// found, else libnvrtc at build time, else NVRTC at run time.
    pub compiler: Compiler,
    /// How the not-listed-instance error names the kernel and where instances are listed.
    pub listing: Listing,
    /// `tune = { ... }`: autotuned variants of a template kernel.
    pub tune: Option<crate::front::tune::Spec>,
    /// `rdc = true`, `link = ["..."]`, `lto = true`: separate compilation ([`crate::link`]).
    pub link: LinkOptions,
    /// `rename = { "a::kernel" => a_kernel, ... }`: the Rust module a kernel or template
    /// generates, by the kernel's C++ name as written (`crate::front::names`).
    pub rename: Vec<(LitStr, Ident)>,
}

/// How a launch of a template instance that was not built is reported: `{kind} `axpy` was not
/// instantiated for `f64``, "add the one you need to `{key} = [...]` of the {macro_name} at ...".
#[derive(Clone, Debug)]
pub struct Listing {
    /// What the kernel is called in the message: `template kernel`, `elementwise kernel`.
    pub kind: &'static str,
    /// The macro option that lists the instances: `instances`, `types`.
    pub key: &'static str,
    /// The macro: `cuda_kernel!`, `elementwise_kernel!`.
    pub macro_name: &'static str,
}

impl Default for Listing {
    fn default() -> Self {
        Listing { kind: "template kernel", key: "instances", macro_name: "cuda_kernel!" }
    }
}

/// The CUDA source: inline, or a file relative to the crate root.
pub enum Source {
    /// `cuda_kernel!(r#"..."#)`.
    Inline(LitStr),
    /// `cuda_kernel!(file = "kernels/x.cu")`.
    File(LitStr),
}

impl Source {
    /// The literal, for spans.
    pub fn lit(&self) -> &LitStr {
        match self {
            Source::Inline(l) | Source::File(l) => l,
        }
    }
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
    /// NVRTC at build time (libnvrtc), even when nvcc is present, or a compile error.
    NvrtcBuild,
}

const OPTIONS_HELP: &str = "expected one of `file = \"kernels/x.cu\"`, `instances = [\"axpy<float>\"]`, \
    `archs = [80, 90]`, `defines = [\"N=4\", \"DEBUG\"]`, `std = \"c++17\"`, `fast_math = true`, `maxrregcount = 64`, \
    `lineinfo = true`, `extended_lambda = true`, `relaxed_constexpr = true`, `include_dirs = [\"include\"]`, \
    `options = [\"--extra-flag\"]`, \
    `compiler = \"auto\" | \"nvcc\" | \"nvrtc-build\" | \"nvrtc\"`, `rdc = true`, `link = [\"kernels/math.cu\"]`, \
    `lto = true`, `rename = { \"a::kernel\" => a_kernel }` or \
    `tune = { params = [\"BLOCK: 128, 256\"], block = \"BLOCK\", key = \"n\" }`";

/// What the `NAME, key = "...", ..., types = [...], <compiler options>` input of
/// `elementwise_kernel!` and `reduction_kernel!` accepts (see [`Keyed::parse`]).
pub struct KeyedSpec {
    /// The error when the input does not start with the name (how the call should look).
    pub name_hint: &'static str,
    /// The keys that take a string literal of CUDA code.
    pub strings: &'static [&'static str],
    /// Every key but the compiler options, as the errors list them.
    pub keys_help: &'static str,
    /// What one entry of `types = [...]` is, for its error.
    pub types_hint: &'static str,
}

/// A parsed `NAME, key = value, ...` input: the string options by key, `types`, and the
/// compiler options of `cuda_kernel!`. Each key may be given once.
pub struct Keyed {
    /// The generated module's name.
    pub name: Ident,
    strings: Vec<(&'static str, LitStr)>,
    /// `types = [...]` with its key.
    pub types: Option<(Ident, Vec<LitStr>)>,
    /// The compiler options of `cuda_kernel!`.
    pub options: Options,
}

impl Keyed {
    /// Parses the input as `spec` describes.
    pub fn parse(input: ParseStream, spec: &KeyedSpec) -> syn::Result<Keyed> {
        let name: Ident = input.parse().map_err(|e| syn::Error::new(e.span(), spec.name_hint))?;
        let mut this = Keyed { name, strings: Vec::new(), types: None, options: Options::default() };
        let keys = spec.keys_help;
        let mut seen: Vec<String> = Vec::new();
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input
                .parse()
                .map_err(|e| syn::Error::new(e.span(), format!("expected one of {keys} or {}", Options::KEYS_HELP)))?;
            input
                .parse::<Token![=]>()
                .map_err(|e| syn::Error::new(e.span(), format!("`{key}` needs a value: `{key} = ...`")))?;
            let k = key.to_string();
            if seen.contains(&k) {
                return Err(syn::Error::new_spanned(&key, format!("`{k}` is given twice")));
            }
            seen.push(k.clone());
            if let Some(&slot) = spec.strings.iter().find(|s| **s == k) {
                let lit = input
                    .parse()
                    .map_err(|e| syn::Error::new(e.span(), format!("`{k}` takes a string literal of CUDA code")))?;
                this.strings.push((slot, lit));
            } else if k == "types" {
                this.types = Some((key.clone(), string_list(input, spec.types_hint)?));
            } else if !this.options.parse_option(&key, input)? {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("unknown option `{k}`: expected one of {keys} or {}", Options::KEYS_HELP),
                ));
            }
        }
        Ok(this)
    }

    /// The string option `key`, if given.
    pub fn take(&mut self, key: &str) -> Option<LitStr> {
        let i = self.strings.iter().position(|(k, _)| *k == key)?;
        Some(self.strings.swap_remove(i).1)
    }
}

/// Reads `[ "a", "b" ]`; `what` names one element in the error for a non-literal.
pub fn string_list(input: ParseStream, what: &str) -> syn::Result<Vec<LitStr>> {
    let content;
    bracketed!(content in input);
    let mut out = Vec::new();
    while !content.is_empty() {
        out.push(
            content
                .parse::<LitStr>()
                .map_err(|e| syn::Error::new(e.span(), format!("each {what} is a string literal")))?,
        );
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    Ok(out)
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_') && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

const RENAME_HELP: &str = "`rename` maps kernels to Rust module names: \
    `rename = { \"a::kernel\" => a_kernel, \"b::kernel\" => b_kernel }`";

/// Reads the `{ "a::kernel" => a_kernel, ... }` of `rename` (the `=` already read). Each new name
/// is a Rust identifier that can name a module; a kernel given twice is an error at the second.
fn parse_rename(input: ParseStream, out: &mut Vec<(LitStr, Ident)>) -> syn::Result<()> {
    use syn::ext::IdentExt;
    let content;
    syn::braced!(content in input);
    while !content.is_empty() {
        let key: LitStr = content.parse().map_err(|e| syn::Error::new(e.span(), RENAME_HELP))?;
        let bare = |k: &LitStr| k.value().trim().trim_start_matches("::").to_string();
        if out.iter().any(|(k, _)| bare(k) == bare(&key)) {
            return Err(syn::Error::new_spanned(
                &key,
                format!("`rename` names `{}` twice: give it one name", key.value()),
            ));
        }
        content.parse::<Token![=>]>().map_err(|e| syn::Error::new(e.span(), RENAME_HELP))?;
        let not_a_name = |span: Span, what: &str| {
            let kernel = key.value();
            syn::Error::new(
                span,
                format!(
                    "{what} is not a Rust module name: `rename` gives `{kernel}` a Rust identifier, e.g. `\"{kernel}\" => {}`",
                    suggestion(&kernel)
                ),
            )
        };
        if !content.peek(Ident::peek_any) {
            let tt: proc_macro2::TokenTree = content.parse().map_err(|e| syn::Error::new(e.span(), RENAME_HELP))?;
            return Err(not_a_name(tt.span(), &format!("`{tt}`")));
        }
        let name = Ident::parse_any(&content)?;
        let text = name.to_string();
        if ["self", "Self", "super", "crate"].contains(&text.as_str()) {
            return Err(not_a_name(name.span(), &format!("`{text}`")));
        }
        if !text.starts_with("r#") && syn::parse_str::<Ident>(&text).is_err() {
            return Err(syn::Error::new(
                name.span(),
                format!("`{text}` is a Rust keyword: give `{}` another name, or write `r#{text}`", key.value()),
            ));
        }
        if content.peek(Token![::]) {
            return Err(not_a_name(name.span(), &format!("a path starting `{text}::`")));
        }
        out.push((key, name));
        if !content.is_empty() {
            content.parse::<Token![,]>().map_err(|e| syn::Error::new(e.span(), RENAME_HELP))?;
        }
    }
    Ok(())
}

/// `a::kernel` -> `a_kernel`: the identifier a message suggests for kernel `name` (its
/// namespace path, as a collision names it), or `new_name` where that is no identifier.
pub fn suggestion(name: &str) -> String {
    let path = name.trim().trim_start_matches("::").replace("::", "_");
    if is_identifier(&path) {
        path
    } else {
        "new_name".into()
    }
}

/// The compiler options every kernel macro accepts (`cuda_kernel!`, `elementwise_kernel!`, ...):
/// `archs`, `defines`, `std`, `fast_math`, `maxrregcount`, `lineinfo`, `extended_lambda`,
/// `relaxed_constexpr`, `include_dirs`, `options` and `compiler`, one parser for all.
#[derive(Default)]
pub struct Options {
    /// `archs = [...]`, with the span of the option for errors.
    pub archs: Option<(Vec<Arch>, Span)>,
    /// `include_dirs = ["..."]`, relative to the crate root.
    pub include_dirs: Vec<(String, Span)>,
    /// `compiler = "..."`.
    pub compiler: Compiler,
    defines: Vec<String>,
    typed: Vec<String>,
    extra: Vec<String>,
    /// Every macro the options define (`defines = [...]` and `-D` in `options`): name, value and
    /// the literal that defines it, for [`Options::define_problem`].
    defined: Vec<(String, String, Span)>,
}

impl Options {
    /// The option keys, for "expected one of" messages.
    pub const KEYS_HELP: &'static str = "`archs = [80, 90]`, `defines = [\"N=4\", \"DEBUG\"]`, `std = \"c++17\"`, \
        `fast_math = true`, `maxrregcount = 64`, `lineinfo = true`, `extended_lambda = true`, \
        `relaxed_constexpr = true`, `include_dirs = [\"include\"]`, \
        `options = [\"--extra-flag\"]` or `compiler = \"auto\" | \"nvcc\" | \"nvrtc\"`";

    /// An error at the first macro the options define (`defines = [...]`, `-D` in `options`)
    /// that a generated kernel cannot take: one redefining a C++ keyword or CUDA type name its
    /// element types rest on (`defines = ["float=double"]`), or naming or expanding to the
    /// generator's `_ce_*` names ([`cuda_embed_source::elementwise::define_problem`]). For the
    /// generating macros (`elementwise_kernel!`, `reduction_kernel!`), whose launchers check
    /// arguments against the types as written.
    pub fn define_problem(&self) -> Option<syn::Error> {
        self.defined.iter().find_map(|(name, value, span)| {
            cuda_embed_source::elementwise::define_problem(name, value)
                .map(|p| syn::Error::new(*span, format!("the define of `{name}`: {p}")))
        })
    }

    /// Parses the value of compiler option `key` (the `=` already read). Returns `Ok(false)`, having
    /// read nothing, when `key` is not a compiler option, so a macro can handle its own keys.
    pub fn parse_option(&mut self, key: &Ident, input: ParseStream) -> syn::Result<bool> {
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
                        key,
                        "`archs` needs at least one architecture, e.g. archs = [80, 90]",
                    ));
                }
                self.archs = Some((list, key.span()));
            }
            "options" => {
                let lits = string_list(input, "option (e.g. \"-DN=4\")")?;
                let values: Vec<String> = lits.iter().map(LitStr::value).collect();
                for (name, value) in cuda_embed_source::options::defines(&values) {
                    let lit = lits.iter().find(|l| l.value().contains(&name)).map_or(key.span(), LitStr::span);
                    self.defined.push((name, value, lit));
                }
                self.extra.extend(values);
            }
            "include_dirs" => {
                for d in string_list(input, "include directory")? {
                    self.include_dirs.push((d.value(), d.span()));
                }
            }
            "defines" => {
                for d in string_list(input, "define (e.g. \"N=4\" or \"DEBUG\")")? {
                    let v = d.value();
                    let name = v.split_once('=').map_or(v.as_str(), |x| x.0);
                    if !is_identifier(name) {
                        return Err(syn::Error::new_spanned(
                            &d,
                            format!("`{v}` is not a define: write `NAME` or `NAME=value` (NAME a C identifier)"),
                        ));
                    }
                    let value = v.split_once('=').map_or("1", |x| x.1);
                    self.defined.push((name.to_string(), value.to_string(), d.span()));
                    self.defines.push(format!("-D{v}"));
                }
            }
            "std" => {
                let v: LitStr = input.parse()?;
                const STDS: &[&str] = &["c++11", "c++14", "c++17", "c++20"];
                if !STDS.contains(&v.value().as_str()) {
                    return Err(syn::Error::new_spanned(
                        &v,
                        format!("unknown C++ standard `{}`: expected one of {}", v.value(), STDS.join(", ")),
                    ));
                }
                self.typed.push(format!("-std={}", v.value()));
            }
            "fast_math" | "lineinfo" | "extended_lambda" | "relaxed_constexpr" => {
                let v: syn::LitBool =
                    input.parse().map_err(|e| syn::Error::new(e.span(), format!("`{key}` takes `true` or `false`")))?;
                if v.value {
                    // nvcc's spelling; `options::nvrtc_options` gives NVRTC its own (or leaves
                    // the flag out where NVRTC has none, and the macro says so).
                    let flag = match key.to_string().as_str() {
                        "fast_math" => "--use_fast_math",
                        "lineinfo" => "-lineinfo",
                        "extended_lambda" => "--extended-lambda",
                        _ => "--expt-relaxed-constexpr",
                    };
                    self.typed.push(flag.to_string());
                }
            }
            "cutlass" => {
                let v: syn::LitBool =
                    input.parse().map_err(|e| syn::Error::new(e.span(), "`cutlass` takes `true` or `false`"))?;
                if v.value {
                    let dir = cuda_embed_source::options::cutlass_include_dir()
                        .map_err(|e| syn::Error::new_spanned(key, e))?;
                    // CUTLASS needs `--expt-relaxed-constexpr` (constexpr host functions called
                    // in device code); it is not scanned for kernels or hashed header by header:
                    // a `-I` option, not an `include_dirs` entry (see `options::cutlass_identity`).
                    self.typed.push(format!("-I{}", dir.display()));
                    if !self.typed.iter().any(|t| t == "--expt-relaxed-constexpr") {
                        self.typed.push("--expt-relaxed-constexpr".into());
                    }
                }
            }
            "maxrregcount" => {
                let v: syn::LitInt = input
                    .parse()
                    .map_err(|e| syn::Error::new(e.span(), "`maxrregcount` takes a number of registers, e.g. 64"))?;
                let n: u32 = v.base10_parse()?;
                if !(16..=255).contains(&n) {
                    return Err(syn::Error::new_spanned(
                        &v,
                        format!("`maxrregcount = {n}` is out of range: a thread can use 16 to 255 registers"),
                    ));
                }
                self.typed.push(format!("--maxrregcount={n}"));
            }
            "compiler" => {
                let v: LitStr = input.parse()?;
                self.compiler = match v.value().as_str() {
                    "auto" => Compiler::Auto,
                    "nvcc" => Compiler::Nvcc,
                    "nvrtc" => Compiler::Nvrtc,
                    "nvrtc-build" => Compiler::NvrtcBuild,
                    other => {
                        return Err(syn::Error::new_spanned(
                            &v,
                            format!(
                                "unknown compiler `{other}`: expected \"auto\", \"nvcc\", \"nvrtc-build\" or \"nvrtc\""
                            ),
                        ))
                    }
                };
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The compiler flags, for nvcc and NVRTC alike: the typed options (`defines`, `std`,
    /// `fast_math`, `maxrregcount`, `lineinfo`, `extended_lambda`, `relaxed_constexpr`) turned
    /// into nvcc's flags, then the free-form `options` (NVRTC gets them as
    /// `options::nvrtc_options` spells them).
    pub fn flags(&self) -> Vec<String> {
        self.defines.iter().chain(&self.typed).chain(&self.extra).cloned().collect()
    }
}

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(input.error(
                "expected the CUDA source as a string literal: cuda_kernel!(r#\"extern \"C\" __global__ void k(float* x) { ... }\"#)",
            ));
        }
        // The source literal comes first, unless the source is a file (`file = "..."`).
        let inline = !(input.peek(Ident) && input.peek2(Token![=]));
        let mut source = None;
        if inline {
            source = Some(match input.parse::<Expr>()? {
                Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Source::Inline(s),
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "expected the CUDA source as a string literal, e.g. cuda_kernel!(r#\"...\"#), or \
                         `file = \"kernels/x.cu\"`; macros and constants cannot be read at expansion time",
                    ))
                }
            });
        }
        let mut opts = Options::default();
        let mut instances = Vec::new();
        let mut tune = None;
        let mut link = LinkOptions::default();
        let mut rename = Vec::new();
        let mut first = !inline;
        while !input.is_empty() {
            if !first {
                input.parse::<Token![,]>()?;
                if input.is_empty() {
                    break;
                }
            }
            first = false;
            let key: Ident = input.parse().map_err(|e| syn::Error::new(e.span(), OPTIONS_HELP))?;
            if !input.peek(Token![=]) {
                return Err(syn::Error::new_spanned(&key, format!("`{key}` needs a value: {OPTIONS_HELP}")));
            }
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "file" => {
                    let lit: LitStr = input.parse()?;
                    if source.is_some() {
                        return Err(syn::Error::new_spanned(
                            &key,
                            "give the CUDA source either inline or as `file = \"...\"`, not both",
                        ));
                    }
                    if lit.value().trim().is_empty() {
                        return Err(syn::Error::new_spanned(
                            &lit,
                            "`file` needs a path relative to the crate root, e.g. \"kernels/x.cu\"",
                        ));
                    }
                    source = Some(Source::File(lit));
                }
                "instances" => instances.extend(string_list(input, "instance (e.g. \"axpy<float>\")")?),
                "tune" => tune = Some(crate::front::tune::Spec::parse(&key, input)?),
                "rdc" | "link" | "lto" => link.parse_option(&key, input)?,
                "rename" => parse_rename(input, &mut rename)?,
                other => {
                    if !opts.parse_option(&key, input)? {
                        return Err(syn::Error::new_spanned(&key, format!("unknown option `{other}`: {OPTIONS_HELP}")));
                    }
                }
            }
        }
        let Some(source) = source else {
            return Err(input
                .error("no CUDA source: pass it inline, cuda_kernel!(r#\"...\"#), or as `file = \"kernels/x.cu\"`"));
        };
        let options = opts.flags();
        let Options { archs, include_dirs, compiler, .. } = opts;
        Ok(Input {
            source,
            archs,
            options,
            include_dirs,
            instances,
            compiler,
            listing: Listing::default(),
            tune,
            link,
            rename,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Options;
    use syn::parse::{Parse, ParseStream};
    use syn::{Ident, Token};

    /// Compiler options alone, as a kernel macro reads them.
    struct Opts(Options);

    impl Parse for Opts {
        fn parse(input: ParseStream) -> syn::Result<Self> {
            let mut o = Options::default();
            while !input.is_empty() {
                let key: Ident = input.parse()?;
                input.parse::<Token![=]>()?;
                assert!(o.parse_option(&key, input)?, "`{key}` is a compiler option");
                if !input.is_empty() {
                    input.parse::<Token![,]>()?;
                }
            }
            Ok(Opts(o))
        }
    }

    fn problem(options: &str) -> Option<String> {
        syn::parse_str::<Opts>(options).unwrap().0.define_problem().map(|e| e.to_string())
    }

    /// `defines = [...]` and `-D` in `options` may not redefine what the generated kernels'
    /// element types rest on, nor name or expand to the generator's names: the generating macros
    /// refuse them (`defines = ["float=double"]` read 4-byte buffers as 8-byte elements).
    #[test]
    fn defines_that_change_the_generated_kernels_are_found() {
        assert_eq!(problem(r#"defines = ["N=4", "DEBUG"], options = ["--use_fast_math", "-DFAST=1"]"#), None);
        let p = problem(r#"defines = ["N=4", "float=double"]"#).unwrap();
        assert!(p.contains("the define of `float`") && p.contains("C++ keyword"), "{p}");
        let p = problem(r#"options = ["-D", "int32_t=long"]"#).unwrap();
        assert!(p.contains("the define of `int32_t`") && p.contains("CUDA type name"), "{p}");
        let p = problem(r#"options = ["--define-macro=blockIdx=threadIdx"]"#).unwrap();
        assert!(p.contains("built-in variable"), "{p}");
        let p = problem(r#"options = ["-DP=_ce_p_y"]"#).unwrap();
        assert!(p.contains("expands to `_ce_p_y`"), "{p}");
        let p = problem(r#"defines = ["_ce_n"]"#).unwrap();
        assert!(p.contains("the define of `_ce_n`"), "{p}");
    }
}

/// `rdc = true`, `link = [...]` and `lto = true` as the macro was given them.
#[derive(Default, Clone)]
pub struct LinkOptions {
    /// `rdc = ...`, with its span.
    pub rdc: Option<(bool, Span)>,
    /// `link = [...]`: further `.cu` files, relative to the crate root.
    pub files: Vec<LitStr>,
    /// `lto = ...`, with its span.
    pub lto: Option<(bool, Span)>,
    given: Vec<String>,
}

impl LinkOptions {
    /// Parses the value of `rdc`, `link` or `lto` (the `=` already read).
    pub fn parse_option(&mut self, key: &Ident, input: ParseStream) -> syn::Result<()> {
        let k = key.to_string();
        if self.given.contains(&k) {
            return Err(syn::Error::new_spanned(key, format!("`{k}` is given twice")));
        }
        self.given.push(k.clone());
        if k == "link" {
            let files = string_list(input, "linked file (e.g. \"kernels/math.cu\")")?;
            if files.is_empty() {
                return Err(syn::Error::new_spanned(
                    key,
                    "`link` needs at least one `.cu` file, e.g. link = [\"kernels/math.cu\"]",
                ));
            }
            for f in &files {
                if f.value().trim().is_empty() {
                    return Err(syn::Error::new_spanned(f, "a linked file is a path relative to the crate root"));
                }
            }
            self.files = files;
            return Ok(());
        }
        let v: LitBool =
            input.parse().map_err(|e| syn::Error::new(e.span(), format!("`{k}` takes `true` or `false`")))?;
        if k == "rdc" {
            self.rdc = Some((v.value, key.span()));
        } else {
            self.lto = Some((v.value, key.span()));
        }
        Ok(())
    }

    /// Whether the module is compiled separately: `rdc = true`, any `link` file or `lto = true`.
    pub fn enabled(&self) -> bool {
        self.rdc.is_some_and(|r| r.0) || !self.files.is_empty() || self.lto()
    }

    /// Whether link-time optimisation is asked for.
    pub fn lto(&self) -> bool {
        self.lto.is_some_and(|l| l.0)
    }

    /// `rdc = false` together with what needs it.
    pub fn contradiction(&self) -> Option<syn::Error> {
        let (false, span) = self.rdc? else { return None };
        let what = if !self.files.is_empty() { "`link = [...]`" } else { "`lto = true`" };
        Some(syn::Error::new(span, format!("{what} needs relocatable device code: remove `rdc = false`")))
    }
}

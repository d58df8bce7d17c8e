//! `reduction_kernel!`: CuPy's `ReductionKernel`, typed. Parses the macro input, generates the
//! CUDA source of the three reduction kernels (`cuda_embed_source::reduction`), pushes it through
//! the `cuda_kernel!` pipeline ([`expand_generated`]) and wraps the kernels in a module with safe
//! `launch`, `launch_rows` and `launch_cols` functions.

pub mod axes; // `launch_axes`: the reduction over any axes of N-D views
pub mod axes_node; // `node_axes`: the same as a graph node
pub mod gen; // the Rust items of a reduction_kernel!
pub mod node; // reduction kernels as graph nodes

use crate::expand::{expand_generated, CallSite};
use crate::front::input::{Keyed, KeyedSpec, Options};
use crate::front::types;
use crate::gen::rust_type;
use cuda_embed_source::params::{ListError, Param, ParamKind, ParamLists, ParamType, Role, Source};
use cuda_embed_source::reduction::{RedParam, ReductionSource, Snippet};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr};

/// Parsed `reduction_kernel!` input.
pub struct ReductionInput {
    /// The generated module's name.
    pub name: Ident,
    /// `inputs = "..."`, `outputs = "..."`.
    pub inputs: Option<LitStr>,
    /// `outputs = "..."`.
    pub outputs: Option<LitStr>,
    /// The user code: `map`, `reduce`, `post_map`, `identity`, `reduce_type`, `preamble`.
    pub map: Option<LitStr>,
    /// `reduce = "a + b"`.
    pub reduce: Option<LitStr>,
    /// `post_map = "y = a"`.
    pub post_map: Option<LitStr>,
    /// `identity = "0"`.
    pub identity: Option<LitStr>,
    /// `reduce_type = "double"`.
    pub reduce_type: Option<LitStr>,
    /// `preamble = "..."`.
    pub preamble: Option<LitStr>,
    /// `types = ["float", "T=double, U=int"]`, with the key's span.
    pub types: Option<(Vec<LitStr>, Span)>,
    /// The compiler options of `cuda_kernel!`.
    pub options: Options,
}

const KEYS: &str = "`inputs = \"T x\"`, `outputs = \"T y\"`, `map = \"x * x\"`, `reduce = \"a + b\"`, \
    `post_map = \"y = a\"`, `identity = \"0\"`, `reduce_type = \"double\"`, `preamble = \"...\"`, \
    `types = [\"float\", \"double\"]`";

impl Parse for ReductionInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut k = Keyed::parse(
            input,
            &KeyedSpec {
                name_hint: "expected the reduction's name first: reduction_kernel!(l2norm, inputs = \"T x\", ...)",
                strings: &["inputs", "outputs", "map", "reduce", "post_map", "identity", "reduce_type", "preamble"],
                keys_help: KEYS,
                types_hint: "type instance (e.g. \"float\" or \"T=float, U=int\")",
            },
        )?;
        Ok(ReductionInput {
            inputs: k.take("inputs"),
            outputs: k.take("outputs"),
            map: k.take("map"),
            reduce: k.take("reduce"),
            post_map: k.take("post_map"),
            identity: k.take("identity"),
            reduce_type: k.take("reduce_type"),
            preamble: k.take("preamble"),
            types: k.types.map(|(key, list)| (list, key.span())),
            name: k.name,
            options: k.options,
        })
    }
}

/// Expands `reduction_kernel!`. `lines` gives the Rust line of each string literal of the input
/// (by its token text), so that compiler errors in the user code point at it.
pub fn expand(tokens: TokenStream, site: CallSite, lines: &[(String, usize)]) -> TokenStream {
    let input: ReductionInput = match syn::parse2(tokens) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let name = input.name.clone();
    match expand_input(&input, &site, lines) {
        Ok(ts) => ts,
        Err(e) => {
            let err = e.to_compile_error();
            quote! { #err #[allow(non_snake_case, dead_code)] pub mod #name {} }
        }
    }
}

fn required<'a>(lit: &'a Option<LitStr>, key: &str, name: &Ident) -> syn::Result<&'a LitStr> {
    lit.as_ref().ok_or_else(|| {
        syn::Error::new_spanned(
            name,
            format!(
                "reduction `{name}` needs `{key} = \"...\"` (all of `inputs`, `outputs`, `map`, `reduce`, `identity`)"
            ),
        )
    })
}

fn list_error(e: ListError, input: &ReductionInput, inputs: &LitStr, outputs: &LitStr) -> syn::Error {
    let span = match e.source {
        Source::Inputs => inputs.span(),
        Source::Outputs => outputs.span(),
        Source::Instance(i) => input.types.as_ref().and_then(|t| t.0.get(i)).map_or(input.name.span(), LitStr::span),
        Source::Types => input.types.as_ref().map_or(input.name.span(), |t| t.1),
    };
    syn::Error::new(span, e.to_string())
}

/// The Rust type of a parameter: a generic for a placeholder, the mapped type for a CUDA builtin,
/// the user's own type (same name, in the invoking module) for a struct.
fn param_type(p: &Param) -> TokenStream {
    match &p.ty {
        ParamType::Placeholder(ph) => {
            let id = format_ident!("{}", ph);
            quote!(#id)
        }
        ParamType::Concrete(c) => concrete_type(c),
    }
}

/// The Rust name of parameter `p` in the generated launchers: its own, unless the launchers use
/// it for an argument of their own (`stream`, `cols`, `shape`, `graph`, `axes`, `ORIGIN`, ...:
/// then `cols_3`) or it is a Rust keyword (then `r#type`). Error messages keep the parameter's name.
pub(crate) fn param_id(lists: &ParamLists, p: &Param) -> Ident {
    let index = lists.all().position(|q| q.name == p.name).unwrap_or(0);
    crate::gen::param_ident_reserving(&p.name, index, &["shape", "cols", "axes", "ORIGIN"])
}

/// A CUDA type [`concrete_type`] can name in Rust, or the error saying why not: a builtin, or a
/// struct (its last path segment an identifier the user's Rust type has).
fn check_rust_type(c: &str, span: Span) -> syn::Result<()> {
    if types::builtin(&types::normalise(c)).is_some() {
        return Ok(());
    }
    let last = c.trim_start_matches("struct ").rsplit("::").next().unwrap_or(c).trim();
    if syn::parse_str::<syn::Ident>(last).is_ok() {
        return Ok(());
    }
    Err(syn::Error::new(
        span,
        format!(
            "`{c}` has no Rust type: reduction parameters take the CUDA scalar types (`float`, `double`, `int`, \
             `unsigned long long`, `__half`, ...), CUDA vector types, or a struct with a Rust type of the same name \
             (`long double` and other types without a Rust counterpart cannot be passed)"
        ),
    ))
}

/// The Rust type of a CUDA type: the mapped builtin, or the user's struct of the same name
/// (checked by [`check_rust_type`] first).
fn concrete_type(c: &str) -> TokenStream {
    match types::builtin(&types::normalise(c)) {
        Some(b) => rust_type(&types::RustType::Builtin(b)),
        None => {
            let last = c.trim_start_matches("struct ").rsplit("::").next().unwrap_or(c).trim();
            let id = format_ident!("{}", last);
            quote!(#id)
        }
    }
}

pub(crate) fn expand_input(
    input: &ReductionInput,
    site: &CallSite,
    lines: &[(String, usize)],
) -> syn::Result<TokenStream> {
    let name = &input.name;
    if let Some(problem) = cuda_embed_source::cxx::kernel_name_problem(&name.to_string()) {
        return Err(syn::Error::new(name.span(), problem));
    }
    let inputs = required(&input.inputs, "inputs", name)?;
    let outputs = required(&input.outputs, "outputs", name)?;
    let map = required(&input.map, "map", name)?;
    let reduce = required(&input.reduce, "reduce", name)?;
    let identity = required(&input.identity, "identity", name)?;
    let lists =
        ParamLists::parse(&inputs.value(), &outputs.value()).map_err(|e| list_error(e, input, inputs, outputs))?;
    if let Some(p) = lists.all().find(|p| p.kind == ParamKind::Raw) {
        let (lit, role) = if p.role == Role::Input { (inputs, "inputs") } else { (outputs, "outputs") };
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "`raw {} {}` in `{role}`: a reduction's parameters are arrays (`{} {}`, read or written one \
                 element per index) and scalar inputs, never `raw` arrays",
                p.ty, p.name, p.ty, p.name
            ),
        ));
    }
    if !lists.inputs.iter().any(|p| p.kind == ParamKind::Array) {
        return Err(syn::Error::new(
            inputs.span(),
            "a reduction needs at least one array input (e.g. `inputs = \"T x\"`)",
        ));
    }
    if lists.outputs.is_empty() {
        return Err(syn::Error::new(
            outputs.span(),
            "a reduction needs at least one output (e.g. `outputs = \"T y\"`)",
        ));
    }
    let types: Vec<String> = input.types.as_ref().map(|t| t.0.iter().map(LitStr::value).collect()).unwrap_or_default();
    let instances = lists.instances(&types).map_err(|e| list_error(e, input, inputs, outputs))?;
    // Every concrete type needs a Rust type: a builtin, or a struct the user names in Rust.
    for p in lists.all() {
        if let ParamType::Concrete(c) = &p.ty {
            let lit = if p.role == Role::Input { inputs } else { outputs };
            check_rust_type(c, lit.span())?;
        }
    }
    for i in &instances {
        for ty in i.types() {
            check_rust_type(ty, input.types.as_ref().map_or(name.span(), |t| t.1))?;
        }
    }
    // A define or a preamble macro redefining a type name (`defines = ["float=double"]`) would
    // make the kernels read elements of another size than the launchers check.
    if let Some(e) = input.options.define_problem() {
        return Err(e);
    }
    if let Some(pre) = &input.preamble {
        if let Some(problem) = cuda_embed_source::elementwise::redefinition_in(&pre.value()) {
            return Err(syn::Error::new(pre.span(), format!("the preamble: {problem}")));
        }
    }
    let placeholders = lists.placeholders();
    let snippet = |lit: &LitStr| Snippet {
        text: lit.value(),
        origin: lines.iter().find(|(t, _)| *t == lit.token().to_string()).map(|(_, l)| (site.file.clone(), *l)),
    };
    let red_param = |p: &Param| RedParam {
        name: p.name.clone(),
        ty: p.ty.as_str().to_string(),
        scalar: p.kind == ParamKind::Scalar,
    };
    let src = ReductionSource {
        name: name.to_string(),
        placeholders: placeholders.clone(),
        inputs: lists.inputs.iter().map(red_param).collect(),
        outputs: lists.outputs.iter().map(red_param).collect(),
        map: snippet(map),
        reduce: snippet(reduce),
        post_map: input.post_map.as_ref().map(snippet),
        identity: snippet(identity),
        reduce_type: input.reduce_type.as_ref().map(snippet),
        preamble: input.preamble.as_ref().map(snippet),
        instances: instances.iter().map(|i| i.types().iter().map(|t| t.to_string()).collect()).collect(),
    };
    let exprs: Vec<LitStr> = src.instance_exprs().iter().map(|e| LitStr::new(e, map.span())).collect();
    let source = LitStr::new(&src.source(), map.span());
    let generated = expand_generated(source, site, &input.options, exprs).map_err(|f| f.error)?;
    let rust_instances: Vec<(String, Vec<TokenStream>)> = if placeholders.is_empty() {
        Vec::new()
    } else {
        instances
            .iter()
            .map(|i| {
                let shown = if placeholders.len() == 1 { i.types().join(", ") } else { i.to_string() };
                let shown = format!("\"{shown}\"");
                (shown, i.types().into_iter().map(concrete_type).collect())
            })
            .collect()
    };
    Ok(crate::reduction::gen::wrapper(name, &lists, &placeholders, &generated, site, param_type, &rust_instances))
}

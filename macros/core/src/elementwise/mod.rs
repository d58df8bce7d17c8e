//! `elementwise_kernel!`: CuPy's `ElementwiseKernel`, typed and built at compile time.
//!
//! The input names the kernel, its parameter lists, the per-element operation and the instances
//! of its placeholders; [`cuda_embed_source::params`] reads the lists, [`cuda_embed_source::elementwise`]
//! writes the CUDA source, [`crate::expand::expand_generated`] builds it through the same pipeline
//! as `cuda_kernel!`, and `gen` wraps the generated kernel in the public module's launchers.

mod gen;
mod node;

use crate::expand::{expand_generated_as, CallSite};
use crate::front::input::{Keyed, KeyedSpec, Listing, Options};
use crate::front::report::Failure;
use cuda_embed_source::elementwise::{self as source, Elementwise, Origin};
use cuda_embed_source::params::{ListError, ParamLists, Source};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use std::collections::HashMap;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr};

/// The macro's input.
pub struct Input {
    /// The generated module's name.
    pub name: Ident,
    inputs: Option<LitStr>,
    outputs: Option<LitStr>,
    operation: Option<LitStr>,
    types: Option<(Ident, Vec<LitStr>)>,
    preamble: Option<LitStr>,
    loop_prep: Option<LitStr>,
    after_loop: Option<LitStr>,
    options: Options,
}

const KEYS: &str = "`inputs = \"T x, scalar T a\"`, `outputs = \"T y\"`, `operation = \"y = a * x\"`, \
    `types = [\"float\", \"double\"]`, `preamble = \"...\"`, `loop_prep = \"...\"`, `after_loop = \"...\"`";

impl Parse for Input {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut k = Keyed::parse(
            input,
            &KeyedSpec {
                name_hint: "expected the kernel's name first: elementwise_kernel!(name, inputs = \"T x\", outputs = \"T y\", operation = \"y = x\", types = [\"float\"])",
                strings: &["inputs", "outputs", "operation", "preamble", "loop_prep", "after_loop"],
                keys_help: KEYS,
                types_hint: "instance (e.g. \"float\" or \"T=float, U=int\")",
            },
        )?;
        Ok(Input {
            inputs: k.take("inputs"),
            outputs: k.take("outputs"),
            operation: k.take("operation"),
            preamble: k.take("preamble"),
            loop_prep: k.take("loop_prep"),
            after_loop: k.take("after_loop"),
            name: k.name,
            types: k.types,
            options: k.options,
        })
    }
}

/// Expands `elementwise_kernel!`. `lines` gives the Rust line of each string option's literal
/// (`operation`, `preamble`, `loop_prep`, `after_loop`), for `#line` directives.
pub fn expand(tokens: TokenStream, site: CallSite, lines: &HashMap<String, usize>) -> TokenStream {
    let input: Input = match syn::parse2(tokens) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match expand_input(&input, &site, lines) {
        Ok(ts) => ts,
        Err(Failure { error, .. }) => {
            let err = error.to_compile_error();
            let name = &input.name;
            quote! { #err #[allow(non_snake_case, dead_code)] pub mod #name {} }
        }
    }
}

/// A params error at the literal it is in, quoting the text it is about.
fn list_error(input: &Input, e: ListError) -> Failure {
    let (lit, span): (Option<&LitStr>, Span) = match e.source {
        Source::Inputs => (input.inputs.as_ref(), input.name.span()),
        Source::Outputs => (input.outputs.as_ref(), input.name.span()),
        Source::Instance(k) => (input.types.as_ref().and_then(|t| t.1.get(k)), input.name.span()),
        // The placeholders are in the parameter lists: point there.
        Source::Types => {
            (None, input.inputs.as_ref().or(input.outputs.as_ref()).map_or(input.name.span(), LitStr::span))
        }
    };
    let mut msg = e.error.message.clone();
    if let Some(l) = lit {
        let v = l.value();
        if let Some(text) = v.get(e.error.span.clone()).filter(|t| !t.is_empty() && *t != v) {
            msg = format!("{msg} (at `{text}`)");
        }
    }
    Failure::early(syn::Error::new(lit.map_or(span, LitStr::span), msg))
}

pub(crate) fn expand_input(
    input: &Input,
    site: &CallSite,
    lines: &HashMap<String, usize>,
) -> Result<TokenStream, Failure> {
    let early = |span: Span, msg: &str| Failure::early(syn::Error::new(span, msg));
    let name = input.name.to_string();
    if let Some(problem) = cuda_embed_source::cxx::kernel_name_problem(&name) {
        return Err(early(input.name.span(), &problem));
    }
    let operation = input.operation.as_ref().ok_or_else(|| {
        early(
            input.name.span(),
            "missing `operation = \"...\"`: the code run for each index, e.g. `operation = \"z = x + y\"`",
        )
    })?;
    let outputs = input.outputs.as_ref().ok_or_else(|| {
        early(input.name.span(), "missing `outputs = \"...\"`: the arrays the kernel writes, e.g. `outputs = \"T z\"`")
    })?;
    if operation.value().trim().is_empty() {
        return Err(early(
            operation.span(),
            "the operation is empty: write the code run for each index, e.g. `z = x + y`",
        ));
    }
    let inputs_text = input.inputs.as_ref().map(LitStr::value).unwrap_or_default();
    let lists = ParamLists::parse(&inputs_text, &outputs.value()).map_err(|e| list_error(input, e))?;
    if lists.outputs.is_empty() {
        return Err(early(outputs.span(), "an elementwise kernel needs at least one output, e.g. `outputs = \"T z\"`"));
    }
    let types: Vec<String> = input.types.as_ref().map(|t| t.1.iter().map(LitStr::value).collect()).unwrap_or_default();
    let instances = lists.instances(&types).map_err(|e| list_error(input, e))?;
    let at = |key: &str, lit: &Option<LitStr>| Origin {
        file: lit.as_ref().map(|_| site.file.clone()),
        line: lines.get(key).copied().unwrap_or(site.line),
    };
    let text = |l: &Option<LitStr>| l.as_ref().map(LitStr::value).unwrap_or_default();
    let (op, pre, prep, after) =
        (operation.value(), text(&input.preamble), text(&input.loop_prep), text(&input.after_loop));
    let bindings = match instances.as_slice() {
        [only] => only.bindings.clone(),
        _ => Vec::new(),
    };
    let typedefs = cuda_embed_source::typedefs::type_preamble(&bindings, instances.len(), &pre);
    let spec = Elementwise {
        name: &name,
        operation: &op,
        preamble: &pre,
        type_preamble: &typedefs,
        loop_prep: &prep,
        after_loop: &after,
        origins: [
            at("operation", &input.operation),
            at("preamble", &input.preamble),
            at("loop_prep", &input.loop_prep),
            at("after_loop", &input.after_loop),
        ],
    };
    if let Some(e) = input.options.define_problem() {
        return Err(Failure::early(e));
    }
    if let Some((what, reserved)) = source::reserved_use(&spec) {
        let lit = match what {
            "operation" => Some(operation),
            "preamble" => input.preamble.as_ref(),
            "loop_prep" => input.loop_prep.as_ref(),
            _ => input.after_loop.as_ref(),
        };
        return Err(early(
            lit.map_or(input.name.span(), LitStr::span),
            &format!(
                "the {what} names `{reserved}`: names starting with `{}` are the generated kernel's own (the \
                 arrays' raw pointers, the length, the loop), which user code must not use; use the parameters \
                 (`x` is element `i` of array `x`), `i`, `n`, or a `raw` parameter for access to a whole array",
                source::RESERVED_PREFIX
            ),
        ));
    }
    if let Some(problem) = source::redefinition_in(&pre) {
        let span = input.preamble.as_ref().map_or(input.name.span(), LitStr::span);
        return Err(early(span, &format!("the preamble: {problem}")));
    }
    let cuda = source::source(&spec, &lists);
    let types_kernel = source::types_kernel(&name);
    let mut exprs = Vec::new();
    if !lists.placeholders().is_empty() {
        let spans: Vec<Span> = input.types.as_ref().map(|t| t.1.iter().map(LitStr::span).collect()).unwrap_or_default();
        let nd_kernels = cuda_embed_source::ndarray::nd_kernel_names(&name);
        for kernel in [&name, &types_kernel].into_iter().chain(&nd_kernels) {
            for (inst, span) in instances.iter().zip(&spans) {
                exprs.push(LitStr::new(&source::instance_expr(kernel, inst), *span));
            }
        }
    }
    let listing = Listing { kind: "elementwise kernel", key: "types", macro_name: "elementwise_kernel!" };
    let generated = expand_generated_as(LitStr::new(&cuda, operation.span()), site, &input.options, exprs, listing)?;
    let built: Vec<String> = instances.iter().map(|i| source::instance_expr(&name, i)).collect();
    let listed = gen::PublicListed {
        message: format!("elementwise kernel `{name}` was not instantiated for `{{Self}}`"),
        label: "no such instance in `types = [...]`".into(),
        note: format!(
            "instances built: {}; add the one you need to `types = [...]` of the elementwise_kernel! at {}:{}",
            built.join(", "),
            site.file,
            site.line
        ),
        impls: if lists.placeholders().is_empty() {
            Vec::new()
        } else {
            instances
                .iter()
                .zip(&built)
                .map(|(i, shown)| (format!("`{shown}`"), i.types().iter().map(|t| instance_type(t)).collect()))
                .collect()
        },
    };
    gen::module(input, &lists, &listed, &generated).map_err(|msg| early(input.name.span(), &msg))
}

/// The Rust type of an instance's C++ type, as named inside the kernel's module: the mapped
/// builtin, or the user's struct of the same name one module up.
fn instance_type(c: &str) -> TokenStream {
    match crate::front::types::builtin(&crate::front::types::normalise(c)) {
        Some(b) => crate::gen::rust_type(&crate::front::types::RustType::Builtin(b)),
        None => {
            let last = c.trim_start_matches("struct ").rsplit("::").next().unwrap_or(c).trim();
            let id = quote::format_ident!("{}", last);
            quote!(super::#id)
        }
    }
}

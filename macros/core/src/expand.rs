//! From macro input to Rust items: the driver. Input -> [`front`] (the module as written) ->
//! [`oracle`] (nvcc's answers, when it runs) -> [`check`](mod@check) (types mapped and checked)
//! -> [`gen`] (tokens).

use crate::check;
use crate::compile::{self, NoNvcc};
use crate::front;
use crate::gen;
use crate::input::{Compiler, Input, Options, Source};
use crate::ir::{rust_name, Image};
use crate::oracle::{self, Oracle};
use crate::report::Failure;
use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

pub use crate::ir::CallSite;

/// Expands `cuda_kernel!`. Errors become `compile_error!`s plus fallback items, so the user sees
/// the real error and not a cascade of "cannot find `saxpy`".
pub fn expand(tokens: TokenStream, site: CallSite) -> TokenStream {
    let input: Input = match syn::parse2(tokens) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match expand_input(&input, &site) {
        Ok(ts) => ts,
        Err(Failure { error, kernels: mut names }) => {
            names.sort();
            names.dedup();
            let fallback = names.iter().filter_map(|n| rust_name(n).ok()).map(|id| {
                quote! { #[allow(non_snake_case, dead_code)] pub mod #id {} }
            });
            let err = error.to_compile_error();
            quote! { #err #(#fallback)* }
        }
    }
}

/// A generated module's items: see [`expand_generated`].
pub struct Generated {
    /// The hidden module's name: kernel `k` is `#hidden::k` from the call site's scope.
    pub hidden: syn::Ident,
    /// The hidden module (module spec, one `cuda_kernel!`-style module per kernel), not re-exported.
    pub tokens: TokenStream,
}

/// The pipeline entry point for macros that generate CUDA source (`elementwise_kernel!`,
/// `reduction_kernel!`): `source`'s value is the CUDA text and its span is where errors point;
/// `instances` are template instances as in `cuda_kernel!`'s `instances = [...]`. The source goes
/// through the same front end, compiler oracle, checks and generator as `cuda_kernel!`.
pub fn expand_generated(
    source: LitStr,
    site: &CallSite,
    options: &Options,
    instances: Vec<LitStr>,
) -> Result<Generated, Failure> {
    let input = Input {
        source: Source::Inline(source),
        archs: options.archs.clone(),
        options: options.flags(),
        include_dirs: options.include_dirs.clone(),
        instances,
        compiler: options.compiler,
    };
    let (hidden, tokens) = expand_with(&input, site, gen::generate_hidden)?;
    Ok(Generated { hidden, tokens })
}

fn expand_input(input: &Input, site: &CallSite) -> Result<TokenStream, Failure> {
    expand_with(input, site, gen::generate)
}

type Generate<R> = fn(&crate::ir::Module, &crate::ir::Checked, &Image, &[std::path::PathBuf]) -> R;

fn expand_with<R>(input: &Input, site: &CallSite, generate: Generate<R>) -> Result<R, Failure> {
    let module = front::lower(input, site)?;
    let fail = |error: syn::Error| Failure { error, kernels: module.kernel_names() };
    let at_source = |msg: String| fail(syn::Error::new(module.span(), msg));
    let oracle = choose_oracle(input.compiler).map_err(at_source)?;
    let compiled = match &oracle {
        Ok(oracle) => Some(oracle::consult(oracle.as_ref(), &module).map_err(at_source)?),
        Err(_) => None,
    };
    let checked = check::check(&module, compiled.as_ref()).map_err(fail)?;
    let mut deps: Vec<_> = module.file.iter().cloned().chain(module.headers.iter().map(|h| h.path.clone())).collect();
    let image = match (compiled, oracle) {
        (Some(c), _) => {
            deps.extend(c.deps);
            c.image
        }
        (None, Err(why)) => Image::source(&module, why.to_string()),
        (None, Ok(_)) => unreachable!("a module is compiled whenever there is a compiler"),
    };
    deps.sort();
    deps.dedup();
    Ok(generate(&module, &checked, &image, &deps))
}

/// The compiler that answers questions about the source at build time, or why there is none
/// (the source is then compiled by NVRTC at run time).
fn choose_oracle(compiler: Compiler) -> Result<Result<Box<dyn Oracle>, NoNvcc>, String> {
    let nvcc = match compiler {
        Compiler::Nvrtc => Err(NoNvcc::Forced),
        Compiler::Auto => compile::find_nvcc()?,
        Compiler::Nvcc => match compile::find_nvcc()? {
            Ok(n) => Ok(n),
            Err(why) => {
                return Err(format!(
                    "`compiler = \"nvcc\"` but {why}: install the CUDA toolkit, set NVCC or CUDA_PATH, or use `compiler = \"auto\"`"
                ))
            }
        },
    };
    Ok(nvcc.map(|n| Box::new(oracle::Nvcc(n)) as Box<dyn Oracle>))
}

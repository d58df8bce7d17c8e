//! From macro input to Rust items: the driver. Input -> [`front`] (the module as written) ->
//! [`oracle`] (nvcc's answers, when it runs) -> [`check`](mod@check) (types mapped and checked)
//! -> [`gen`] (tokens).

use crate::check;
use crate::compile::{self, NoNvcc};
use crate::front;
use crate::gen;
use crate::input::{Compiler, Input};
use crate::ir::{rust_name, Image};
use crate::oracle::{self, Oracle};
use crate::report::Failure;
use proc_macro2::TokenStream;
use quote::quote;

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

fn expand_input(input: &Input, site: &CallSite) -> Result<TokenStream, Failure> {
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
    Ok(gen::generate(&module, &checked, &image, &deps))
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
                    "`compiler = \"nvcc\"` but {why}: install the CUDA toolkit, set NVCC or CUDA_PATH (or run under scripts/with-cuda), or use `compiler = \"auto\"`"
                ))
            }
        },
    };
    Ok(nvcc.map(|n| Box::new(oracle::Nvcc(n)) as Box<dyn Oracle>))
}

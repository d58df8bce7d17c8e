//! From macro input to Rust items: the driver. Input -> [`front`] (the module as written) ->
//! [`oracle`] (nvcc's answers, when it runs) -> [`check`](mod@check) (types mapped and checked)
//! -> [`gen`] (tokens).

use crate::check;
use crate::compile::{self, NoNvcc};
use crate::front;
use crate::gen;
use crate::input::{Compiler, Input};
use crate::ir::{rust_name, Image};
use crate::nvrtc;
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
        (None, Err(why)) => Image::source(&module, why),
        (None, Ok(_)) => unreachable!("a module is compiled whenever there is a compiler"),
    };
    deps.sort();
    deps.dedup();
    Ok(gen::generate(&module, &checked, &image, &deps))
}

/// The variable that turns a build with no compiler (the run-time NVRTC path, whose build-time
/// checks are skipped) into a compile error.
pub const REQUIRE_COMPILER_VAR: &str = "CUDA_EMBED_REQUIRE_COMPILER";

/// The compiler that answers questions about the source at build time, or why there is none
/// (the source is then compiled by NVRTC at run time): nvcc when found, else libnvrtc, unless
/// the module asks for one of them. With `CUDA_EMBED_REQUIRE_COMPILER` set, having none is an
/// error.
fn choose_oracle(compiler: Compiler) -> Result<Result<Box<dyn Oracle>, String>, String> {
    let nvrtc = || -> Result<Result<Box<dyn Oracle>, String>, String> {
        Ok(nvrtc::find_nvrtc()?.map(|n| Box::new(oracle::NvrtcBuild(n)) as Box<dyn Oracle>))
    };
    let chosen = match compiler {
        Compiler::Nvrtc => Err(NoNvcc::Forced.to_string()),
        Compiler::NvrtcBuild => match nvrtc()? {
            Ok(o) => Ok(o),
            Err(why) => {
                return Err(format!(
                    "`compiler = \"nvrtc-build\"` but {why}: install the CUDA toolkit or the nvidia-cuda-nvrtc wheel, \
                     or set {} to the library",
                    nvrtc::NVRTC_VAR
                ))
            }
        },
        Compiler::Auto => match compile::find_nvcc()? {
            Ok(n) => Ok(Box::new(oracle::Nvcc(n)) as Box<dyn Oracle>),
            Err(NoNvcc::Forced) => Err(NoNvcc::Forced.to_string()),
            Err(not_found) => nvrtc()?.map_err(|why| format!("{not_found} and {why}")),
        },
        Compiler::Nvcc => match compile::find_nvcc()? {
            Ok(n) => Ok(Box::new(oracle::Nvcc(n)) as Box<dyn Oracle>),
            Err(why) => {
                return Err(format!(
                    "`compiler = \"nvcc\"` but {why}: install the CUDA toolkit, set NVCC or CUDA_PATH, or use `compiler = \"auto\"`"
                ))
            }
        },
    };
    match chosen {
        Err(why) if compile::flag(REQUIRE_COMPILER_VAR) => Err(format!(
            "{REQUIRE_COMPILER_VAR} is set but this module would be compiled at run time, without the build-time \
             checks: {why}; install the CUDA toolkit (nvcc or libnvrtc), or unset {REQUIRE_COMPILER_VAR}"
        )),
        other => Ok(other),
    }
}

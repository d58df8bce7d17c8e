//! From macro input to Rust items: the driver. Input -> [`front`] (the module as written) ->
//! [`oracle`] (nvcc's answers, when it runs) -> [`check`](mod@check) (types mapped and checked)
//! -> [`gen`] (tokens).

use crate::check;
use crate::front;
use crate::front::input::{Compiler, Input, Listing, Options, Source};
use crate::front::ir::{rust_name, Image};
use crate::front::report::Failure;
use crate::front::types::Mapped;
use crate::gen;
use crate::oracle::nvcc::{self, NoNvcc};
use crate::oracle::nvrtc;
use crate::oracle::{self, Oracle, REQUIRE_COMPILER_VAR};
use proc_macro2::TokenStream;
use quote::quote;
use syn::LitStr;

pub use crate::front::ir::CallSite;

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
    /// Each kernel's Rust parameter types by its C++ name: an ordinary kernel's, or a template's
    /// generic signature (placeholders as `RustType::Generic`), or why the template has none.
    pub signatures: Vec<(String, Result<Vec<Mapped>, String>)>,
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
    expand_generated_as(source, site, options, instances, Listing::default())
}

/// [`expand_generated`], with the macro's own words for a launch of an instance it did not build
/// (`listing`: e.g. "elementwise kernel", `types`, `elementwise_kernel!`).
pub fn expand_generated_as(
    source: LitStr,
    site: &CallSite,
    options: &Options,
    instances: Vec<LitStr>,
    listing: Listing,
) -> Result<Generated, Failure> {
    let input = Input {
        source: Source::Inline(source),
        archs: options.archs.clone(),
        options: options.flags(),
        include_dirs: options.include_dirs.clone(),
        instances,
        compiler: options.compiler,
        listing,
        tune: None,
        link: Default::default(),
        rename: Vec::new(),
    };
    expand_with(&input, site, |module, checked, image, deps| {
        let (hidden, tokens) = gen::generate_hidden(module, checked, image, deps, &gen::no_items);
        let plain = checked.kernels.iter().filter(|k| k.unit.instance.is_none());
        let mut signatures: Vec<_> = plain.map(|k| (k.unit.kernel.name.clone(), Ok(k.params.clone()))).collect();
        for (t, sig) in module.parsed.templates.iter().zip(&checked.templates) {
            signatures.push((t.name.clone(), sig.clone()));
        }
        Generated { hidden, tokens, signatures }
    })
}

fn expand_input(input: &Input, site: &CallSite) -> Result<TokenStream, Failure> {
    // `tune`'s launcher joins its template's module (the driver passes the feature's generator).
    expand_with(input, site, |m, c, i, d| gen::generate(m, c, i, d, &crate::tune::gen::items))
}

/// The pipeline, one for every module: the front end (a linked module's units joined in by
/// linking's front-end pass), the oracle (nvcc or build-time NVRTC; for a linked module its
/// relocatable compile and device link), the check, the generator.
fn expand_with<R>(
    input: &Input,
    site: &CallSite,
    generate: impl FnOnce(&crate::front::ir::Module, &crate::front::ir::Checked, &Image, &[std::path::PathBuf]) -> R,
) -> Result<R, Failure> {
    if let Some(error) = crate::link::misplaced_flags(input) {
        return Err(Failure::early(error));
    }
    let mut module = front::lower(input, site)?;
    let linked = match input.link.enabled() {
        true => Some(crate::link::join(input, &mut module)?),
        false => None,
    };
    let fail = |error: syn::Error| Failure { error, kernels: module.kernel_names() };
    let at_source = |msg: String| fail(syn::Error::new(module.span(), msg));
    // The oracle's answers, or why no compiler runs at build time.
    let compiled: Result<crate::oracle::Compiled, String> = match &linked {
        Some(linked) => crate::link::compile(input, &module, linked)?,
        None => {
            let oracle = choose_oracle(input.compiler).map_err(at_source)?;
            check_nvrtc_flags(&module, &oracle, input.compiler).map_err(at_source)?;
            match oracle {
                Ok(oracle) => Ok(oracle::consult(oracle.as_ref(), &module).map_err(at_source)?),
                Err(why) => Err(why),
            }
        }
    };
    let checked = check::check(&module, compiled.as_ref().ok()).map_err(fail)?;
    if let Some(linked) = &linked {
        let deps = crate::link::deps(&module, linked, compiled.as_ref().ok());
        let image = match compiled {
            Ok(c) => c.image,
            Err(why) => crate::link::image_at_first_use(input, &module, linked, why),
        };
        return Ok(generate(&module, &checked, &image, &deps));
    }
    let mut deps: Vec<_> = module.file.iter().cloned().chain(module.headers.iter().map(|h| h.path.clone())).collect();
    let image = match compiled {
        Ok(c) => {
            deps.extend(c.deps);
            c.image
        }
        Err(why) => Image::source(&module, why),
    };
    deps.sort();
    deps.dedup();
    Ok(generate(&module, &checked, &image, &deps))
}

/// An nvcc flag that NVRTC has no equivalent for (`--extended-lambda`), on a module that NVRTC
/// compiles because the module asks for it (`compiler = "nvrtc-build"` or `"nvrtc"`, or libnvrtc
/// is the compiler found): an error naming the flag and the path. A module that falls back to
/// NVRTC at first use only because no compiler was found builds as before (the flag is left
/// out there, and NVRTC names it if a lambda needs it).
fn check_nvrtc_flags(
    module: &crate::front::ir::Module,
    oracle: &Result<Box<dyn Oracle>, String>,
    compiler: Compiler,
) -> Result<(), String> {
    let path = match oracle {
        Ok(o) if o.is_nvrtc() => "NVRTC at build time (libnvrtc)",
        Err(_) if compiler == Compiler::Nvrtc => "NVRTC at first use (`compiler = \"nvrtc\"`)",
        _ => return Ok(()),
    };
    match cuda_embed_source::options::nvcc_only(&module.options) {
        Some(flag) => Err(format!(
            "`{flag}` is an nvcc flag that NVRTC has no equivalent for, and this module is compiled by {path}: \
             NVRTC compiles device code only, where a lambda needs no `__device__` annotation (remove the \
             annotation and the flag), or build it with nvcc (`compiler = \"nvcc\"`)"
        )),
        None => Ok(()),
    }
}

/// The compiler that answers questions about the source at build time, or why there is none
/// (the source is then compiled by NVRTC at run time): nvcc when found, else libnvrtc, unless
/// the module asks for one of them. With `CUDA_EMBED_REQUIRE_COMPILER` set, having none is an
/// error.
pub(crate) fn choose_oracle(compiler: Compiler) -> Result<Result<Box<dyn Oracle>, String>, String> {
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
        Compiler::Auto => match nvcc::find_nvcc()? {
            Ok(n) => Ok(Box::new(oracle::Nvcc(n)) as Box<dyn Oracle>),
            Err(NoNvcc::Forced) => Err(NoNvcc::Forced.to_string()),
            Err(not_found) => nvrtc()?.map_err(|why| format!("{not_found} and {why}")),
        },
        Compiler::Nvcc => match nvcc::find_nvcc()? {
            Ok(n) => Ok(Box::new(oracle::Nvcc(n)) as Box<dyn Oracle>),
            Err(why) => {
                return Err(format!(
                    "`compiler = \"nvcc\"` but {why}: install the CUDA toolkit, set NVCC or CUDA_PATH (or run under scripts/with-cuda), or use `compiler = \"auto\"`"
                ))
            }
        },
    };
    match chosen {
        Err(why) if nvcc::flag(REQUIRE_COMPILER_VAR) => Err(format!(
            "{REQUIRE_COMPILER_VAR} is set but this module would be compiled at run time, without the build-time \
             checks: {why}; install the CUDA toolkit (nvcc or libnvrtc), or unset {REQUIRE_COMPILER_VAR}"
        )),
        other => Ok(other),
    }
}

//! The compiler as the type oracle: the module's source is compiled with C++ probes appended,
//! and what the compiled PTX says (each probe's answer, each kernel's `.entry`) is what the
//! checker trusts over the source text.
//!
//! [`Oracle`] is what a compiler must do to serve: compile source to PTX and an image. [`Nvcc`]
//! is the one there is; [`consult`] does the rest for any of them.

use crate::compile::{self, Request};
use crate::ir::{Image, Module};
use crate::probe::{self, Answers, Probe, ProbeKey};
use crate::ptx;
use crate::signature::TemplateKind;
use crate::types;
use std::path::PathBuf;

/// A compiler that can answer questions about the source at build time.
pub trait Oracle {
    /// The compiler's name and version for messages: `nvcc 13.0`.
    fn name(&self) -> String;

    /// Compiles `source` (the module's source with probes appended, beginning with a `#line`
    /// of its own where needed) with the module's options, archs and include directories.
    fn compile(&self, module: &Module, source: &str) -> Result<Built, String>;
}

/// What one compile produced.
pub struct Built {
    /// PTX of the lowest architecture, where the probes' answers and the `.entry` lists are read.
    pub ptx: String,
    /// The image to embed.
    pub image: Image,
    /// Files the compiler read (headers outside the toolkit), for rebuild tracking.
    pub deps: Vec<PathBuf>,
}

/// What the compiler said about a module.
pub struct Compiled {
    /// The probes' answers.
    pub answers: Answers,
    /// Every kernel in the PTX with its parameter list.
    pub entries: Vec<ptx::Entry>,
    /// The image to embed.
    pub image: Image,
    /// Files the compiler read.
    pub deps: Vec<PathBuf>,
}

/// nvcc at build time: a fatbin of every arch, PTX for the probes.
pub struct Nvcc(pub compile::Nvcc);

impl Oracle for Nvcc {
    fn name(&self) -> String {
        format!("nvcc {}", self.0.version)
    }

    fn compile(&self, module: &Module, source: &str) -> Result<Built, String> {
        let built = compile::compile(
            &self.0,
            &Request {
                source,
                line_directive: &module.line_directive,
                options: &module.options,
                archs: &module.archs,
                include_dirs: &module.include_dirs,
            },
        )?;
        Ok(Built {
            image: Image::Fatbin { bytes: built.fatbin, targets: built.targets, release: self.0.release() },
            ptx: built.ptx,
            deps: built.deps,
        })
    }
}

/// Compiles the module with its probes and reads the answers. If the type probes do not compile
/// (an unusual declaration), retries with what cannot be left out (template instantiations,
/// symbols), so that errors then are the user's own.
pub fn consult(oracle: &dyn Oracle, module: &Module) -> Result<Compiled, String> {
    let (essential, extra) = questions(module);
    let full = format!(
        "{}\n#line 1 \"cuda-embed-probe\"\n{}",
        module.source,
        probe::code(&[essential.clone(), extra].concat())
    );
    let built = oracle.compile(module, &full).or_else(|_| {
        let text = format!("{}\n#line 1 \"cuda_kernel! instances\"\n{}", module.source, probe::code(&essential));
        oracle.compile(module, &text)
    });
    let built = built.map_err(|log| format!("{} failed to compile the CUDA source:\n{log}", oracle.name()))?;
    Ok(Compiled {
        answers: Answers::from_ptx(&built.ptx),
        entries: ptx::entries(&built.ptx),
        image: built.image,
        deps: built.deps,
    })
}

/// Questions for the compiler: `essential` ones (symbols of instances and globals, which also
/// instantiate templates, and non-type argument values) and `extra` ones (parameter types).
fn questions(module: &Module) -> (Vec<Probe<ProbeKey>>, Vec<Probe<ProbeKey>>) {
    let mut essential = Vec::new();
    let mut extra = Vec::new();
    for (ui, u) in module.units.iter().enumerate() {
        if let Some(ii) = u.instance {
            essential.push(Probe::Address { key: ProbeKey::KernelSymbol(ui), expr: u.expr.clone() });
            let inst = &module.instances[ii];
            let decl = &module.parsed.templates[inst.template];
            for (ai, (tp, arg)) in decl.template.iter().flatten().zip(&inst.args).enumerate() {
                match tp.kind {
                    TemplateKind::Type if types::builtin(&types::normalise(arg)).is_none() => {
                        extra.push(Probe::Type { key: ProbeKey::TypeArg { instance: ii, arg: ai }, ty: arg.clone() })
                    }
                    TemplateKind::Value(_) => essential
                        .push(Probe::Value { key: ProbeKey::ValueArg { instance: ii, arg: ai }, expr: arg.clone() }),
                    _ => {}
                }
            }
        }
        for (pi, p) in u.kernel.params.iter().enumerate() {
            if types::builtin(&p.base).is_none() && p.base != "void" && !p.reference {
                extra.push(probe::param(ProbeKey::ParamType { kernel: ui, param: pi }, &u.expr, pi));
            }
        }
    }
    for (gi, g) in module.parsed.globals.iter().enumerate() {
        let expr = format!("::{}", g.qualified_name());
        essential.push(Probe::Address { key: ProbeKey::GlobalSymbol(gi), expr: expr.clone() });
        essential.push(Probe::Value { key: ProbeKey::GlobalBytes(gi), expr: format!("sizeof({expr})") });
        extra.push(Probe::Type {
            key: ProbeKey::GlobalElem(gi),
            ty: format!("cuda_embed_probe::RE<decltype({expr})>::t"),
        });
    }
    (essential, extra)
}

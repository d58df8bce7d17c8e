//! The compiler as the type oracle: the module's source is compiled with C++ probes appended,
//! and what the compiled PTX says (each probe's answer, each kernel's `.entry`) is what the
//! checker trusts over the source text.
//!
//! [`Oracle`] is what a compiler must do to serve: compile source to PTX and an image. [`Nvcc`]
//! and [`NvrtcBuild`] (libnvrtc at build time, when there is no nvcc) are the
//! ones there are; [`consult`] does the rest for any of them.

pub mod echo; // nvcc's quoted source lines with the CUDA keywords as the user wrote them
pub mod firstload; // the type probe a module built with no compiler carries to its first load
pub mod library_headers; // what to do when a CUDA library's header is not found
pub mod nvcc; // find nvcc, build a fatbin + PTX, cache the result
pub mod nvrtc; // the same with libnvrtc at build time
pub mod probe; // the C++ questions appended to the source, answers read back from PTX
pub mod ptx; // `.entry` parameter lists for the signature cross-check
pub mod structs; // the members of the source's C++ structs

use crate::front::types;

/// The variable that turns a build with no compiler (the run-time NVRTC path, whose build-time
/// checks are skipped) into a compile error.
pub const REQUIRE_COMPILER_VAR: &str = "CUDA_EMBED_REQUIRE_COMPILER";
use crate::front::ir::{Fields, Image, Module, TwinField};
use crate::signature::{Param, TemplateKind};
use nvcc::Request;
use probe::{Answers, Probe, ProbeKey};
use std::path::PathBuf;
use structs::CudaStruct;

/// A compiler that can answer questions about the source at build time.
pub trait Oracle {
    /// The compiler's name and version for messages: `nvcc 13.0`.
    fn name(&self) -> String;

    /// Compiles `source` (the module's source with probes appended, beginning with a `#line`
    /// of its own where needed) with the module's options, archs and include directories.
    fn compile(&self, module: &Module, source: &str) -> Result<Built, String>;

    /// Whether this is NVRTC (which takes nvcc's flags as `options::nvrtc_options` spells them,
    /// and lacks some: `options::NVCC_ONLY`), not nvcc.
    fn is_nvrtc(&self) -> bool {
        false
    }
}

/// What one compile produced.
pub struct Built {
    /// PTX of the lowest architecture, where the probes' answers and the `.entry` lists are read.
    pub ptx: String,
    /// The image to embed.
    pub image: Image,
    /// Files the compiler read (headers outside the toolkit), for rebuild tracking.
    pub deps: Vec<PathBuf>,
    /// Probe answers given outside the PTX: `(key, symbol)` of kernel addresses NVRTC resolved
    /// as name expressions.
    pub symbols: Vec<(String, String)>,
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
    /// The structs of the source and its headers, as [`ProbeKey::StructOffset`] numbers them.
    pub structs: Vec<CudaStruct>,
}

impl Compiled {
    /// The `(member, offset, size)` triples, in declaration order, of the struct that the type
    /// name `name` written in namespace `scope` refers to, as the compiler laid it out; `None`
    /// when it was not asked (not a struct this module's reader can describe) or not answered
    /// (the layout probes did not compile).
    pub fn fields(&self, scope: &[String], name: &str) -> Option<Fields> {
        let st = structs::lookup(&self.structs, scope, name)?;
        let members = self.structs[st].members.as_deref()?;
        structs::read_layout(members, |member| {
            Some((
                self.answers.number(ProbeKey::StructOffset { st, member })?,
                self.answers.number(ProbeKey::StructSize { st, member })?,
            ))
        })
    }
}

impl Compiled {
    /// The Rust twin of the struct `name` (written in namespace `scope`) as the compiler laid it
    /// out: each member's name and Rust type, when every member is a builtin scalar or vector,
    /// a pointer (a raw device address), or a fixed-size array of those; otherwise (nested
    /// structs, enums, bit-fields, ..., or the probes did not run) why there is none, in words
    /// that finish "no Rust twin was generated because ...".
    pub fn twin(&self, scope: &[String], name: &str) -> Result<Vec<TwinField>, String> {
        let Some(st) = structs::lookup(&self.structs, scope, name) else {
            return Err(format!(
                "the macro found no definition of `{name}` in the source that it can read (a struct from a header \
                 file, a typedef or `using` of another type, a template, or two definitions under `#if`)"
            ));
        };
        let Some(members) = self.structs[st].members.as_deref() else {
            return Err("its members cannot be read one by one (a bit-field, an anonymous struct or union, a base \
                        class, or a union; in Rust, bit-fields are one integer field of their storage unit)"
                .into());
        };
        let mut out = Vec::new();
        for (member, m) in members.iter().enumerate() {
            let answered = self.answers.number(ProbeKey::StructMemberType { st, member });
            let (Some(code), Some(size)) = (answered, self.answers.number(ProbeKey::StructSize { st, member })) else {
                return Err("the compiler did not report its layout (the layout questions did not compile)".into());
            };
            let p = types::decode_probe(code);
            let (elem, elem_size) = match p.depth {
                0 => match types::probed_builtin(&p) {
                    Some(b) => (Some(b), u64::from(b.size)),
                    None => {
                        return Err(format!(
                            "member `{m}` is not a scalar, a CUDA vector type, a pointer or an array of those \
                             (a nested struct, an enum or a union: its Rust type cannot be generated)"
                        ))
                    }
                },
                _ => (None, 8),
            };
            if elem_size == 0 || size == 0 || size % elem_size != 0 {
                return Err(format!(
                    "member `{m}` has a size ({size} bytes) that is not a whole number of its elements"
                ));
            }
            if syn::parse_str::<syn::Ident>(m).is_err() {
                return Err(format!("member `{m}` is not a valid Rust field name"));
            }
            out.push(TwinField { name: m.clone(), elem, count: size / elem_size });
        }
        if out.is_empty() {
            return Err("it has no data members".into());
        }
        Ok(out)
    }

    /// The data members of the struct `name` in declaration order, when the macro could read them.
    pub fn member_names(&self, scope: &[String], name: &str) -> Option<&[String]> {
        let st = structs::lookup(&self.structs, scope, name)?;
        self.structs[st].members.as_deref()
    }
}

/// nvcc at build time: a fatbin of every arch, PTX for the probes.
pub struct Nvcc(pub nvcc::Nvcc);

impl Oracle for Nvcc {
    fn name(&self) -> String {
        format!("nvcc {}", self.0.version)
    }

    fn compile(&self, module: &Module, source: &str) -> Result<Built, String> {
        let built = nvcc::compile(
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
            image: Image::Fatbin {
                bytes: built.fatbin,
                targets: built.targets,
                release: self.0.release(),
                limits: built.limits,
                advisories: built.advisories,
            },
            ptx: built.ptx,
            deps: built.deps,
            symbols: Vec::new(),
        })
    }
}

/// NVRTC at build time: a cubin per arch and the lowest one's PTX.
pub struct NvrtcBuild(pub crate::oracle::nvrtc::Nvrtc);

impl Oracle for NvrtcBuild {
    fn name(&self) -> String {
        self.0.name()
    }

    fn is_nvrtc(&self) -> bool {
        true
    }

    fn compile(&self, module: &Module, source: &str) -> Result<Built, String> {
        // NVRTC cannot take a kernel's address in device code: those probes become name expressions.
        let (source, addresses) = probe::take_kernel_addresses(source);
        let exprs: Vec<String> = addresses.iter().map(|a| a.1.clone()).collect();
        let out = crate::oracle::nvrtc::compile(
            &self.0,
            &exprs,
            &Request {
                source: &source,
                line_directive: &module.line_directive,
                options: &module.options,
                archs: &module.archs,
                include_dirs: &module.include_dirs,
            },
        )?;
        Ok(Built {
            ptx: out.ptx.clone(),
            image: Image::Cubins {
                cubins: out.cubins,
                ptx: out.ptx,
                ptx_target: out.ptx_target,
                release: self.0.release(),
            },
            deps: out.deps,
            symbols: addresses.into_iter().map(|a| a.0).zip(out.lowered).collect(),
        })
    }
}

/// Whether `text` has `name` as a whole identifier.
fn mentions(text: &str, name: &str) -> bool {
    crate::front::words(text).any(|w| w == name)
}

/// Compiles the module with its probes and reads the answers. If the probes do not compile (an
/// unusual declaration), retries without the struct layout probes, then with only what cannot
/// be left out (template instantiations, symbols), so that errors then are the user's own.
pub fn consult(oracle: &dyn Oracle, module: &Module) -> Result<Compiled, String> {
    let cuda = cuda_structs(module);
    let (essential, extra, layout) = questions(module, &cuda);
    let with = |label: &str, probes: &[Probe<ProbeKey>]| {
        oracle.compile(module, &format!("{}\n#line 1 \"{label}\"\n{}", module.source, probe::code(probes)))
    };
    let all = [essential.clone(), extra.clone(), layout.clone()].concat();
    let mut built = with("cuda-embed-probe", &all);
    if built.is_err() && !layout.is_empty() {
        // One group of questions can fail alone: `decltype(calc)` in a parameter-type question is
        // ill-formed when a host function shares the kernel's name, and that must not cost the
        // struct layouts (and with them the Rust twins), nor the other way round.
        built = with("cuda-embed-probe", &[essential.clone(), layout].concat());
        if built.is_err() {
            built = with("cuda-embed-probe", &[essential.clone(), extra].concat());
        }
    }
    let built = built.or_else(|_| with("cuda_kernel! instances", &essential));
    let built = built.map_err(|log| {
        format!("{} failed to compile the CUDA source:\n{}", oracle.name(), library_headers::with_hint(log))
    })?;
    Ok(Compiled {
        answers: Answers::from_ptx(&built.ptx).with_symbols(&built.symbols),
        entries: ptx::entries(&built.ptx),
        image: built.image,
        deps: built.deps,
        structs: cuda,
    })
}

/// The structs of the module's source and headers, and the toolkit structs they name, as
/// [`ProbeKey::StructOffset`] numbers them.
pub(crate) fn cuda_structs(module: &Module) -> Vec<CudaStruct> {
    let defines = crate::front::defines(&module.options);
    let mut cuda = structs::structs_with(&module.source, &defines);
    let mut templates = structs::class_templates(&module.source, &defines);
    for h in &module.headers {
        // A header included inside `namespace ops { }` declares its structs in `ops`.
        let in_site = |mut s: CudaStruct| {
            s.namespaces.splice(0..0, h.namespaces.iter().cloned());
            s
        };
        cuda.extend(structs::structs_with(&h.text, &defines).into_iter().map(in_site));
        templates.extend(structs::class_templates(&h.text, &defines).into_iter().map(in_site));
    }
    // The class-template instances passed by value (`Tensor<float, 1> t`) or held in globals:
    // asked about like structs, under the name the parameter writes.
    let by_value = module.units.iter().flat_map(|u| u.kernel.params.iter().map(|p| (&u.kernel.namespaces, p)));
    let held = module.parsed.globals.iter().map(|g| (&g.namespaces, &g.elem));
    for (scope, p) in by_value.chain(held) {
        if p.pointer_depth != 0 || p.reference || structs::lookup(&cuda, scope, &p.base).is_some() {
            continue;
        }
        if let Some(st) = structs::instance(&templates, scope, &p.base) {
            cuda.push(st);
        }
    }
    // The runtime's plain structs (`cudaExtent`, ...), whose members the toolkit defines: asked
    // about like the user's, and compared with the Rust twins' `DeviceSafe::LAYOUT`. Only those
    // the code names: NVRTC declares them only when the source includes `driver_types.h`, and a
    // probe naming an undeclared one would fail the layout probes of the user's structs too.
    let texts: Vec<&str> =
        std::iter::once(module.source.as_str()).chain(module.headers.iter().map(|h| h.text.as_str())).collect();
    let named = |name: &str| texts.iter().any(|t| mentions(t, name));
    cuda.extend(types::TOOLKIT.iter().filter(|t| named(t.0)).map(|(name, _, members)| CudaStruct {
        name: name.to_string(),
        namespaces: Vec::new(),
        members: Some(members.iter().map(|m| m.to_string()).collect()),
        line: 0,
    }));
    cuda
}

/// The `(essential, extra, layout)` probe lists of [`questions`].
pub(crate) type Questions = (Vec<Probe<ProbeKey>>, Vec<Probe<ProbeKey>>, Vec<Probe<ProbeKey>>);

/// Questions for the compiler: `essential` ones (symbols of instances and globals, which also
/// instantiate templates, and non-type argument values), `extra` ones (parameter types) and
/// `layout` ones (where each member lies in the structs passed by value or held in globals, for
/// the field-order check; numbered by their index in `cuda`).
pub(crate) fn questions(module: &Module, cuda: &[CudaStruct]) -> Questions {
    let mut essential = Vec::new();
    let mut extra = Vec::new();
    // Structs whose layout to ask for, by index into `cuda`.
    let mut wanted: Vec<usize> = Vec::new();
    let mut want = |scope: &[String], p: &Param| {
        if p.pointer_depth == 0
            && !p.reference
            && (types::builtin(&p.base).is_none() || types::toolkit(&p.base).is_some())
        {
            if let Some(st) = structs::lookup(cuda, scope, &p.base) {
                if cuda[st].members.is_some() && !wanted.contains(&st) {
                    wanted.push(st);
                }
            }
        }
    };
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
            want(&u.kernel.namespaces, p);
            if types::builtin(&p.base).is_none() && p.base != "void" && !p.reference {
                extra.push(probe::param(ProbeKey::ParamType { kernel: ui, param: pi }, &u.expr, pi));
            }
        }
    }
    for (gi, g) in module.parsed.globals.iter().enumerate() {
        want(&g.namespaces, &g.elem);
        let expr = format!("::{}", g.qualified_name());
        essential.push(Probe::Address { key: ProbeKey::GlobalSymbol(gi), expr: expr.clone() });
        essential.push(Probe::Value { key: ProbeKey::GlobalBytes(gi), expr: format!("sizeof({expr})") });
        extra.push(Probe::Type {
            key: ProbeKey::GlobalElem(gi),
            ty: format!("cuda_embed_probe::RE<decltype({expr})>::t"),
        });
    }
    let mut layout = Vec::new();
    for st in wanted {
        let members = cuda[st].members.as_deref().unwrap_or_default();
        let qualified = format!("::{}", cuda[st].qualified_name());
        for (member, (offset, size)) in
            structs::layout_exprs(&cuda[st].qualified_name(), members).into_iter().enumerate()
        {
            layout.push(Probe::Value { key: ProbeKey::StructOffset { st, member }, expr: offset });
            layout.push(Probe::Value { key: ProbeKey::StructSize { st, member }, expr: size });
            let ty = format!("cuda_embed_probe::RE<decltype({qualified}::{})>::t", members[member]);
            layout.push(Probe::Type { key: ProbeKey::StructMemberType { st, member }, ty });
        }
    }
    (essential, extra, layout)
}

#[cfg(test)]
mod tests {
    #[test]
    fn mentions_whole_identifiers_only() {
        assert!(super::mentions("void k(cudaExtent e)", "cudaExtent"));
        assert!(super::mentions("cudaPos", "cudaPos"));
        assert!(!super::mentions("void k(my_cudaExtent e)", "cudaExtent"));
        assert!(!super::mentions("cudaExtentLike e", "cudaExtent"));
        assert!(!super::mentions("float* x", "cudaExtent"));
    }
}

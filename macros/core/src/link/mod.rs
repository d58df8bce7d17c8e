//! Separate compilation: `rdc = true`, `link = ["a.cu", ...]`, `lto = true`.
//!
//! It rides the one pipeline (`expand`): a front-end pass ([`join`]: the units merged into the
//! module), an oracle ([`compile()`]: the relocatable compiles and the device link) and the image
//! a module no compiler built gets ([`image_at_first_use`]); the check and the generator are
//! every module's.
//!
//! The module's source and every `link` file are each their own translation unit ([`Unit`]),
//! compiled to relocatable device code by nvcc ([`nvcc::compile_unit`]), then device-linked with
//! `libcudadevrt` for every architecture into the one fatbin the module embeds
//! ([`nvcc::device_link`]; without nvcc, NVRTC and nvJitLink do the same: see below), so
//! kernels can launch kernels and call `__device__` functions and use `__device__` variables of
//! other files.
//!
//! The type probes work as for one unit: each probe is appended to the unit that declares what it
//! asks about (a kernel of `math.cu` is asked about inside `math.cu`, where its name is declared),
//! every unit is compiled with `-rdc=true` (so its calls to functions of other units need no
//! definition) and the answers are read from the PTX of all units together. Kernels of linked files
//! get typed launchers like the source's own, and their `__device__` variables Rust handles.
//! Their template kernels take `instances = [...]` like the source's own: an entry naming no
//! kernel of the source waits in `Module::pending` until the linked files are read, is resolved
//! against every unit's templates ([`Owners::templates`]), and its probes (whose address probe
//! instantiates it) are compiled in the unit that defines the template; at first use that unit
//! resolves its name expression. `tune = { ... }` takes templates of the source only.
//!
//! Before the link, [`symbols`] compares every `extern` variable with its definition; when the
//! link fails on an undefined symbol, it names the symbol, the file that uses it and, for a function
//! whose parameter types differ from a definition of the same name, that file too: a compile error
//! at the macro, never a load failure at run time.
//!
//! Without nvcc, build-time NVRTC compiles the units and nvJitLink links them ([`nvrtc`],
//! [`nvjitlink`]): the same probes, symbol checks and launchers, with a cubin per architecture
//! embedded. With no compiler at build time (`compiler = "nvrtc"`, `CUDA_EMBED_FORCE_NVRTC`, or
//! neither nvcc nor libnvrtc found) the module embeds every unit's source ([`Image::Linked`]) and
//! the runtime compiles each with NVRTC and links them with `libcudadevrt` at first use; the
//! symbol checks are then the linker's, at run time.

pub mod nvcc;
pub mod nvjitlink;
pub mod nvrtc;
pub mod symbols;
#[cfg(test)]
mod tests;

use crate::front;
use crate::front::includes;
use crate::front::input::{Compiler, Input};
use crate::front::ir::{Image, Instance, LinkedUnit, Module, Unit as IrUnit};
use crate::front::report::{Errors, Failure};
use crate::oracle::nvcc::{self as compile, NoNvcc};
use crate::oracle::nvrtc::Nvrtc;
use crate::oracle::probe::{self, Answers, Probe, ProbeKey};
use crate::oracle::ptx;
use crate::oracle::Compiled;
use crate::signature::{self, Kernel};
use nvcc::{Mode, Object};
use nvjitlink::NvJitLink;
use proc_macro2::Span;
use std::path::PathBuf;
use syn::LitStr;

/// The relocatable-code flags that belong to `rdc`/`lto` rather than `options`: by hand they build
/// an image that cannot be loaded (relocatable code needs the device link `rdc` adds).
const RDC_FLAGS: &[&str] =
    &["-rdc=true", "--relocatable-device-code=true", "-rdc", "-dc", "--device-c", "-dlto", "--dlink-time-opt"];

/// An error for compiler options that ask for relocatable code themselves, pointing at `rdc`
/// and `lto` (with `rdc` on, `-rdc=true` is merely redundant and allowed).
pub fn misplaced_flags(input: &Input) -> Option<syn::Error> {
    let flag = input.options.iter().find(|o| RDC_FLAGS.contains(&o.as_str()))?;
    let redundant = matches!(flag.as_str(), "-rdc=true" | "--relocatable-device-code=true");
    if redundant && input.link.enabled() {
        return None;
    }
    let instead = if flag.contains("lto") { "`lto = true`" } else { "`rdc = true`" };
    Some(syn::Error::new(
        input.source.lit().span(),
        format!(
            "`{flag}` in `options` builds relocatable device code that cannot be loaded without a device link: \
             write {instead} instead (cuda-embed then device-links the module with libcudadevrt)"
        ),
    ))
}

/// One translation unit of a linked module.
pub struct Unit {
    /// How messages name it: the `link` path, the `file = "..."` path or the Rust file.
    pub name: String,
    /// The literal errors about it point at.
    pub lit: LitStr,
    /// What is compiled before the text: automatic includes and `#line`.
    pub prologue: String,
    /// The source text.
    pub text: String,
    /// `-I` directories.
    pub include_dirs: Vec<PathBuf>,
    /// The file, for rebuild tracking (`None`: inline source).
    pub file: Option<PathBuf>,
}

/// A linked module's translation units (its own and each `link` file) and which unit owns each
/// kernel, global, template and instance of the merged [`Module`]: what the front end's linking
/// pass ([`join`]) adds, for the compile ([`compile()`]) and the first-use image ([`image_at_first_use`]).
pub struct Linked {
    units: Vec<Unit>,
    owners: Owners,
}

/// The front end's linking pass, for a module with `rdc`, `link` or `lto` (`module` is the
/// front end's lowering of its own source): reads each `link` file, merges its kernels, globals
/// and templates into `module`, and instantiates the templates the units ask for.
pub fn join(input: &Input, module: &mut Module) -> Result<Linked, Failure> {
    let kernels_of = |m: &Module| m.kernel_names();
    let at =
        |m: &Module, span: Span, msg: String| Failure { error: syn::Error::new(span, msg), kernels: kernels_of(m) };
    if let Some(e) = input.link.contradiction() {
        return Err(Failure { error: e, kernels: kernels_of(module) });
    }
    let mut units = vec![main_unit(module)];
    let mut owners = Owners {
        units: vec![0; module.units.len()],
        globals: vec![0; module.parsed.globals.len()],
        templates: vec![0; module.parsed.templates.len()],
        instances: Vec::new(),
    };
    for lit in &input.link.files {
        let unit = read_linked(lit, module).map_err(|m| at(module, lit.span(), m))?;
        merge(module, &mut owners, units.len(), &unit).map_err(|m| at(module, lit.span(), m))?;
        units.push(unit);
    }
    instantiate(module, &mut owners, &mut units).map_err(|error| Failure { error, kernels: kernels_of(module) })?;
    Ok(Linked { units, owners })
}

/// The oracle of a linked module: its units compiled as relocatable code (probes per unit) and
/// device-linked by the backend `input.compiler` chooses; `Ok(Err(why))` when there is none
/// (the units are then compiled and linked at first use: [`image_at_first_use`]).
pub fn compile(input: &Input, module: &Module, linked: &Linked) -> Result<Result<Compiled, String>, Failure> {
    let at = |span: Span, msg: String| Failure { error: syn::Error::new(span, msg), kernels: module.kernel_names() };
    let backend = match find_backend(input.compiler).map_err(|m| at(module.span(), m))? {
        Ok(b) => b,
        Err(reason) => return Ok(Err(reason)),
    };
    let mode = if input.link.lto() { Mode::Lto } else { Mode::Rdc };
    let Linked { units, owners } = linked;
    let compiled = consult(&backend, mode, module, units, owners).map_err(|(u, m)| {
        let span = units.get(u).map_or(module.span(), |x| x.lit.span());
        at(span, m)
    })?;
    Ok(Ok(compiled))
}

/// The image of a linked module no compiler built at build time: every unit compiled and linked
/// at first use.
pub fn image_at_first_use(input: &Input, module: &Module, linked: &Linked, reason: String) -> Image {
    at_first_use(module, &linked.units, &linked.owners, input.link.lto(), reason)
}

/// The files a linked module's build read (its units' files, the headers the front end found,
/// those the compiler reported), one entry per file however it was reached (`a/../b.cuh` from the
/// scan, `b.cuh` from nvcc).
pub fn deps(module: &Module, linked: &Linked, compiled: Option<&Compiled>) -> Vec<PathBuf> {
    let mut deps: Vec<PathBuf> = linked.units.iter().filter_map(|u| u.file.clone()).collect();
    deps.extend(module.headers.iter().map(|h| h.path.clone()));
    deps.extend(compiled.iter().flat_map(|c| c.deps.iter().cloned()));
    let mut deps: Vec<PathBuf> = deps.into_iter().map(|d| std::fs::canonicalize(&d).unwrap_or(d)).collect();
    deps.sort();
    deps.dedup();
    deps
}

/// What compiles and links the units: nvcc (with its nvlink and fatbinary), or build-time
/// NVRTC with nvJitLink.
pub enum Backend {
    /// nvcc.
    Nvcc(compile::Nvcc),
    /// libnvrtc and libnvJitLink.
    Nvrtc(Nvrtc, NvJitLink),
}

impl Backend {
    /// `nvcc 13.0`, `NVRTC 13.0`: the compiler's name for messages.
    pub fn name(&self) -> String {
        match self {
            Backend::Nvcc(n) => format!("nvcc {}", n.version),
            Backend::Nvrtc(n, _) => n.name(),
        }
    }
}

/// The compiler and linker for `compiler` (nvcc when found, else build-time NVRTC with
/// nvJitLink); `Ok(Err(reason))` when there is no compiler at build time (the units are then
/// compiled and linked at first use); `Err` when separate compilation cannot happen as asked.
pub fn find_backend(compiler: Compiler) -> Result<Result<Backend, String>, String> {
    let nvrtc = |why: Option<String>| -> Result<Result<Backend, String>, String> {
        let n = match crate::oracle::nvrtc::find_nvrtc()? {
            Ok(n) => n,
            Err(none) => {
                return match why {
                    Some(why) => at_run_time(format!("{why} and {none}")),
                    None => Err(format!(
                        "`compiler = \"nvrtc-build\"` but {none}: install the CUDA toolkit or the nvidia-cuda-nvrtc wheel, \
                         or set {} to the library",
                        crate::oracle::nvrtc::NVRTC_VAR
                    )),
                };
            }
        };
        let jl = nvjitlink::find(&n).map_err(|e| {
            format!(
                "`rdc`, `link` and `lto` without nvcc are linked by nvJitLink at build time; {} was found but {e}",
                n.name()
            )
        })?;
        Ok(Ok(Backend::Nvrtc(n, jl)))
    };
    match compiler {
        Compiler::Nvrtc => at_run_time(NoNvcc::Forced.to_string()),
        Compiler::NvrtcBuild => nvrtc(None),
        Compiler::Auto | Compiler::Nvcc => match compile::find_nvcc()? {
            Ok(n) => Ok(Ok(Backend::Nvcc(n))),
            Err(NoNvcc::Forced) => at_run_time(NoNvcc::Forced.to_string()),
            Err(why) if compiler == Compiler::Nvcc => Err(format!(
                "`compiler = \"nvcc\"` but {why}: install the CUDA toolkit, set NVCC or CUDA_PATH (or run under \
                 scripts/with-cuda), or use `compiler = \"auto\"`"
            )),
            Err(why) => nvrtc(Some(why.to_string())),
        },
    }
}

/// No compiler at build time: the run-time path, unless `CUDA_EMBED_REQUIRE_COMPILER` forbids it.
fn at_run_time(reason: String) -> Result<Result<Backend, String>, String> {
    let var = crate::oracle::REQUIRE_COMPILER_VAR;
    if compile::flag(var) {
        return Err(format!(
            "{var} is set but this module would be compiled and linked at run time, without the build-time checks: \
             {reason}; install the CUDA toolkit (nvcc, or libnvrtc with libnvJitLink), or unset {var}"
        ));
    }
    Ok(Err(reason))
}

/// The image of a module compiled and linked at first use: each unit's text and options, and
/// which kernels' and globals' name expressions it resolves (the unit that declares each).
fn at_first_use(module: &Module, units: &[Unit], owners: &Owners, lto: bool, reason: String) -> Image {
    let kernels = module.units.len();
    let units = units
        .iter()
        .enumerate()
        .map(|(ui, u)| LinkedUnit {
            name: u.name.clone(),
            text: format!("{}\n{}\n{}", u.prologue, u.text, explicit_instantiations(module, owners, ui)),
            options: module
                .options
                .iter()
                .cloned()
                .chain(u.include_dirs.iter().map(|d| format!("-I{}", d.display())))
                .collect(),
            exprs: (0..kernels)
                .filter(|&k| owners.units.get(k) == Some(&ui))
                .chain((0..owners.globals.len()).filter(|&g| owners.globals[g] == ui).map(|g| kernels + g))
                .collect(),
        })
        .collect();
    // Each unit's headers were appended to the module's: a header several units include is
    // embedded once (NVRTC also refuses a program given two headers of one name). Two different
    // files that units include under one name are not told apart: the first is embedded.
    let mut headers: Vec<(String, String)> = Vec::new();
    for h in &module.headers {
        if !headers.iter().any(|(name, _)| *name == h.include) {
            headers.push((h.include.clone(), h.text.clone()));
        }
    }
    Image::Linked { units, headers, lto, reason }
}

/// Which unit declares each kernel (by index into `Module::units`), each global, each template
/// and so each instance.
pub struct Owners {
    /// Unit of each kernel.
    pub units: Vec<usize>,
    /// Unit of each global.
    pub globals: Vec<usize>,
    /// Unit defining each template (by index into `Parsed::templates`).
    pub templates: Vec<usize>,
    /// Unit of each instance (by index into `Module::instances`): its template's.
    pub instances: Vec<usize>,
}

impl Owners {
    /// The unit a probe is compiled in: the one declaring the kernel or global it asks about,
    /// else the module's own source.
    pub fn of(&self, key: &ProbeKey) -> usize {
        let at = |v: &Vec<usize>, i: usize| v.get(i).copied().unwrap_or(0);
        match *key {
            ProbeKey::ParamType { kernel, .. } => at(&self.units, kernel),
            ProbeKey::KernelSymbol(k) => at(&self.units, k),
            ProbeKey::GlobalSymbol(g) | ProbeKey::GlobalBytes(g) | ProbeKey::GlobalElem(g) => at(&self.globals, g),
            ProbeKey::TypeArg { instance, .. } | ProbeKey::ValueArg { instance, .. } => at(&self.instances, instance),
            _ => 0,
        }
    }
}

fn main_unit(module: &Module) -> Unit {
    Unit {
        name: match &module.file {
            Some(_) => module.lit.value(),
            None => format!("{}:{}", module.site.file, module.site.line),
        },
        lit: module.lit.clone(),
        prologue: module.line_directive.clone(),
        text: module.source.clone(),
        include_dirs: module.include_dirs.clone(),
        file: module.file.clone(),
    }
}

/// Reads a `link` file (relative to the crate root), its includes and declarations.
fn read_linked(lit: &LitStr, module: &Module) -> Result<Unit, String> {
    let rel = lit.value();
    let root = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).or_else(|| std::env::current_dir().ok());
    let path = root.map_or_else(|| PathBuf::from(&rel), |r| r.join(&rel));
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read the `link` file `{rel}`: {e}; linked files are relative to the crate root (the directory holding Cargo.toml), like `file`"
        )
    })?;
    let mut include_dirs: Vec<PathBuf> = path.parent().map(|p| p.to_path_buf()).into_iter().collect();
    include_dirs.extend(module.include_dirs.iter().cloned());
    let rel_fwd = rel.replace('\\', "/");
    Ok(Unit {
        name: rel_fwd.clone(),
        lit: lit.clone(),
        prologue: format!("{}#line 1 \"{rel_fwd}\"", front::automatic_includes(&text, "")),
        text,
        include_dirs,
        file: Some(path),
    })
}

/// Adds the kernels and globals of linked unit `ui` to the module: a kernel the source only
/// declares takes the linked definition; a name defined twice is an error.
fn merge(module: &mut Module, owners: &mut Owners, ui: usize, unit: &Unit) -> Result<(), String> {
    let headers = includes::scan(&unit.text, unit.file.as_ref().and_then(|f| f.parent()), &unit.include_dirs)?;
    let texts: Vec<&str> = headers.iter().map(|h| h.text.as_str()).collect();
    let defines = front::defines(&module.options);
    let parsed = signature::parse_with(&unit.text, &defines, &texts)
        .map_err(|e| format!("cannot read `{}`: {}", unit.name, e.0))?;
    if let Some(o) = parsed.overloaded.first() {
        return Err(format!("kernel `{o}` in `{}` is overloaded: give each overload its own name", unit.name));
    }
    // An instance naming one of the unit's overloaded templates is refused, naming it.
    for o in &parsed.overloaded_templates {
        if !module.parsed.overloaded_templates.contains(o) {
            module.parsed.overloaded_templates.push(o.clone());
        }
    }
    for k in parsed.kernels.iter().filter(|k| k.defined) {
        let mut k = k.clone();
        k.file = Some(unit.name.clone());
        let qualified = k.qualified_name();
        let existing = module.parsed.kernels.iter().position(|x| x.name == k.name);
        match existing {
            Some(i) if module.parsed.kernels[i].defined || module.parsed.kernels[i].qualified_name() != qualified => {
                let other = module.parsed.kernels[i].file.clone().unwrap_or_else(|| main_unit(module).name);
                return Err(format!(
                    "kernel `{}` is defined in both `{other}` and `{}`: each kernel needs one definition and one Rust module name",
                    k.name, unit.name
                ));
            }
            Some(i) => {
                // The source declares it, this file defines it: launch the definition.
                module.parsed.kernels[i] = k.clone();
                if let Some(u) = module.units.iter().position(|u| u.instance.is_none() && u.kernel.name == k.name) {
                    module.units[u].kernel = k;
                    owners.units[u] = ui;
                }
            }
            None => {
                let at = module.units.iter().take_while(|u| u.instance.is_none()).count();
                module.units.insert(
                    at,
                    IrUnit { kernel: k.clone(), expr: format!("::{qualified}"), display: qualified, instance: None },
                );
                owners.units.insert(at, ui);
                module.parsed.kernels.push(k);
            }
        }
    }
    for t in parsed.templates.iter().filter(|t| t.defined) {
        let mut t = t.clone();
        t.file = Some(unit.name.clone());
        let clash = |other: &Kernel| -> String {
            let other = other.file.clone().unwrap_or_else(|| main_unit(module).name);
            format!(
                "template kernel `{}` is defined in both `{other}` and `{}`: each template needs one definition and one Rust module name",
                t.name, unit.name
            )
        };
        if let Some(other) = module.parsed.kernels.iter().find(|x| x.name == t.name) {
            return Err(clash(other));
        }
        match module.parsed.templates.iter().position(|x| x.name == t.name) {
            Some(i)
                if module.parsed.templates[i].defined
                    || module.parsed.templates[i].qualified_name() != t.qualified_name() =>
            {
                return Err(clash(&module.parsed.templates[i]));
            }
            // The source declares it, this file defines it: its instances are emitted here.
            Some(i) => {
                module.parsed.templates[i] = t;
                owners.templates[i] = ui;
            }
            None => {
                module.parsed.templates.push(t);
                owners.templates.push(ui);
            }
        }
    }
    for g in &parsed.globals {
        if let Some(prev) = module.parsed.globals.iter().find(|x| x.name == g.name) {
            let other = prev.file.clone().unwrap_or_else(|| main_unit(module).name);
            return Err(format!(
                "`__device__` variable `{}` is defined in both `{other}` and `{}`: define it in one file and declare it `extern` in the others",
                g.name, unit.name
            ));
        }
        let mut g = g.clone();
        g.file = Some(unit.name.clone());
        module.parsed.globals.push(g);
        owners.globals.push(ui);
    }
    module.headers.extend(headers);
    Ok(())
}

/// Resolves the instances the source's own templates do not take (`Module::pending`) against
/// every unit's templates, and files each instance under the unit defining its template: its
/// probes (which take its address, and so instantiate it) are compiled there, and at first use
/// that unit resolves its name. A unit's prologue gains the automatic includes its instances'
/// arguments need (`__half`, ...).
fn instantiate(module: &mut Module, owners: &mut Owners, units: &mut [Unit]) -> syn::Result<()> {
    let mut errors = Errors::new();
    for lit in std::mem::take(&mut module.pending) {
        match front::resolve_instance(&lit.value(), &module.parsed, &module.instances) {
            Ok((template, args, expr)) => {
                let ii = module.instances.len();
                module.units.push(IrUnit {
                    kernel: front::substitute(&module.parsed.templates[template], &args),
                    expr: expr.clone(),
                    display: expr.clone(),
                    instance: Some(ii),
                });
                owners.units.push(0);
                module.instances.push(Instance { lit, template, args, expr });
            }
            Err(msg) => errors.error(lit.span(), msg),
        }
    }
    errors.propagate()?;
    owners.instances =
        module.instances.iter().map(|i| owners.templates.get(i.template).copied().unwrap_or(0)).collect();
    for (k, u) in module.units.iter().enumerate() {
        if let Some(ii) = u.instance {
            owners.units[k] = owners.instances[ii];
        }
    }
    for (ui, unit) in units.iter_mut().enumerate().skip(1) {
        let listed: Vec<String> = module
            .instances
            .iter()
            .zip(&owners.instances)
            .filter(|(_, o)| **o == ui)
            .map(|(i, _)| i.lit.value())
            .collect();
        if !listed.is_empty() {
            let includes = front::automatic_includes(&unit.text, &listed.join(" "));
            unit.prologue = format!("{includes}#line 1 \"{}\"", unit.name);
        }
    }
    Ok(())
}

/// An explicit instantiation definition (`template __global__ void ns::k<float, 3>(float* y, int
/// n);`) of every instance whose template `unit` defines. Taking an instance's address (the
/// probes, a name expression) instantiates it too, but only as a discardable definition, which
/// link-time optimisation drops when nothing in the linked image calls it; an explicit
/// instantiation definition is kept. The parameter list is the template's, with each template
/// parameter's name replaced by the instance's argument.
fn explicit_instantiations(module: &Module, owners: &Owners, unit: usize) -> String {
    let mut out = String::new();
    for (i, inst) in module.instances.iter().enumerate() {
        if owners.instances.get(i) != Some(&unit) {
            continue;
        }
        let Some(t) = module.parsed.templates.get(inst.template) else { continue };
        let Some(tparams) = t.template.as_ref().filter(|p| p.len() == inst.args.len()) else { continue };
        let params: Vec<String> = t
            .params
            .iter()
            .map(|p| {
                let decl = p.text.split('=').next().unwrap_or_default();
                let tokens = cuda_embed_source::lex::lex(decl).tokens;
                tokens
                    .iter()
                    .map(|tok| match tparams.iter().position(|tp| tok.is_ident() && tok.text == tp.name) {
                        Some(k) => inst.args[k].clone(),
                        None => tok.text.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        out.push_str(&format!("template __global__ void {}({});\n", inst.expr, params.join(", ")));
    }
    out
}

/// Compiles every unit with its probes and links them: the oracle's answers for the whole
/// module. `Err((unit, message))`: the unit to report at.
fn consult(
    backend: &Backend,
    mode: Mode,
    module: &Module,
    units: &[Unit],
    owners: &Owners,
) -> Result<Compiled, (usize, String)> {
    let cuda = crate::oracle::cuda_structs(module);
    let (essential, extra, layout) = crate::oracle::questions(module, &cuda);
    let compile_all = |probes: &[Probe<ProbeKey>]| -> Result<Vec<Object>, (usize, String)> {
        let texts: Vec<String> = units
            .iter()
            .enumerate()
            .map(|(ui, unit)| {
                let mine: Vec<Probe<ProbeKey>> = probes.iter().filter(|p| owners.of(key(p)) == ui).cloned().collect();
                format!(
                    "{}\n#line 1 \"cuda-embed-probe\"\n{}{}",
                    unit.text,
                    explicit_instantiations(module, owners, ui),
                    probe::code(&mine)
                )
            })
            .collect();
        let results: Vec<Result<Object, String>> = match backend {
            Backend::Nvcc(nvcc) => {
                let jobs: Vec<(Vec<String>, String, String)> = units
                    .iter()
                    .zip(&texts)
                    .map(|(unit, text)| {
                        let args = nvcc::unit_args(mode, &module.archs, &unit.include_dirs, &module.options);
                        (args, format!("{}\n{text}", unit.prologue), unit.name.clone())
                    })
                    .collect();
                nvcc::compile_units(nvcc, mode, &jobs)
            }
            // Every unit on a thread of its own (and each unit's architectures on threads of
            // theirs): NVRTC takes different programs on different threads (see
            // `nvrtc::parallel` for when that made the link faster and when not).
            // (What the threads read is taken out of `Unit` and `Module`, which hold spans.)
            Backend::Nvrtc(n, _) => {
                let (options, archs) = (&module.options, &module.archs);
                nvrtc::parallel(
                    units
                        .iter()
                        .zip(&texts)
                        .map(|(unit, text)| {
                            let (prologue, dirs, name) = (&unit.prologue, &unit.include_dirs, &unit.name);
                            move || {
                                let req = compile::Request {
                                    source: text,
                                    line_directive: prologue,
                                    options,
                                    archs,
                                    include_dirs: dirs,
                                };
                                nvrtc::compile_unit(n, mode, &req, name)
                            }
                        })
                        .collect(),
                )
            }
        };
        results
            .into_iter()
            .enumerate()
            .map(|(ui, r)| {
                r.map_err(|log| {
                    let name = &units[ui].name;
                    (ui, format!("{} failed to compile `{name}` (relocatable device code):\n{log}", backend.name()))
                })
            })
            .collect()
    };
    let all = [essential.clone(), extra.clone(), layout.clone()].concat();
    let mut objects = compile_all(&all);
    if objects.is_err() && !layout.is_empty() {
        objects = compile_all(&[essential.clone(), extra].concat());
    }
    let objects = objects.or_else(|_| compile_all(&essential))?;
    let image = link(backend, mode, module, units, &objects)?;
    let ptx: String = objects.iter().map(|o| o.ptx.as_str()).collect::<Vec<_>>().join("\n");
    let symbols: Vec<(String, String)> = objects.iter().flat_map(|o| o.symbols.iter().cloned()).collect();
    Ok(Compiled {
        answers: Answers::from_ptx(&ptx).with_symbols(&symbols),
        entries: ptx::entries(&ptx),
        image,
        deps: objects.iter().flat_map(|o| o.deps.iter().cloned()).collect(),
        structs: cuda,
    })
}

fn key(p: &Probe<ProbeKey>) -> &ProbeKey {
    match p {
        Probe::Type { key, .. } | Probe::Value { key, .. } | Probe::Address { key, .. } => key,
    }
}

/// Checks the symbols across units and device-links them into the module's image.
fn link(
    backend: &Backend,
    mode: Mode,
    module: &Module,
    units: &[Unit],
    objects: &[Object],
) -> Result<Image, (usize, String)> {
    let syms: Vec<symbols::Symbols> = objects.iter().map(|o| symbols::read(&o.ptx)).collect();
    let table: Vec<(&str, &symbols::Symbols)> = units.iter().map(|u| u.name.as_str()).zip(&syms).collect();
    if let Some(p) = symbols::var_mismatches(&table).into_iter().next() {
        return Err((p.unit, p.message));
    }
    let explain = |log: String| {
        let undefined = symbols::undefined_in_log(&log);
        let problems = symbols::explain_undefined(&undefined, &table);
        match problems.into_iter().next() {
            Some(p) => (p.unit, p.message),
            None => (0, format!("the device link of {} failed:\n{log}", names(units))),
        }
    };
    let mut targets: Vec<String> = module.archs.iter().map(|a| a.sm()).collect();
    targets.sort();
    targets.dedup();
    match backend {
        Backend::Nvcc(nvcc) => {
            let inputs: Vec<(&str, &[u8])> =
                units.iter().map(|u| u.name.as_str()).zip(objects.iter().map(|o| o.bytes.as_slice())).collect();
            let fatbin = nvcc::device_link(nvcc, mode, &module.archs, &inputs).map_err(explain)?;
            // The device link's cubins are not kept: its kernels' limits are read by the driver.
            Ok(Image::Fatbin {
                bytes: fatbin,
                targets,
                release: nvcc.release(),
                limits: Vec::new(),
                advisories: Vec::new(),
            })
        }
        Backend::Nvrtc(n, jl) => {
            let inputs: Vec<(&str, &Object)> = units.iter().map(|u| u.name.as_str()).zip(objects).collect();
            let cubins = nvrtc::device_link(n, jl, mode, &module.archs, &inputs).map_err(explain)?;
            // No PTX: see the `nvrtc` module's docs.
            Ok(Image::Cubins { cubins, ptx: String::new(), ptx_target: String::new(), release: n.release() })
        }
    }
}

fn names(units: &[Unit]) -> String {
    units.iter().map(|u| format!("`{}`", u.name)).collect::<Vec<_>>().join(", ")
}

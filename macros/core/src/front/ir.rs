//! The typed IR of one `cuda_kernel!`: what the front end read ([`Module`]) and what the checker
//! learned about it ([`Checked`]). Plain data, carrying the user's spans; no logic beyond names.

use crate::front::includes::Header;
use crate::front::types::{Mapped, RustType};
use crate::signature::{GlobalVar, Kernel, Parsed};
use cuda_embed_source::options::Arch;
use proc_macro2::Span;
use std::collections::HashMap;
use std::path::PathBuf;
use syn::LitStr;

/// Where the macro was invoked, as rustc reports it.
#[derive(Debug, Clone, Default)]
pub struct CallSite {
    /// The Rust file as rustc names it in diagnostics (`src/main.rs`).
    pub file: String,
    /// 1-based line of the source literal's first character.
    pub line: usize,
    /// The file's directory on disk, for `#include "..."` next to the Rust file.
    pub dir: Option<PathBuf>,
}

/// One module as the front end read it: source, kernels, instances, options.
pub struct Module {
    /// The source literal (inline source or `file = "..."`): errors about the source point here.
    pub lit: LitStr,
    /// Where the macro was invoked.
    pub site: CallSite,
    /// The CUDA source text.
    pub source: String,
    /// The prologue compiled before the source: the headers of the reduced-precision types it
    /// names ([`automatic_includes`](crate::front::automatic_includes)), then `#line N "file"`
    /// mapping the source's first line to where it was written.
    pub line_directive: String,
    /// Directories searched for `#include "..."`, in order.
    pub include_dirs: Vec<PathBuf>,
    /// The `.cu` file, for `file = "..."`.
    pub file: Option<PathBuf>,
    /// Headers the source includes from outside the toolkit.
    pub headers: Vec<Header>,
    /// The source's declarations.
    pub parsed: Parsed,
    /// Every launchable kernel: the ordinary ones, then one per listed template instance.
    pub units: Vec<Unit>,
    /// `instances = [...]`, resolved against the templates, then the source's own explicit
    /// instantiations, then the `tune` variants.
    pub instances: Vec<Instance>,
    /// Which of [`Module::instances`] the source's own explicit instantiations added (not
    /// listed): one whose Rust arguments an earlier instance already takes gets no launcher.
    pub made_by_source: std::ops::Range<usize>,
    /// Entries of `instances = [...]` naming no kernel of the source, in a module with `link`
    /// files: the separate-compilation pipeline resolves them against the linked files'
    /// templates (`crate::link`); always empty without `link`.
    pub pending: Vec<LitStr>,
    /// Compiler options, for nvcc and NVRTC alike.
    pub options: Vec<String>,
    /// Target architectures.
    pub archs: Vec<Arch>,
    /// `src/lib.rs:10`, or `kernels/x.cu (src/lib.rs:10)`: where the module came from, for errors
    /// at run time.
    pub origin: String,
    /// How a not-listed instance is reported.
    pub listing: crate::front::input::Listing,
    /// `tune = { ... }`, resolved: its variants are among `instances`.
    pub tune: Option<crate::front::tune::Plan>,
    /// The Rust module names that are not the kernel's own name, by the kernel's qualified C++
    /// name: `rename = { ... }`, and the namespace paths of same-named kernels
    /// (`crate::front::names`).
    pub module_names: HashMap<String, String>,
}

impl Module {
    /// The span errors about the source point at.
    pub fn span(&self) -> Span {
        self.lit.span()
    }

    /// The Rust module names of every kernel and template the module generates.
    pub fn kernel_names(&self) -> Vec<String> {
        self.parsed.kernels.iter().chain(&self.parsed.templates).map(|k| self.module_name(k)).collect()
    }

    /// The Rust module kernel (or template) `k` generates: its name, unless
    /// [`Module::module_names`] gives it another.
    pub fn module_name(&self, k: &Kernel) -> String {
        self.module_names.get(&k.qualified_name()).cloned().unwrap_or_else(|| k.name.clone())
    }

    /// Where a kernel's `__global__` is written: `kernels/x.cu:LINE` for a `file = "..."` source
    /// (the path as given, relative to the crate root), else `file.rs:LINE` inside the Rust file.
    /// A kernel read from a user header cites `header.cuh:LINE` (see `Kernel::file`).
    pub fn rust_line(&self, k: &Kernel) -> String {
        source_line(&self.lit, self.file.is_some(), &self.site, k.file.as_deref(), k.line)
    }
}

/// Where line `line` of the CUDA source is written, as messages cite it: `header.cuh:LINE` for a
/// line of a user header (`header`), `kernels/x.cu:LINE` for a `file = "..."` source (`lit`,
/// the path as given), else `file.rs:LINE` inside the Rust file of the call `site`.
pub fn source_line(lit: &LitStr, from_file: bool, site: &CallSite, header: Option<&str>, line: usize) -> String {
    match (header, from_file) {
        (Some(header), _) => format!("{header}:{}", line.max(1)),
        (None, true) => format!("{}:{}", lit.value(), line.max(1)),
        (None, false) => format!("{}:{}", site.file, site.line + line.saturating_sub(1)),
    }
}

/// One launchable kernel: an ordinary `__global__` function or one instance of a template.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The kernel with concrete parameter types (template parameters substituted).
    pub kernel: Kernel,
    /// The C++ entity naming it: `::ns::k`, `ns::axpy<float>`.
    pub expr: String,
    /// For messages and `KernelSpec::name`: `ns::k`, `ns::axpy<float>`.
    pub display: String,
    /// Index into [`Module::instances`] for template instances.
    pub instance: Option<usize>,
}

/// One entry of `instances = [...]`, resolved against the source.
#[derive(Clone)]
pub struct Instance {
    /// The literal, for errors about this instance.
    pub lit: LitStr,
    /// Index into `Parsed::templates`.
    pub template: usize,
    /// Template arguments as written (defaults filled in).
    pub args: Vec<String>,
    /// `ns::axpy<float>`.
    pub expr: String,
}

/// What the checker adds to a [`Module`]: every Rust type, symbol and size.
pub struct Checked {
    /// The kernels to build, in module order (instances that are the same kernel under another
    /// spelling appear once).
    pub kernels: Vec<TypedKernel>,
    /// The Rust generic arguments of each instance, by index into [`Module::instances`].
    pub instances: Vec<InstanceArgs>,
    /// The generic launcher signature of each template (by index into `Parsed::templates`), or
    /// why there is none: the template's module is then that error alone.
    pub templates: Vec<Result<Vec<Mapped>, String>>,
    /// The globals.
    pub globals: Vec<Global>,
    /// Rust twins of the structs passed by value or held in globals, generated from the
    /// compiler's layout (`(Rust name, fields)`), for the user who writes none: the user's own
    /// type of the same name wins.
    pub twins: Vec<(String, Vec<TwinField>)>,
    /// The structs passed by value or held in globals that got no twin, with why: the user must
    /// write the Rust type, and the generated code says so when they did not.
    pub missing_twins: Vec<MissingTwin>,
}

/// A struct passed by value (or held in a global) for which no Rust twin was generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingTwin {
    /// The Rust name the launchers use for it.
    pub name: String,
    /// Who uses it: `parameter `p` of kernel `scale``, `global `g``.
    pub used_by: String,
    /// Why no twin was generated (finishes "no Rust twin was generated because ...").
    pub why: String,
    /// The C++ members in declaration order, when they could be read.
    pub members: Option<Vec<String>>,
    /// Its size and alignment, when the compiler reported them.
    pub layout: Option<(u32, u32)>,
}

/// A C++ struct's data members as the compiler laid them out: `(member, offset, size)` in
/// declaration order, for the generated field-order check (`check_layout`).
pub type Fields = Vec<(String, u64, u64)>;

/// A kernel with its Rust parameter types.
#[derive(Debug, Clone)]
pub struct TypedKernel {
    /// The kernel.
    pub unit: Unit,
    /// The Rust side of each parameter.
    pub params: Vec<Mapped>,
    /// For each parameter that is a struct by value, its CUDA members when the compiler told
    /// them (`None` otherwise: no field check).
    pub fields: Vec<Option<Fields>>,
    /// The symbol in the compiled image, when a compiler ran.
    pub symbol: Option<String>,
}

/// The Rust generic arguments of one template instance (`<f32, 256>`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceArgs {
    /// One per template parameter.
    pub args: Vec<GenericArg>,
}

/// One Rust generic argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenericArg {
    /// A type from the tables.
    Type(RustType),
    /// The user's own Rust type of this name (a struct passed by value).
    User(String),
    /// A `bool` const generic.
    Bool(bool),
    /// A signed integer const generic.
    Signed(i64),
    /// An unsigned integer const generic.
    Unsigned(u64),
}

/// A global variable with what is known about it.
#[derive(Debug, Clone)]
pub struct Global {
    /// The declaration.
    pub var: GlobalVar,
    /// The Rust element type.
    pub elem: Mapped,
    /// For a struct element, its CUDA members when the compiler told them.
    pub fields: Option<Fields>,
    /// The symbol in the compiled image, when a compiler ran.
    pub symbol: Option<String>,
    /// Size in bytes, when known at build time.
    pub bytes: Option<u64>,
    /// Why its size does not fit its element type, reported where the global is generated.
    pub size_error: Option<String>,
}

/// The compiled module, or what NVRTC needs to compile it at run time.
#[derive(Debug, Clone)]
pub enum Image {
    /// Built by a compiler at build time.
    Fatbin {
        /// The fatbin.
        bytes: Vec<u8>,
        /// What it holds: `sm_80`, `compute_80`.
        targets: Vec<String>,
        /// The compiler's release, e.g. `13.0`.
        release: String,
        /// The largest block each kernel is sure to take, per cubin: `("sm_90", [(symbol,
        /// threads)])` (see `crate::oracle::nvcc::Output::limits`; empty when not known).
        limits: BlockLimits,
        /// ptxas's performance advisories about this build (see
        /// `crate::oracle::nvcc::Output::advisories`), each made a warning on the user's build.
        advisories: Vec<String>,
    },
    /// Built by NVRTC at build time: one cubin per architecture and the lowest one's PTX; the
    /// runtime loads the best one for the device.
    Cubins {
        /// `(sm_XX, cubin)`, lowest architecture first.
        cubins: Vec<(String, Vec<u8>)>,
        /// PTX for the lowest architecture, for GPUs no cubin runs on.
        ptx: String,
        /// The PTX's target, `compute_80`.
        ptx_target: String,
        /// NVRTC's release, e.g. `13.0`.
        release: String,
    },
    /// To be compiled by NVRTC at first use.
    Source {
        /// `#line` directive and source.
        text: String,
        /// Options, including `-I` for the include directories.
        options: Vec<String>,
        /// Included headers by their include name, with their text.
        headers: Vec<(String, String)>,
        /// Why no compiler ran at build time.
        reason: String,
    },
    /// Separately compiled units (`rdc`, `link`, `lto`) to be compiled by NVRTC and linked at
    /// first use (no compiler at build time).
    Linked {
        /// Each unit, the module's own source first.
        units: Vec<LinkedUnit>,
        /// Included headers of every unit by their include name, with their text.
        headers: Vec<(String, String)>,
        /// Link-time optimisation (LTO-IR, linked by nvJitLink).
        lto: bool,
        /// Why no compiler ran at build time.
        reason: String,
    },
}

/// One unit of [`Image::Linked`].
#[derive(Debug, Clone)]
pub struct LinkedUnit {
    /// How messages name it.
    pub name: String,
    /// `#line` directive (and automatic includes) and source.
    pub text: String,
    /// NVRTC options, including `-I` for its include directories.
    pub options: Vec<String>,
    /// The kernels, then globals (index: kernel count + global index), whose symbols it resolves.
    pub exprs: Vec<usize>,
}

impl Image {
    /// The image of a module compiled by NVRTC at run time. Its arch-specific targets
    /// (`archs = ["90a"]`) go with the options as `--gpu-architecture=sm_90a`: at first use on
    /// a GPU of that compute capability, the module is built for that target
    /// (`options::nvrtc_args`).
    pub fn source(module: &Module, reason: String) -> Image {
        let targets =
            module.archs.iter().filter(|a| !a.suffix.is_empty()).map(|a| format!("--gpu-architecture={}", a.sm()));
        Image::Source {
            text: format!("{}\n{}", module.line_directive, module.source),
            options: module
                .options
                .iter()
                .cloned()
                .chain(targets)
                .chain(module.include_dirs.iter().map(|d| format!("-I{}", d.display())))
                .collect(),
            headers: module.headers.iter().map(|h| (h.include.clone(), h.text.clone())).collect(),
            reason,
        }
    }
}

/// The Rust module name for a kernel or global: raw identifiers for Rust keywords (`r#move`), an
/// error for the few names that cannot be modules at all.
pub fn rust_name(name: &str) -> Result<syn::Ident, String> {
    if ["self", "Self", "super", "crate", "_"].contains(&name) {
        return Err(format!("a kernel named `{name}` cannot become a Rust module: rename the kernel"));
    }
    Ok(syn::parse_str::<syn::Ident>(name).unwrap_or_else(|_| syn::Ident::new_raw(name, Span::call_site())))
}

/// One field of a generated Rust twin, as the compiler laid it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TwinField {
    /// The C++ member's name.
    pub name: String,
    /// Its element type (`None`: a pointer, as a raw device address).
    pub elem: Option<crate::front::types::Builtin>,
    /// 1, or the array's length.
    pub count: u64,
}

/// Block limits per cubin: `("sm_90", [(symbol, threads)])` (see
/// `crate::oracle::nvcc::Output::limits`).
pub type BlockLimits = Vec<(String, Vec<(String, u32)>)>;

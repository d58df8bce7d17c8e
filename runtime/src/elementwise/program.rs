//! The run-time twin of `elementwise_kernel!`: elementwise kernels whose types or operation are
//! only known while the program runs (CuPy builds its `ElementwiseKernel`s at call time).
//!
//! [`ElementwiseProgram`] takes the same parameter lists, operation, preamble, `loop_prep` and
//! `after_loop` as the macro, writes the CUDA source with the same generator
//! ([`cuda_embed_source::elementwise`]), and [`ElementwiseProgram::build`] compiles one instance
//! with NVRTC through [`Program`] (so through its disk cache: a second run of the program loads
//! the cubin without compiling). The [`ElementwiseKernel`] it returns launches with a dynamic
//! argument list of [`Arg`]s, one per declared parameter in order (inputs, then outputs), each
//! checked before anything runs: a value for a `scalar`, a buffer for an array (writable,
//! [`Arg::slice_mut`], for an output), the Rust type of the value or of the buffer's elements
//! against the parameter's CUDA type, and the lengths of the arrays. A mismatch is an
//! [`Error::Argument`] or [`Error::Length`] naming the parameter. The launch configuration is the
//! macro's: the occupancy block size and a grid of one vector per thread, found once per device.
//!
//! # What the safe launches promise
//!
//! [`ElementwiseKernel::launch`] is safe because of what cuda-embed generates: the loop touches
//! element `i < n` of each array and nothing else, `n` being the checked common length; each
//! argument's kind, element type and device are checked; vector loads are used only on aligned
//! arrays. The operation sees copies of the input elements, a reference (`T&`) to each output's
//! element `i`, the scalars, `i` and `n`.
//!
//! Your C++ (the operation, `preamble`, `loop_prep`, `after_loop`, defines, headers) is compiled
//! as written and trusted like any C++ in your program: cuda-embed cannot see what it does.
//! Used as CuPy's operations use them (`z = x + y`), the names it is given cannot reach another
//! element; taking an address (`(&z)[1]`), writing through pointers it makes, or inline assembly
//! can reach any memory, and keeping clear of that is yours, as in any CUDA kernel. What
//! cuda-embed does refuse is the generated kernel's own names (`_ce_*`: the raw pointers behind
//! the arrays, the length, the loop variables), also through the preamble's macros: a program
//! that names them is an [`Error::Definition`], so no generated pointer is reachable by name.
//!
//! The constructor is not `unsafe`: an `unsafe` there would check nothing more, only move this
//! paragraph into a `# Safety` section of every call, also of the operations that cannot go wrong;
//! the line is the one `elementwise_kernel!` draws (its launchers are safe for the same snippets).
//! Build programs only from text you would compile into your program: it is native code.
//!
//! ```no_run
//! use cuda_embed_runtime::{Arg, ElementwiseProgram};
//! let ctx = cuda_embed_runtime::context(0)?;
//! let stream = ctx.default_stream();
//! let squared_diff = ElementwiseProgram::new("squared_diff", "T x, T y", "T z", "z = (x - y) * (x - y)")?;
//! let kernel = squared_diff.build(&ctx, "float")?;
//! let x = stream.clone_htod(&[1.0f32, 2.0, 3.0])?;
//! let y = stream.clone_htod(&[3.0f32, 2.0, 1.0])?;
//! let mut z = stream.alloc_zeros::<f32>(3)?;
//! kernel.launch(&stream, &mut [Arg::slice(&x), Arg::slice(&y), Arg::slice_mut(&mut z)])?;
//! assert_eq!(stream.clone_dtoh(&z)?, [4.0, 0.0, 4.0]);
//! # Ok::<(), cuda_embed_runtime::Error>(())
//! ```

use crate::args::dynamic::{Arg, ArgKind};
use crate::bind::dynamic::{bind_buffers, misplaced};
use crate::elementwise::AutoConfig;
use crate::error::{Error, Result};
use crate::launch::{self, LaunchKind};
use crate::ndarray::{Layout, NdLaunch};
use crate::program::{Program, ProgramKernel};
use cuda_embed_source::elementwise::{flat_mode, instance_expr, source, types_kernel, vector_width, Elementwise};
use cuda_embed_source::ndarray::nd_kernel_names;
use cuda_embed_source::params::{parse_instance, Instance, ParamKind, ParamLists, Role};
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::any::type_name;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An elementwise kernel defined at run time: see the [module docs](self).
#[derive(Debug, Clone)]
pub struct ElementwiseProgram {
    name: String,
    lists: ParamLists,
    operation: String,
    preamble: String,
    loop_prep: String,
    after_loop: String,
    program: Program,
}

impl ElementwiseProgram {
    /// An elementwise kernel `name` (a C identifier) with parameter lists as in `elementwise_kernel!`
    /// (`"T x, scalar T a, raw float r"`; outputs `"T y"`) and the per-element `operation`.
    /// A bad list, an empty operation or one that names the generated kernel's own names
    /// (`_ce_*`) is an [`Error::Definition`] quoting the text. The operation is trusted C++: see
    /// [what the safe launches promise](self#what-the-safe-launches-promise).
    ///
    /// ```
    /// use cuda_embed_runtime::ElementwiseProgram;
    /// let axpy = ElementwiseProgram::new("axpy", "T x, scalar T a", "T y", "y = a * x + y")?;
    /// assert!(ElementwiseProgram::new("bad", "T x", "T x", "x = 1").is_err());
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn new(name: &str, inputs: &str, outputs: &str, operation: &str) -> Result<Self> {
        let origin = origin_of(name);
        let err = |detail: String| Error::Definition { origin: origin.clone(), detail };
        if let Some(problem) = cuda_embed_source::cxx::kernel_name_problem(name) {
            return Err(err(problem));
        }
        let lists = ParamLists::parse(inputs, outputs).map_err(|e| {
            let text = match e.source {
                cuda_embed_source::params::Source::Inputs => inputs,
                _ => outputs,
            };
            err(quote(&e.error.message, e.error.span.clone(), text, &e.to_string()))
        })?;
        if lists.outputs.is_empty() {
            return Err(err("an elementwise kernel needs at least one output, e.g. `\"T z\"`".into()));
        }
        if operation.trim().is_empty() {
            return Err(err("the operation is empty: write the code run for each index, e.g. `z = x + y`".into()));
        }
        let p = ElementwiseProgram {
            name: name.to_string(),
            lists,
            operation: operation.to_string(),
            preamble: String::new(),
            loop_prep: String::new(),
            after_loop: String::new(),
            program: Program::new("").name(format!("{name}.cu")),
        };
        p.check_reserved()?;
        Ok(p)
    }

    /// The snippets as the generator takes them.
    fn spec(&self) -> Elementwise<'_> {
        Elementwise {
            name: &self.name,
            operation: &self.operation,
            preamble: &self.preamble,
            type_preamble: "",
            loop_prep: &self.loop_prep,
            after_loop: &self.after_loop,
            origins: Default::default(),
        }
    }

    /// An [`Error::Definition`] when a snippet names one of the generator's own names (`_ce_*`:
    /// the raw pointers behind the arrays, the length, ...), through which it could reach memory
    /// the launches do not check (see [`cuda_embed_source::elementwise::reserved_use`]).
    ///
    /// The defines (`define`, `-D` options) and the in-memory headers count as code before the
    /// preamble: neither may name those names, make a macro expand to one, or redefine a name
    /// the generated kernel's types rest on (`define("float", "double")` would read a 4-byte
    /// buffer as 8-byte elements; see [`cuda_embed_source::elementwise::define_problem`]).
    fn check_reserved(&self) -> Result<()> {
        use cuda_embed_source::elementwise as gen;
        let defines = cuda_embed_source::options::defines(self.program.nvrtc_options());
        if let Some((name, problem)) = defines.iter().find_map(|(n, v)| gen::define_problem(n, v).map(|p| (n, p))) {
            return Err(self.definition(format!("the define of `{name}`: {problem}")));
        }
        let (_, _, headers, _) = self.program.parts();
        if let Some((header, problem)) = headers.iter().find_map(|(n, text)| gen::redefinition_in(text).map(|p| (n, p)))
        {
            return Err(self.definition(format!("the header `{header}`: {problem}")));
        }
        let texts: Vec<&str> = headers.iter().map(|(_, text)| text.as_str()).collect();
        let preamble = gen::effective_preamble(&defines, &texts, &self.preamble);
        let spec = Elementwise { preamble: &preamble, ..self.spec() };
        match gen::reserved_use(&spec) {
            None => match gen::redefinition_in(&self.preamble) {
                None => Ok(()),
                Some(problem) => Err(self.definition(format!("the preamble: {problem}"))),
            },
            Some((snippet, name)) => Err(self.definition(format!(
                "the {} names `{name}`: names starting with `{}` are the generated kernel's own (the \
                 arrays' raw pointers, the length, the loop), which user code must not use; use the parameters \
                 (`x` is element `i` of array `x`), `i`, `n`, or a `raw` parameter for access to a whole array",
                if snippet == "preamble" { "preamble (or a define or header before it)" } else { snippet },
                gen::RESERVED_PREFIX
            ))),
        }
    }

    /// Code before the kernel: device functions, `#include`s.
    pub fn preamble(mut self, code: &str) -> Self {
        self.preamble = code.to_string();
        self
    }

    /// Code in each thread before the loop over the indices (its declarations are visible in the
    /// operation).
    pub fn loop_prep(mut self, code: &str) -> Self {
        self.loop_prep = code.to_string();
        self
    }

    /// Code in each thread after the loop over the indices.
    pub fn after_loop(mut self, code: &str) -> Self {
        self.after_loop = code.to_string();
        self
    }

    /// Adds an NVRTC option (as [`Program::option`]).
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.program = self.program.option(option);
        self
    }

    /// Defines a preprocessor macro (as [`Program::define`]).
    pub fn define(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        self.program = self.program.define(name, value);
        self
    }

    /// Adds an in-memory header (as [`Program::header`]).
    pub fn header(mut self, name: impl Into<String>, contents: impl Into<String>) -> Self {
        self.program = self.program.header(name, contents);
        self
    }

    /// Adds an include directory (as [`Program::include_dir`]).
    pub fn include_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.program = self.program.include_dir(dir);
        self
    }

    /// Keeps compiled code under `dir` instead of the default cache (as [`Program::cache_dir`]).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.program = self.program.cache_dir(dir);
        self
    }

    /// The placeholders of the parameter lists, in template-argument order.
    pub fn placeholders(&self) -> Vec<String> {
        self.lists.placeholders()
    }

    /// The generated CUDA source (every kernel, every instance; without the placeholder
    /// typedefs of one instance, see [`ElementwiseProgram::source_for`]).
    pub fn source(&self) -> String {
        self.generate("")
    }

    /// The generated CUDA source of one instance (`""`, `"float"` or `"T=float, U=int"`), as
    /// [`ElementwiseProgram::build`] compiles it: the placeholders the preamble mentions are
    /// typedefs before it (`typedef float T;`, CuPy's `type_preamble`), so device functions of
    /// the preamble can use them.
    pub fn source_for(&self, types: &str) -> Result<String> {
        let inst = self.instance(types)?;
        let typedefs = cuda_embed_source::typedefs::type_preamble(&inst.bindings, 1, &self.preamble);
        Ok(self.generate(&typedefs))
    }

    fn generate(&self, type_preamble: &str) -> String {
        let e = Elementwise {
            name: &self.name,
            operation: &self.operation,
            preamble: &self.preamble,
            type_preamble,
            loop_prep: &self.loop_prep,
            after_loop: &self.after_loop,
            origins: Default::default(),
        };
        source(&e, &self.lists)
    }

    /// Reads an instance: `""` without placeholders, `"float"` with one, `"T=float, U=int"`.
    fn instance(&self, types: &str) -> Result<Instance> {
        let placeholders = self.lists.placeholders();
        if placeholders.is_empty() {
            if types.trim().is_empty() {
                return Ok(Instance::default());
            }
            return Err(self.definition(format!(
                "the instance `{types}` is given but no parameter uses a placeholder: pass \"\""
            )));
        }
        parse_instance(types, &placeholders)
            .map_err(|e| self.definition(quote(&e.message, e.span.clone(), types, &e.message)))
    }

    fn definition(&self, detail: String) -> Error {
        Error::Definition { origin: origin_of(&self.name), detail }
    }

    /// The [`Program`] of one instance (`""`, `"float"` or `"T=float, U=int"`): the generated
    /// source, the options given, and the name expressions of the kernel and its types carrier.
    /// [`ElementwiseProgram::build`] compiles and loads it; [`Program::compile`] compiles it
    /// without a GPU.
    pub fn program(&self, types: &str) -> Result<Program> {
        self.check_reserved()?;
        let inst = self.instance(types)?;
        let program = self
            .program
            .clone()
            .with_source(self.source_for(types)?)
            .name_expression(instance_expr(&self.name, &inst))
            .name_expression(instance_expr(&types_kernel(&self.name), &inst));
        // The strided kernels of `launch_nd`, one per rank.
        Ok(nd_kernel_names(&self.name).iter().fold(program, |p, k| p.name_expression(instance_expr(k, &inst))))
    }

    /// Compiles one instance for `ctx`'s device (NVRTC, or the disk cache) and loads it.
    ///
    /// The launches check every argument's element type: against the Rust twin for the CUDA
    /// types that have a fixed one (`float` is `f32`, ...), else by size against the compiled
    /// kernel's parameter list, which the driver reports from CUDA 12.4 on. On an older driver
    /// an instance with a parameter of another type (a user struct, a typedef) cannot be checked,
    /// so building it is an [`Error::Signature`] naming the parameter (not a launch that skips
    /// the check).
    pub fn build(&self, ctx: &Arc<CudaContext>, types: &str) -> Result<ElementwiseKernel> {
        let inst = self.instance(types)?;
        let module = self.program(types)?.load(ctx)?;
        let kernel = module.kernel(&instance_expr(&self.name, &inst))?;
        let carrier = module.kernel(&instance_expr(&types_kernel(&self.name), &inst))?;
        let nd = nd_kernel_names(&self.name)
            .iter()
            .map(|k| module.kernel(&instance_expr(k, &inst)))
            .collect::<Result<Vec<_>>>()?;
        let driver = crate::module::params::driver_version();
        let params = self.param_table(&inst, carrier.params(), kernel.name(), driver)?;
        let sizes: Vec<usize> =
            params.iter().filter(|p| p.kind == ParamKind::Array).map(|p| p.size.unwrap_or(0)).collect();
        Ok(ElementwiseKernel {
            sig: Sig {
                kernel: kernel.name().to_string(),
                origin: kernel.origin().to_string(),
                params,
                width: vector_width(&sizes),
            },
            kernel,
            nd,
            instance: inst.to_string(),
            auto: AutoConfig::new(),
        })
    }
}

impl ElementwiseProgram {
    /// What the launches check each parameter against: its Rust twin's type name when the CUDA
    /// type has a fixed one, and its size as the compiled kernel takes it (`compiled`, the
    /// types-carrier kernel's parameter list: one parameter per declared one).
    ///
    /// Without the driver's parameter info (`compiled` is `None`: drivers older than CUDA 12.4,
    /// `driver` being the version the driver reports) a type outside the table (a user struct,
    /// a typedef) could not be checked at all, and a safe launch with elements of the wrong size
    /// would run off the end of the buffers: that is an [`Error::Signature`] naming the
    /// parameter, never a silently skipped check.
    fn param_table(
        &self,
        inst: &Instance,
        compiled: Option<&[(usize, usize)]>,
        kernel: &str,
        driver: i32,
    ) -> Result<Vec<ParamInfo>> {
        let sizes: Vec<Option<usize>> = match compiled {
            Some(p) => p.iter().map(|&(_, size)| Some(size)).collect(),
            None => self.lists.all().map(|_| None).collect(),
        };
        self.lists
            .all()
            .zip(sizes)
            .map(|(p, size)| {
                let cuda = inst.resolve(&p.ty).to_string();
                let rust = rust_type(&cuda);
                if rust.is_none() && size.is_none() {
                    return Err(Error::Signature {
                        kernel: kernel.to_string(),
                        origin: origin_of(&self.name),
                        detail: format!(
                            "parameter `{}` has the CUDA type `{cuda}`, which has no fixed Rust twin, and this driver \
                             (CUDA {}.{}) cannot report the compiled kernel's parameter sizes (cuFuncGetParamInfo \
                             needs CUDA 12.4), so its element size cannot be checked and the kernel is not built; \
                             install an NVIDIA driver for CUDA 12.4 or newer, or declare `{}` with a type the \
                             launches know (`float`, `int`, `__half`, `float4`, ...)",
                            p.name,
                            driver / 1000,
                            driver % 1000 / 10,
                            p.name
                        ),
                    });
                }
                Ok(ParamInfo {
                    name: p.name.clone(),
                    kind: p.kind,
                    role: p.role,
                    size: size.or(rust.map(|r| r.1)),
                    rust: rust.map(|r| r.0),
                    cuda,
                })
            })
            .collect()
    }
}

/// A parse error's message, quoting the text it is about.
fn quote(message: &str, span: std::ops::Range<usize>, text: &str, fallback: &str) -> String {
    match text.get(span).filter(|t| !t.is_empty() && *t != text) {
        Some(t) => format!("{message} (at `{t}` in `{text}`)"),
        None if text.is_empty() => fallback.to_string(),
        None => format!("{message} (in `{text}`)"),
    }
}

fn origin_of(name: &str) -> String {
    format!("elementwise program `{name}`")
}

/// The Rust type (its `type_name`) and size of the CUDA types whose Rust twin is fixed; others
/// (user structs, rarer types) are checked by size against the compiled kernel.
fn rust_type(cuda: &str) -> Option<(&'static str, usize)> {
    fn t<T>() -> Option<(&'static str, usize)> {
        Some((type_name::<T>(), std::mem::size_of::<T>()))
    }
    use crate::types as ty;
    match cuda {
        "float" => t::<f32>(),
        "double" => t::<f64>(),
        "signed char" | "int8_t" => t::<i8>(),
        "unsigned char" | "uint8_t" => t::<u8>(),
        "short" | "short int" | "signed short" | "int16_t" => t::<i16>(),
        "unsigned short" | "unsigned short int" | "uint16_t" => t::<u16>(),
        "int" | "signed" | "signed int" | "int32_t" => t::<i32>(),
        "unsigned" | "unsigned int" | "uint32_t" => t::<u32>(),
        "long" | "long int" | "signed long" => t::<std::ffi::c_long>(),
        "unsigned long" | "unsigned long int" => t::<std::ffi::c_ulong>(),
        "long long" | "long long int" | "signed long long" | "int64_t" => t::<i64>(),
        "unsigned long long" | "unsigned long long int" | "uint64_t" => t::<u64>(),
        "size_t" => t::<usize>(),
        "ptrdiff_t" => t::<isize>(),
        "bool" => t::<bool>(),
        "__half" | "half" => t::<ty::f16>(),
        "__nv_bfloat16" | "nv_bfloat16" => t::<ty::bf16>(),
        "float2" => t::<ty::Float2>(),
        "float3" => t::<ty::Float3>(),
        "float4" => t::<ty::Float4>(),
        "double2" => t::<ty::Double2>(),
        "int2" => t::<ty::Int2>(),
        "int4" => t::<ty::Int4>(),
        "uint2" => t::<ty::UInt2>(),
        "uint4" => t::<ty::UInt4>(),
        _ => None,
    }
}

#[derive(Debug, Clone)]
struct ParamInfo {
    name: String,
    kind: ParamKind,
    role: Role,
    /// The element (or scalar) type, resolved for the instance.
    cuda: String,
    /// Its Rust twin's `type_name`, when fixed.
    rust: Option<&'static str>,
    /// Its size in bytes, when known.
    size: Option<usize>,
}

mod kernel;
pub use kernel::ElementwiseKernel;
use kernel::Sig;

#[cfg(test)]
mod tests;

//! Reductions built while the program runs: the run-time twin of `reduction_kernel!` (CuPy
//! builds its `ReductionKernel`s at call time).
//!
//! [`ReductionProgram`] takes the same pieces as the macro (parameter lists, `map`, `reduce`,
//! `identity`, `post_map`, `reduce_type`, `preamble`, `types`), generates the CUDA source with
//! the macro's own generator (`cuda_embed_source::reduction`), compiles it with NVRTC through
//! [`Program`] (so the disk cache is shared with every run-time program) and returns a
//! [`Reduction`]. Its launchers take [`TypedArg`]s, inputs then outputs in declaration order;
//! before anything runs they check each argument's kind (read buffer, written buffer, scalar),
//! its CUDA element type against the parameter's (choosing the instance of `types` the
//! arguments match) and the lengths, exactly as the macro's launchers do. The launch plans and
//! the per-stream scratch buffer are those of the macro, so results are bit-identical to it.
//!
//! # What the safe launches promise
//!
//! The launches are safe because of what cuda-embed generates: every array input is read at
//! the checked length, each output written at the element of its row, column or result, the
//! kinds, element types and devices of the arguments checked, the scratch memory sized by the
//! plan. The snippets run inside functions that see only their arguments: `map` copies of the
//! elements (and the scalars, `i`, `n`), `reduce` two partial values, `identity` nothing,
//! `post_map` the result `a` and a reference (`T&`) to each output's element being written.
//!
//! Your C++ (the snippets, `reduce_type`, `preamble`, options) is compiled as written and trusted
//! like any C++ in your program: used as CuPy's reductions use them, those names cannot reach
//! another element; taking an address (`(&y)[1]` in `post_map`), writing through pointers it
//! makes, or inline assembly can reach any memory, and keeping clear of that is yours, as in any
//! CUDA kernel. The constructor is not `unsafe` for the reason
//! [`ElementwiseProgram`](crate::ElementwiseProgram) gives: it would check nothing more, and the
//! line is the one `reduction_kernel!` draws. Build programs only from text you would compile
//! into your program: it is native code.

use crate::args::typed::{type_matches, TypedArg, TypedArgKind};
use crate::error::{Error, Result};
use crate::ndarray::{AxesInput, AxesOutput, AxesPlan, AxesRoute, Layout};
use crate::program::nvrtc::Compiled;
use crate::program::{Program, ProgramKernel};
use crate::reduction::{self as reduce, Shape};
use cuda_embed_source::ndarray::reduction::axes_kernel_name;
use cuda_embed_source::params::{Instance, ParamKind, ParamLists};
use cuda_embed_source::reduction::{kernel_names, PlanKind, RedParam, ReductionSource, Snippet};
use cudarc::driver::{CudaContext, CudaStream};
use std::path::PathBuf;
use std::sync::Arc;

/// A reduction defined at run time: CuPy's `ReductionKernel(in_params, out_params, map_expr,
/// reduce_expr, post_map_expr, identity, name, reduce_type=..., preamble=..., options=...)`.
///
/// A builder; [`ReductionProgram::load`] checks the definition, compiles it (or takes it from the
/// disk cache) and loads it on a device.
///
/// ```no_run
/// use cuda_embed_runtime::{ReductionProgram, TypedArg};
///
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let l2norm = ReductionProgram::new("l2norm", "T x", "T y")
///     .map("x * x")
///     .reduce("a + b")
///     .post_map("y = sqrt(a)")
///     .identity("0")
///     .types(["float", "double"])
///     .load(&ctx)?;
/// let x = stream.clone_htod(&[3.0f32, 4.0])?;
/// let mut y = stream.alloc_zeros::<f32>(1)?;
/// l2norm.launch(&stream, &mut [TypedArg::slice(&x), TypedArg::slice_mut(&mut y)])?;
/// assert_eq!(stream.clone_dtoh(&y)?, [5.0]);
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ReductionProgram {
    name: String,
    inputs: String,
    outputs: String,
    map: Option<String>,
    reduce: Option<String>,
    identity: Option<String>,
    post_map: Option<String>,
    reduce_type: Option<String>,
    preamble: Option<String>,
    types: Vec<String>,
    options: Vec<String>,
    cache_dir: Option<PathBuf>,
}

impl ReductionProgram {
    /// A reduction named `name` (a C identifier: the kernels are `NAME_full`, `NAME_rows`,
    /// `NAME_cols`) over the parameters `inputs` (arrays `T x` and scalars `scalar float s`) into
    /// `outputs` (arrays), in the syntax of `reduction_kernel!`.
    pub fn new(name: impl Into<String>, inputs: impl Into<String>, outputs: impl Into<String>) -> Self {
        ReductionProgram {
            name: name.into(),
            inputs: inputs.into(),
            outputs: outputs.into(),
            map: None,
            reduce: None,
            identity: None,
            post_map: None,
            reduce_type: None,
            preamble: None,
            types: Vec::new(),
            options: Vec::new(),
            cache_dir: None,
        }
    }

    /// The value each element contributes (required): an expression of the inputs, `i`, `n`.
    pub fn map(mut self, code: impl Into<String>) -> Self {
        self.map = Some(code.into());
        self
    }

    /// Combines two partial values `a` and `b` (required; associative and commutative).
    pub fn reduce(mut self, code: impl Into<String>) -> Self {
        self.reduce = Some(code.into());
        self
    }

    /// The value of an empty reduction (required).
    pub fn identity(mut self, code: impl Into<String>) -> Self {
        self.identity = Some(code.into());
        self
    }

    /// Statements writing the result `a` to the outputs; default: the first output `= a`.
    pub fn post_map(mut self, code: impl Into<String>) -> Self {
        self.post_map = Some(code.into());
        self
    }

    /// The type of the partial values (default: the first output's type); at most 32 bytes.
    pub fn reduce_type(mut self, ty: impl Into<String>) -> Self {
        self.reduce_type = Some(ty.into());
        self
    }

    /// C++ before the kernels: structs, `__device__` helpers, includes.
    pub fn preamble(mut self, code: impl Into<String>) -> Self {
        self.preamble = Some(code.into());
        self
    }

    /// The instances of the placeholders: `["float", "double"]`, or `["T=float, U=int"]`.
    pub fn types<I: IntoIterator<Item = S>, S: Into<String>>(mut self, types: I) -> Self {
        self.types.extend(types.into_iter().map(Into::into));
        self
    }

    /// Adds one NVRTC option (`--use_fast_math`, `-DN=4`).
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// Caches compiled code under `dir/nvrtc/` instead of the default cache directory.
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    fn origin(&self) -> String {
        format!("reduction program `{}`", self.name)
    }

    /// The parsed definition, or what is wrong with it.
    fn definition(&self) -> std::result::Result<Definition, String> {
        let name = &self.name;
        if let Some(problem) = cuda_embed_source::cxx::kernel_name_problem(name) {
            return Err(problem);
        }
        let need = |v: &Option<String>, key: &str| {
            v.clone().ok_or_else(|| {
                format!("`{key}` is not set: a reduction needs `map`, `reduce` and `identity` (`.{key}(\"...\")`)")
            })
        };
        let (map, red, identity) =
            (need(&self.map, "map")?, need(&self.reduce, "reduce")?, need(&self.identity, "identity")?);
        let lists = ParamLists::parse(&self.inputs, &self.outputs).map_err(|e| e.to_string())?;
        if let Some(p) = lists.all().find(|p| p.kind == ParamKind::Raw) {
            return Err(format!(
                "`raw {} {}`: a reduction's parameters are arrays and scalar inputs, never `raw`",
                p.ty, p.name
            ));
        }
        if !lists.inputs.iter().any(|p| p.kind == ParamKind::Array) {
            return Err("a reduction needs at least one array input (e.g. `T x`)".into());
        }
        if lists.outputs.is_empty() {
            return Err("a reduction needs at least one output (e.g. `T y`)".into());
        }
        let instances = lists.instances(&self.types).map_err(|e| e.to_string())?;
        // A define or a preamble macro that redefines a type name (`-Dfloat=double`) would make
        // the kernels read elements of another size than the launches check.
        use cuda_embed_source::elementwise::{define_problem, redefinition_in};
        for (n, v) in cuda_embed_source::options::defines(&self.options) {
            if let Some(problem) = define_problem(&n, &v) {
                return Err(format!("the define of `{n}`: {problem}"));
            }
        }
        if let Some(problem) = self.preamble.as_deref().and_then(redefinition_in) {
            return Err(format!("the preamble: {problem}"));
        }
        let red_param = |p: &cuda_embed_source::params::Param| RedParam {
            name: p.name.clone(),
            ty: p.ty.as_str().to_string(),
            scalar: p.kind == ParamKind::Scalar,
        };
        let source = ReductionSource {
            name: name.clone(),
            placeholders: lists.placeholders(),
            inputs: lists.inputs.iter().map(red_param).collect(),
            outputs: lists.outputs.iter().map(red_param).collect(),
            map: Snippet::new(map),
            reduce: Snippet::new(red),
            post_map: self.post_map.clone().map(Snippet::new),
            identity: Snippet::new(identity),
            reduce_type: self.reduce_type.clone().map(Snippet::new),
            preamble: self.preamble.clone().map(Snippet::new),
            instances: instances.iter().map(|i| i.types().iter().map(|t| t.to_string()).collect()).collect(),
        };
        Ok(Definition { lists, instances, source })
    }

    /// The CUDA source NVRTC compiles (the generator of `reduction_kernel!`). A definition error
    /// is an [`Error::Compile`] (with `arch` 0: no device is involved yet).
    pub fn source(&self) -> Result<String> {
        let def = self.definition().map_err(|cause| Error::Compile { origin: self.origin(), arch: 0, cause })?;
        Ok(def.source.source())
    }

    fn program(&self, def: &Definition) -> Program {
        let mut p = Program::new(def.source.source()).name(format!("{}.cu", self.name)).options(self.options.clone());
        for e in def.source.instance_exprs() {
            p = p.name_expression(e);
        }
        if let Some(d) = &self.cache_dir {
            p = p.cache_dir(d.clone());
        }
        p
    }

    /// Compiles the reduction for `sm_{arch}` (or takes it from the disk cache). Needs NVRTC, not
    /// a GPU. Definition errors and NVRTC's log are [`Error::Compile`]s.
    pub fn compile(&self, arch: u32) -> Result<Compiled> {
        let def = self.definition().map_err(|cause| Error::Compile { origin: self.origin(), arch, cause })?;
        self.program(&def).compile(arch).map_err(|e| self.own(e))
    }

    /// An error of the underlying [`Program`], naming this reduction instead.
    fn own(&self, e: Error) -> Error {
        match e {
            Error::Compile { arch, cause, .. } => Error::Compile { origin: self.origin(), arch, cause },
            Error::Load { device, device_name, arch, cause, fix, .. } => {
                Error::Load { origin: self.origin(), device, device_name, arch, cause, fix }
            }
            e => e,
        }
    }

    /// Checks the definition, compiles it for `ctx`'s device (or takes it from the disk cache)
    /// and loads its kernels.
    pub fn load(&self, ctx: &Arc<CudaContext>) -> Result<Reduction> {
        let def = self.definition().map_err(|cause| Error::Compile { origin: self.origin(), arch: 0, cause })?;
        let module = self.program(&def).load(ctx).map_err(|e| self.own(e))?;
        let names = kernel_names(&self.name);
        let axes_name = axes_kernel_name(&self.name);
        let mut kernels = Vec::with_capacity(def.instances.len());
        for inst in &def.instances {
            let lookup = |k: &String| {
                if def.source.placeholders.is_empty() {
                    module.kernel(k)
                } else {
                    module.kernel(&format!("{k}<{}>", inst.types().join(", ")))
                }
            };
            kernels.push([lookup(&names[0])?, lookup(&names[1])?, lookup(&names[2])?, lookup(&axes_name)?]);
        }
        Ok(Reduction {
            origin: self.origin(),
            name: self.name.clone(),
            lists: def.lists,
            instances: def.instances,
            kernels,
        })
    }
}

struct Definition {
    lists: ParamLists,
    instances: Vec<Instance>,
    source: ReductionSource,
}

/// A [`ReductionProgram`] loaded on one device: `launch`, `launch_rows` and `launch_cols` with
/// checked argument lists, as `reduction_kernel!`'s modules have.
pub struct Reduction {
    origin: String,
    name: String,
    lists: ParamLists,
    instances: Vec<Instance>,
    /// Per instance: the `full`, `rows`, `cols` and `axes` kernels.
    kernels: Vec<[ProgramKernel; 4]>,
}

impl std::fmt::Debug for Reduction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let types: Vec<String> = self.instances.iter().map(|i| i.to_string()).collect();
        f.debug_struct("Reduction").field("name", &self.name).field("types", &types).finish_non_exhaustive()
    }
}

/// What the checks need of an argument.
pub(crate) struct ArgInfo {
    pub(crate) names: &'static [&'static str],
    pub(crate) len: Option<usize>,
    pub(crate) kind: TypedArgKind,
}

impl Reduction {
    /// The reduction's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reduces every element of the inputs into element 0 of each output (each of length 1).
    /// `args`: the inputs then the outputs, in declaration order. An empty input gives
    /// `post_map(identity)`.
    pub fn launch(&self, stream: &Arc<CudaStream>, args: &mut [TypedArg<'_>]) -> Result<()> {
        self.run(stream, Shape::Full, 0, args)
    }

    /// Reduces each contiguous row of `cols` elements (CuPy's `axis=-1`): each output has one
    /// element per row.
    pub fn launch_rows(&self, stream: &Arc<CudaStream>, cols: usize, args: &mut [TypedArg<'_>]) -> Result<()> {
        self.run(stream, Shape::Rows, cols, args)
    }

    /// Reduces each column of the row-major matrix with `cols` columns (CuPy's `axis=0`): each
    /// output has `cols` elements.
    pub fn launch_cols(&self, stream: &Arc<CudaStream>, cols: usize, args: &mut [TypedArg<'_>]) -> Result<()> {
        self.run(stream, Shape::Cols, cols, args)
    }

    /// Reduces the inputs over `axes`, as `reduction_kernel!`'s `launch_axes` does (the same
    /// kernels and host plan): `args` are the inputs then the outputs, in declaration order; each
    /// array input an N-D view ([`TypedArg::view`]) or a flat buffer ([`TypedArg::slice`], 1-D)
    /// whose shape broadcasts to the first array input's, each output a [`TypedArg::view_mut`]
    /// (or [`TypedArg::slice_mut`]) whose shape is the first input's without the reduced axes, or
    /// with them as 1 (keepdims). Kinds and element types are checked as [`Reduction::launch`]
    /// checks them, the shapes and axes as `launch_axes` does (an [`Error::Shape`]). Contiguous
    /// rows, columns and full reductions run the kernels of `launch_rows`, `launch_cols` and
    /// `launch`, everything else the strided kernel. Deterministic.
    ///
    /// ```no_run
    /// use cuda_embed_runtime::{NdView, ReductionProgram, TypedArg};
    /// let ctx = cuda_embed_runtime::context(0)?;
    /// let stream = ctx.default_stream();
    /// let sum = ReductionProgram::new("sum", "T x", "T y").map("x").reduce("a + b").identity("0")
    ///     .types(["float"]).load(&ctx)?;
    /// let x = stream.alloc_zeros::<f32>(2 * 3 * 4)?;
    /// let xv = NdView::new(&x, &[2, 3, 4])?;
    /// let mut y = stream.alloc_zeros::<f32>(3)?; // axes 0 and 2 reduced
    /// sum.launch_axes(&stream, &[0, 2], &mut [TypedArg::view(&xv), TypedArg::slice_mut(&mut y)])?;
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn launch_axes(&self, stream: &Arc<CudaStream>, axes: &[usize], args: &mut [TypedArg<'_>]) -> Result<()> {
        let infos: Vec<ArgInfo> = args.iter().map(|a| ArgInfo { names: a.names, len: a.len, kind: a.kind }).collect();
        let fail = |cause: String| reduce::length_error(&self.name, &self.origin, stream, cause);
        let which = select(&self.lists, &self.instances, &infos).map_err(fail)?;
        let layout = |a: &TypedArg<'_>| a.arg.layout.unwrap_or_else(|| Layout::flat(a.len.unwrap_or(0)));
        let (mut ins, mut outs) = (Vec::new(), Vec::new());
        for (p, a) in self.lists.all().zip(args.iter()) {
            match a.kind {
                TypedArgKind::Input => ins.push((p.name.as_str(), layout(a))),
                TypedArgKind::Output => outs.push((p.name.as_str(), layout(a))),
                TypedArgKind::Scalar => {}
            }
        }
        let in_ops: Vec<(&str, &Layout)> = ins.iter().map(|(n, l)| (*n, l)).collect();
        let out_ops: Vec<(&str, &Layout)> = outs.iter().map(|(n, l)| (*n, l)).collect();
        let op = format!("reduction `{}`", self.name);
        let sms = reduce::sm_count(stream)?;
        let (plan, pin, pout) = AxesPlan::new_dyn(&op, sms, &in_ops, axes, &out_ops)?;
        let (k, kr) = (plan.kept as usize, (plan.kept * plan.reduced) as usize);
        let (shape, cols) = match plan.route {
            AxesRoute::Empty => return Ok(()),
            AxesRoute::Full => (Shape::Full, 0),
            AxesRoute::Rows { cols } => (Shape::Rows, cols),
            AxesRoute::Cols { cols } => (Shape::Cols, cols),
            AxesRoute::Strided => return self.strided(stream, which, &plan, &pin, &pout, args),
        };
        // A contiguous plan: each operand's region (`kr` input elements, `k` output elements from
        // its offset) as a flat buffer of `run`.
        let (mut ni, mut no) = (0, 0);
        let mut regions: Vec<(usize, usize)> = Vec::with_capacity(args.len());
        for a in args.iter() {
            regions.push(match a.kind {
                TypedArgKind::Input => (pin[post_inc(&mut ni)].0 as usize, kr),
                TypedArgKind::Output => (pout[post_inc(&mut no)].0 as usize, k),
                TypedArgKind::Scalar => (0, 0),
            });
        }
        let mut flat: Vec<TypedArg<'_>> =
            args.iter_mut().zip(&regions).map(|(a, &(off, len))| a.region(off, len)).collect::<Result<_>>()?;
        self.run(stream, shape, cols, &mut flat)
    }

    /// The strided `NAME_axes` kernel of instance `which` under `plan`.
    fn strided(
        &self,
        stream: &Arc<CudaStream>,
        which: usize,
        plan: &AxesPlan<0, 0>,
        ins: &[AxesInput],
        outs: &[AxesOutput],
        args: &mut [TypedArg<'_>],
    ) -> Result<()> {
        let mut list: Vec<crate::Arg<'_>> = args.iter_mut().map(TypedArg::as_buffer_arg).collect();
        list.push(crate::Arg::value(&plan.kept));
        list.push(crate::Arg::value(&plan.reduced));
        list.push(crate::Arg::value(&plan.mode));
        list.extend(plan.kept_shape.iter().chain(&plan.reduced_shape).map(crate::Arg::value));
        for (off, kst, rst) in ins {
            list.push(crate::Arg::value(off));
            list.extend(kst.iter().chain(rst).map(crate::Arg::value));
        }
        for (off, kst) in outs {
            list.push(crate::Arg::value(off));
            list.extend(kst.iter().map(crate::Arg::value));
        }
        // SAFETY: every argument has the kind and CUDA element type of its parameter (checked by
        // `select`); each array is passed as its whole buffer, and the kernel touches element
        // `offset + sum(coord * stride)` of it for coordinates within the views' own (merged)
        // shapes, which the views' checks keep inside the buffers; outputs do not overlap
        // themselves (`NdViewMut`). The count and sizes are checked again against the kernel.
        unsafe { self.kernels[which][3].launch(stream, plan.config, &mut list) }
    }

    fn run(&self, stream: &Arc<CudaStream>, shape: Shape, cols: usize, args: &mut [TypedArg<'_>]) -> Result<()> {
        let infos: Vec<ArgInfo> = args.iter().map(|a| ArgInfo { names: a.names, len: a.len, kind: a.kind }).collect();
        let fail = |cause: String| reduce::length_error(&self.name, &self.origin, stream, cause);
        if let Some((p, _)) = self.lists.all().zip(args.iter()).find(|(_, a)| a.arg.is_view()) {
            return Err(fail(format!(
                "argument `{}` is an N-D view (`TypedArg::view`): reduce views with `launch_axes`, or pass a flat \
                 buffer with `TypedArg::slice`",
                p.name
            )));
        }
        let which = select(&self.lists, &self.instances, &infos).map_err(fail)?;
        let (rows, n, want) = shape_of(&self.lists, &infos, shape, cols).map_err(fail)?;
        if want == 0 {
            return Ok(());
        }
        let sizes: Vec<usize> = self
            .lists
            .inputs
            .iter()
            .zip(args.iter())
            .filter(|(p, _)| p.kind == ParamKind::Array)
            .map(|(_, a)| a.elem_size)
            .collect();
        let plan = reduce::plan(stream, shape, rows as u64, n as u64, &sizes)?;
        let cfg = reduce::config(&plan);
        let (rows, n, aux) = (rows as i64, n as i64, plan.aux as i32);
        let [full, by_rows, by_cols, _] = &self.kernels[which];
        reduce::with_scratch(stream, &plan, |scratch, off| {
            let mut list: Vec<crate::Arg<'_>> = args.iter_mut().map(TypedArg::as_arg).collect();
            list.push(crate::Arg::value(&rows));
            list.push(crate::Arg::value(&n));
            let kernel = match plan.kind {
                PlanKind::Segments => {
                    list.push(crate::Arg::value(&aux));
                    list.push(crate::Arg::slice_mut(scratch));
                    list.push(crate::Arg::value(&off));
                    full
                }
                PlanKind::Rows => {
                    list.push(crate::Arg::value(&aux));
                    by_rows
                }
                PlanKind::Cols => {
                    list.push(crate::Arg::slice_mut(scratch));
                    list.push(crate::Arg::value(&off));
                    by_cols
                }
            };
            // SAFETY: every argument has the kind and CUDA element type of its parameter (checked
            // by `select`), every array input has `rows * n` elements and each output one per
            // result (checked by `shape_of`); the generated kernels touch only those elements
            // and, under this plan, the plan's counters before `off` and its partials after it
            // in the scratch buffer, which has room for both. The count and sizes are checked
            // once more against the compiled kernel.
            unsafe { kernel.launch(stream, cfg, &mut list) }
        })
    }
}

fn post_inc(k: &mut usize) -> usize {
    *k += 1;
    *k - 1
}

/// The instance the arguments match: each argument has its parameter's kind and element type.
pub(crate) fn select(
    lists: &ParamLists,
    instances: &[Instance],
    args: &[ArgInfo],
) -> std::result::Result<usize, String> {
    let params: Vec<_> = lists.all().collect();
    if args.len() != params.len() {
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "{} arguments given, the reduction takes {} ({}: the inputs, then the outputs)",
            args.len(),
            params.len(),
            names.join(", ")
        ));
    }
    for (p, a) in params.iter().zip(args) {
        let want = match p.kind {
            _ if lists.outputs.iter().any(|o| o.name == p.name) => TypedArgKind::Output,
            ParamKind::Scalar => TypedArgKind::Scalar,
            _ => TypedArgKind::Input,
        };
        if a.kind != want {
            let how = match want {
                TypedArgKind::Input => "an input array: `TypedArg::slice(&x)`",
                TypedArgKind::Output => "an output array: `TypedArg::slice_mut(&mut y)`",
                TypedArgKind::Scalar => "a scalar: `TypedArg::scalar(&s)`",
            };
            return Err(format!("argument `{}` must be {how}, not {:?}", p.name, a.kind));
        }
    }
    let fits = |inst: &Instance| params.iter().zip(args).all(|(p, a)| type_matches(inst.resolve(&p.ty), a.names));
    if let Some(k) = instances.iter().position(fits) {
        return Ok(k);
    }
    let given: Vec<String> =
        params.iter().zip(args).map(|(p, a)| format!("`{}`: {}", p.name, a.names.first().unwrap_or(&"?"))).collect();
    let mut msg = format!("no instance takes these element types ({})", given.join(", "));
    if let [only] = instances {
        let want: Vec<String> = params.iter().map(|p| format!("`{}`: {}", p.name, only.resolve(&p.ty))).collect();
        msg.push_str(&format!("; the parameters are {}", want.join(", ")));
    } else {
        let built: Vec<String> = instances.iter().map(|i| format!("\"{i}\"")).collect();
        msg.push_str(&format!("; types built: {}", built.join(", ")));
    }
    Err(msg)
}

/// `(rows, n, results)` for a launch of `shape`: the reduced segments, their length, and the
/// length every output must have. Checks that every array input is as long as the first, that
/// the length is a multiple of `cols`, and each output's length.
pub(crate) fn shape_of(
    lists: &ParamLists,
    args: &[ArgInfo],
    shape: Shape,
    cols: usize,
) -> std::result::Result<(usize, usize, usize), String> {
    let params: Vec<_> = lists.all().collect();
    let arrays: Vec<(&str, usize)> = params
        .iter()
        .zip(args)
        .filter(|(p, a)| p.kind == ParamKind::Array && a.kind == TypedArgKind::Input)
        .map(|(p, a)| (p.name.as_str(), a.len.unwrap_or(0)))
        .collect();
    let (first, len) = arrays.first().copied().unwrap_or(("?", 0));
    if let Some((other, l)) = arrays.iter().find(|(_, l)| *l != len) {
        return Err(format!("input `{other}` has {l} elements but `{first}` has {len}"));
    }
    let outs: Vec<(&str, usize)> = params
        .iter()
        .zip(args)
        .filter(|(_, a)| a.kind == TypedArgKind::Output)
        .map(|(p, a)| (p.name.as_str(), a.len.unwrap_or(0)))
        .collect();
    let (rows, n, want) = match shape {
        Shape::Full => (1, len, 1),
        Shape::Rows | Shape::Cols if cols == 0 => {
            if len != 0 {
                return Err(format!("`cols` is 0 but `{first}` has {len} elements"));
            }
            let rows = if shape == Shape::Rows { outs.first().map_or(0, |o| o.1) } else { 0 };
            (rows, 0, rows)
        }
        _ => {
            if len % cols != 0 {
                return Err(format!("`{first}` has {len} elements, not a multiple of `cols` = {cols}"));
            }
            let rows = len / cols;
            (rows, cols, if shape == Shape::Rows { rows } else { cols })
        }
    };
    if let Some((out, l)) = outs.iter().find(|(_, l)| *l != want) {
        return Err(format!("output `{out}` has {l} elements but the reduction gives {want}"));
    }
    Ok((rows, n, want))
}

#[cfg(test)]
mod tests;

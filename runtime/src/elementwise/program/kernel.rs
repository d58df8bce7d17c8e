//! One instance of an [`ElementwiseProgram`] loaded on a device: its launches (flat, with a
//! configuration, over `n` elements, N-D) and the checks of their argument lists against the
//! instance's parameters.

use super::*;

/// One instance of an [`ElementwiseProgram`], loaded on a device, with checked launches.
#[derive(Debug)]
pub struct ElementwiseKernel {
    pub(super) kernel: ProgramKernel,
    /// The strided kernels, one per rank of `ndarray::RANKS`.
    pub(super) nd: Vec<ProgramKernel>,
    pub(super) instance: String,
    pub(super) sig: Sig,
    pub(super) auto: AutoConfig,
}

/// What the launch checks arguments against.
#[derive(Debug)]
pub(super) struct Sig {
    pub(super) kernel: String,
    pub(super) origin: String,
    pub(super) params: Vec<ParamInfo>,
    /// The vector width of the arrays' element types.
    pub(super) width: usize,
}

impl ElementwiseKernel {
    /// The compiled kernel (attributes, occupancy, its parameter list).
    pub fn program_kernel(&self) -> &ProgramKernel {
        &self.kernel
    }

    /// The instance it was built for (`T=float`; empty without placeholders).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Whether the kernel has `raw` parameters (then only [`ElementwiseKernel::launch_raw`] runs it).
    pub fn has_raw(&self) -> bool {
        self.sig.params.iter().any(|p| p.kind == ParamKind::Raw)
    }

    /// Runs the operation for every index `i < n` on `stream`, `n` the common length of the
    /// array arguments, with the automatic configuration; `n = 0` launches nothing.
    ///
    /// `args` holds one [`Arg`] per declared parameter, inputs then outputs: [`Arg::value`] for
    /// a `scalar`, [`Arg::slice`] for an input array, [`Arg::slice_mut`] for an output. Each is
    /// checked before the launch (an [`Error::Argument`] naming the parameter: value or buffer,
    /// writable, the Rust type against the CUDA type), and the lengths of the arrays
    /// ([`Error::Length`]).
    ///
    /// Safe: with every argument checked, the generated loop alone decides which elements are
    /// touched (element `i < n` of each array); the operation's own C++ is trusted as the
    /// [module docs](crate::elementwise_program#what-the-safe-launches-promise) say. A kernel with `raw` parameters
    /// indexes memory itself: it is refused here ([`Error::Argument`]) and runs through
    /// [`ElementwiseKernel::launch_raw`].
    pub fn launch(&self, stream: &CudaStream, args: &mut [Arg<'_>]) -> Result<()> {
        self.sig.refuse_raw()?;
        // SAFETY: no raw parameters: every access is the generated loop's, within the checked
        // common length.
        unsafe { self.run(stream, None, None, args) }
    }

    /// [`ElementwiseKernel::launch`] as a future: the kernel is queued now (checked and bound as
    /// `launch` does), and the future resolves when the GPU has finished it, to the launch's
    /// result. The buffers in `args` stay borrowed until the future is dropped; dropping or
    /// forgetting it early is sound (see [`future`](crate::future)).
    ///
    /// ```no_run
    /// # async fn f(k: &cuda_embed_runtime::ElementwiseKernel, stream: &cuda_embed_runtime::CudaStream,
    /// #            x: &cuda_embed_runtime::CudaSlice<f32>, y: &mut cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
    /// use cuda_embed_runtime::Arg;
    /// k.launch_async(stream, &mut [Arg::slice(x), Arg::slice_mut(y)]).await?;
    /// # Ok(()) }
    /// ```
    pub fn launch_async<'a>(&self, stream: &CudaStream, args: &mut [Arg<'a>]) -> crate::future::GpuFuture<'a> {
        let queued = self.launch(stream, args);
        crate::future::GpuFuture::after_program(stream, queued, &self.sig.kernel, &self.sig.origin)
    }

    /// [`ElementwiseKernel::launch`] with the caller's launch configuration (any grid and block:
    /// the kernel loops over the indices with a grid-stride loop).
    pub fn launch_with(&self, stream: &CudaStream, config: LaunchConfig, args: &mut [Arg<'_>]) -> Result<()> {
        self.sig.refuse_raw()?;
        // SAFETY: as in `launch`.
        unsafe { self.run(stream, Some(config), None, args) }
    }

    /// [`ElementwiseKernel::launch`] over `n` indices, for kernels without array parameters
    /// (only scalars and raw arrays); with arrays, `n` must equal their length.
    pub fn launch_n(&self, stream: &CudaStream, n: usize, args: &mut [Arg<'_>]) -> Result<()> {
        self.sig.refuse_raw()?;
        // SAFETY: as in `launch`.
        unsafe { self.run(stream, None, Some(n), args) }
    }

    /// Launches a kernel that may have `raw` parameters, with the checks of
    /// [`ElementwiseKernel::launch`]; `config` `None` chooses it, `n` `None` takes the arrays'
    /// length (required when there are no arrays).
    ///
    /// # Safety
    /// The operation indexes the raw arrays itself: it must stay within each one's length
    /// (`x.size()`).
    pub unsafe fn launch_raw(
        &self,
        stream: &CudaStream,
        config: Option<LaunchConfig>,
        n: Option<usize>,
        args: &mut [Arg<'_>],
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.run(stream, config, n, args) }
    }

    /// Runs the operation once per element of the first output's shape on N-D operands, as
    /// `elementwise_kernel!`'s `launch_nd` does (the same generated kernels and host plan): each
    /// array input is an N-D view ([`Arg::view`]) or a flat buffer ([`Arg::slice`], 1-D)
    /// broadcast to that shape by NumPy's rules, each output an [`Arg::view_mut`] (or
    /// [`Arg::slice_mut`]) of exactly that shape; any strides. `i` is the flat row-major index in
    /// the output. The arguments are checked as [`ElementwiseKernel::launch`] checks them, the
    /// shapes as `launch_nd` does (an [`Error::Shape`] naming the operands). Dimensions contiguous
    /// for every operand are merged; all-contiguous operands run the flat vectorised kernel,
    /// others the strided kernel for the merged rank. A kernel with `raw` parameters runs
    /// through [`ElementwiseKernel::launch_nd_raw`].
    ///
    /// ```no_run
    /// use cuda_embed_runtime::{Arg, ElementwiseProgram, NdView, NdViewMut};
    /// let ctx = cuda_embed_runtime::context(0)?;
    /// let stream = ctx.default_stream();
    /// let add = ElementwiseProgram::new("add", "T x, T b", "T y", "y = x + b")?.build(&ctx, "float")?;
    /// let x = stream.alloc_zeros::<f32>(4 * 6)?;
    /// let b = stream.alloc_zeros::<f32>(6)?;
    /// let mut y = stream.alloc_zeros::<f32>(6 * 4)?;
    /// let xt = NdView::new(&x, &[4, 6])?.transpose(); // [6, 4]
    /// let bias = NdView::new(&b, &[6, 1])?; // broadcast along the columns
    /// let mut yv = NdViewMut::new(&mut y, &[6, 4])?;
    /// add.launch_nd(&stream, &mut [Arg::view(&xt), Arg::view(&bias), Arg::view_mut(&mut yv)])?;
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn launch_nd(&self, stream: &CudaStream, args: &mut [Arg<'_>]) -> Result<()> {
        self.sig.refuse_raw()?;
        // SAFETY: no raw parameters: every access is the generated code's, within the views.
        unsafe { self.run_nd(stream, args) }
    }

    /// [`ElementwiseKernel::launch_nd`] for a kernel that may have `raw` parameters (passed as
    /// [`Arg::slice`]/[`Arg::slice_mut`]).
    ///
    /// # Safety
    /// The operation indexes the raw arrays itself: it must stay within each one's length.
    pub unsafe fn launch_nd_raw(&self, stream: &CudaStream, args: &mut [Arg<'_>]) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.run_nd(stream, args) }
    }

    /// # Safety
    /// With raw parameters, the operation's accesses are the caller's responsibility.
    unsafe fn run_nd(&self, stream: &CudaStream, args: &mut [Arg<'_>]) -> Result<()> {
        self.sig.check_kinds(args)?;
        if let Some((p, _)) =
            self.sig.params.iter().zip(args.iter()).find(|(p, a)| p.kind != ParamKind::Array && a.is_view())
        {
            return Err(self
                .sig
                .arg_error(&p.name, "is a `raw` array: pass its buffer with `Arg::slice`, not a view".into()));
        }
        let arrays: Vec<(&str, Layout, usize)> = self
            .sig
            .params
            .iter()
            .zip(args.iter())
            .filter(|(p, _)| p.kind == ParamKind::Array)
            .map(|(p, a)| (p.name.as_str(), a.layout.unwrap_or_else(|| Layout::flat(a.elem.len)), a.elem.size))
            .collect();
        let inputs = self.sig.params.iter().filter(|p| p.kind == ParamKind::Array && p.role == Role::Input).count();
        let operands: Vec<(&str, &Layout)> = arrays.iter().map(|(n, l, _)| (*n, l)).collect();
        let op = format!("kernel `{}` of {}", self.sig.kernel, self.sig.origin);
        let (plan, strides) = NdLaunch::elementwise_dyn(&op, &operands, inputs)?;
        if plan.n == 0 {
            return Ok(());
        }
        let ctx = self.check_placement(stream, args)?;
        let raw_lens = self.raw_lens(args);
        let n64 = plan.n as i64;
        let mut pointers = vec![0 as sys::CUdeviceptr; args.len()];
        let mut go = |pointers: &[sys::CUdeviceptr]| {
            // Each array's element `[0, ..]`: its buffer's address plus the view's offset.
            let mut at = arrays.iter();
            let pointers: Vec<sys::CUdeviceptr> = self
                .sig
                .params
                .iter()
                .zip(pointers)
                .map(|(p, &ptr)| match p.kind {
                    ParamKind::Array => at.next().map_or(ptr, |(_, l, size)| ptr + (l.offset() * size) as u64),
                    _ => ptr,
                })
                .collect();
            let mut params = leading_params(args, &pointers, &raw_lens, &n64);
            if plan.flat {
                let (vector, per_thread) = flat_mode(self.sig.width, &self.array_addresses(&pointers));
                let cfg = self.auto.config_raw(self.kernel.cu_function(), ctx, plan.n, per_thread)?;
                params.push(&vector as *const i32 as *mut c_void);
                // SAFETY: as in `run`: one pointer per parameter of the flat kernel, each to a live
                // value of its type; every array is one contiguous run of `n` elements from its
                // element `[0, ..]` (the plan found every operand contiguous; the views lie in
                // their buffers), aligned for the vector path when it is taken.
                unsafe { launch::launch(&self.kernel.target(), stream, &cfg, LaunchKind::Plain, &mut params) }
            } else {
                params.push(&plan.rows as *const i64 as *mut c_void);
                params.extend(plan.shape.iter().map(|d| d as *const i64 as *mut c_void));
                params.extend(strides.iter().flatten().map(|d| d as *const i64 as *mut c_void));
                let kernel = &self.nd[plan.variant];
                // SAFETY: one pointer per parameter of the strided kernel (declared parameters,
                // raw lengths, n, rows, the padded shape, each array's strides), each to a live
                // value of its type; the kernel touches element `offset + sum(coord * stride)` of
                // each array for coordinates within the planned shape, inside each view's buffer
                // (checked when the view was made, broadcast only with stride 0).
                unsafe { launch::launch(&kernel.target(), stream, &plan.config, LaunchKind::Plain, &mut params) }
            }
        };
        let who = self.kernel.target().who;
        // SAFETY: every buffer argument's object is borrowed by its `Arg` for this call.
        unsafe { bind_buffers(args, stream, (who.kernel, who.origin), &mut pointers, &mut go) }.map(drop)
    }

    /// The stream's context, after checking that the kernel and every buffer belong to it.
    pub(super) fn check_placement<'s>(&self, stream: &'s CudaStream, args: &[Arg<'_>]) -> Result<&'s Arc<CudaContext>> {
        let ctx = stream.context();
        if ctx.cu_ctx() != self.kernel.context().cu_ctx() {
            return Err(self.sig.arg_error(
                "stream",
                format!(
                    "the stream belongs to device {} but the kernel was built on device {}: build it on the \
                     stream's device too",
                    ctx.ordinal(),
                    self.kernel.context().ordinal()
                ),
            ));
        }
        if let Some((i, buffer_device)) = misplaced(args, stream) {
            let param = self.sig.params.get(i).map_or_else(|| format!("#{i}"), |p| format!("`{}`", p.name));
            return Err(crate::bind::wrong_device(&self.sig.kernel, &self.sig.origin, &param, buffer_device, stream));
        }
        Ok(ctx)
    }

    /// The lengths of the raw arrays, in order (the kernels' `_ce_len_` parameters).
    pub(super) fn raw_lens(&self, args: &[Arg<'_>]) -> Vec<i64> {
        self.sig
            .params
            .iter()
            .zip(args.iter())
            .filter(|(p, _)| p.kind == ParamKind::Raw)
            .map(|(_, a)| a.elem.len as i64)
            .collect()
    }

    /// Every array argument's `(device address, element size)`, as [`flat_mode`] takes them.
    pub(super) fn array_addresses(&self, pointers: &[sys::CUdeviceptr]) -> Vec<(u64, usize)> {
        self.sig
            .params
            .iter()
            .zip(pointers)
            .filter(|(p, _)| p.kind == ParamKind::Array)
            .map(|(p, &ptr)| (ptr, p.size.unwrap_or(1)))
            .collect()
    }

    /// # Safety
    /// With raw parameters, the operation's accesses are the caller's responsibility.
    unsafe fn run(
        &self,
        stream: &CudaStream,
        config: Option<LaunchConfig>,
        n: Option<usize>,
        args: &mut [Arg<'_>],
    ) -> Result<()> {
        let n = self.sig.check(n, args)?;
        if n == 0 {
            return Ok(());
        }
        let ctx = self.check_placement(stream, args)?;
        if let Some(c) = &config {
            crate::bind::one_d_named(&self.sig.kernel, &self.sig.origin, stream.context().ordinal(), c)?;
        }
        let raw_lens = self.raw_lens(args);
        let n64 = n as i64;
        let target = self.kernel.target();
        let mut pointers = vec![0 as sys::CUdeviceptr; args.len()];
        let who = target.who;
        let mut go = |pointers: &[sys::CUdeviceptr]| {
            let (vector, per_thread) = flat_mode(self.sig.width, &self.array_addresses(pointers));
            let cfg = match config {
                Some(c) => c,
                None => {
                    self.auto.config_raw(self.kernel.cu_function(), ctx, n, per_thread).map_err(|e| who.named(e))?
                }
            };
            let mut params = leading_params(args, pointers, &raw_lens, &n64);
            params.push(&vector as *const i32 as *mut c_void);
            // SAFETY: the kernel belongs to the stream's context (checked above); one pointer per
            // parameter of the generated kernel (declared parameters, raw lengths, n, vector),
            // each to a live value of the parameter's type (checked above); the vector path is
            // taken only with every array aligned to it.
            unsafe { launch::launch(&target, stream, &cfg, LaunchKind::Plain, &mut params) }
        };
        // SAFETY: every buffer argument's object is borrowed by its `Arg` for this call.
        unsafe { bind_buffers(args, stream, (who.kernel, who.origin), &mut pointers, &mut go) }.map(drop)
    }
}

impl Sig {
    pub(super) fn refuse_raw(&self) -> Result<()> {
        match self.params.iter().find(|p| p.kind == ParamKind::Raw) {
            Some(p) => Err(self.arg_error(
                &p.name,
                "is `raw`: the operation indexes it itself, so the kernel runs only through the unsafe \
                 `launch_raw`"
                    .into(),
            )),
            None => Ok(()),
        }
    }

    #[cold]
    pub(super) fn arg_error(&self, parameter: &str, detail: String) -> Error {
        Error::Argument {
            kernel: self.kernel.clone(),
            origin: self.origin.clone(),
            parameter: parameter.to_string(),
            detail,
        }
    }

    /// Checks every argument against its parameter; returns the number of indices.
    pub(super) fn check(&self, n: Option<usize>, args: &[Arg<'_>]) -> Result<usize> {
        if let Some((p, _)) = self.params.iter().zip(args).find(|(_, a)| a.is_view()) {
            return Err(self.arg_error(
                &p.name,
                "is an N-D view (`Arg::view`): launch with `launch_nd`, or pass a flat buffer with `Arg::slice`".into(),
            ));
        }
        self.check_kinds(args)?;
        self.check_lengths(n, args)
    }

    /// Checks the number of arguments, and each one's kind and element type.
    pub(super) fn check_kinds(&self, args: &[Arg<'_>]) -> Result<()> {
        if args.len() != self.params.len() {
            let names: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
            return Err(Error::Argument {
                kernel: self.kernel.clone(),
                origin: self.origin.clone(),
                parameter: names.join(", "),
                detail: format!("{} arguments given for {} parameters (inputs then outputs)", args.len(), names.len()),
            });
        }
        for (p, a) in self.params.iter().zip(args) {
            let buffer = matches!(a.kind, ArgKind::Buffer { .. });
            let what = match p.kind {
                ParamKind::Scalar => "a scalar: pass `Arg::value(&v)`",
                _ if p.role == Role::Output => "an output array: pass `Arg::slice_mut(&mut buffer)`",
                _ => "an input array: pass `Arg::slice(&buffer)`",
            };
            if buffer != (p.kind != ParamKind::Scalar) || (p.role == Role::Output && !a.elem.writable) {
                let given = if !buffer {
                    "a value"
                } else if a.elem.writable {
                    "a writable buffer"
                } else {
                    "a read-only buffer"
                };
                return Err(self.arg_error(&p.name, format!("is {what}; {given} was given")));
            }
            let fits = match (p.rust, p.size) {
                (Some(rust), _) => a.elem.rust == rust,
                (None, Some(size)) => a.elem.size == size,
                (None, None) => true,
            };
            if !fits {
                let expected = match p.rust {
                    Some(r) => format!("`{r}`"),
                    None => format!("a {}-byte type", p.size.unwrap_or(0)),
                };
                let of = if buffer { "elements" } else { "value" };
                return Err(self.arg_error(
                    &p.name,
                    format!(
                        "its CUDA type is `{}`, so its {of} must be {expected}, but `{}` ({} bytes) was given",
                        p.cuda, a.elem.rust, a.elem.size
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks the lengths of the array arguments; returns the number of indices.
    pub(super) fn check_lengths(&self, n: Option<usize>, args: &[Arg<'_>]) -> Result<usize> {
        let lengths: Vec<(&str, usize)> = self
            .params
            .iter()
            .zip(args)
            .filter(|(p, _)| p.kind == ParamKind::Array)
            .map(|(p, a)| (p.name.as_str(), a.elem.len))
            .collect();
        let common = lengths.first().map(|l| l.1);
        let n = match (n, common) {
            (Some(n), _) => n,
            (None, Some(c)) => c,
            (None, None) => {
                return Err(self.length_error(
                    "no parameter is an array, so the number of indices must be given: use `launch_n`".into(),
                ))
            }
        };
        if lengths.iter().any(|l| l.1 != n) {
            let list: Vec<String> = lengths.iter().map(|(p, k)| format!("`{p}` has {k}")).collect();
            let must = if common.is_some() && lengths.iter().all(|l| Some(l.1) == common) {
                format!("the array parameters must have the {n} elements asked for, but ")
            } else {
                "the array parameters must have the same length (one element per index), but ".to_string()
            };
            return Err(self.length_error(format!("{must}{}", list.join(", "))));
        }
        Ok(n)
    }

    #[cold]
    pub(super) fn length_error(&self, detail: String) -> Error {
        Error::Length { kernel: self.kernel.clone(), origin: self.origin.clone(), detail }
    }
}

/// The kernel parameter pointers every generated elementwise kernel starts with: each declared
/// parameter (the value's bytes, or the slot in `pointers` holding a buffer's device address),
/// each raw array's length, then `n`. The pointers point into `args`, `pointers`, `raw_lens` and
/// `n`, which must outlive the launch they are passed to; the caller pushes the kernel's own
/// trailing parameters.
fn leading_params(args: &[Arg<'_>], pointers: &[sys::CUdeviceptr], raw_lens: &[i64], n: &i64) -> Vec<*mut c_void> {
    let mut params = crate::bind::dynamic::param_pointers(args, pointers);
    params.extend(raw_lens.iter().map(|l| l as *const i64 as *mut c_void));
    params.push(n as *const i64 as *mut c_void);
    params
}

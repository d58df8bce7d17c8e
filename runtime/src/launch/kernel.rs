//! Kernel handles of `cuda_kernel!` modules.
//!
//! [`KernelRef`] is the untyped handle (module + index) every generated launcher goes through:
//! attributes, limits, occupancy, cudarc's [`CudaFunction`], and the launch itself.
//! [`Kernel<Sig>`] is the same handle typed with the kernel's signature, so a kernel can be
//! stored, passed and launched generically: every generated kernel module has
//! `pub static KERNEL: Kernel<...>` (a `fn kernel::<T...>()` for templates), and kernels with the
//! same signature fit in one `Vec`.

use crate::args::KernelArgs;
use crate::error::{Error, Result};
use crate::launch::limits::KernelAttributes;
use crate::launch::{self, attrs, ClusterDim, LaunchKind, Target, Who};
use crate::module::kernel::KernelRef;
use crate::module::load::Loaded;
use crate::module::registry::Module;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

const RAISE_SMEM: &str = "`NAME::set_max_dynamic_shared_memory(&ctx, bytes)`";

impl KernelRef {
    #[inline]
    pub(crate) fn who(&self) -> Who<'static> {
        Who { kernel: self.name(), origin: self.module.origin(), raise_smem: RAISE_SMEM }
    }

    /// The kernel on `ctx`'s device, loading the module there first if needed.
    #[inline(always)]
    pub(crate) fn target(&self, ctx: &Arc<CudaContext>) -> Result<(&'static Loaded, Target<'static>)> {
        let loaded = self.module.loaded(ctx)?;
        match loaded.functions.get(self.index) {
            Some(f) => Ok((
                loaded,
                Target { f: f.raw, max_threads: &f.max_threads, max_dyn_smem: &f.max_dyn_smem, who: self.who() },
            )),
            None => Err(self.no_such_kernel(ctx)),
        }
    }

    /// Launches the kernel as `kind` says with `args`, one pointer per kernel parameter.
    /// Returns the GPU time in milliseconds for [`LaunchKind::Timed`].
    ///
    /// This is the routine behind every generated launcher; prefer those (or [`Kernel::launch`]),
    /// which pack the arguments with the right types.
    ///
    /// # Safety
    /// `args` must hold one pointer per kernel parameter, each to a live value of exactly the
    /// parameter's type (device pointers as `u64`), and the kernel must be safe to run with them.
    #[inline(always)]
    pub unsafe fn launch_raw(
        &self,
        stream: &CudaStream,
        config: &LaunchConfig,
        kind: LaunchKind,
        args: &mut [*mut c_void],
    ) -> Result<Option<f32>> {
        // A profiler range around the launch (no code at all without the `nvtx` feature).
        #[cfg(feature = "nvtx")]
        let _range = crate::nvtx::launch(self.name(), self.module().origin());
        // The common case in a few loads and compares: a plain launch of a loaded kernel without
        // module globals, within its cached limits, on the context this thread last bound. It
        // builds nothing the error paths need; anything else, and a launch the driver refuses
        // (which queued nothing), goes the full way below, which checks, binds, launches and
        // explains.
        if kind == LaunchKind::Plain {
            let ctx = stream.context();
            if let Some(f) = self.module.plain_function(ctx, self.index) {
                let max_threads = f.max_threads.load(std::sync::atomic::Ordering::Relaxed);
                let max_dyn_smem = f.max_dyn_smem.load(std::sync::atomic::Ordering::Relaxed);
                if crate::launch::limits::fits(config, max_threads, max_dyn_smem) && crate::driver::bound_here(ctx) {
                    // SAFETY: `f` was loaded in the stream's context; the arguments are the
                    // caller's contract.
                    let r = unsafe { launch::cu_launch(f.raw, stream, config, args) };
                    if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
                        return Ok(None);
                    }
                }
            }
        }
        // SAFETY: forwarded.
        unsafe { self.launch_checked(stream, config, kind, args) }
    }

    /// [`KernelRef::launch_raw`] the full way: load, limit checks with errors that explain, the
    /// context bound, globals ordered, every launch kind.
    #[inline(never)]
    unsafe fn launch_checked(
        self,
        stream: &CudaStream,
        config: &LaunchConfig,
        kind: LaunchKind,
        args: &mut [*mut c_void],
    ) -> Result<Option<f32>> {
        let (loaded, target) = self.target(stream.context())?;
        match &loaded.order {
            // A module with globals, several streams: ordered with the global copies.
            // SAFETY: as below.
            Some(order) if crate::module::order::tracking(stream) => unsafe {
                Self::launch_ordered(order, &target, stream, config, kind, args)
            },
            // SAFETY: the function was looked up in the stream's context; the rest is the caller's.
            _ => unsafe { launch::launch(&target, stream, config, kind, args) },
        }
    }

    /// A launch ordered after the last global write, recording its completion for global copies.
    #[cold]
    #[inline(never)]
    unsafe fn launch_ordered(
        order: &crate::module::order::GlobalOrder,
        target: &Target<'_>,
        stream: &CudaStream,
        config: &LaunchConfig,
        kind: LaunchKind,
        args: &mut [*mut c_void],
    ) -> Result<Option<f32>> {
        order.before_launch(stream)?;
        // SAFETY: forwarded from `launch_raw`.
        let r = unsafe { launch::launch(target, stream, config, kind, args) }?;
        order.after_launch(stream)?;
        Ok(r)
    }

    /// [`KernelRef::launch_raw`] of a plain launch without the limit checks (the automatic
    /// launches of elementwise kernels, whose configuration is valid by construction). As in
    /// `launch_raw`, a loaded kernel on the context this thread last bound is a few loads and
    /// compares and the driver call; anything else, and a launch the driver refuses (which
    /// queued nothing), goes the full way, which binds, launches and explains.
    #[inline(always)]
    pub(crate) unsafe fn launch_unchecked(
        &self,
        stream: &CudaStream,
        config: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let ctx = stream.context();
        if let Some(f) = self.module.find(ctx).and_then(|l| l.functions.get(self.index)) {
            if crate::driver::bound_here(ctx) {
                // SAFETY: `f` was loaded in the stream's context; the arguments are the
                // caller's contract.
                let r = unsafe { launch::cu_launch(f.raw, stream, config, args) };
                if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
                    return Ok(());
                }
            }
        }
        // SAFETY: forwarded.
        unsafe { self.launch_unchecked_full(stream, config, args) }
    }

    /// [`KernelRef::launch_unchecked`] the full way: load, the context bound, the driver's
    /// refusal explained.
    #[inline(never)]
    unsafe fn launch_unchecked_full(
        &self,
        stream: &CudaStream,
        config: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let (_, target) = self.target(stream.context())?;
        // SAFETY: as in `launch_raw`.
        unsafe { launch::launch_unchecked(&target, stream, config, args) }
    }

    /// The block size launches of this kernel on `ctx`'s device are checked against without
    /// asking the driver (loading the module there first if needed): read from the kernel's
    /// cubin where the module hands the driver a known cubin, else the driver's
    /// `MAX_THREADS_PER_BLOCK` read at load. Not a stable API: for tests that hold it to the
    /// driver's value.
    #[doc(hidden)]
    pub fn known_block_limit(&self, ctx: &Arc<CudaContext>) -> Result<u32> {
        Ok(self.function_on(ctx)?.max_threads.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Registers, thread and memory limits of this kernel on `ctx`'s device.
    pub fn attributes(&self, ctx: &Arc<CudaContext>) -> Result<KernelAttributes> {
        let (_, t) = self.target(ctx)?;
        attrs::attributes(&t, ctx.ordinal())
    }

    /// Lets this kernel use up to `bytes` of dynamic shared memory per block on `ctx`'s device
    /// (the opt-in above the default 48 KiB). Errors name the device's opt-in maximum.
    pub fn set_max_dynamic_shared_memory(&self, ctx: &Arc<CudaContext>, bytes: u32) -> Result<()> {
        let (_, t) = self.target(ctx)?;
        attrs::set_max_dynamic_shared_memory(&t, ctx, bytes)?;
        let attr = cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        self.mirror(ctx, attr, bytes)
    }

    /// Sets the preferred L1/shared-memory carveout on `ctx`'s device, in percent (0..=100), a
    /// hint the driver may round.
    pub fn set_preferred_shared_carveout(&self, ctx: &Arc<CudaContext>, percent: u32) -> Result<()> {
        let (_, t) = self.target(ctx)?;
        attrs::set_preferred_shared_carveout(&t, ctx, percent)?;
        let attr = cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
        self.mirror(ctx, attr, percent)
    }

    /// A 1-D configuration covering `n` threads with the block size that maximises occupancy on
    /// `ctx`'s device (`cuOccupancyMaxPotentialBlockSize`), with `dynamic_shared_bytes` of
    /// dynamic shared memory per block.
    pub fn occupancy_config(&self, ctx: &Arc<CudaContext>, n: u32, dynamic_shared_bytes: u32) -> Result<LaunchConfig> {
        let (_, t) = self.target(ctx)?;
        attrs::occupancy_config(&t, ctx, n, dynamic_shared_bytes)
    }

    /// cudarc's own handle of this kernel on `ctx`'s device, for cudarc's launch builder and
    /// other cudarc APIs.
    ///
    /// For a module with `__device__`/`__constant__` variables, or one compiled at run time, it
    /// is a function of the very module the launchers use. A module built into the binary without
    /// such variables is loaded in place, without a copy, and its cudarc handles come from a
    /// second load of the same image, made at the first call: the same code, with the limits set
    /// through cuda-embed ([`KernelRef::set_max_dynamic_shared_memory`],
    /// [`KernelRef::set_preferred_shared_carveout`]) applied to it too. Set such attributes
    /// through those methods, not through cudarc's handle, for them to apply to both.
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::KernelRef;
    /// # fn f(k: KernelRef) -> cuda_embed_runtime::Result<()> {
    /// let ctx = cuda_embed_runtime::context(0)?;
    /// let f = k.function(&ctx)?; // a cudarc::driver::CudaFunction
    /// # Ok(()) }
    /// ```
    pub fn function(&self, ctx: &Arc<CudaContext>) -> Result<CudaFunction> {
        let loaded = self.module.loaded(ctx)?;
        if self.index >= loaded.functions.len() {
            return Err(self.no_such_kernel(ctx));
        }
        loaded.cudarc_function(ctx, self.index, self.symbol().unwrap_or_default()).map_err(|cause| Error::Load {
            origin: self.module.origin().to_string(),
            device: ctx.ordinal(),
            device_name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
            arch: ctx.compute_capability().map_or(0, |(major, minor)| (major * 10 + minor) as u32),
            cause: format!("cudarc's handle of kernel `{}`: {cause}", self.name()),
            fix: None,
        })
    }

    /// Sets `attr` on the cudarc handles of a module loaded in place too (see
    /// [`KernelRef::function`]).
    fn mirror(
        &self,
        ctx: &Arc<CudaContext>,
        attr: cudarc::driver::sys::CUfunction_attribute,
        value: u32,
    ) -> Result<()> {
        let (Some(loaded), Some(symbol)) = (self.module.find(ctx), self.symbol()) else { return Ok(()) };
        loaded.mirror_attribute(symbol, attr, value).map_err(|cause| Error::Launch {
            kernel: self.name().to_string(),
            origin: self.module.origin().to_string(),
            device: ctx.ordinal(),
            cause,
            fix: None,
        })
    }
}

/// A kernel of a `cuda_kernel!` module typed with its signature `Sig`: a tuple with one
/// [`args`](crate::args) marker per parameter (`f32` for `float`, [`In<f32>`](crate::args::In)
/// for `const float*`, [`Out<f32>`](crate::args::Out) for `float*`, ...).
///
/// `Copy` and `'static`: store kernels of one signature in a `Vec`, pass them to generic code,
/// launch them with a tuple of arguments. Derefs to [`KernelRef`] for attributes and limits.
///
/// ```ignore
/// cuda_kernel!(r#"
///     extern "C" __global__ void add1(int* out, int n) { ... }
///     extern "C" __global__ void add2(int* out, int n) { ... }
/// "#);
/// let kernels = vec![add1::KERNEL, add2::KERNEL]; // Vec<Kernel<(Out<i32>, i32)>>
/// for k in &kernels {
///     unsafe { k.launch(&stream, cfg, (&mut out, n))? };
/// }
/// ```
pub struct Kernel<Sig> {
    raw: KernelRef,
    _sig: PhantomData<fn(Sig)>,
}

impl<Sig> Clone for Kernel<Sig> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Sig> Copy for Kernel<Sig> {}

impl<Sig> std::fmt::Debug for Kernel<Sig> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.raw.name())
            .field("signature", &std::any::type_name::<Sig>())
            .finish()
    }
}

impl<Sig> std::ops::Deref for Kernel<Sig> {
    type Target = KernelRef;
    fn deref(&self) -> &KernelRef {
        &self.raw
    }
}

impl<Sig> Kernel<Sig> {
    /// Kernel `index` of `module`, typed `Sig`.
    ///
    /// # Safety
    /// As for [`KernelRef::new`], and `Sig` must describe the kernel's parameters.
    #[doc(hidden)]
    pub const unsafe fn new(module: &'static Module, index: usize) -> Self {
        Kernel { raw: KernelRef { module, index }, _sig: PhantomData }
    }

    /// The untyped handle.
    pub fn untyped(&self) -> KernelRef {
        self.raw
    }

    #[inline(always)]
    unsafe fn go(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        kind: LaunchKind,
        args: impl KernelArgs<Sig>,
    ) -> Result<Option<f32>> {
        let wrong = |i: usize, device: usize| {
            crate::bind::wrong_device(self.name(), self.raw.module().origin(), &format!("#{i}"), device, stream)
        };
        // SAFETY: `KernelArgs<Sig>` packs one pointer per parameter of the types `Sig` names,
        // which are the kernel's (the constructor's contract); the kernel itself is the caller's.
        args.with_params(stream, |params| unsafe { self.raw.launch_raw(stream, &config, kind, params) }, wrong)
            .map_err(|e| crate::launch::of_kernel(e, self.name(), self.raw.module().origin()))
    }

    /// Launches the kernel on `stream` with `config` and `args`, a tuple with one argument per
    /// parameter typed as the generated `launch` takes them.
    ///
    /// # Safety
    /// The kernel runs arbitrary device code: it must stay within the buffers it is given and
    /// the grid must match what it expects.
    #[inline]
    pub unsafe fn launch(&self, stream: &CudaStream, config: LaunchConfig, args: impl KernelArgs<Sig>) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.go(stream, config, LaunchKind::Plain, args) }.map(drop)
    }

    /// Like [`Kernel::launch`], and returns the kernel's GPU time in milliseconds.
    ///
    /// # Safety
    /// As for [`Kernel::launch`].
    pub unsafe fn launch_timed(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        args: impl KernelArgs<Sig>,
    ) -> Result<f32> {
        // SAFETY: the caller's contract.
        unsafe { self.go(stream, config, LaunchKind::Timed, args) }.map(|t| t.unwrap_or(0.0))
    }

    /// Launches cooperatively (grid-wide synchronisation); see [`LaunchKind::Cooperative`].
    ///
    /// # Safety
    /// As for [`Kernel::launch`].
    pub unsafe fn launch_cooperative(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        args: impl KernelArgs<Sig>,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.go(stream, config, LaunchKind::Cooperative, args) }.map(drop)
    }

    /// Launches with thread-block clusters of shape `cluster`; see [`LaunchKind::Cluster`].
    ///
    /// # Safety
    /// As for [`Kernel::launch`].
    pub unsafe fn launch_cluster(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        cluster: ClusterDim,
        args: impl KernelArgs<Sig>,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.go(stream, config, LaunchKind::Cluster(cluster), args) }.map(drop)
    }

    /// A programmatic dependent launch: the kernel may start while the kernel before it on
    /// `stream` still runs; see [`LaunchKind::Dependent`].
    ///
    /// # Safety
    /// As for [`Kernel::launch`], and the kernel calls `cudaGridDependencySynchronize()` before
    /// it touches memory the work before it on the stream writes or reads, unless that work does
    /// not call `cudaTriggerProgrammaticLaunchCompletion()`.
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::{args::{In, Out}, Kernel, LaunchConfig};
    /// # fn f(k: Kernel<(In<f32>, Out<f32>, i32)>, s: &cuda_embed_runtime::CudaStream,
    /// #      a: &mut cuda_embed_runtime::CudaSlice<f32>, b: &mut cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
    /// let cfg = LaunchConfig::for_num_elems(1024);
    /// unsafe {
    ///     k.launch(s, cfg, (&*a, &mut *b, 1024))?;
    ///     k.launch_dependent(s, cfg, (&*b, &mut *a, 1024))?; // overlaps the first one's tail
    /// }
    /// # Ok(()) }
    /// ```
    pub unsafe fn launch_dependent(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        args: impl KernelArgs<Sig>,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.go(stream, config, LaunchKind::Dependent, args) }.map(drop)
    }
}

/// Where the code of a launch's full path lies (see
/// [`map_first_load_code`](crate::module::prefault::map_first_load_code)).
pub(crate) fn launch_checked_address() -> usize {
    KernelRef::launch_checked as *const () as usize
}

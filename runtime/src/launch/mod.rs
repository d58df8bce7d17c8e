//! The one launch routine. Generated launchers, typed [`Kernel`](crate::Kernel) values and
//! run-time [`ProgramKernel`](crate::ProgramKernel)s all end here, with the launch kind as a
//! parameter: plain, timed, cooperative or with thread-block clusters. Every launch checks the
//! configuration against the kernel's limits before the driver is called, and every failure is
//! an [`Error::Launch`] naming the kernel, where it comes from, the device and the cause.

pub(crate) mod kernel; // kernel handles (KernelRef, Kernel<Sig>)
pub(crate) mod limits; // launch limits and attribute readers

use crate::driver::{bind, bound_here, device_attr, func_attr, wrong_context};
pub(crate) use crate::error::of_kernel;
use crate::error::{DriverCode, Error, Result};
use crate::launch::limits::{check_config, Violation};
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

/// A thread-block cluster shape (sm_90 and newer).
pub type ClusterDim = (u32, u32, u32);

/// How a kernel is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LaunchKind {
    /// `cuLaunchKernel`.
    Plain,
    /// A plain launch between two timing events; waits for the kernel and reports its GPU time.
    Timed,
    /// `cuLaunchCooperativeKernel`: the kernel may synchronise the whole grid. A grid larger than
    /// what fits on the device at once is an Error, never silently clamped.
    Cooperative,
    /// `cuLaunchKernelEx` with thread-block clusters of this shape (sm_90 and newer); every grid
    /// dimension must be a multiple of the cluster's.
    Cluster(ClusterDim),
    /// Programmatic dependent launch: `cuLaunchKernelEx` with the launch attribute
    /// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`, so the kernel may start while the
    /// kernel before it on the stream is still running (sm_90 and newer; older GPUs run it after,
    /// as a plain launch). The kernel calls `cudaGridDependencySynchronize()` (PTX
    /// `griddepcontrol.wait`) before it reads what that kernel wrote; the kernel before it may
    /// call `cudaTriggerProgrammaticLaunchCompletion()` to let it start earlier. Harmless for a
    /// kernel that does not wait when the kernel before it does not trigger: it then starts as
    /// that kernel's blocks finish, as it would have.
    Dependent,
}

/// Names a kernel in errors: its C++ name and where it comes from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Who<'a> {
    pub(crate) kernel: &'a str,
    /// `file:line` of the `cuda_kernel!`, or ``program `name` ``.
    pub(crate) origin: &'a str,
    /// How this kind of handle raises its dynamic shared memory limit (for the error's fix).
    pub(crate) raise_smem: &'static str,
}

impl Who<'_> {
    #[cold]
    #[inline(never)]
    pub(crate) fn error(&self, device: usize, cause: String, fix: Option<String>) -> Error {
        Error::Launch { kernel: self.kernel.to_string(), origin: self.origin.to_string(), device, cause, fix }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn driver_error(&self, device: usize, call: &str, r: sys::CUresult) -> Error {
        self.error(device, format!("{call}: {}", DriverCode(r)), None)
    }

    /// `e`, said of this kernel: a bare driver failure ([`Error::Driver`], from making the
    /// context current or from binding the arguments) becomes an [`Error::Launch`] naming the
    /// kernel and where it comes from; other errors already name what they are about.
    #[cold]
    #[inline(never)]
    pub(crate) fn named(&self, e: Error) -> Error {
        of_kernel(e, self.kernel, self.origin)
    }
}

/// What one launch needs to know about the kernel on the stream's device.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) f: sys::CUfunction,
    /// A block size the kernel is known to take (see [`Function::max_threads`](crate::module::load::Function)).
    pub(crate) max_threads: &'a AtomicU32,
    pub(crate) max_dyn_smem: &'a AtomicU32,
    pub(crate) who: Who<'a>,
}

impl Target<'_> {
    /// The launch-limit checks: a handful of compares against limits cached at load; the error
    /// is built off the hot path.
    #[inline(always)]
    pub(crate) fn check(&self, device: usize, cfg: &LaunchConfig) -> Result<()> {
        let max_threads = self.max_threads.load(Ordering::Relaxed);
        match check_config(cfg, max_threads, self.max_dyn_smem.load(Ordering::Relaxed)) {
            Ok(()) => Ok(()),
            Err(v) => self.recheck(device, cfg, v),
        }
    }

    /// A violation of the cached limits, which the driver may not share: the block limit may
    /// have been read from the kernel's cubin rather than from the driver (see
    /// [`Function::max_threads`](crate::module::load::Function)), and the dynamic shared memory
    /// limit may have been raised through the driver since it was read (cudarc's
    /// `CudaFunction`, `cu_function()`). So the driver's value is read (and kept) before the
    /// launch is refused.
    #[cold]
    #[inline(never)]
    fn recheck(&self, device: usize, cfg: &LaunchConfig, mut v: Violation) -> Result<()> {
        use sys::CUfunction_attribute::*;
        let reread = |attr, cached: &AtomicU32| {
            let max = func_attr(self.f, attr).unwrap_or(u32::MAX);
            cached.store(max, Ordering::Relaxed);
            max
        };
        let (mut max_threads, mut max_smem) =
            (self.max_threads.load(Ordering::Relaxed), self.max_dyn_smem.load(Ordering::Relaxed));
        // Each limit is read again at most once, in the order the check finds them: the block
        // may fit now and the shared memory still be over its limit.
        if let Violation::Threads { .. } = v {
            max_threads = reread(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, self.max_threads);
            v = match check_config(cfg, max_threads, max_smem) {
                Ok(()) => return Ok(()),
                Err(v) => v,
            };
        }
        if let Violation::SharedMemory { .. } = v {
            max_smem = reread(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.max_dyn_smem);
            v = match check_config(cfg, max_threads, max_smem) {
                Ok(()) => return Ok(()),
                Err(v) => v,
            };
        }
        Err(self.violation(device, cfg, v))
    }

    #[cold]
    #[inline(never)]
    fn violation(&self, device: usize, cfg: &LaunchConfig, v: Violation) -> Error {
        let (mut cause, mut fix) = v.describe(cfg);
        if let Violation::SharedMemory { .. } = v {
            let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES;
            let static_smem = func_attr(self.f, attr).unwrap_or(0);
            cause.push_str(&format!(" (plus {static_smem} static)"));
            fix = format!("request less, or raise the kernel's limit first with {}", self.who.raise_smem);
        }
        self.who.error(device, cause, Some(fix))
    }

    /// The Error for a launch the driver refused: a limit the kernel's attributes show was
    /// exceeded, else the driver's code with the configuration.
    #[cold]
    #[inline(never)]
    fn refused(&self, device: usize, call: &str, cfg: &LaunchConfig, r: sys::CUresult) -> Error {
        use sys::CUfunction_attribute::*;
        let attr = |a| func_attr(self.f, a).unwrap_or(u32::MAX);
        let limits = check_config(
            cfg,
            attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            attr(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
        );
        if let Err(v) = limits {
            return self.violation(device, cfg, v);
        }
        let (b, g) = (cfg.block_dim, cfg.grid_dim);
        self.who.error(
            device,
            format!(
                "{call}: {} with grid {g:?}, block {b:?}, {} bytes dynamic shared memory",
                DriverCode(r),
                cfg.shared_mem_bytes
            ),
            None,
        )
    }
}

/// Launches `target` on `stream` as `kind` says. Returns the kernel's GPU time in milliseconds
/// for [`LaunchKind::Timed`], else `None`.
///
/// # Safety
/// `target.f` belongs to the stream's context; `args` holds one pointer per kernel parameter,
/// each to a live value of exactly the parameter's type; the kernel is safe to run with them.
#[inline(always)]
pub(crate) unsafe fn launch(
    target: &Target<'_>,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    kind: LaunchKind,
    args: &mut [*mut c_void],
) -> Result<Option<f32>> {
    let ctx = stream.context();
    target.check(ctx.ordinal(), cfg)?;
    if bound_here(ctx) {
        let r = match kind {
            // SAFETY: forwarded from the caller.
            LaunchKind::Plain => Some(unsafe { cu_launch(target.f, stream, cfg, args) }),
            // SAFETY: forwarded from the caller.
            LaunchKind::Cluster(c) => Some(unsafe { cluster_call(target, ctx, stream, cfg, c, args) }?),
            // SAFETY: forwarded from the caller.
            LaunchKind::Dependent => Some(unsafe { dependent_call(target, stream, cfg, args) }),
            LaunchKind::Timed | LaunchKind::Cooperative => None,
        };
        match r {
            Some(sys::CUresult::CUDA_SUCCESS) => return Ok(None),
            Some(r) if !wrong_context(r) => {
                return Err(match kind {
                    LaunchKind::Cluster(_) => cluster_refused(target, ctx, cfg, r),
                    LaunchKind::Dependent => target.refused(ctx.ordinal(), DEPENDENT_CALL, cfg, r),
                    _ => target.refused(ctx.ordinal(), "cuLaunchKernel", cfg, r),
                });
            }
            // Something else made another context current on this thread: bind and launch
            // again (nothing was queued by the refused call). Timed and cooperative launches
            // always bind (their own calls outweigh it).
            _ => {}
        }
    }
    bind(ctx).map_err(|e| target.who.named(e))?;
    match kind {
        LaunchKind::Plain => {
            // SAFETY: forwarded from the caller.
            unsafe { plain(target, stream, cfg, args) }.map(|()| None)
        }
        // SAFETY: forwarded from the caller.
        LaunchKind::Timed => unsafe { timed(target, stream, cfg, args) }.map(Some),
        // SAFETY: forwarded from the caller.
        LaunchKind::Cooperative => unsafe { cooperative(target, ctx, stream, cfg, args) }.map(|()| None),
        // SAFETY: forwarded from the caller.
        LaunchKind::Cluster(c) => match unsafe { cluster_call(target, ctx, stream, cfg, c, args) }? {
            sys::CUresult::CUDA_SUCCESS => Ok(None),
            r => Err(cluster_refused(target, ctx, cfg, r)),
        },
        // SAFETY: forwarded from the caller.
        LaunchKind::Dependent => match unsafe { dependent_call(target, stream, cfg, args) } {
            sys::CUresult::CUDA_SUCCESS => Ok(None),
            r => Err(target.refused(ctx.ordinal(), DEPENDENT_CALL, cfg, r)),
        },
    }
}

/// The driver call of a [`LaunchKind::Dependent`] launch, as errors name it.
const DEPENDENT_CALL: &str = "cuLaunchKernelEx with programmatic stream serialization";

/// A programmatic dependent launch: `cuLaunchKernelEx` with the programmatic stream
/// serialization attribute set.
///
/// # Safety
/// As for [`launch`].
#[inline(always)]
unsafe fn dependent_call(
    target: &Target<'_>,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    args: &mut [*mut c_void],
) -> sys::CUresult {
    let mut attr = attribute(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    attr.value.programmaticStreamSerializationAllowed = 1;
    // SAFETY: forwarded from the caller; the attribute's value is set for its id.
    unsafe { launch_ex(target, stream, cfg, std::slice::from_mut(&mut attr), args) }
}

/// A launch attribute of kind `id` whose value is all zeros, for the caller to set.
#[inline(always)]
fn attribute(id: sys::CUlaunchAttributeID) -> sys::CUlaunchAttribute {
    // SAFETY: `CUlaunchAttribute` is C data: an id enum (0 is `CU_LAUNCH_ATTRIBUTE_IGNORE`,
    // overwritten below), padding and a union of integers and structs of integers, for all of
    // which all-zero bytes are a valid value.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = id;
    attr
}

/// `cuLaunchKernelEx` of `target` on `stream` with `cfg` and the launch attributes `attrs`: the
/// one extended launch call, shared by the cluster and the programmatic dependent launches.
///
/// # Safety
/// As for [`launch`]; and each of `attrs` has its value set as its id requires.
#[inline(always)]
unsafe fn launch_ex(
    target: &Target<'_>,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    attrs: &mut [sys::CUlaunchAttribute],
    args: &mut [*mut c_void],
) -> sys::CUresult {
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    let config = sys::CUlaunchConfig {
        gridDimX: g.0,
        gridDimY: g.1,
        gridDimZ: g.2,
        blockDimX: b.0,
        blockDimY: b.1,
        blockDimZ: b.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    };
    // SAFETY: `config` and the `attrs` it points at (`numAttrs` of them, each set as its id
    // requires: the caller's contract) are alive for the whole call, which reads them only
    // during it; `target.f` belongs to the stream's context and `args` holds one pointer per
    // kernel parameter, each to a live value of the parameter's type (the caller's contract); the
    // `extra` argument is null.
    unsafe { sys::cuLaunchKernelEx(&config, target.f, args.as_mut_ptr(), std::ptr::null_mut()) }
}

/// A plain launch without the limit checks (for the launch benchmark only).
///
/// # Safety
/// As for [`launch`].
#[inline(always)]
pub(crate) unsafe fn launch_unchecked(
    target: &Target<'_>,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    args: &mut [*mut c_void],
) -> Result<()> {
    bind(stream.context()).map_err(|e| target.who.named(e))?;
    // SAFETY: forwarded from the caller.
    unsafe { plain(target, stream, cfg, args) }
}

/// `cuLaunchKernel` itself.
///
/// # Safety
/// As for [`launch`].
#[inline(always)]
pub(crate) unsafe fn cu_launch(
    f: sys::CUfunction,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    args: &mut [*mut c_void],
) -> sys::CUresult {
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    // SAFETY: `f` belongs to the stream's context (caller's contract), `args` holds one valid
    // pointer per parameter (caller's contract), extra is null.
    unsafe {
        sys::cuLaunchKernel(
            f,
            g.0,
            g.1,
            g.2,
            b.0,
            b.1,
            b.2,
            cfg.shared_mem_bytes,
            stream.cu_stream(),
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
}

#[inline(always)]
unsafe fn plain(target: &Target<'_>, stream: &CudaStream, cfg: &LaunchConfig, args: &mut [*mut c_void]) -> Result<()> {
    // SAFETY: forwarded from the caller.
    let r = unsafe { cu_launch(target.f, stream, cfg, args) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(target.refused(stream.context().ordinal(), "cuLaunchKernel", cfg, r))
    }
}

unsafe fn timed(target: &Target<'_>, stream: &CudaStream, cfg: &LaunchConfig, args: &mut [*mut c_void]) -> Result<f32> {
    let device = stream.context().ordinal();
    let who = &target.who;
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = stream.record_event(timing).map_err(|e| who.driver_error(device, "cuEventRecord", e.0))?;
    // SAFETY: forwarded from the caller.
    unsafe { plain(target, stream, cfg, args)? };
    let end = stream.record_event(timing).map_err(|e| who.driver_error(device, "cuEventRecord", e.0))?;
    end.synchronize().map_err(|e| who.driver_error(device, "cuEventSynchronize", e.0))?;
    start.elapsed_ms(&end).map_err(|e| who.driver_error(device, "cuEventElapsedTime", e.0))
}

unsafe fn cooperative(
    target: &Target<'_>,
    ctx: &CudaContext,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    args: &mut [*mut c_void],
) -> Result<()> {
    let device = ctx.ordinal();
    let who = &target.who;
    if device_attr(ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? == 0 {
        return Err(who.error(device, "this device does not support cooperative launches".into(), None));
    }
    let (b, g) = (cfg.block_dim, cfg.grid_dim);
    let threads = (b.0 * b.1 * b.2) as i32;
    let mut per_sm = 0i32;
    // SAFETY: live function handle; valid out-pointer.
    let r = unsafe {
        sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut per_sm, target.f, threads, cfg.shared_mem_bytes as usize)
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(who.driver_error(device, "cuOccupancyMaxActiveBlocksPerMultiprocessor", r));
    }
    let sms = device_attr(ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u64;
    let fit = per_sm.max(0) as u64 * sms;
    let blocks = g.0 as u64 * g.1 as u64 * g.2 as u64;
    if blocks > fit {
        return Err(who.error(
            device,
            format!(
                "cooperative grid of {blocks} blocks exceeds the {fit} blocks that can be resident at once \
                 ({per_sm} per SM x {sms} SMs with {threads} threads and {} bytes dynamic shared memory per block)",
                cfg.shared_mem_bytes
            ),
            Some(format!("launch at most {fit} blocks, or use fewer threads or less shared memory per block")),
        ));
    }
    // SAFETY: `f` belongs to the stream's context; args per caller contract.
    let r = unsafe {
        sys::cuLaunchCooperativeKernel(
            target.f,
            g.0,
            g.1,
            g.2,
            b.0,
            b.1,
            b.2,
            cfg.shared_mem_bytes,
            stream.cu_stream(),
            args.as_mut_ptr(),
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(target.refused(device, "cuLaunchCooperativeKernel", cfg, r));
    }
    Ok(())
}

/// The checks of a cluster launch and its `cuLaunchKernelEx`: an error for a cluster shape that
/// does not fit the grid or the portable maximum, else the driver's result.
///
/// # Safety
/// As for [`launch`].
#[inline(always)]
unsafe fn cluster_call(
    target: &Target<'_>,
    ctx: &CudaContext,
    stream: &CudaStream,
    cfg: &LaunchConfig,
    c: ClusterDim,
    args: &mut [*mut c_void],
) -> Result<sys::CUresult> {
    let device = ctx.ordinal();
    let who = &target.who;
    let g = cfg.grid_dim;
    let whole = |g: u32, c: u32| c != 0 && g.is_multiple_of(c);
    if !(whole(g.0, c.0) && whole(g.1, c.1) && whole(g.2, c.2)) {
        return Err(who.error(
            device,
            format!("grid {g:?} is not a whole number of clusters of {c:?}"),
            Some("make every grid dimension a multiple of the cluster dimension".into()),
        ));
    }
    let portable = 8u64;
    if c.0 as u64 * c.1 as u64 * c.2 as u64 > portable {
        return Err(who.error(
            device,
            format!("cluster {c:?} has more than the portable maximum of {portable} blocks"),
            Some("use at most 8 blocks per cluster".into()),
        ));
    }
    let mut attr = attribute(sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    attr.value.clusterDim.x = c.0;
    attr.value.clusterDim.y = c.1;
    attr.value.clusterDim.z = c.2;
    // SAFETY: forwarded from the caller; the attribute's value is set for its id.
    Ok(unsafe { launch_ex(target, stream, cfg, std::slice::from_mut(&mut attr), args) })
}

/// Why a cluster launch was refused: a GPU older than clusters is named as such (asked only
/// now, so a launch that succeeds makes no attribute queries).
#[cold]
#[inline(never)]
fn cluster_refused(target: &Target<'_>, ctx: &CudaContext, cfg: &LaunchConfig, r: sys::CUresult) -> Error {
    let device = ctx.ordinal();
    match ctx.compute_capability() {
        Ok((major, minor)) if major < 9 => target.who.error(
            device,
            format!("thread-block clusters need compute capability 9.0 or newer; this GPU is {major}.{minor}"),
            Some("launch without a cluster on this GPU".into()),
        ),
        _ => target.refused(device, "cuLaunchKernelEx with a cluster", cfg, r),
    }
}

/// The kernel-attribute operations shared by every kind of kernel handle.
pub(crate) mod attrs {
    use super::*;
    use crate::launch::limits::KernelAttributes;

    pub(crate) fn attributes(t: &Target<'_>, device: usize) -> Result<KernelAttributes> {
        KernelAttributes::read(t.f).map_err(|r| t.who.driver_error(device, "cuFuncGetAttribute", r))
    }

    /// `cuFuncSetAttribute(attr, value)` in `ctx`; a failure names the kernel, the device and `call`.
    fn set_attr(
        t: &Target<'_>,
        ctx: &CudaContext,
        attr: sys::CUfunction_attribute,
        value: u32,
        call: &str,
    ) -> Result<()> {
        bind(ctx).map_err(|e| t.who.named(e))?;
        // SAFETY: live function handle of this context; both attributes set here take a
        // non-negative integer (a byte count, a percentage) checked by the callers.
        let r = unsafe { sys::cuFuncSetAttribute(t.f, attr, value as i32) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(t.who.driver_error(ctx.ordinal(), call, r));
        }
        Ok(())
    }

    pub(crate) fn set_max_dynamic_shared_memory(t: &Target<'_>, ctx: &CudaContext, bytes: u32) -> Result<()> {
        let device = ctx.ordinal();
        let optin = device_attr(ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let static_smem = func_attr(t.f, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).unwrap_or(0);
        let allowed = optin.saturating_sub(static_smem);
        if bytes > allowed {
            return Err(t.who.error(
                device,
                format!(
                    "{bytes} bytes of dynamic shared memory requested; this device allows {optin} per block, \
                     {static_smem} of which the kernel uses statically, so at most {allowed}"
                ),
                Some(format!("ask for at most {allowed} bytes")),
            ));
        }
        let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        set_attr(t, ctx, attr, bytes, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")?;
        t.max_dyn_smem.store(bytes, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn set_preferred_shared_carveout(t: &Target<'_>, ctx: &CudaContext, percent: u32) -> Result<()> {
        let device = ctx.ordinal();
        if percent > 100 {
            return Err(t.who.error(
                device,
                format!("shared memory carveout of {percent}% requested"),
                Some("give a percentage from 0 to 100".into()),
            ));
        }
        let attr = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
        set_attr(t, ctx, attr, percent, "cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT)")
    }

    pub(crate) fn occupancy_config(
        t: &Target<'_>,
        ctx: &CudaContext,
        n: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<LaunchConfig> {
        let device = ctx.ordinal();
        bind(ctx).map_err(|e| t.who.named(e))?;
        let (mut min_grid, mut block) = (0i32, 0i32);
        // SAFETY: live function handle; out-pointers valid; no block-size callback.
        let r = unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(
                &mut min_grid,
                &mut block,
                t.f,
                None,
                dynamic_shared_bytes as usize,
                0,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(t.who.driver_error(device, "cuOccupancyMaxPotentialBlockSize", r));
        }
        if block <= 0 {
            // The driver succeeded but found no block size that fits (e.g. more dynamic shared
            // memory than a block of one warp may have): say that, not "CUDA_SUCCESS".
            return Err(t.who.error(
                device,
                format!(
                    "cuOccupancyMaxPotentialBlockSize found no block size that can run with {dynamic_shared_bytes} bytes \
                     of dynamic shared memory"
                ),
                Some(format!("request less dynamic shared memory, or raise the kernel's limit first with {}", t.who.raise_smem)),
            ));
        }
        let block = block as u32;
        Ok(LaunchConfig {
            grid_dim: (n.div_ceil(block).max(1), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: dynamic_shared_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A driver call that fails while a kernel is being launched (making the context current,
    /// creating the side stream its buffers are bound on) is reported as that kernel's error.
    #[test]
    fn driver_failures_during_a_launch_name_the_kernel() {
        let who = Who { kernel: "ns::saxpy", origin: "src/main.rs:12", raise_smem: "" };
        let code = DriverCode(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT);
        let e = who.named(Error::Driver { call: "cuCtxSetCurrent", device: 1, cause: code });
        match e {
            Error::Launch { kernel, origin, device, cause, .. } => {
                assert_eq!((kernel.as_str(), origin.as_str(), device), ("ns::saxpy", "src/main.rs:12", 1));
                assert_eq!(cause, format!("cuCtxSetCurrent: {code}"));
            }
            other => panic!("expected Error::Launch, got {other}"),
        }
        // Errors that already say what they are about are left alone.
        let e = who.named(Error::Shape { op: "op".into(), detail: "detail".into() });
        assert!(matches!(e, Error::Shape { .. }), "{e}");
    }
}

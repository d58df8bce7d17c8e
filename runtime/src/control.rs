//! Launch control beyond the plain launch: kernel attributes, shared-memory limits, occupancy-derived
//! configurations, timed, cooperative and cluster launches. Every limit is checked before the
//! driver is called and reported as an [`Error::Launch`] naming the kernel, the limit and the value.

use crate::error::{DriverCode, Error, Result};
use crate::module::Module;
use cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What the driver reports about one kernel on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelAttributes {
    /// Registers per thread.
    pub registers: u32,
    /// Most threads a block of this kernel can have on this device (device limit, registers and
    /// `__launch_bounds__` combined).
    pub max_threads_per_block: u32,
    /// Statically allocated shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// `__constant__` memory used, bytes.
    pub const_bytes: u32,
    /// Local memory per thread, bytes.
    pub local_bytes: u32,
    /// Current limit on dynamic shared memory per block, bytes (raise it with
    /// [`Module::set_max_dynamic_shared_memory`]).
    pub max_dynamic_shared_bytes: u32,
    /// PTX version the kernel was compiled for, e.g. 80 for compute_80.
    pub ptx_version: u32,
    /// SASS version of the loaded binary, e.g. 90 for sm_90.
    pub binary_version: u32,
}

/// A thread-block cluster shape, for [`Module::launch_cluster`] (sm_90 and newer).
pub type ClusterDim = (u32, u32, u32);

pub(crate) fn attr(f: sys::CUfunction, a: sys::CUfunction_attribute) -> std::result::Result<u32, sys::CUresult> {
    let mut v = 0i32;
    // SAFETY: `f` is a live function handle; `v` is a valid out-pointer.
    let r = unsafe { sys::cuFuncGetAttribute(&mut v, a, f) };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(v.max(0) as u32)
    } else {
        Err(r)
    }
}

fn device_attr(ctx: &CudaContext, a: sys::CUdevice_attribute) -> Result<u32> {
    ctx.attribute(a).map(|v| v.max(0) as u32).map_err(Error::from)
}

impl Module {
    fn driver_err(&self, index: usize, ctx: &Arc<CudaContext>, what: &str, r: sys::CUresult) -> Error {
        Error::Launch {
            kernel: self.spec().kernels[index].name,
            device: ctx.ordinal(),
            cause: format!("{what}: {}", DriverCode(r)),
            fix: None,
        }
    }

    /// The attributes of kernel `index` on `ctx`'s device (loads the module there if needed).
    pub fn attributes(&'static self, index: usize, ctx: &Arc<CudaContext>) -> Result<KernelAttributes> {
        use sys::CUfunction_attribute::*;
        let f = self.function(ctx, index)?;
        let get = |a| attr(f, a).map_err(|r| self.driver_err(index, ctx, "cuFuncGetAttribute", r));
        Ok(KernelAttributes {
            registers: get(CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            max_threads_per_block: get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            static_shared_bytes: get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            const_bytes: get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            local_bytes: get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_dynamic_shared_bytes: get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
            ptx_version: get(CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
            binary_version: get(CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        })
    }

    /// Lets kernel `index` use up to `bytes` of dynamic shared memory per block on `ctx`'s device
    /// (the opt-in above the default 48 KiB). Errors name the device's opt-in maximum.
    pub fn set_max_dynamic_shared_memory(
        &'static self,
        index: usize,
        ctx: &Arc<CudaContext>,
        bytes: u32,
    ) -> Result<()> {
        let loaded = self.loaded(ctx)?;
        let f = loaded.functions[index];
        let optin = device_attr(ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let static_smem = attr(f, sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).unwrap_or(0);
        let allowed = optin.saturating_sub(static_smem);
        if bytes > allowed {
            return Err(Error::Launch {
                kernel: self.spec().kernels[index].name,
                device: ctx.ordinal(),
                cause: format!(
                    "{bytes} bytes of dynamic shared memory requested; this device allows {optin} per block, \
                     {static_smem} of which the kernel uses statically, so at most {allowed}"
                ),
                fix: Some(format!("ask for at most {allowed} bytes")),
            });
        }
        ctx.bind_to_thread()?;
        // SAFETY: live function handle of this context; the attribute takes a byte count.
        let r = unsafe {
            sys::cuFuncSetAttribute(
                f,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(self.driver_err(index, ctx, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", r));
        }
        loaded.max_dyn_smem[index].store(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Sets kernel `index`'s preferred shared-memory carveout on `ctx`'s device, in percent of the
    /// L1/shared capacity (0..=100), a hint the driver may round.
    pub fn set_preferred_shared_carveout(
        &'static self,
        index: usize,
        ctx: &Arc<CudaContext>,
        percent: u32,
    ) -> Result<()> {
        if percent > 100 {
            return Err(Error::Launch {
                kernel: self.spec().kernels[index].name,
                device: ctx.ordinal(),
                cause: format!("shared memory carveout of {percent}% requested"),
                fix: Some("give a percentage from 0 to 100".into()),
            });
        }
        let f = self.function(ctx, index)?;
        ctx.bind_to_thread()?;
        // SAFETY: live function handle of this context; the attribute takes a percentage.
        let r = unsafe {
            sys::cuFuncSetAttribute(
                f,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                percent as i32,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(self.driver_err(index, ctx, "cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT)", r));
        }
        Ok(())
    }

    /// A 1-D configuration covering `n` threads with the block size that maximises occupancy for
    /// kernel `index` on `ctx`'s device (`cuOccupancyMaxPotentialBlockSize`), with
    /// `dynamic_shared_bytes` of dynamic shared memory per block.
    pub fn occupancy_config(
        &'static self,
        index: usize,
        ctx: &Arc<CudaContext>,
        n: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<LaunchConfig> {
        let f = self.function(ctx, index)?;
        ctx.bind_to_thread()?;
        let (mut min_grid, mut block) = (0i32, 0i32);
        // SAFETY: live function handle; out-pointers valid; no block-size callback.
        let r = unsafe {
            sys::cuOccupancyMaxPotentialBlockSize(&mut min_grid, &mut block, f, None, dynamic_shared_bytes as usize, 0)
        };
        if r != sys::CUresult::CUDA_SUCCESS || block <= 0 {
            return Err(self.driver_err(index, ctx, "cuOccupancyMaxPotentialBlockSize", r));
        }
        let block = block as u32;
        Ok(LaunchConfig {
            grid_dim: (n.div_ceil(block).max(1), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: dynamic_shared_bytes,
        })
    }

    /// Launches and returns the GPU time of the kernel in milliseconds, measured by a pair of
    /// events recorded around it on `stream` (waits for the kernel to finish).
    ///
    /// # Safety
    /// As for [`Module::launch`].
    pub unsafe fn launch_timed(
        &'static self,
        index: usize,
        stream: &CudaStream,
        cfg: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<f32> {
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = stream.record_event(timing)?;
        // SAFETY: forwarded caller contract.
        unsafe { self.launch(index, stream, cfg, args)? };
        let end = stream.record_event(timing)?;
        end.synchronize()?;
        Ok(start.elapsed_ms(&end)?)
    }

    /// Launches cooperatively (`cuLaunchCooperativeKernel`), so the kernel may synchronise the
    /// whole grid. The grid must fit on the device at once: a larger one is an Error (never
    /// silently clamped).
    ///
    /// # Safety
    /// As for [`Module::launch`].
    pub unsafe fn launch_cooperative(
        &'static self,
        index: usize,
        stream: &CudaStream,
        cfg: &LaunchConfig,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let ctx = stream.context();
        let loaded = self.loaded(ctx)?;
        let f = loaded.functions[index];
        self.check_limits(index, ctx, loaded, cfg)?;
        let kernel = self.spec().kernels[index].name;
        let device = ctx.ordinal();
        if device_attr(ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? == 0 {
            return Err(Error::Launch {
                kernel,
                device,
                cause: "this device does not support cooperative launches".into(),
                fix: None,
            });
        }
        let (b, g) = (cfg.block_dim, cfg.grid_dim);
        let threads = (b.0 * b.1 * b.2) as i32;
        let mut per_sm = 0i32;
        ctx.bind_to_thread()?;
        // SAFETY: live function handle; valid out-pointer.
        let r = unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut per_sm, f, threads, cfg.shared_mem_bytes as usize)
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(self.driver_err(index, ctx, "cuOccupancyMaxActiveBlocksPerMultiprocessor", r));
        }
        let sms = device_attr(ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u64;
        let fit = per_sm.max(0) as u64 * sms;
        let blocks = g.0 as u64 * g.1 as u64 * g.2 as u64;
        if blocks > fit {
            return Err(Error::Launch {
                kernel,
                device,
                cause: format!(
                    "cooperative grid of {blocks} blocks exceeds the {fit} blocks that can be resident at once \
                     ({per_sm} per SM x {sms} SMs with {threads} threads and {} bytes dynamic shared memory per block)",
                    cfg.shared_mem_bytes
                ),
                fix: Some(format!("launch at most {fit} blocks, or use fewer threads or less shared memory per block")),
            });
        }
        // SAFETY: `f` belongs to the stream's context; args per caller contract.
        let r = unsafe {
            sys::cuLaunchCooperativeKernel(
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
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(self.driver_err(index, ctx, "cuLaunchCooperativeKernel", r));
        }
        Ok(())
    }

    /// Launches with thread-block clusters of shape `cluster` through `cuLaunchKernelEx`
    /// (compute capability 9.0 and newer). Each grid dimension must be a multiple of the cluster's.
    ///
    /// # Safety
    /// As for [`Module::launch`].
    pub unsafe fn launch_cluster(
        &'static self,
        index: usize,
        stream: &CudaStream,
        cfg: &LaunchConfig,
        cluster: ClusterDim,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let ctx = stream.context();
        let kernel = self.spec().kernels[index].name;
        let device = ctx.ordinal();
        let (major, minor) = ctx.compute_capability()?;
        if major < 9 {
            return Err(Error::Launch {
                kernel,
                device,
                cause: format!(
                    "thread-block clusters need compute capability 9.0 or newer; this GPU is {major}.{minor}"
                ),
                fix: Some("launch without a cluster on this GPU".into()),
            });
        }
        let g = cfg.grid_dim;
        let c = cluster;
        let whole = |g: u32, c: u32| c != 0 && g.is_multiple_of(c);
        if !(whole(g.0, c.0) && whole(g.1, c.1) && whole(g.2, c.2)) {
            return Err(Error::Launch {
                kernel,
                device,
                cause: format!("grid {g:?} is not a whole number of clusters of {c:?}"),
                fix: Some("make every grid dimension a multiple of the cluster dimension".into()),
            });
        }
        let portable = 8u64;
        if c.0 as u64 * c.1 as u64 * c.2 as u64 > portable {
            return Err(Error::Launch {
                kernel,
                device,
                cause: format!("cluster {c:?} has more than the portable maximum of {portable} blocks"),
                fix: Some("use at most 8 blocks per cluster".into()),
            });
        }
        let loaded = self.loaded(ctx)?;
        let f = loaded.functions[index];
        self.check_limits(index, ctx, loaded, cfg)?;
        ctx.bind_to_thread()?;
        // SAFETY: an all-zero attribute is valid plain data; the fields are set below.
        let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim.x = c.0;
        attr.value.clusterDim.y = c.1;
        attr.value.clusterDim.z = c.2;
        let b = cfg.block_dim;
        let config = sys::CUlaunchConfig {
            gridDimX: g.0,
            gridDimY: g.1,
            gridDimZ: g.2,
            blockDimX: b.0,
            blockDimY: b.1,
            blockDimZ: b.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: `config` and `attr` outlive the call; `f` belongs to the stream's context; args
        // per caller contract.
        let r = unsafe { sys::cuLaunchKernelEx(&config, f, args.as_mut_ptr(), std::ptr::null_mut()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(self.driver_err(index, ctx, "cuLaunchKernelEx with a cluster", r));
        }
        Ok(())
    }
}

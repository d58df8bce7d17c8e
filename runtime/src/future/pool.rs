//! Stream-ordered allocation: what a pipeline's temporaries need to be freed in stream order.
//!
//! cudarc already allocates with `cuMemAllocAsync` and frees with `cuMemFreeAsync` on the
//! buffer's stream wherever the device supports memory pools (`CudaContext::has_async_alloc`), so
//! a temporary dropped right after the launch that uses it is freed behind that launch, without a
//! host synchronisation. What it leaves at the driver's default is the pool's release threshold,
//! 0: at every synchronisation the pool hands its free memory back to the system, and the next
//! step's allocations map it again. [`retain_freed_memory`] keeps up to a given amount cached, so a
//! loop that allocates and frees the same temporaries every step reuses them.

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext};
use std::ffi::c_void;
use std::sync::Arc;

/// Keeps up to `bytes` of memory freed in stream order cached in the default memory pool of
/// `ctx`'s device (its release threshold, `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`), instead of
/// returning it to the system at every synchronisation; `u64::MAX` keeps all of it, `0` is the
/// driver's default. A device without memory pools is an [`Error::Driver`].
///
/// ```no_run
/// # fn f() -> cuda_embed_runtime::Result<()> {
/// let ctx = cuda_embed_runtime::context(0)?;
/// cuda_embed_runtime::future::retain_freed_memory(&ctx, 1 << 30)?; // keep up to 1 GiB
/// let stream = ctx.default_stream();
/// for _ in 0..100 {
///     let tmp = stream.alloc_zeros::<f32>(1 << 20)?; // cuMemAllocAsync, from the cache
///     // ... launches on `tmp` ...
///     drop(tmp); // cuMemFreeAsync, behind those launches
/// }
/// # Ok(()) }
/// ```
pub fn retain_freed_memory(ctx: &Arc<CudaContext>, bytes: u64) -> Result<()> {
    let device = ctx.ordinal();
    let fail = |call: &'static str, r: sys::CUresult| Error::Driver { call, device, cause: DriverCode(r) };
    if !ctx.has_async_alloc() {
        return Err(fail("cuDeviceGetDefaultMemPool (no memory pools)", sys::CUresult::CUDA_ERROR_NOT_SUPPORTED));
    }
    crate::driver::bind(ctx)?;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and the context's own device.
    let r = unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(fail("cuDeviceGetDefaultMemPool", r));
    }
    let mut threshold = bytes;
    // SAFETY: the release threshold is a `cuuint64_t`, read from the pointer during the call.
    let r = unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            &mut threshold as *mut u64 as *mut c_void,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(fail("cuMemPoolSetAttribute (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)", r));
    }
    Ok(())
}

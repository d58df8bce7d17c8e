//! Awaitable copies through page-locked host memory, and an awaitable stream synchronisation.
//!
//! The copies own their host memory while they run (see the module docs of [`future`](super) for
//! why they must): they take a [`PinnedHostSlice`] by value and their future hands it back.

use super::GpuFuture;
use crate::args::buffer::{DeviceBuffer, DeviceBufferMut};
use crate::bind::same_context;
use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{CudaContext, CudaStream, DeviceRepr, PinnedHostSlice};
use std::sync::Arc;

const HTOD: &str = "cuMemcpyHtoDAsync (future::copy_to_device)";
const DTOH: &str = "cuMemcpyDtoHAsync (future::copy_to_host)";

/// Copies `src` (page-locked host memory) into the start of `dst` on `stream`; the future
/// resolves when the copy is done and hands `src` back.
///
/// `dst` must hold at least `src.len()` elements, and both must belong to the stream's context;
/// otherwise the future's result is an [`Error::Shape`] and nothing is copied. `src` is owned by
/// the copy until then: a future dropped early releases it only after the copy has finished, one
/// forgotten leaks it (see the [module docs](super)).
///
/// ```no_run
/// # async fn f(stream: std::sync::Arc<cuda_embed_runtime::CudaStream>) -> cuda_embed_runtime::Result<()> {
/// use cuda_embed_runtime::future;
/// let ctx = stream.context();
/// let mut host = unsafe { ctx.alloc_pinned::<f32>(1024) }?; // SAFETY: written before it is copied
/// host.as_mut_slice()?.fill(1.0);
/// let mut x = stream.alloc_zeros::<f32>(1024)?;
/// let host = future::copy_to_device(&stream, host, &mut x).await?;
/// # Ok(()) }
/// ```
pub fn copy_to_device<'a, T, D>(
    stream: &Arc<CudaStream>,
    src: PinnedHostSlice<T>,
    dst: &'a mut D,
) -> GpuFuture<'a, PinnedHostSlice<T>>
where
    T: DeviceRepr + Send + 'static,
    D: DeviceBufferMut<T>,
{
    let checked = check("copy_to_device", stream, src.context(), dst.stream().context(), src.len(), dst.len());
    let queued = checked.and_then(|()| stream.memcpy_htod(&src, dst).map_err(|e| driver(stream, HTOD, e)));
    GpuFuture::after_call(stream, queued, HTOD, src)
}

/// Copies `src` (device memory) into the start of `dst` (page-locked host memory) on `stream`;
/// the future resolves when the copy is done and hands `dst` back, holding the data.
///
/// `dst` must hold at least `src.len()` elements, and both must belong to the stream's context;
/// otherwise the future's result is an [`Error::Shape`] and nothing is copied. `dst` is owned by
/// the copy until then, so nothing reads it while the GPU writes it.
///
/// ```no_run
/// # async fn f(stream: std::sync::Arc<cuda_embed_runtime::CudaStream>, y: cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
/// use cuda_embed_runtime::future;
/// // Not write-combined (`alloc_pinned`'s default), since the host reads it. SAFETY: the copy writes it.
/// let host = unsafe { stream.context().alloc_pinned_with_flags::<f32>(y.len(), 0) }?;
/// let host = future::copy_to_host(&stream, &y, host).await?;
/// let first = host.as_slice()?[0];
/// # Ok(()) }
/// ```
pub fn copy_to_host<'a, T, S>(
    stream: &Arc<CudaStream>,
    src: &'a S,
    mut dst: PinnedHostSlice<T>,
) -> GpuFuture<'a, PinnedHostSlice<T>>
where
    T: DeviceRepr + Send + 'static,
    S: DeviceBuffer<T>,
{
    let checked = check("copy_to_host", stream, dst.context(), src.stream().context(), src.len(), dst.len());
    let queued = checked.and_then(|()| stream.memcpy_dtoh(src, &mut dst).map_err(|e| driver(stream, DTOH, e)));
    GpuFuture::after_call(stream, queued, DTOH, dst)
}

/// Everything queued on `stream` so far, as a future: `stream.synchronize()` that parks the
/// task instead of the thread. Resolves to the work's result (a sticky error included).
///
/// ```no_run
/// # async fn f(stream: &cuda_embed_runtime::CudaStream) -> cuda_embed_runtime::Result<()> {
/// cuda_embed_runtime::future::synchronize(stream).await?;
/// # Ok(()) }
/// ```
pub fn synchronize(stream: &CudaStream) -> GpuFuture<'static> {
    GpuFuture::after_call(stream, Ok(()), "cuStreamSynchronize (future::synchronize)", ())
}

/// The checks of a copy on `stream` between host memory of `host_ctx` (`host_len` elements) and
/// device memory of `device_ctx` (`device_len`), before anything is queued: the contexts, the
/// lengths, and that the stream is not being captured (a capture would run nothing to wait for,
/// and the host memory must not be handed back before the copy runs).
fn check(
    op: &'static str,
    stream: &CudaStream,
    host_ctx: &Arc<CudaContext>,
    device_ctx: &Arc<CudaContext>,
    copied: usize,
    room: usize,
) -> Result<()> {
    let ctx = stream.context();
    let shape = |detail: String| Err(Error::Shape { op: format!("future::{op}"), detail });
    let whose = |other: &CudaContext| {
        if other.ordinal() == ctx.ordinal() {
            format!("another CUDA context on device {} than the stream's", ctx.ordinal())
        } else {
            format!("device {}, but the stream is on device {}", other.ordinal(), ctx.ordinal())
        }
    };
    if !same_context(device_ctx, ctx) {
        return shape(format!(
            "the device buffer is memory of {}: copy on a stream of the buffer's context",
            whose(device_ctx)
        ));
    }
    if !same_context(host_ctx, ctx) {
        return shape(format!(
            "the pinned host buffer was allocated in {}: allocate it with the stream's context \
             (`stream.context().alloc_pinned(n)`)",
            whose(host_ctx)
        ));
    }
    if room < copied {
        return shape(format!(
            "{copied} elements are copied but the destination holds {room}: pass a destination of at least {copied}"
        ));
    }
    crate::driver::bind(ctx)?;
    if crate::bind::capture::is_capturing(stream) {
        return Err(Error::Driver {
            call: if op == "copy_to_device" { HTOD } else { DTOH },
            device: ctx.ordinal(),
            cause: DriverCode(cudarc::driver::sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
        });
    }
    Ok(())
}

#[cold]
fn driver(stream: &CudaStream, call: &'static str, e: cudarc::driver::DriverError) -> Error {
    Error::Driver { call, device: stream.context().ordinal(), cause: DriverCode(e.0) }
}

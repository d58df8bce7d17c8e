//! Typed handles to a module's `__constant__`, `__device__` and `__managed__` variables.
//!
//! `cuda_kernel!` turns every such variable at namespace scope into a `static` [`Global<T>`]
//! named like the variable, where `T` is the element type (`__constant__ float c[16]` becomes
//! `Global<f32>` of 16 elements). The handle works per device: the first use on a device loads the
//! module there (as a launch would) and looks the symbol up. Copies run on the given stream, so a
//! write is ordered before later launches on that stream, and a read waits for earlier work.
//!
//! Between streams, copies and the module's kernel launches are ordered with events the way cudarc
//! orders a `CudaSlice` (see `order.rs`): once the context has several streams, a launch waits for
//! the last write to a global of its module, and a copy waits for the module's last launch and
//! last write. A write returns only once the host memory it was given has been consumed, even if
//! it is page-locked (cudarc's `PinnedHostSlice::as_slice`, `cuMemHostRegister`ed or managed
//! memory, where a copy is truly asynchronous): up to 64 KiB (every `__constant__` write) it is
//! staged through a pageable buffer and the write stays asynchronous; a larger write waits for its
//! copy to finish. Reading needs a type of which every bit pattern is valid ([`AnyBitPattern`]):
//! not `bool`.

use crate::driver::bind;
use crate::error::{DriverCode, Error, Result};
use crate::module::image::c_string;
use crate::module::registry::Module;
use crate::module::spec::GlobalSpec;
use crate::types::{AnyBitPattern, DeviceSafe};
use cudarc::driver::{sys, CudaContext, CudaStream};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Writes up to this many bytes are staged through a buffer of ours; larger ones wait for the copy.
const STAGE_MAX: usize = 64 * 1024;

/// A typed handle to one CUDA global variable of a `cuda_kernel!` module (see the module docs).
///
/// ```ignore
/// cuda_kernel!(r#"
///     __constant__ float coeffs[4];
///     extern "C" __global__ void poly(const float* x, float* y, int n) { ... }
/// "#);
/// coeffs.write(&stream, &[1.0, 0.5, 0.25, 0.125])?;
/// let back: Vec<f32> = coeffs.read(&stream)?;
/// ```
pub struct Global<T> {
    module: &'static Module,
    index: usize,
    _elem: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Global<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Global").field("name", &self.spec().name).field("bytes", &self.spec().bytes).finish()
    }
}

impl<T> Global<T> {
    /// The handle of global `index` of `module`.
    ///
    /// # Safety
    /// `index` must be a global of `module` whose C++ element type has `T`'s layout and whose
    /// every bit pattern the device can write is a valid `T` (reads hand the device's bytes out
    /// as `T` from safe code). Only `cuda_kernel!` makes handles.
    #[doc(hidden)]
    pub const unsafe fn new(module: &'static Module, index: usize) -> Self {
        Global { module, index, _elem: PhantomData }
    }

    /// Whether the variable's module is loaded in `ctx` (without loading it).
    pub(crate) fn is_loaded(&self, ctx: &CudaContext) -> bool {
        self.module.is_loaded(ctx)
    }

    fn spec(&self) -> &'static GlobalSpec {
        // A handle is only made for an existing index (the constructor's contract).
        &self.module.spec().globals[self.index]
    }
}

impl<T: DeviceSafe> Global<T> {
    /// The variable's name in the CUDA source.
    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    /// Number of elements, when known at build time (always on the nvcc path; on the NVRTC path
    /// for arrays with literal extents). [`Global::len`] asks the loaded module instead.
    pub fn static_len(&self) -> Option<usize> {
        let s = self.spec();
        s.bytes.filter(|_| s.elem_size > 0).map(|b| b as usize / s.elem_size)
    }

    /// The device address and size in bytes on `ctx`'s device, loading the module there first
    /// if needed.
    pub fn device_ptr(&self, ctx: &Arc<CudaContext>) -> Result<(sys::CUdeviceptr, usize)> {
        let spec = self.spec();
        let loaded = self.module.loaded(ctx)?;
        let symbol = loaded.global_symbols.get(self.index).map_or(spec.symbol.unwrap_or(spec.name), String::as_str);
        let name = c_string(symbol).map_err(|e| self.error(ctx, e, None))?;
        bind(ctx).map_err(|e| match e {
            Error::Driver { call, cause, .. } => self.error(ctx, format!("{call}: {cause}"), None),
            e => e,
        })?;
        let (mut ptr, mut bytes): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: `loaded.module` is a live module of `ctx` (made current above); the name is a
        // valid C string; both out-pointers are valid.
        let r = unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, loaded.raw_module, name.as_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(self.error(ctx, format!("symbol `{symbol}` not found in the module: {}", DriverCode(r)), None));
        }
        if spec.bytes.is_some_and(|b| b as usize != bytes) {
            return Err(self.error(
                ctx,
                format!(
                    "the module's variable is {bytes} bytes, the handle was generated for {}",
                    spec.bytes.unwrap_or(0)
                ),
                Some("rebuild: the CUDA source changed after the handle was generated".into()),
            ));
        }
        if spec.elem_size == 0 || bytes % spec.elem_size != 0 {
            return Err(self.error(
                ctx,
                format!(
                    "the variable is {bytes} bytes, not a whole number of `{}` ({} bytes)",
                    std::any::type_name::<T>(),
                    spec.elem_size
                ),
                Some("make the Rust type match the CUDA element type".into()),
            ));
        }
        Ok((ptr, bytes))
    }

    /// Number of `T` elements the variable holds on `ctx`'s device.
    pub fn len(&self, ctx: &Arc<CudaContext>) -> Result<usize> {
        self.device_ptr(ctx).map(|(_, bytes)| bytes / std::mem::size_of::<T>())
    }

    /// The variable's device address as a kernel argument (for `T**`-style parameters or to hand
    /// a `__device__` array to another kernel).
    ///
    /// The address is valid on `ctx`'s device only. A [`RawDevicePtr`](crate::RawDevicePtr)
    /// carries no context, so launches cannot check it as they check buffers: pass it only to
    /// kernels launched on a stream of `ctx`. Kernels of other modules that use the variable
    /// through it are not ordered with its copies between streams (only this module's are).
    pub fn address(&self, ctx: &Arc<CudaContext>) -> Result<crate::RawDevicePtr> {
        self.device_ptr(ctx).map(|(p, _)| crate::RawDevicePtr(p))
    }

    #[cold]
    fn error(&self, ctx: &CudaContext, cause: String, fix: Option<String>) -> Error {
        Error::Global { name: self.spec().name, origin: self.module.spec().origin, device: ctx.ordinal(), cause, fix }
    }

    /// The device address of elements `offset..offset + count`, checked against the length.
    fn range(&self, stream: &CudaStream, offset: usize, count: usize, what: &str) -> Result<sys::CUdeviceptr> {
        let ctx = stream.context();
        let (ptr, bytes) = self.device_ptr(ctx)?;
        let len = bytes / std::mem::size_of::<T>();
        if offset.checked_add(count).is_none_or(|end| end > len) {
            return Err(self.error(
                ctx,
                format!("{what} elements {offset}..{} of a variable holding {len}", offset.saturating_add(count)),
                Some(format!("pass at most {} elements from offset {offset}", len.saturating_sub(offset))),
            ));
        }
        Ok(ptr + (offset * std::mem::size_of::<T>()) as u64)
    }

    /// Copies `values` into the whole variable; `values.len()` must equal its length.
    pub fn write(&self, stream: &CudaStream, values: &[T]) -> Result<()> {
        let ctx = stream.context();
        let (ptr, bytes) = self.device_ptr(ctx)?;
        let len = bytes / std::mem::size_of::<T>();
        if values.len() != len {
            return Err(self.error(
                ctx,
                format!("{} values given for a variable of {len} elements", values.len()),
                Some("pass exactly as many values, or use `write_at` for part of it".into()),
            ));
        }
        self.copy_in(stream, ptr, values)
    }

    /// Copies `values` into elements `offset..offset + values.len()`.
    pub fn write_at(&self, stream: &CudaStream, offset: usize, values: &[T]) -> Result<()> {
        let dst = self.range(stream, offset, values.len(), "writing")?;
        self.copy_in(stream, dst, values)
    }

    fn copy_in(&self, stream: &CudaStream, dst: sys::CUdeviceptr, values: &[T]) -> Result<()> {
        if values.is_empty() {
            return Ok(());
        }
        let order = self.order(stream)?;
        if let Some(o) = order {
            o.before_copy(stream)?;
        }
        // The caller may free or change `values` as soon as this returns, but the slice may be
        // page-locked (cudarc's `PinnedHostSlice::as_slice`, registered or managed memory), where
        // `cuMemcpyHtoDAsync` is truly asynchronous. So the copy never reads the caller's memory
        // after returning: a small write (every `__constant__` one: at most 64 KiB) goes through a
        // fresh pageable buffer of ours, which the driver has staged when the call returns; a
        // larger one waits for the copy.
        let bytes = std::mem::size_of_val(values);
        let staged: Option<Vec<MaybeUninit<u8>>> = (bytes <= STAGE_MAX).then(|| {
            let mut v = Vec::with_capacity(bytes);
            // SAFETY: `v` has room for `bytes` bytes; `values` is `bytes` bytes of plain data
            // (possibly with padding, hence `MaybeUninit<u8>`); the regions do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(values.as_ptr() as *const MaybeUninit<u8>, v.as_mut_ptr(), bytes);
                v.set_len(bytes);
            }
            v
        });
        let src = staged.as_ref().map_or(values.as_ptr() as *const c_void, |v| v.as_ptr() as *const c_void);
        // SAFETY: `dst` addresses at least `bytes` bytes of the variable (checked by the callers);
        // `src` is `bytes` bytes of live host memory: our pageable buffer, consumed (staged by the
        // driver) when the call returns, or the caller's slice, borrowed until the stream is
        // synchronised below.
        let r = unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src, bytes, stream.cu_stream()) };
        self.check(stream, r, "cuMemcpyHtoDAsync")?;
        // Recorded for later launches; its failure is reported after the wait below, which
        // must come first: the DMA may still read the caller's slice.
        let ordered = order.map_or(Ok(()), |o| o.after_write(stream));
        if staged.is_none() {
            // The driver's wait: a deferred error of cudarc's must not return before the DMA
            // has read the caller's slice.
            crate::driver::sync::stream(stream)?;
        }
        ordered
    }

    /// The module's cross-stream ordering on `stream`'s device, when cudarc orders buffers
    /// between streams there (see `order.rs`).
    fn order(&self, stream: &CudaStream) -> Result<Option<&'static crate::module::order::GlobalOrder>> {
        if !crate::module::order::tracking(stream) {
            return Ok(None);
        }
        Ok(self.module.loaded(stream.context())?.order.as_ref())
    }

    /// Sets a one-element variable (`__device__ int counter;`).
    pub fn set(&self, stream: &CudaStream, value: T) -> Result<()> {
        self.write(stream, std::slice::from_ref(&value))
    }

    fn check(&self, stream: &CudaStream, r: sys::CUresult, call: &'static str) -> Result<()> {
        if r == sys::CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(Error::Driver { call, device: stream.context().ordinal(), cause: DriverCode(r) })
        }
    }
}

impl<T: AnyBitPattern> Global<T> {
    /// Reads the whole variable back (waits for earlier work on `stream`).
    pub fn read(&self, stream: &CudaStream) -> Result<Vec<T>> {
        let (src, bytes) = self.device_ptr(stream.context())?;
        let len = bytes / std::mem::size_of::<T>();
        let mut out: Vec<MaybeUninit<T>> = Vec::with_capacity(len);
        // SAFETY: MaybeUninit needs no initialisation.
        unsafe { out.set_len(len) };
        self.copy_out(stream, src, &mut out)?;
        // SAFETY: every element was written by the completed copy, and every bit pattern is a
        // valid `T` (`AnyBitPattern`).
        Ok(out.into_iter().map(|v| unsafe { v.assume_init() }).collect())
    }

    /// Reads a one-element variable.
    pub fn get(&self, stream: &CudaStream) -> Result<T> {
        let mut v = [MaybeUninit::<T>::uninit()];
        self.read_raw(stream, 0, &mut v)?;
        // SAFETY: written by the completed copy (see `read`).
        Ok(unsafe { v[0].assume_init() })
    }

    /// Reads elements `offset..offset + out.len()` into `out`.
    pub fn read_into(&self, stream: &CudaStream, offset: usize, out: &mut [T]) -> Result<()> {
        // SAFETY: `[T]` and `[MaybeUninit<T>]` have the same layout; only valid values are written.
        let raw = unsafe { &mut *(out as *mut [T] as *mut [MaybeUninit<T>]) };
        self.read_raw(stream, offset, raw)
    }

    fn read_raw(&self, stream: &CudaStream, offset: usize, out: &mut [MaybeUninit<T>]) -> Result<()> {
        let src = self.range(stream, offset, out.len(), "reading")?;
        self.copy_out(stream, src, out)
    }

    fn copy_out(&self, stream: &CudaStream, src: sys::CUdeviceptr, out: &mut [MaybeUninit<T>]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        if let Some(o) = self.order(stream)? {
            o.before_copy(stream)?;
        }
        // SAFETY: `src` addresses at least `size_of_val(out)` bytes (checked by the callers); `out` is
        // a live, exclusively borrowed host buffer, and the stream is synchronised below before
        // it is used.
        let r = unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                out.as_mut_ptr() as *mut c_void,
                src,
                std::mem::size_of_val(out),
                stream.cu_stream(),
            )
        };
        self.check(stream, r, "cuMemcpyDtoHAsync")?;
        // The driver's wait: a deferred error of cudarc's must not return before the DMA has
        // written `out`.
        crate::driver::sync::stream(stream)
    }
}

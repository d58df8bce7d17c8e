//! [`CudaArray<T>`]: an opaque, texture-ordered 1-D/2-D/3-D allocation (`cuArray3DCreate`),
//! with copies from and to host and device memory.

use super::format::Texel;
use crate::driver::{bind, device_attr};
use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext, CudaStream};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

/// The size of a [`CudaArray`] in elements: `height == 0` is 1-D, `depth == 0` 2-D.
///
/// Converts from `w` (1-D), `(w, h)` (2-D) and `(w, h, d)` (3-D).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Extent {
    /// Elements per row.
    pub width: usize,
    /// Rows (0 for a 1-D array).
    pub height: usize,
    /// Slices (0 for a 1-D or 2-D array).
    pub depth: usize,
}

impl Extent {
    /// 1, 2 or 3.
    pub fn dims(&self) -> usize {
        if self.height == 0 {
            1
        } else if self.depth == 0 {
            2
        } else {
            3
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        // Saturating: an extent too large to count is refused by the driver when an array is
        // made of it, and must not wrap into a small length first.
        self.width.saturating_mul(self.height.max(1)).saturating_mul(self.depth.max(1))
    }

    /// Whether the extent holds no element (never true of a created array).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<usize> for Extent {
    fn from(width: usize) -> Self {
        Extent { width, height: 0, depth: 0 }
    }
}

impl From<(usize, usize)> for Extent {
    fn from((width, height): (usize, usize)) -> Self {
        Extent { width, height, depth: 0 }
    }
}

impl From<(usize, usize, usize)> for Extent {
    fn from((width, height, depth): (usize, usize, usize)) -> Self {
        Extent { width, height, depth }
    }
}

/// The largest extents a device allows, per dimension count (from the device attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ArrayLimits {
    pub one: usize,
    pub two: [usize; 2],
    pub three: [usize; 3],
}

impl ArrayLimits {
    fn of(ctx: &CudaContext, surface: bool) -> Result<Self> {
        use sys::CUdevice_attribute::*;
        let a = |x| device_attr(ctx, x).map(|v| v as usize);
        Ok(if surface {
            ArrayLimits {
                one: a(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH)?,
                two: [
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH)?,
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT)?,
                ],
                three: [
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH)?,
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT)?,
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH)?,
                ],
            }
        } else {
            ArrayLimits {
                one: a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH)?,
                two: [
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH)?,
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT)?,
                ],
                three: [
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH)?,
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT)?,
                    a(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH)?,
                ],
            }
        })
    }

    /// Checks `e` against these limits; `what` names the array for the message.
    pub(crate) fn check(&self, e: Extent, surface: bool, what: impl Fn() -> String) -> Result<()> {
        let kind = if surface { "surface" } else { "texture" };
        let (sizes, max): (Vec<usize>, Vec<usize>) = match e.dims() {
            1 => (vec![e.width], vec![self.one]),
            2 => (vec![e.width, e.height], self.two.to_vec()),
            _ => (vec![e.width, e.height, e.depth], self.three.to_vec()),
        };
        if e.width == 0 {
            return Err(Error::Texture {
                what: what(),
                cause: "the width is 0".into(),
                fix: Some("give every dimension at least one element (height 0 means 1-D, depth 0 means 2-D)".into()),
            });
        }
        for ((axis, size), limit) in ["width", "height", "depth"].iter().zip(&sizes).zip(&max) {
            if size > limit {
                return Err(Error::Texture {
                    what: what(),
                    cause: format!(
                        "{axis} {size} is over this device's {}-D {kind} limit of {limit} ({})",
                        e.dims(),
                        max.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(" x ")
                    ),
                    fix: Some(
                        "split the data into tiles of at most that size, or use a texture over linear memory (1-D)"
                            .into(),
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A CUDA array of `T`: device memory laid out for the texture hardware, read by kernels through
/// a [`Texture`](super::Texture) (filtered, with address modes) and, when created with
/// [`CudaArray::with_surface`], read and written through a [`Surface`](super::Surface).
///
/// Created on a context, sized in elements ([`Extent`]: `w`, `(w, h)` or `(w, h, d)`) within the
/// device's texture (or surface) limits. Copies go through `cuMemcpy3DAsync` on a stream of the
/// same context: from and to device buffers stream-ordered (with cudarc's event tracking of the
/// buffer), from and to host slices waiting for the copy (a host slice is borrowed only for the
/// call).
///
/// Dropping the array waits for the work queued on its context (copies into it may still be in
/// flight) and frees it; textures and surfaces borrow (or share, through an `Arc`) the array, so
/// it cannot be dropped while one exists.
///
/// ```no_run
/// use cuda_embed_runtime::texture::CudaArray;
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let mut image = CudaArray::<f32>::new(&ctx, (640, 480))?;
/// image.copy_from_host(&stream, &vec![0.5f32; 640 * 480])?;
/// assert_eq!(image.to_host_vec(&stream)?.len(), 640 * 480);
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
pub struct CudaArray<T> {
    handle: sys::CUarray,
    ctx: Arc<CudaContext>,
    extent: Extent,
    surface: bool,
    _t: PhantomData<T>,
}

// SAFETY: a CUarray is a driver handle usable from any thread with its context bound (every use
// binds it); the array owns no host data.
unsafe impl<T: Send> Send for CudaArray<T> {}
// SAFETY: as above; `&self` methods only read the handle.
unsafe impl<T: Sync> Sync for CudaArray<T> {}

impl<T> std::fmt::Debug for CudaArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaArray")
            .field("device", &self.ctx.ordinal())
            .field("extent", &self.extent)
            .field("surface", &self.surface)
            .finish()
    }
}

impl<T: Texel> CudaArray<T> {
    /// A 1-D (`w`), 2-D (`(w, h)`) or 3-D (`(w, h, d)`) array for textures. Its contents are
    /// undefined until copied in.
    pub fn new(ctx: &Arc<CudaContext>, extent: impl Into<Extent>) -> Result<Self> {
        Self::create(ctx, extent.into(), false)
    }

    /// Like [`CudaArray::new`], and also usable as a [`Surface`](super::Surface) (kernels
    /// `surf2Dwrite` into it); the device's surface size limits apply.
    pub fn with_surface(ctx: &Arc<CudaContext>, extent: impl Into<Extent>) -> Result<Self> {
        Self::create(ctx, extent.into(), true)
    }

    fn create(ctx: &Arc<CudaContext>, extent: Extent, surface: bool) -> Result<Self> {
        let what = || {
            format!(
                "a {}-D CudaArray<{}> of {} on device {}",
                extent.dims(),
                T::CUDA_NAME,
                describe(extent),
                ctx.ordinal()
            )
        };
        ArrayLimits::of(ctx, surface)?.check(extent, surface, what)?;
        bind(ctx)?;
        let desc = sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: extent.width,
            Height: extent.height,
            Depth: extent.depth,
            Format: T::FORMAT,
            NumChannels: T::CHANNELS,
            Flags: if surface { sys::CUDA_ARRAY3D_SURFACE_LDST } else { 0 },
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: the context is bound; `desc` is a complete descriptor; `handle` is an
        // out-pointer the driver fills on success.
        let r = unsafe { sys::cuArray3DCreate_v2(&mut handle, &desc) };
        check(ctx, r, "cuArray3DCreate")?;
        Ok(CudaArray { handle, ctx: ctx.clone(), extent, surface, _t: PhantomData })
    }

    /// The size in elements.
    pub fn extent(&self) -> Extent {
        self.extent
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.extent.len()
    }

    /// Always false: an array has at least one element.
    pub fn is_empty(&self) -> bool {
        self.extent.is_empty()
    }

    /// Whether it was created with [`CudaArray::with_surface`].
    pub fn is_surface(&self) -> bool {
        self.surface
    }

    /// The context it lives in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The driver handle (`CUarray`), for driver calls this crate does not wrap. It stays valid
    /// while `self` lives.
    pub fn cu_array(&self) -> sys::CUarray {
        self.handle
    }

    /// Copies `src` (row-major, `len()` elements) into the array, and waits for the copy.
    pub fn copy_from_host(&mut self, stream: &CudaStream, src: &[T]) -> Result<()> {
        self.same_length(src.len(), "host slice", "copy_from_host")?;
        let mut p = self.params();
        p.srcMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
        p.srcHost = src.as_ptr() as *const c_void;
        self.set_dst_array(&mut p);
        // SAFETY: `src` holds `len()` elements, the array as many (checked); `src` is borrowed
        // until the stream is synchronised in `copy`.
        unsafe { self.copy(stream, &p, true) }
    }

    /// Copies the array (row-major) into `dst` (`len()` elements), and waits for the copy.
    pub fn copy_to_host(&self, stream: &CudaStream, dst: &mut [T]) -> Result<()> {
        self.same_length(dst.len(), "host slice", "copy_to_host")?;
        let mut p = self.params();
        self.set_src_array(&mut p);
        p.dstMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
        p.dstHost = dst.as_mut_ptr() as *mut c_void;
        // SAFETY: as in `copy_from_host`, the other way.
        unsafe { self.copy(stream, &p, true) }
    }

    /// The array's contents as a `Vec` (row-major).
    pub fn to_host_vec(&self, stream: &CudaStream) -> Result<Vec<T>> {
        // SAFETY: every `Texel` is `ValidAsZeroBits` (numbers and vectors of numbers).
        let zero: T = unsafe { std::mem::zeroed() };
        let mut v = vec![zero; self.len()];
        self.copy_to_host(stream, &mut v)?;
        Ok(v)
    }

    /// Copies a device buffer of `len()` elements (row-major) into the array, ordered on `stream`.
    /// The buffer's length is trusted as its [`DeviceBuffer`](crate::DeviceBuffer) impl vouches.
    pub fn copy_from_device<S: crate::DeviceBuffer<T>>(&mut self, stream: &CudaStream, src: &S) -> Result<()> {
        self.same_length(src.len(), "device buffer", "copy_from_device")?;
        self.same_context(src.stream(), "copy_from_device")?;
        let (ptr, _record) = src.device_ptr(stream);
        let mut p = self.params();
        p.srcMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        p.srcDevice = ptr;
        self.set_dst_array(&mut p);
        // SAFETY: `ptr` addresses `len()` elements (checked), live until `_record` orders the
        // buffer's later use after this copy.
        unsafe { self.copy(stream, &p, false) }
    }

    /// Copies the array (row-major) into a device buffer of `len()` elements, ordered on `stream`.
    pub fn copy_to_device<S: crate::DeviceBufferMut<T>>(&self, stream: &CudaStream, dst: &mut S) -> Result<()> {
        self.same_length(dst.len(), "device buffer", "copy_to_device")?;
        self.same_context(dst.stream(), "copy_to_device")?;
        let (ptr, _record) = dst.device_ptr_mut(stream);
        let mut p = self.params();
        self.set_src_array(&mut p);
        p.dstMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        p.dstDevice = ptr;
        // SAFETY: as in `copy_from_device`, the other way.
        unsafe { self.copy(stream, &p, false) }
    }

    fn same_length(&self, len: usize, what: &str, call: &str) -> Result<()> {
        if len == self.len() {
            return Ok(());
        }
        Err(Error::Texture {
            what: format!("CudaArray<{}>::{call}", T::CUDA_NAME),
            cause: format!("the {what} has {len} elements, the array {} ({})", self.len(), describe(self.extent)),
            fix: Some("copy whole arrays: give a slice of exactly width x height x depth elements".into()),
        })
    }

    fn same_context(&self, stream: &CudaStream, call: &str) -> Result<()> {
        if stream.context().cu_ctx() == self.ctx.cu_ctx() {
            return Ok(());
        }
        Err(Error::Texture {
            what: format!("CudaArray<{}>::{call}", T::CUDA_NAME),
            cause: format!(
                "the array is on device {} but the stream or buffer is of another context (device {})",
                self.ctx.ordinal(),
                stream.context().ordinal()
            ),
            fix: Some("use a stream and buffers of the array's context (`array.context()`)".into()),
        })
    }

    /// A copy descriptor with the extent filled in.
    fn params(&self) -> sys::CUDA_MEMCPY3D {
        memcpy3d(self.extent, std::mem::size_of::<T>())
    }

    fn set_src_array(&self, p: &mut sys::CUDA_MEMCPY3D) {
        p.srcMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_ARRAY;
        p.srcArray = self.handle;
    }

    fn set_dst_array(&self, p: &mut sys::CUDA_MEMCPY3D) {
        p.dstMemoryType = sys::CUmemorytype::CU_MEMORYTYPE_ARRAY;
        p.dstArray = self.handle;
    }

    /// Runs the copy on `stream` (of this context), waiting for it when `wait`.
    ///
    /// # Safety
    /// `p` must describe memory that is live for the copy (until the stream reaches it, or until
    /// this returns when `wait`).
    unsafe fn copy(&self, stream: &CudaStream, p: &sys::CUDA_MEMCPY3D, wait: bool) -> Result<()> {
        self.same_context(stream, "copy")?;
        bind(&self.ctx)?;
        // SAFETY: the context is bound; `p` is complete and its memory live (caller).
        let r = unsafe { sys::cuMemcpy3DAsync_v2(p, stream.cu_stream()) };
        check(&self.ctx, r, "cuMemcpy3DAsync")?;
        if wait {
            // The driver's own wait: a deferred error cudarc recorded must not return before the
            // copy into or out of the caller's memory is done.
            crate::driver::sync::stream(stream)?;
        }
        Ok(())
    }
}

impl<T> Drop for CudaArray<T> {
    fn drop(&mut self) {
        // Copies into or out of the array, and kernels sampling it, may still be queued; the
        // driver's destroy is not stream-ordered, so it waits for the context first (the
        // driver's wait: a deferred error of cudarc's must not cut it short). Errors cannot be
        // reported from a drop; when the work cannot finish the array is leaked.
        let handle = self.handle;
        let _ = crate::driver::sync::context_then(&self.ctx, || {
            // SAFETY: `handle` was created in this (current) context and is destroyed once; the
            // work using it has finished.
            let _ = unsafe { sys::cuArrayDestroy(handle) };
        });
    }
}

/// A whole-extent copy descriptor for elements of `elem` bytes, linear memory with packed rows
/// on either side; the caller sets the source and destination. (Built field by field: the
/// memory-type enum has no zero value, so the struct cannot be zero-initialised.)
fn memcpy3d(extent: Extent, elem: usize) -> sys::CUDA_MEMCPY3D {
    let row = extent.width * elem;
    let rows = extent.height.max(1);
    let host = sys::CUmemorytype::CU_MEMORYTYPE_HOST;
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: host,
        srcHost: std::ptr::null(),
        srcDevice: 0,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: row,
        srcHeight: rows,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: host,
        dstHost: std::ptr::null_mut(),
        dstDevice: 0,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: row,
        dstHeight: rows,
        WidthInBytes: row,
        Height: rows,
        Depth: extent.depth.max(1),
    }
}

/// `640 x 480`, `64`, `8 x 8 x 8`.
pub(crate) fn describe(e: Extent) -> String {
    match e.dims() {
        1 => format!("{}", e.width),
        2 => format!("{} x {}", e.width, e.height),
        _ => format!("{} x {} x {}", e.width, e.height, e.depth),
    }
}

/// A driver result as an [`Error::Driver`] naming `call` and the context's device.
pub(crate) fn check(ctx: &CudaContext, r: sys::CUresult, call: &'static str) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Driver { call, device: ctx.ordinal(), cause: DriverCode(r) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: ArrayLimits = ArrayLimits { one: 131072, two: [131072, 65536], three: [16384, 16384, 16384] };

    #[test]
    fn extents_convert_and_count() {
        assert_eq!(Extent::from(7).dims(), 1);
        assert_eq!(Extent::from((7, 3)).dims(), 2);
        assert_eq!(Extent::from((7, 3, 2)).dims(), 3);
        assert_eq!(Extent::from((7, 3, 2)).len(), 42);
        assert_eq!(Extent::from(7).len(), 7);
        assert_eq!(describe((640, 480).into()), "640 x 480");
        // Too large to count: saturates instead of wrapping into a small length.
        assert_eq!(Extent::from((usize::MAX / 2, 3, 1)).len(), usize::MAX);
        assert_eq!(Extent::from((1 << 40, 1 << 30, 1 << 20)).len(), usize::MAX);
    }

    #[test]
    fn copy_descriptors_cover_the_whole_extent() {
        let p = memcpy3d((640, 480).into(), 4);
        assert_eq!((p.WidthInBytes, p.Height, p.Depth, p.srcPitch, p.dstHeight), (2560, 480, 1, 2560, 480));
        let p = memcpy3d(100.into(), 16);
        assert_eq!((p.WidthInBytes, p.Height, p.Depth), (1600, 1, 1));
        let p = memcpy3d((9, 7, 5).into(), 4);
        assert_eq!((p.WidthInBytes, p.Height, p.Depth), (36, 7, 5));
    }

    #[test]
    fn limits_name_the_dimension_and_the_device_limit() {
        let what = || "a 2-D CudaArray<float>".to_string();
        H100.check((131072, 65536).into(), false, what).unwrap();
        let e = H100.check((200_000, 4).into(), false, what).unwrap_err().to_string();
        assert!(e.contains("width 200000 is over this device's 2-D texture limit of 131072 (131072 x 65536)"), "{e}");
        let e = H100.check((8, 8, 20_000).into(), true, what).unwrap_err().to_string();
        assert!(e.contains("depth 20000 is over this device's 3-D surface limit"), "{e}");
        let e = H100.check(0.into(), false, what).unwrap_err().to_string();
        assert!(e.contains("the width is 0"), "{e}");
    }
}

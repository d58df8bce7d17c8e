//! [`Texture`] and [`Surface`]: owned texture and surface objects that keep what they sample
//! alive, and destroy the driver object when dropped.

use super::array::{check, describe, CudaArray};
use super::desc::{ReadMode, TextureDesc};
use super::format::Texel;
use crate::args::buffer::DeviceBuffer;
use crate::driver::{bind, device_attr};
use crate::error::{Error, Result};
use crate::types::{SurfaceObject, TextureObject};
use cudarc::driver::{sys, CudaContext};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

/// What an object keeps alive: a borrow (the lifetime `'a`) or a share of an array.
enum Keep<'a> {
    Borrowed(PhantomData<&'a ()>),
    // Read by nobody: held so the array outlives the object.
    Shared(#[allow(dead_code)] Arc<dyn Any + Send + Sync>),
}

/// The memory an object reads or writes, for a graph's dependency inference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A CUDA array, by handle.
    Array(u64),
    /// Linear device memory `[lo, hi)`.
    Linear(u64, u64),
}

/// A texture object (`cudaTextureObject_t`) over a [`CudaArray`] or over linear device memory,
/// passed to a kernel's `cudaTextureObject_t` parameter as `&texture` (or as
/// [`Texture::handle`]).
///
/// It borrows what it samples for `'a` (or, from [`Texture::shared`], holds an `Arc` of the
/// array), so the memory cannot be freed or written from the host while the texture exists: an
/// object outliving its memory is a compile error. Dropping it waits for the work queued on its
/// context, which may still sample it (the driver's destroy is not stream-ordered, and using a
/// destroyed handle is undefined), then destroys it: textures are meant to live across many
/// launches.
///
/// ```no_run
/// use cuda_embed_runtime::texture::{AddressMode, CudaArray, FilterMode, Texture, TextureDesc};
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let mut image = CudaArray::<f32>::new(&ctx, (64, 64))?;
/// image.copy_from_host(&stream, &vec![1.0; 64 * 64])?;
/// let desc = TextureDesc::new().filter(FilterMode::Linear).address(AddressMode::Clamp);
/// let tex = Texture::new(&image, &desc)?;
/// // sample::launch(&stream, cfg, &tex, &mut out)?  for `__global__ void sample(cudaTextureObject_t t, float* out)`
/// # let _ = tex;
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
pub struct Texture<'a> {
    handle: TextureObject,
    ctx: Arc<CudaContext>,
    pub(crate) source: Source,
    _keep: Keep<'a>,
}

/// A surface object (`cudaSurfaceObject_t`) over a [`CudaArray`] created with
/// [`CudaArray::with_surface`]: kernels read and write it with `surf1Dread`/`surf2Dwrite`/...
/// (x in bytes). Passed to a kernel's `cudaSurfaceObject_t` parameter as `&surface`.
///
/// Borrows the array for `'a` (or holds an `Arc` of it, from [`Surface::shared`]) and is
/// destroyed on drop, after the work queued on its context, like a [`Texture`]. The borrow is
/// shared: a texture may read the same array (kernel writes through the surface are not seen by
/// the texture cache within the same launch, CUDA's rule).
///
/// ```no_run
/// use cuda_embed_runtime::texture::{CudaArray, Surface};
/// let ctx = cuda_embed_runtime::context(0)?;
/// let target = CudaArray::<f32>::with_surface(&ctx, (256, 256))?;
/// let surface = Surface::new(&target)?;
/// // fill::launch(&stream, cfg, &surface, 256, 256)?  for `__global__ void fill(cudaSurfaceObject_t s, int w, int h)`
/// # let _ = surface;
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
pub struct Surface<'a> {
    handle: SurfaceObject,
    ctx: Arc<CudaContext>,
    pub(crate) source: Source,
    _keep: Keep<'a>,
}

impl<'a> Texture<'a> {
    /// A texture over `array`, sampled as `desc` says; `desc` is checked first
    /// ([`TextureDesc::check`]), so a descriptor the hardware cannot honour is an
    /// [`Error::Texture`] that says what to change.
    pub fn new<T: Texel>(array: &'a CudaArray<T>, desc: &TextureDesc) -> Result<Self> {
        // SAFETY: the array outlives the texture: it is borrowed for `'a`.
        unsafe { Self::over_array(array, desc, Keep::Borrowed(PhantomData)) }
    }

    /// A 1-D texture over linear device memory (`CU_RESOURCE_TYPE_LINEAR`): kernels read it with
    /// `tex1Dfetch<T>(t, i)`, integer index, no filtering, no address modes (an index out of
    /// range reads zero). `read` picks integers as themselves or as normalised floats.
    ///
    /// The buffer must start at the device's texture alignment (`CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT`,
    /// 512 bytes on current GPUs) and hold at most `CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH`
    /// elements; otherwise this is an [`Error::Texture`] naming the limit.
    ///
    /// The texture may be read over `buffer.len()` elements, so the buffer is one of this crate's
    /// [`DeviceBuffer`]s (`CudaSlice`, `CudaView`, `CudaViewMut`, or a type whose `unsafe impl`
    /// promises its length), not any `DevicePtr`: that trait is safe to implement, and a type
    /// reporting more elements than it has would make kernels read past its memory.
    ///
    /// ```compile_fail,E0277
    /// use cuda_embed_runtime::cudarc::driver::{sys, CudaSlice, CudaStream, DevicePtr, DeviceSlice, SyncOnDrop};
    /// use cuda_embed_runtime::texture::{ReadMode, Texture};
    /// use std::sync::Arc;
    /// /// Claims a thousand times the elements it has.
    /// struct Liar(CudaSlice<f32>);
    /// impl DeviceSlice<f32> for Liar {
    ///     fn len(&self) -> usize { self.0.len() * 1000 }
    ///     fn stream(&self) -> &Arc<CudaStream> { self.0.stream() }
    /// }
    /// impl DevicePtr<f32> for Liar {
    ///     fn device_ptr<'a>(&'a self, s: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) { self.0.device_ptr(s) }
    /// }
    /// fn texture(l: &Liar) { let _ = Texture::linear(l, ReadMode::ElementType); }
    /// ```
    pub fn linear<T: Texel, S: DeviceBuffer<T>>(buffer: &'a S, read: ReadMode) -> Result<Self> {
        let desc = TextureDesc::new().read_mode(read);
        desc.check::<T>(1)?;
        let stream = buffer.stream().clone();
        let ctx = stream.context().clone();
        let what = || format!("a linear texture of {} `{}` on device {}", buffer.len(), T::CUDA_NAME, ctx.ordinal());
        let (ptr, record) = buffer.device_ptr(&stream);
        drop(record);
        let align = device_attr(&ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)? as u64;
        aligned(ptr, align, "the buffer's start", what)?;
        let max = device_attr(&ctx, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH)?;
        if buffer.is_empty() || buffer.len() > max as usize {
            return Err(Error::Texture {
                what: what(),
                cause: format!("a linear texture holds 1 to {max} elements on this device"),
                fix: Some("sample a shorter view, or copy the data into a CudaArray".into()),
            });
        }
        let bytes = buffer.num_bytes();
        let mut res = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR);
        res.res.linear = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_3 {
            devPtr: ptr,
            format: T::FORMAT,
            numChannels: T::CHANNELS,
            sizeInBytes: bytes,
        };
        // SAFETY: the buffer outlives the texture (borrowed for `'a`).
        let handle = unsafe { create_texture::<T>(&ctx, &res, &desc)? };
        Ok(Texture { handle, ctx, source: Source::Linear(ptr, ptr + bytes as u64), _keep: Keep::Borrowed(PhantomData) })
    }

    /// A 2-D texture over pitched linear memory (`CU_RESOURCE_TYPE_PITCH2D`): `height` rows of
    /// `width` elements, row `y` starting at element `y * pitch` of `buffer`. Filtering, address
    /// modes and normalised coordinates work as for an array; no copy into an array is needed.
    ///
    /// The buffer must start at the device's texture alignment, `pitch * size_of::<T>()` must be
    /// a multiple of `CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT` (32 bytes on current GPUs),
    /// and the sizes within the device's pitched-2-D limits; each is checked here.
    ///
    /// As for [`Texture::linear`], the buffer's length is trusted, so it is a [`DeviceBuffer`].
    ///
    /// ```compile_fail,E0277
    /// use cuda_embed_runtime::cudarc::driver::{sys, CudaSlice, CudaStream, DevicePtr, DeviceSlice, SyncOnDrop};
    /// use cuda_embed_runtime::texture::{Texture, TextureDesc};
    /// use std::sync::Arc;
    /// struct Liar(CudaSlice<f32>);
    /// impl DeviceSlice<f32> for Liar {
    ///     fn len(&self) -> usize { 1 << 30 }
    ///     fn stream(&self) -> &Arc<CudaStream> { self.0.stream() }
    /// }
    /// impl DevicePtr<f32> for Liar {
    ///     fn device_ptr<'a>(&'a self, s: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) { self.0.device_ptr(s) }
    /// }
    /// fn texture(l: &Liar) { let _ = Texture::pitched(l, 1024, 1024, 1024, &TextureDesc::new()); }
    /// ```
    pub fn pitched<T: Texel, S: DeviceBuffer<T>>(
        buffer: &'a S,
        width: usize,
        height: usize,
        pitch: usize,
        desc: &TextureDesc,
    ) -> Result<Self> {
        desc.check::<T>(2)?;
        let stream = buffer.stream().clone();
        let ctx = stream.context().clone();
        let what = || {
            format!(
                "a pitched 2-D texture of {width} x {height} `{}` (pitch {pitch}) on device {}",
                T::CUDA_NAME,
                ctx.ordinal()
            )
        };
        // Checked arithmetic: sizes near usize::MAX must be refused, not wrap into a small need.
        let needed = pitch.checked_mul(height.saturating_sub(1)).and_then(|n| n.checked_add(width));
        if width == 0 || height == 0 || pitch < width || needed.is_none_or(|n| buffer.len() < n) {
            return Err(Error::Texture {
                what: what(),
                cause: format!(
                    "the buffer has {} elements; {width} x {height} with a pitch of {pitch} needs a pitch of at least the width and {} elements",
                    buffer.len(),
                    needed.map_or_else(|| "more than usize::MAX".to_string(), |n| n.to_string())
                ),
                fix: Some("pass the row length in elements as `pitch` and a buffer of at least pitch x height elements".into()),
            });
        }
        use sys::CUdevice_attribute::*;
        let (ptr, record) = buffer.device_ptr(&stream);
        drop(record);
        let align = device_attr(&ctx, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)? as u64;
        aligned(ptr, align, "the buffer's start", what)?;
        let pitch_bytes = pitch.saturating_mul(std::mem::size_of::<T>());
        let pitch_align = device_attr(&ctx, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT)? as u64;
        aligned(pitch_bytes as u64, pitch_align, "the pitch in bytes", what)?;
        let limits = [
            ("width", width, device_attr(&ctx, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH)?),
            ("height", height, device_attr(&ctx, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT)?),
            ("pitch in bytes", pitch_bytes, device_attr(&ctx, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH)?),
        ];
        for (name, v, max) in limits {
            if v > max as usize {
                return Err(Error::Texture {
                    what: what(),
                    cause: format!("the {name} {v} is over this device's pitched 2-D texture limit of {max}"),
                    fix: Some("copy the data into a CudaArray (larger limits), or split it into tiles".into()),
                });
            }
        }
        let mut res = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_PITCH2D);
        res.res.pitch2D = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_4 {
            devPtr: ptr,
            format: T::FORMAT,
            numChannels: T::CHANNELS,
            width,
            height,
            pitchInBytes: pitch_bytes,
        };
        // SAFETY: the buffer outlives the texture (borrowed for `'a`).
        let handle = unsafe { create_texture::<T>(&ctx, &res, desc)? };
        let end = ptr + (buffer.num_bytes()) as u64;
        Ok(Texture { handle, ctx, source: Source::Linear(ptr, end), _keep: Keep::Borrowed(PhantomData) })
    }

    /// # Safety
    /// The array must outlive the texture (`keep` borrows or holds it).
    unsafe fn over_array<T: Texel>(array: &CudaArray<T>, desc: &TextureDesc, keep: Keep<'a>) -> Result<Self> {
        desc.check::<T>(array.extent().dims())?;
        let res = array_resource(array.cu_array());
        let ctx = array.context().clone();
        // SAFETY: forwarded: the array outlives the texture.
        let handle = unsafe { create_texture::<T>(&ctx, &res, desc)? };
        Ok(Texture { handle, ctx, source: Source::Array(array.cu_array() as u64), _keep: keep })
    }

    /// The handle a kernel receives; valid while `self` lives.
    pub fn handle(&self) -> TextureObject {
        self.handle
    }

    /// The context the texture belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
}

impl Texture<'static> {
    /// A texture that shares ownership of `array`: it lives as long as any texture, surface or
    /// other `Arc` of it, so the texture can be stored without a lifetime.
    pub fn shared<T: Texel + Send + Sync>(array: Arc<CudaArray<T>>, desc: &TextureDesc) -> Result<Self> {
        let keep = Keep::Shared(array.clone());
        // SAFETY: the texture holds an `Arc` of the array.
        unsafe { Self::over_array(&array, desc, keep) }
    }
}

impl<'a> Surface<'a> {
    /// A surface over `array`, which must have been created with [`CudaArray::with_surface`].
    pub fn new<T: Texel>(array: &'a CudaArray<T>) -> Result<Self> {
        // SAFETY: the array is borrowed for `'a`.
        unsafe { Self::over_array(array, Keep::Borrowed(PhantomData)) }
    }

    /// # Safety
    /// The array must outlive the surface.
    unsafe fn over_array<T: Texel>(array: &CudaArray<T>, keep: Keep<'a>) -> Result<Self> {
        let ctx = array.context().clone();
        if !array.is_surface() {
            return Err(Error::Texture {
                what: format!(
                    "a surface over a {}-D CudaArray<{}> of {} on device {}",
                    array.extent().dims(),
                    T::CUDA_NAME,
                    describe(array.extent()),
                    ctx.ordinal()
                ),
                cause: "the array was not created for surface load/store".into(),
                fix: Some("create it with `CudaArray::with_surface` instead of `CudaArray::new`".into()),
            });
        }
        let res = array_resource(array.cu_array());
        bind(&ctx)?;
        let mut handle = 0;
        // SAFETY: the context is bound; `res` names a live surface-capable array of it.
        let r = unsafe { sys::cuSurfObjectCreate(&mut handle, &res) };
        check(&ctx, r, "cuSurfObjectCreate")?;
        Ok(Surface { handle: SurfaceObject(handle), ctx, source: Source::Array(array.cu_array() as u64), _keep: keep })
    }

    /// The handle a kernel receives; valid while `self` lives.
    pub fn handle(&self) -> SurfaceObject {
        self.handle
    }

    /// The context the surface belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
}

impl Surface<'static> {
    /// A surface that shares ownership of `array` (see [`Texture::shared`]).
    pub fn shared<T: Texel + Send + Sync>(array: Arc<CudaArray<T>>) -> Result<Self> {
        let keep = Keep::Shared(array.clone());
        // SAFETY: the surface holds an `Arc` of the array.
        unsafe { Self::over_array(&array, keep) }
    }
}

impl Drop for Texture<'_> {
    fn drop(&mut self) {
        // Kernels queued on any stream of the context may still sample the texture: wait for
        // the context (the driver's wait, which a deferred error of cudarc's does not cut
        // short). Errors cannot be reported from a drop; when the work cannot finish the
        // object is leaked.
        let handle = self.handle.0;
        let _ = crate::driver::sync::context_then(&self.ctx, || {
            // SAFETY: created in this (current) context, destroyed once, no longer in use.
            let _ = unsafe { sys::cuTexObjectDestroy(handle) };
        });
    }
}

impl Drop for Surface<'_> {
    fn drop(&mut self) {
        // As for a texture: kernels may still write through the surface.
        let handle = self.handle.0;
        let _ = crate::driver::sync::context_then(&self.ctx, || {
            // SAFETY: created in this (current) context, destroyed once, no longer in use.
            let _ = unsafe { sys::cuSurfObjectDestroy(handle) };
        });
    }
}

impl std::fmt::Debug for Texture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Texture").field("handle", &self.handle.0).field("device", &self.ctx.ordinal()).finish()
    }
}

impl std::fmt::Debug for Surface<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surface").field("handle", &self.handle.0).field("device", &self.ctx.ordinal()).finish()
    }
}

/// A resource descriptor of `kind` with every byte of the union zero; the caller writes the
/// member `kind` reads (writing a union field is safe).
fn resource(kind: sys::CUresourcetype) -> sys::CUDA_RESOURCE_DESC {
    let reserved = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_5 { reserved: [0; 32] };
    sys::CUDA_RESOURCE_DESC { resType: kind, res: sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1 { reserved }, flags: 0 }
}

fn array_resource(array: sys::CUarray) -> sys::CUDA_RESOURCE_DESC {
    let mut res = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY);
    res.res.array = sys::CUDA_RESOURCE_DESC_st__bindgen_ty_1__bindgen_ty_1 { hArray: array };
    res
}

/// `cuTexObjectCreate` in `ctx`.
///
/// # Safety
/// `res` must describe memory of `ctx` that outlives the texture.
unsafe fn create_texture<T: Texel>(
    ctx: &CudaContext,
    res: &sys::CUDA_RESOURCE_DESC,
    desc: &TextureDesc,
) -> Result<TextureObject> {
    bind(ctx)?;
    let tex = desc.raw::<T>();
    let mut handle = 0;
    // SAFETY: the context is bound; `res` and `tex` are complete descriptors (caller: live
    // memory); no resource view.
    let r = unsafe { sys::cuTexObjectCreate(&mut handle, res, &tex, std::ptr::null()) };
    check(ctx, r, "cuTexObjectCreate")?;
    Ok(TextureObject(handle))
}

fn aligned(value: u64, align: u64, name: &str, what: impl Fn() -> String) -> Result<()> {
    if align <= 1 || value.is_multiple_of(align) {
        return Ok(());
    }
    Err(Error::Texture {
        what: what(),
        cause: format!("{name} ({value:#x}) is not a multiple of the device's texture alignment of {align} bytes"),
        fix: Some(format!(
            "start the texture at an element whose address is a multiple of {align} (a view at an aligned offset), and keep pitches multiples of the pitch alignment"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misalignment_names_the_value_and_the_fix() {
        aligned(1024, 512, "the buffer's start", || "x".into()).unwrap();
        let e = aligned(0x7f00_0100, 512, "the buffer's start", || "a linear texture".into()).unwrap_err().to_string();
        assert!(
            e.contains(
                "the buffer's start (0x7f000100) is not a multiple of the device's texture alignment of 512 bytes"
            ),
            "{e}"
        );
    }

    #[test]
    fn array_resource_is_an_array() {
        let r = array_resource(std::ptr::null_mut());
        assert_eq!(r.resType, sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY);
        let r = resource(sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR);
        // SAFETY: the union was initialised through `reserved`, all zero.
        assert_eq!(unsafe { r.res.reserved.reserved }, [0; 32]);
    }
}

//! Textures and surfaces, as PyCUDA and the CUDA runtime know them, typed and owned.
//!
//! - [`CudaArray<T>`]: a 1-D/2-D/3-D CUDA array of a [`Texel`] type (`f32`, `f16`, 8/16/32-bit
//!   integers, their 2- and 4-channel vectors), with copies from and to host and device memory.
//! - [`Texture`]: a `cudaTextureObject_t` over an array ([`Texture::new`], with a
//!   [`TextureDesc`]: filter, address mode per dimension, normalised coordinates, read mode),
//!   over a `CudaSlice` ([`Texture::linear`], `tex1Dfetch`) or over pitched 2-D memory
//!   ([`Texture::pitched`]).
//! - [`Surface`]: a `cudaSurfaceObject_t` over an array made with [`CudaArray::with_surface`].
//!
//! Each object borrows what it samples (`Texture<'a>`), or shares the array through an `Arc`
//! ([`Texture::shared`]), so the memory cannot go away first; each destroys its driver object on
//! drop, after the work queued on its context. A kernel's `cudaTextureObject_t` parameter takes
//! `&texture` (checked to be of the launch stream's context) or a raw [`TextureObject`]:
//!
//! ```no_run
//! use cuda_embed_runtime::texture::{AddressMode, CudaArray, FilterMode, Texture, TextureDesc};
//! # fn main() -> cuda_embed_runtime::Result<()> {
//! let ctx = cuda_embed_runtime::context(0)?;
//! let stream = ctx.default_stream();
//! let mut image = CudaArray::<f32>::new(&ctx, (4, 4))?;
//! image.copy_from_host(&stream, &[0.0; 16])?;
//! let tex = Texture::new(&image, &TextureDesc::new().filter(FilterMode::Linear).address(AddressMode::Clamp))?;
//! // unsafe { resize::launch(&stream, cfg, &tex, &mut out, w, h)? };
//! # let _ = tex; Ok(()) }
//! ```
//!
//! Errors are [`Error::Texture`](crate::Error::Texture) (a description the hardware cannot
//! honour, a size over the device's limits, a misaligned buffer: each says what to change) or
//! [`Error::Driver`](crate::Error::Driver) for a failed driver call.
//!
//! [`TextureObject`]: crate::TextureObject

mod arg;
mod array;
mod desc;
mod format;
mod object;

#[doc(hidden)]
pub use arg::object_arg;
pub use arg::ObjectArg;
pub use array::{CudaArray, Extent};
pub use desc::{AddressMode, FilterMode, ReadMode, TextureDesc};
pub use format::{ChannelKind, Texel};
pub use object::{Surface, Texture};

//! Passing [`Texture`]s and [`Surface`]s to kernels: to generated launchers ([`ObjectArg`]), to
//! [`Kernel`](crate::Kernel) values ([`KernelArg`]) and to graph nodes ([`NodeArg`]).

use super::object::{Source, Surface, Texture};
use crate::args::node::{Access, NodeArg, Record, Space};
use crate::args::KernelArg;
use crate::bind::{other_device, wrong_device};
use crate::error::{Error, Result};
use crate::module::kernel::KernelRef;
use crate::types::{SurfaceObject, TextureObject};
use cudarc::driver::{sys, CudaContext, CudaStream};
use std::ffi::c_void;

mod sealed {
    pub trait Sealed {}
}

/// What a generated launcher takes for a `cudaTextureObject_t` (`H` = [`TextureObject`]) or
/// `cudaSurfaceObject_t` (`H` = [`SurfaceObject`]) parameter: `&Texture` / `&Surface`, whose
/// context is checked against the launch stream's before the driver is called, or a raw handle
/// made elsewhere (not checked).
///
/// ```no_run
/// # use cuda_embed_runtime::texture::{ObjectArg, Texture};
/// # use cuda_embed_runtime::TextureObject;
/// fn takes(t: impl ObjectArg<TextureObject>) {}
/// # fn f(tex: &Texture) {
/// takes(tex);                  // an owned texture, borrowed for the launch
/// takes(tex.handle());         // its raw handle
/// # }
/// ```
pub trait ObjectArg<H>: sealed::Sealed {
    /// The handle passed to the kernel.
    fn object(&self) -> H;
    /// The context the object belongs to and its device, when known.
    fn placement(&self) -> Option<(sys::CUcontext, usize)>;
}

impl sealed::Sealed for TextureObject {}
impl sealed::Sealed for SurfaceObject {}
impl sealed::Sealed for &Texture<'_> {}
impl sealed::Sealed for &Surface<'_> {}

impl ObjectArg<TextureObject> for TextureObject {
    fn object(&self) -> TextureObject {
        *self
    }
    fn placement(&self) -> Option<(sys::CUcontext, usize)> {
        None
    }
}

impl ObjectArg<SurfaceObject> for SurfaceObject {
    fn object(&self) -> SurfaceObject {
        *self
    }
    fn placement(&self) -> Option<(sys::CUcontext, usize)> {
        None
    }
}

impl ObjectArg<TextureObject> for &Texture<'_> {
    fn object(&self) -> TextureObject {
        self.handle()
    }
    fn placement(&self) -> Option<(sys::CUcontext, usize)> {
        Some((self.context().cu_ctx(), self.context().ordinal()))
    }
}

impl ObjectArg<SurfaceObject> for &Surface<'_> {
    fn object(&self) -> SurfaceObject {
        self.handle()
    }
    fn placement(&self) -> Option<(sys::CUcontext, usize)> {
        Some((self.context().cu_ctx(), self.context().ordinal()))
    }
}

/// The handle of `arg`, passed for parameter `param` (`` `t` `` or `#2`) of `kernel`, after
/// checking that an owned object belongs to `stream`'s context (an object of another context is
/// an [`Error::Launch`] naming both devices). Support for the code `cuda_kernel!` generates: not
/// a stable API.
#[doc(hidden)]
#[inline(always)]
pub fn object_arg<H>(arg: impl ObjectArg<H>, stream: &CudaStream, kernel: KernelRef, param: &'static str) -> Result<H> {
    if let Some((ctx, device)) = arg.placement() {
        if ctx != stream.context().cu_ctx() {
            return Err(wrong_object(kernel, param, device, stream));
        }
    }
    Ok(arg.object())
}

#[cold]
#[inline(never)]
fn wrong_object(kernel: KernelRef, param: &str, device: usize, stream: &CudaStream) -> Error {
    let mut e = wrong_device(kernel.name(), kernel.module().origin(), param, device, stream);
    if let Error::Launch { cause, fix, .. } = &mut e {
        *cause = cause.replace("device memory", "a texture or surface");
        *fix = Some(format!(
            "launch on a stream of device {device}, or create the texture or surface on the launch stream's device"
        ));
    }
    e
}

macro_rules! object_kernel_arg {
    ($owned:ident, $handle:ident) => {
        // SAFETY: the parameter is the handle itself (a u64 with the CUDA handle's layout), kept
        // in the bound value for the launch; the placement lets the launch check the context.
        unsafe impl KernelArg<$handle> for &$owned<'_> {
            type Bound<'s>
                = $handle
            where
                Self: 's;
            #[inline(always)]
            fn bind<'s>(self, _: &'s CudaStream) -> $handle
            where
                Self: 's,
            {
                self.handle()
            }
            #[inline(always)]
            fn param<'s>(bound: &$handle) -> *mut c_void
            where
                Self: 's,
            {
                bound as *const $handle as *mut c_void
            }
            #[inline(always)]
            fn placement(&self) -> Option<(sys::CUcontext, usize)> {
                ObjectArg::placement(self)
            }
        }

        // SAFETY: the parameter is the handle; the access names the memory the object reads
        // (a texture) or may write (a surface), for the graph's dependency inference. The object
        // is borrowed for the graph's lifetime `'a`, so it outlives every launch of the graph.
        unsafe impl<'a> NodeArg<'a, $handle> for &'a $owned<'_> {
            type Param = $handle;
            fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<$handle> {
                if self.context().cu_ctx() != ctx.cu_ctx() {
                    return Err(other_device(ctx, self.context().ordinal()));
                }
                accesses.record(access(self.source, stringify!($owned) == "Surface"));
                Ok(self.handle())
            }
        }
    };
}

object_kernel_arg!(Texture, TextureObject);
object_kernel_arg!(Surface, SurfaceObject);

fn access(source: Source, write: bool) -> Access {
    match source {
        Source::Array(h) => Access { space: Space::Array, lo: h, hi: h + 1, write },
        Source::Linear(lo, hi) => Access { space: Space::Device, lo, hi, write },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_handles_pass_as_themselves_unchecked() {
        let t = TextureObject(42);
        assert_eq!(ObjectArg::object(&t), TextureObject(42));
        assert_eq!(ObjectArg::<TextureObject>::placement(&t), None);
        assert_eq!(ObjectArg::object(&SurfaceObject(7)), SurfaceObject(7));
    }

    #[test]
    fn arrays_and_linear_memory_are_kept_apart_in_graph_accesses() {
        let a = access(Source::Array(0x1000), false);
        let d = access(Source::Linear(0x1000, 0x2000), true);
        assert!(!a.overlaps(&d));
        assert!(a.overlaps(&access(Source::Array(0x1000), true)));
        assert!(!a.overlaps(&access(Source::Array(0x1001), true)));
    }
}

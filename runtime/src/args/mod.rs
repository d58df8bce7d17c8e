//! Typed argument lists for [`Kernel`](crate::Kernel) values.
//!
//! A kernel's signature is a tuple of markers, one per parameter: the Rust value type for a
//! by-value parameter (`f32` for `float`, a `#[derive(DeviceSafe)]` struct, ...), [`In<T>`] for
//! `const T*`, [`Out<T>`] for `T*`, [`InAny`]/[`OutAny`] for `const void*`/`void*` and pointers to
//! opaque types. An argument tuple matches a signature when each element is what the generated
//! `launch` takes for that parameter: the value, `&CudaSlice<T>`/`&CudaView<T>` for `In<T>`,
//! `&mut CudaSlice<T>`/`&mut CudaViewMut<T>` for `Out<T>`. Kernels of up to 20 parameters have a
//! typed [`Kernel`](crate::Kernel) value.

pub(crate) mod buffer; // DeviceBuffer, DeviceBufferMut
pub(crate) mod dynamic; // the dynamic argument list of run-time kernels
pub(crate) mod layout; // N-D layouts (shape, strides, offset) of view arguments
pub(crate) mod node; // the node side: NodeArg, NodeArgs, the ranges they record
pub(crate) mod typed; // TypedArg, CudaType

use crate::error::{Error, Result};
use crate::types::DeviceSafe;
use cudarc::driver::{sys, CudaStream, DeviceSlice};
use std::ffi::c_void;
use std::marker::PhantomData;

/// Marks a `const T*` parameter: the kernel reads a buffer of `T`.
pub struct In<T: ?Sized>(PhantomData<fn() -> *const T>);
/// Marks a `T*` parameter: the kernel may write a buffer of `T`.
pub struct Out<T: ?Sized>(PhantomData<fn() -> *mut T>);
/// Marks a `const void*` parameter (or a pointer to an opaque type): any buffer, read.
pub struct InAny(());
/// Marks a `void*` parameter (or a pointer to an opaque type): any buffer, written.
pub struct OutAny(());

/// One argument for a parameter marked `M`.
///
/// # Safety
/// [`KernelArg::param`] must point at a live value with the layout of the C++ parameter `M`
/// stands for (the value itself, or a `u64` device address of a buffer of the right element type).
pub unsafe trait KernelArg<M> {
    /// The argument prepared for a launch on a stream; holds cudarc's ordering guard for buffers.
    type Bound<'s>
    where
        Self: 's;
    /// Prepares the argument for a launch on `stream`.
    fn bind<'s>(self, stream: &'s CudaStream) -> Self::Bound<'s>
    where
        Self: 's;
    /// The pointer `cuLaunchKernel` reads the parameter through.
    fn param<'s>(bound: &Self::Bound<'s>) -> *mut c_void
    where
        Self: 's;
    /// For device memory: the context it was allocated in and that context's device ordinal,
    /// which every launch compares with the stream's before the driver is called. `None` (the
    /// default) for values.
    #[inline(always)]
    fn placement(&self) -> Option<(sys::CUcontext, usize)> {
        None
    }
}

/// The context and device of a cudarc buffer or view (see [`KernelArg::placement`]).
#[inline(always)]
pub(crate) fn placement_of<T, S: DeviceSlice<T> + ?Sized>(buffer: &S) -> (sys::CUcontext, usize) {
    let ctx = buffer.stream().context();
    (ctx.cu_ctx(), ctx.ordinal())
}

// SAFETY: the value itself is the parameter (DeviceSafe: plain data with the C++ layout).
unsafe impl<T: DeviceSafe> KernelArg<T> for T {
    type Bound<'s>
        = T
    where
        T: 's;
    #[inline(always)]
    fn bind<'s>(self, _: &'s CudaStream) -> T
    where
        T: 's,
    {
        self
    }
    #[inline(always)]
    fn param<'s>(bound: &T) -> *mut c_void
    where
        T: 's,
    {
        bound as *const T as *mut c_void
    }
}

/// A whole argument list for a kernel of signature `Sig` (a tuple of markers): implemented for
/// tuples whose elements are [`KernelArg`]s of the markers, in order.
///
/// # Safety
/// `with_params` must call `f` with one pointer per marker, each as [`KernelArg::param`] gives it,
/// valid for the call.
pub unsafe trait KernelArgs<Sig> {
    /// Checks that every device-memory argument lives in `stream`'s context (else returns
    /// `wrong(parameter index, the memory's device)` without calling `f`), binds every argument on
    /// `stream` and calls `f` with the parameter pointers.
    fn with_params<R>(
        self,
        stream: &CudaStream,
        f: impl FnOnce(&mut [*mut c_void]) -> Result<R>,
        wrong: impl FnOnce(usize, usize) -> Error,
    ) -> Result<R>;
}

// The implementations for cudarc buffers and tuples are in `bind/impls.rs`, with the node side.

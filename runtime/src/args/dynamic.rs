//! The dynamic argument list of a [`ProgramKernel`](crate::ProgramKernel) launch: each [`Arg`] is
//! a value or a device buffer, borrowed for the launch, with its byte size for the checks against
//! the compiled kernel's parameter list.

use crate::args::buffer::{DeviceBuffer, DeviceBufferMut};
use crate::args::layout::Layout;
use crate::error::Result;
use crate::types::DeviceSafe;
use cudarc::driver::{sys, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice};
use std::ffi::c_void;
use std::marker::PhantomData;

/// Takes a buffer's device pointer on a stream, keeps cudarc's guard alive while `then` runs.
type Bind =
    unsafe fn(*mut (), &CudaStream, &mut dyn FnMut(sys::CUdeviceptr) -> Result<Option<f32>>) -> Result<Option<f32>>;

/// # Safety
/// `object` must point at a live `S`, shared-borrowed for the call.
unsafe fn bind_shared<T, S: DevicePtr<T>>(
    object: *mut (),
    stream: &CudaStream,
    then: &mut dyn FnMut(sys::CUdeviceptr) -> Result<Option<f32>>,
) -> Result<Option<f32>> {
    // SAFETY: the caller's contract; `Arg::slice` made `object` from a `&S`.
    let buffer = unsafe { &*(object as *const S) };
    let (pointer, _guard) = buffer.device_ptr(stream);
    then(pointer)
}

/// # Safety
/// `object` must point at a live `S`, exclusively borrowed for the call.
unsafe fn bind_exclusive<T, S: DevicePtrMut<T>>(
    object: *mut (),
    stream: &CudaStream,
    then: &mut dyn FnMut(sys::CUdeviceptr) -> Result<Option<f32>>,
) -> Result<Option<f32>> {
    // SAFETY: the caller's contract; `Arg::slice_mut` made `object` from a `&mut S`.
    let buffer = unsafe { &mut *(object as *mut S) };
    let (pointer, _guard) = buffer.device_ptr_mut(stream);
    then(pointer)
}

/// The context and device ordinal of the buffer at `object` (an `S`), read when a launch checks
/// its arguments (not when the `Arg` is made, so building argument lists costs nothing).
///
/// # Safety
/// `object` must point at a live `S`.
unsafe fn placement_of<T, S: DeviceSlice<T>>(object: *mut ()) -> (sys::CUcontext, usize) {
    // SAFETY: the caller's contract; `Arg::slice`/`slice_mut` made `object` from an `S`.
    let stream = unsafe { &*(object as *const S) }.stream();
    (stream.context().cu_ctx(), stream.context().ordinal())
}

/// The Rust type of an argument's value or of a buffer's elements, the buffer's length and
/// whether it was passed for writing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Elem {
    /// `std::any::type_name` of the type.
    pub(crate) rust: &'static str,
    /// Its size in bytes.
    pub(crate) size: usize,
    /// Elements in the buffer (1 for a value).
    pub(crate) len: usize,
    /// Passed with [`Arg::slice_mut`] (for a graph node: [`GraphArg::write`](crate::graph::GraphArg::write)).
    pub(crate) writable: bool,
}

impl Elem {
    pub(crate) fn of<T>(len: usize, writable: bool) -> Self {
        Elem { rust: std::any::type_name::<T>(), size: std::mem::size_of::<T>(), len, writable }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum ArgKind {
    Value(*const c_void),
    /// `placement`: the buffer's context and its device ordinal, checked against the stream's.
    Buffer {
        object: *mut (),
        bind: Bind,
        placement: unsafe fn(*mut ()) -> (sys::CUcontext, usize),
    },
}

/// One argument of a [`ProgramKernel::launch`](crate::ProgramKernel::launch): a value passed by value, or a device buffer
/// passed as its pointer. Borrows what it refers to for `'a`, shared or exclusive as the kernel
/// uses it, so a buffer the kernel writes cannot also be passed as an input.
///
/// ```no_run
/// use cuda_embed_runtime::Arg;
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let x = stream.clone_htod(&[1.0f32, 2.0])?;
/// let mut y = stream.alloc_zeros::<f32>(2)?;
/// let n = 2i32;
/// let args = [Arg::slice(&x), Arg::slice_mut(&mut y), Arg::value(&n)];
/// assert_eq!(args.iter().map(Arg::size).collect::<Vec<_>>(), [8, 8, 4]);
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
pub struct Arg<'a> {
    pub(crate) size: usize,
    pub(crate) kind: ArgKind,
    /// What the value or the buffer's elements are, and whether a buffer was borrowed
    /// exclusively: for launches that check element types ([`ElementwiseKernel`](crate::ElementwiseKernel),
    /// kernels taken with a C signature).
    pub(crate) elem: Elem,
    /// The view's shape, strides and offset for [`Arg::view`] and [`Arg::view_mut`] (the buffer
    /// is the view's whole buffer); `None` for a flat buffer or a value.
    pub(crate) layout: Option<Layout>,
    /// Bytes from the buffer's start to the pointer passed (a region of it, see `Arg::region`).
    pub(crate) byte_offset: u64,
    _borrow: PhantomData<&'a mut ()>,
}

impl std::fmt::Debug for Arg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            ArgKind::Value(_) => "value",
            ArgKind::Buffer { .. } => "buffer",
        };
        f.debug_struct("Arg").field("kind", &kind).field("size", &self.size).finish()
    }
}

impl<'a> Arg<'a> {
    /// A value passed by value: a scalar (`f32` for `float`, `i32` for `int`, `usize` for
    /// `size_t`, ...), a CUDA vector type, or a `#[repr(C)]` struct marked [`DeviceSafe`].
    ///
    /// ```
    /// let n = 10i32;
    /// assert_eq!(cuda_embed_runtime::Arg::value(&n).size(), 4);
    /// ```
    pub fn value<T: DeviceSafe>(value: &'a T) -> Self {
        Arg {
            size: std::mem::size_of::<T>(),
            kind: ArgKind::Value(value as *const T as *const c_void),
            elem: Elem::of::<T>(1, false),
            layout: None,
            byte_offset: 0,
            _borrow: PhantomData,
        }
    }

    /// A buffer the kernel reads (`const T*`): `&CudaSlice<T>`, `&CudaView<T>`, or a type of
    /// yours that implements [`DeviceBuffer`] (the safe launches trust its `len()`).
    pub fn slice<T, S: DeviceBuffer<T>>(buffer: &'a S) -> Self {
        Arg {
            size: std::mem::size_of::<sys::CUdeviceptr>(),
            elem: Elem::of::<T>(buffer.len(), false),
            kind: ArgKind::Buffer {
                object: buffer as *const S as *mut (),
                bind: bind_shared::<T, S>,
                placement: placement_of::<T, S>,
            },
            layout: None,
            byte_offset: 0,
            _borrow: PhantomData,
        }
    }

    /// A buffer the kernel writes (`T*`): `&mut CudaSlice<T>`, `&mut CudaViewMut<T>`, or a type
    /// of yours that implements [`DeviceBufferMut`].
    pub fn slice_mut<T, S: DeviceBufferMut<T>>(buffer: &'a mut S) -> Self {
        Arg {
            size: std::mem::size_of::<sys::CUdeviceptr>(),
            elem: Elem::of::<T>(buffer.len(), true),
            kind: ArgKind::Buffer {
                object: buffer as *mut S as *mut (),
                bind: bind_exclusive::<T, S>,
                placement: placement_of::<T, S>,
            },
            layout: None,
            byte_offset: 0,
            _borrow: PhantomData,
        }
    }

    /// Elements `offset .. offset + len` of a buffer argument as a flat buffer argument (the
    /// contiguous part of a view that a plan found), borrowed from this one; `None` when they
    /// are not all in the buffer.
    pub(crate) fn region(&mut self, offset: usize, len: usize) -> Option<Arg<'_>> {
        if !matches!(self.kind, ArgKind::Buffer { .. }) || offset.checked_add(len)? > self.elem.len {
            return None;
        }
        let mut arg = self.reborrow();
        arg.byte_offset += (offset * arg.elem.size) as u64;
        arg.elem.len = len;
        arg.layout = None;
        Some(arg)
    }

    /// Whether the argument is an N-D view ([`Arg::view`], [`Arg::view_mut`]).
    pub fn is_view(&self) -> bool {
        self.layout.is_some()
    }

    /// The same argument, borrowed from this one (for one launch of a wrapper that keeps the
    /// original).
    pub(crate) fn reborrow(&mut self) -> Arg<'_> {
        Arg {
            size: self.size,
            elem: self.elem,
            kind: self.kind,
            layout: self.layout,
            byte_offset: self.byte_offset,
            _borrow: PhantomData,
        }
    }

    /// The argument's size in bytes, as the launch checks it (8 for a buffer).
    pub fn size(&self) -> usize {
        self.size
    }

    /// A buffer argument of elements `T` that is never bound, for checks that do not launch.
    #[cfg(test)]
    pub(crate) fn test_buffer<T>(writes: bool) -> Arg<'static> {
        /// Never called: test arguments are only compared, not launched.
        unsafe fn unbound(
            _: *mut (),
            _: &CudaStream,
            _: &mut dyn FnMut(sys::CUdeviceptr) -> Result<Option<f32>>,
        ) -> Result<Option<f32>> {
            unreachable!("a test argument is never launched")
        }
        /// Never called, as above.
        unsafe fn nowhere(_: *mut ()) -> (sys::CUcontext, usize) {
            unreachable!("a test argument is never launched")
        }
        Arg {
            size: std::mem::size_of::<sys::CUdeviceptr>(),
            elem: Elem::of::<T>(1, writes),
            kind: ArgKind::Buffer { object: std::ptr::null_mut(), bind: unbound, placement: nowhere },
            layout: None,
            byte_offset: 0,
            _borrow: PhantomData,
        }
    }
}

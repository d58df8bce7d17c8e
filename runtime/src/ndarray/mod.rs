//! N-D views of device memory: [`NdView`] (shared) and [`NdViewMut`] (exclusive), a shape and
//! strides over a borrowed cudarc buffer, checked when made so a view never reaches outside its
//! buffer. `elementwise_kernel!`'s `launch_nd` takes them (and flat buffers, as 1-D views):
//! inputs broadcast to the output's shape by NumPy's rules.
//!
//! ```no_run
//! use cuda_embed_runtime::{NdView, NdViewMut};
//! # fn f(stream: &std::sync::Arc<cudarc::driver::CudaStream>) -> cuda_embed_runtime::Result<()> {
//! let x = stream.alloc_zeros::<f32>(4 * 6)?;
//! let v = NdView::new(&x, &[4, 6])?;          // row-major 4 x 6
//! let t = v.transpose();                       // 6 x 4, strides [1, 6]
//! let every_other = v.slice(1, 0..6, 2)?;      // 4 x 3, strides [6, 2]
//! let row = NdView::from_view(x.slice(0..6), &[6])?.broadcast_to(&[4, 6])?; // strides [0, 1]
//! assert_eq!((t.shape(), every_other.strides(), row.strides()), (&[6, 4][..], &[6, 2][..], &[0, 1][..]));
//! # Ok(()) }
//! ```

mod axes;
mod node;
mod plan;

use crate::args::layout;
pub use crate::args::layout::{broadcast_shapes, collapse, row_major_strides, Collapsed, Layout, MAX_RANK};
pub use axes::{AxesInput, AxesOutput, AxesPlan, AxesRoute, AXES_DIMS};
pub use node::{NdNodeInput, NdNodeOutput, NodeMemory, NodeRegion};
pub use plan::{NdLaunch, RANKS};

use crate::args::dynamic::Arg;
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use std::ops::{Bound, RangeBounds};

fn shape_error(op: &str, detail: String) -> Error {
    Error::Shape { op: op.to_string(), detail }
}

fn range(r: impl RangeBounds<usize>, n: usize) -> (usize, usize) {
    let start = match r.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match r.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => n,
    };
    (start, end)
}

/// The accessors both views have, read from their `layout` field.
macro_rules! layout_accessors {
    () => {
        /// The extents.
        pub fn shape(&self) -> &[usize] {
            self.layout.shape()
        }
        /// The strides in elements.
        pub fn strides(&self) -> &[isize] {
            self.layout.strides()
        }
        /// The number of dimensions.
        pub fn rank(&self) -> usize {
            self.layout.rank()
        }
        /// The number of elements.
        pub fn len(&self) -> usize {
            self.layout.len()
        }
        /// Whether the view has no elements.
        pub fn is_empty(&self) -> bool {
            self.layout.is_empty()
        }
        /// The layout (shape, strides, offset).
        pub fn layout(&self) -> &Layout {
            &self.layout
        }
    };
}

/// A shared N-D view of device memory: a shape and strides (in elements) over a borrowed buffer.
/// Made from a `CudaSlice` or `CudaView`; every operation that makes a new view checks it.
#[derive(Debug)]
pub struct NdView<'a, T> {
    pub(crate) buf: CudaView<'a, T>,
    layout: Layout,
}

/// An exclusive N-D view of device memory: like [`NdView`], writable, and its elements never
/// overlap (no broadcasting: two indices never address one element).
#[derive(Debug)]
pub struct NdViewMut<'a, T> {
    pub(crate) buf: CudaViewMut<'a, T>,
    layout: Layout,
}

impl<T> Clone for NdView<'_, T> {
    fn clone(&self) -> Self {
        NdView { buf: self.buf.slice(..), layout: self.layout }
    }
}

impl<'a, T> NdView<'a, T> {
    /// The whole buffer as a row-major array of `shape` (the product of `shape` must not exceed
    /// its length: the view covers the first elements).
    pub fn new(buf: &'a (impl AsCudaView<T> + ?Sized), shape: &[usize]) -> Result<Self> {
        let buf = buf.as_cuda_view();
        let layout = Layout::row_major(shape, 0, buf.len()).map_err(|e| shape_error("NdView::new", e))?;
        Ok(NdView { buf, layout })
    }

    /// A row-major view of `shape` over a cudarc view taken by value (`x.slice(a..b)`), so no
    /// temporary needs to outlive the statement.
    pub fn from_view(buf: CudaView<'a, T>, shape: &[usize]) -> Result<Self> {
        let layout = Layout::row_major(shape, 0, buf.len()).map_err(|e| shape_error("NdView::from_view", e))?;
        Ok(NdView { buf, layout })
    }

    /// A view of `shape` with explicit `strides` (in elements, may be 0 or negative) starting at
    /// element `offset` of the buffer; an error unless every element lies inside the buffer.
    pub fn with_strides(
        buf: &'a (impl AsCudaView<T> + ?Sized),
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Self> {
        let buf = buf.as_cuda_view();
        let layout =
            Layout::strided(shape, strides, offset, buf.len()).map_err(|e| shape_error("NdView::with_strides", e))?;
        Ok(NdView { buf, layout })
    }

    layout_accessors!();

    fn with(&self, op: &str, l: std::result::Result<Layout, String>) -> Result<Self> {
        Ok(NdView { buf: self.buf.slice(..), layout: l.map_err(|e| shape_error(op, e))? })
    }

    /// The axes reordered: axis `k` of the result is axis `axes[k]` of `self`.
    pub fn permute(&self, axes: &[usize]) -> Result<Self> {
        self.with("NdView::permute", self.layout.permute(axes))
    }
    /// The axes reversed (`x.T`).
    pub fn transpose(&self) -> Self {
        NdView { buf: self.buf.slice(..), layout: self.layout.transpose() }
    }
    /// Every `step`-th index of `range` along `axis` (a negative step walks it backwards).
    pub fn slice(&self, axis: usize, range_: impl RangeBounds<usize>, step: isize) -> Result<Self> {
        let n = self.shape().get(axis).copied().unwrap_or(0);
        let (s, e) = range(range_, n);
        self.with("NdView::slice", self.layout.slice(axis, s, e, step))
    }
    /// The view read as `shape` by NumPy's broadcasting rules (stride 0 where repeated).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Self> {
        self.with("NdView::broadcast_to", self.layout.broadcast_to(shape))
    }
    /// The same elements as `shape`, when the strides allow it without a copy.
    pub fn reshape(&self, shape: &[usize]) -> Result<Self> {
        self.with("NdView::reshape", self.layout.reshape(shape))
    }

    /// The buffer the view reads (element `[0, ..]` is at [`Layout::offset`]).
    pub fn buffer(&self) -> &CudaView<'a, T> {
        &self.buf
    }

    /// The address of element `[0, ..]` on `stream` (cudarc's stream ordering recorded).
    pub fn device_ptr<'s>(&'s self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        let (p, g) = self.buf.device_ptr(stream);
        (p + (self.layout.offset() * std::mem::size_of::<T>()) as u64, g)
    }
}

impl<'a, T> NdViewMut<'a, T> {
    /// The whole buffer as a writable row-major array of `shape`.
    pub fn new(buf: &'a mut (impl AsCudaViewMut<T> + ?Sized), shape: &[usize]) -> Result<Self> {
        let buf = buf.as_cuda_view_mut();
        let layout = Layout::row_major(shape, 0, buf.len()).map_err(|e| shape_error("NdViewMut::new", e))?;
        Ok(NdViewMut { buf, layout })
    }

    /// A writable row-major view of `shape` over a cudarc view taken by value (`y.slice_mut(a..b)`).
    pub fn from_view(buf: CudaViewMut<'a, T>, shape: &[usize]) -> Result<Self> {
        let layout = Layout::row_major(shape, 0, buf.len()).map_err(|e| shape_error("NdViewMut::from_view", e))?;
        Ok(NdViewMut { buf, layout })
    }

    /// A writable view with explicit strides; an error unless every element lies inside the
    /// buffer and no two indices address the same element.
    pub fn with_strides(
        buf: &'a mut (impl AsCudaViewMut<T> + ?Sized),
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Self> {
        let buf = buf.as_cuda_view_mut();
        let op = "NdViewMut::with_strides";
        let layout = Layout::strided(shape, strides, offset, buf.len()).map_err(|e| shape_error(op, e))?;
        if !layout.is_non_overlapping() {
            return Err(shape_error(
                op,
                format!(
                    "shape {} with strides {} addresses some elements twice: a writable view must not overlap itself",
                    layout::show(shape),
                    layout::show(strides)
                ),
            ));
        }
        Ok(NdViewMut { buf, layout })
    }

    layout_accessors!();

    /// A shared view of the same elements.
    pub fn as_view(&self) -> NdView<'_, T> {
        NdView { buf: self.buf.as_view(), layout: self.layout }
    }

    fn with(self, op: &str, l: std::result::Result<Layout, String>) -> Result<Self> {
        let layout = l.map_err(|e| shape_error(op, e))?;
        Ok(NdViewMut { buf: self.buf, layout })
    }
    /// The axes reordered: axis `k` of the result is axis `axes[k]` of `self`.
    pub fn permute(self, axes: &[usize]) -> Result<Self> {
        let l = self.layout.permute(axes);
        self.with("NdViewMut::permute", l)
    }
    /// The axes reversed.
    pub fn transpose(self) -> Self {
        let layout = self.layout.transpose();
        NdViewMut { buf: self.buf, layout }
    }
    /// Every `step`-th index of `range` along `axis` (a negative step walks it backwards).
    pub fn slice(self, axis: usize, range_: impl RangeBounds<usize>, step: isize) -> Result<Self> {
        let n = self.shape().get(axis).copied().unwrap_or(0);
        let (s, e) = range(range_, n);
        let l = self.layout.slice(axis, s, e, step);
        self.with("NdViewMut::slice", l)
    }
    /// The same elements as `shape`, when the strides allow it without a copy.
    pub fn reshape(self, shape: &[usize]) -> Result<Self> {
        let l = self.layout.reshape(shape);
        self.with("NdViewMut::reshape", l)
    }

    /// The buffer the view writes (element `[0, ..]` is at [`Layout::offset`]), lent for as long
    /// as this borrow of the view. It is a new view of the same memory, not the view's own
    /// buffer: the view's layout was checked against that buffer's length, so the buffer is never
    /// handed out where it could be replaced by a smaller one.
    pub fn buffer_mut(&mut self) -> CudaViewMut<'_, T> {
        self.buf.slice_mut(..)
    }

    /// The stream of the buffer the view writes (its context is the memory's).
    pub(crate) fn buffer_stream(&self) -> &std::sync::Arc<CudaStream> {
        DeviceSlice::stream(&self.buf)
    }

    /// The address of element `[0, ..]` on `stream`, for writing.
    pub fn device_ptr_mut<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        let off = (self.layout.offset() * std::mem::size_of::<T>()) as u64;
        let (p, g) = self.buf.device_ptr_mut(stream);
        (p + off, g)
    }
}

/// Device memory a shared view can be made of: `CudaSlice`, `CudaView`, `CudaViewMut`.
pub trait AsCudaView<T> {
    /// The whole buffer as a view.
    fn as_cuda_view(&self) -> CudaView<'_, T>;
}
impl<T> AsCudaView<T> for CudaSlice<T> {
    fn as_cuda_view(&self) -> CudaView<'_, T> {
        self.as_view()
    }
}
impl<T> AsCudaView<T> for CudaView<'_, T> {
    fn as_cuda_view(&self) -> CudaView<'_, T> {
        self.slice(..)
    }
}
impl<T> AsCudaView<T> for CudaViewMut<'_, T> {
    fn as_cuda_view(&self) -> CudaView<'_, T> {
        self.as_view()
    }
}

/// Device memory a writable view can be made of: `CudaSlice`, `CudaViewMut`.
pub trait AsCudaViewMut<T> {
    /// The whole buffer as a writable view.
    fn as_cuda_view_mut(&mut self) -> CudaViewMut<'_, T>;
}
impl<T> AsCudaViewMut<T> for CudaSlice<T> {
    fn as_cuda_view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.as_view_mut()
    }
}
impl<T> AsCudaViewMut<T> for CudaViewMut<'_, T> {
    fn as_cuda_view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.slice_mut(..)
    }
}

/// An input of an N-D launch: an [`NdView`], an [`NdViewMut`] (read), or a flat buffer (a 1-D
/// view of its whole length).
pub trait NdInput<T> {
    /// The operand as a shared view.
    fn nd(&self) -> NdView<'_, T>;
}
impl<T> NdInput<T> for NdView<'_, T> {
    fn nd(&self) -> NdView<'_, T> {
        self.clone()
    }
}
impl<T> NdInput<T> for NdViewMut<'_, T> {
    fn nd(&self) -> NdView<'_, T> {
        self.as_view()
    }
}
macro_rules! flat_input {
    ($($ty:ty),*) => {$(
        impl<T> NdInput<T> for $ty {
            fn nd(&self) -> NdView<'_, T> {
                let buf = self.as_cuda_view();
                let layout = flat_layout(buf.len());
                NdView { buf, layout }
            }
        }
    )*};
}
flat_input!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);

/// An output of an N-D launch: an [`NdViewMut`] or a flat writable buffer (1-D).
pub trait NdOutput<T> {
    /// The operand as an exclusive view.
    fn nd_mut(&mut self) -> NdViewMut<'_, T>;
}
impl<T> NdOutput<T> for NdViewMut<'_, T> {
    fn nd_mut(&mut self) -> NdViewMut<'_, T> {
        NdViewMut { buf: self.buf.slice_mut(..), layout: self.layout }
    }
}
macro_rules! flat_output {
    ($($ty:ty),*) => {$(
        impl<T> NdOutput<T> for $ty {
            fn nd_mut(&mut self) -> NdViewMut<'_, T> {
                let buf = self.as_cuda_view_mut();
                let layout = flat_layout(buf.len());
                NdViewMut { buf, layout }
            }
        }
    )*};
}
flat_output!(CudaSlice<T>, CudaViewMut<'_, T>);

fn flat_layout(len: usize) -> Layout {
    Layout::flat(len)
}

/// A view as a launch operand on the one checked path (`bind::nd_input`): its buffer's context
/// and the address of its element `[0, ..]`.
impl<T> crate::bind::ViewOperand for NdView<'_, T> {
    #[inline(always)]
    fn buffer_context(&self) -> &std::sync::Arc<cudarc::driver::CudaContext> {
        self.buffer().stream().context()
    }
    #[inline(always)]
    fn device_ptr_on<'s>(&'s self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.device_ptr(stream)
    }
}

/// A view the kernel writes as a launch operand (`bind::nd_output`).
impl<T> crate::bind::ViewOperandMut for NdViewMut<'_, T> {
    #[inline(always)]
    fn buffer_context(&self) -> &std::sync::Arc<cudarc::driver::CudaContext> {
        self.buffer_stream().context()
    }
    #[inline(always)]
    fn device_ptr_mut_on<'s>(&'s mut self, stream: &'s CudaStream) -> (u64, SyncOnDrop<'s>) {
        self.device_ptr_mut(stream)
    }
}

/// A view as an argument of a run-time kernel (`cuda_embed::Arg`): the view's buffer with its
/// layout, declared beside the views (the argument list itself is `args`' vocabulary).
impl<'a> Arg<'a> {
    /// An N-D view the kernel reads, for the N-D launches of the run-time twins
    /// ([`ElementwiseKernel::launch_nd`](crate::ElementwiseKernel::launch_nd),
    /// [`Reduction::launch_axes`](crate::Reduction::launch_axes)); the other launches refuse it
    /// (pass the buffer with [`Arg::slice`] there).
    pub fn view<T>(view: &'a NdView<'_, T>) -> Self {
        let mut arg = Arg::slice(view.buffer());
        arg.layout = Some(*view.layout());
        arg
    }

    /// An N-D view the kernel writes, for the N-D launches (see [`Arg::view`]).
    pub fn view_mut<T>(view: &'a mut NdViewMut<'_, T>) -> Self {
        let layout = *view.layout();
        let mut arg = Arg::slice_mut(&mut view.buf);
        arg.layout = Some(layout);
        arg
    }
}

#[cfg(test)]
mod tests;

//! N-D operands of graph nodes: what the generated `NAME::node_nd` (elementwise) and
//! `NAME::node_axes` (reduction) take. A node refers to its buffers by address for the graph's
//! lifetime, so the operands are borrowed (shared) for it, the outputs too, as for the flat
//! `NAME::node` (see [`Graph`](crate::Graph)); a view's whole buffer is recorded as read or
//! written for the dependency inference.

use super::{AsCudaView, Layout, NdView, NdViewMut};
use crate::args::node::{Access, NodeArg, Record, Space};
use crate::bind::{node_buffer, other_device};
use crate::error::{Error, Result};
use cudarc::driver::{sys, CudaContext, CudaSlice, CudaView, CudaViewMut, DevicePtr};
use std::marker::PhantomData;

/// An input of an N-D graph node: an [`NdView`], an [`NdViewMut`] (read), or a flat buffer
/// (`CudaSlice`, `CudaView`, `CudaViewMut`: a 1-D view of its whole length).
///
/// Sealed: a node trusts an operand's layout to lie in the memory it reports, so no other type can
/// be one (it could report a large layout over a small buffer).
///
/// ```compile_fail,E0277
/// use cuda_embed_runtime::ndarray::{Layout, NdNodeInput, NodeMemory};
/// struct Liar;
/// impl NdNodeInput<f32> for Liar {
///     fn node_layout(&self) -> Layout { Layout::flat(1 << 20) }
///     fn __memory(&self, _: &cudarc::driver::CudaContext) -> cuda_embed_runtime::Result<NodeMemory<f32>> {
///         unimplemented!()
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an N-D operand of `{T}` for a graph node",
    label = "expected `&NdView<{T}>`, `&NdViewMut<{T}>` or a buffer of `{T}` here",
    note = "N-D graph nodes take views and buffers borrowed for the graph's lifetime"
)]
pub trait NdNodeInput<T>: sealed::Operand<T> {
    /// The operand's shape, strides and offset.
    fn node_layout(&self) -> Layout;
    /// The buffer behind the operand on the graph's context (an error for another device's).
    #[doc(hidden)]
    fn __memory(&self, ctx: &CudaContext) -> Result<NodeMemory<T>>;
}

/// An output of an N-D graph node: an [`NdViewMut`] or a flat writable buffer (`CudaSlice`,
/// `CudaViewMut`), borrowed shared for the graph's lifetime. Sealed, as [`NdNodeInput`] is.
///
/// ```compile_fail,E0277
/// use cuda_embed_runtime::ndarray::{Layout, NdNodeOutput, NodeMemory};
/// struct Liar;
/// impl NdNodeOutput<f32> for Liar {
///     fn node_layout(&self) -> Layout { Layout::flat(1 << 20) }
///     fn __memory(&self, _: &cudarc::driver::CudaContext) -> cuda_embed_runtime::Result<NodeMemory<f32>> {
///         unimplemented!()
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a writable N-D operand of `{T}` for a graph node",
    label = "expected `&NdViewMut<{T}>`, `&CudaSlice<{T}>` or `&CudaViewMut<{T}>` here",
    note = "outputs of graph nodes are borrowed shared (`&y`) but must be writable: a read-only `NdView` or \
            `CudaView` cannot be written"
)]
pub trait NdNodeOutput<T>: sealed::Operand<T> {
    /// The operand's shape, strides and offset.
    fn node_layout(&self) -> Layout;
    /// The buffer behind the operand on the graph's context, recorded as written.
    #[doc(hidden)]
    fn __memory(&self, ctx: &CudaContext) -> Result<NodeMemory<T>>;
}

/// The N-D node traits are sealed: a node trusts an operand's layout to lie inside the memory it
/// reports, which only this crate's views (checked when made) and cudarc's buffers (the whole
/// buffer, flat) guarantee.
mod sealed {
    use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
    /// Implemented for this crate's views and cudarc's buffers only.
    pub trait Operand<T> {}
    impl<T> Operand<T> for super::NdView<'_, T> {}
    impl<T> Operand<T> for super::NdViewMut<'_, T> {}
    impl<T> Operand<T> for CudaSlice<T> {}
    impl<T> Operand<T> for CudaView<'_, T> {}
    impl<T> Operand<T> for CudaViewMut<'_, T> {}
}

fn memory<T, S: DevicePtr<T> + ?Sized>(buf: &S, ctx: &CudaContext, write: bool) -> Result<NodeMemory<T>> {
    let (base, access) = node_buffer(buf, ctx, write)?;
    Ok(NodeMemory { base, bytes: access.hi - access.lo, ctx: ctx.cu_ctx(), write, elem: PhantomData })
}

impl<T> NdNodeInput<T> for NdView<'_, T> {
    fn node_layout(&self) -> Layout {
        self.layout
    }
    fn __memory(&self, ctx: &CudaContext) -> Result<NodeMemory<T>> {
        memory(&self.buf, ctx, false)
    }
}
impl<T> NdNodeInput<T> for NdViewMut<'_, T> {
    fn node_layout(&self) -> Layout {
        self.layout
    }
    fn __memory(&self, ctx: &CudaContext) -> Result<NodeMemory<T>> {
        memory(&self.buf, ctx, false)
    }
}
impl<T> NdNodeOutput<T> for NdViewMut<'_, T> {
    fn node_layout(&self) -> Layout {
        self.layout
    }
    fn __memory(&self, ctx: &CudaContext) -> Result<NodeMemory<T>> {
        memory(&self.buf, ctx, true)
    }
}
macro_rules! flat_node {
    ($trait:ident, $write:expr, $($ty:ty),*) => {$(
        impl<T> $trait<T> for $ty {
            fn node_layout(&self) -> Layout {
                Layout::flat(self.as_cuda_view().len())
            }
            fn __memory(&self, ctx: &CudaContext) -> Result<NodeMemory<T>> {
                memory(self, ctx, $write)
            }
        }
    )*};
}
flat_node!(NdNodeInput, false, CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>);
flat_node!(NdNodeOutput, true, CudaSlice<T>, CudaViewMut<'_, T>);

/// The device buffer behind one operand of an N-D node (support for generated code): its base
/// address and size on the graph's context, and whether the node writes it.
#[doc(hidden)]
#[derive(Debug)]
pub struct NodeMemory<T> {
    base: u64,
    bytes: u64,
    ctx: sys::CUcontext,
    write: bool,
    elem: PhantomData<fn() -> T>,
}

impl<T> Clone for NodeMemory<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for NodeMemory<T> {}

impl<T> NodeMemory<T> {
    /// Records the whole buffer as read or written by the node `builder` assembles (a graph's
    /// `NodeBuilder`) and returns the address of element `offset` (a view's element `[0, ..]`).
    pub fn record(&self, builder: &mut impl Record, offset: usize) -> u64 {
        builder.record(Access { space: Space::Device, lo: self.base, hi: self.base + self.bytes, write: self.write });
        self.base + (offset * std::mem::size_of::<T>()) as u64
    }

    /// Records the whole buffer on the update `update` (a `graph::NdUpdate`, for its aliasing
    /// check; the node's dependencies were inferred when it was added) and returns the address
    /// of element `offset`.
    pub fn update(&self, update: &mut impl Record, offset: usize) -> u64 {
        update.record(Access { space: Space::Device, lo: self.base, hi: self.base + self.bytes, write: self.write });
        self.base + (offset * std::mem::size_of::<T>()) as u64
    }

    /// The buffer's elements `offset .. offset + len` as a kernel-node argument; an error (never
    /// expected: plans stay inside their views) when they are not all in the buffer.
    pub fn region(&self, op: &str, offset: usize, len: usize) -> Result<NodeRegion<T>> {
        let size = std::mem::size_of::<T>() as u64;
        let lo = offset as u64 * size;
        let hi = lo + len as u64 * size;
        if hi > self.bytes {
            return Err(Error::Shape {
                op: op.to_string(),
                detail: format!("internal error: elements {offset}..{} lie outside their buffer", offset + len),
            });
        }
        Ok(NodeRegion { ptr: self.base + lo, bytes: hi - lo, ctx: self.ctx, write: self.write, elem: PhantomData })
    }

    /// The whole buffer as a kernel-node argument (the strided kernels add the view's offset).
    pub fn whole(&self) -> NodeRegion<T> {
        NodeRegion { ptr: self.base, bytes: self.bytes, ctx: self.ctx, write: self.write, elem: PhantomData }
    }
}

/// Part of an operand's buffer passed to a hidden kernel's typed `node` (support for generated
/// code): made only from a [`NodeMemory`] of an operand the generated function borrows for the
/// graph's lifetime, so the range stays allocated while the graph refers to it.
#[doc(hidden)]
#[derive(Debug)]
pub struct NodeRegion<T> {
    ptr: u64,
    bytes: u64,
    ctx: sys::CUcontext,
    write: bool,
    elem: PhantomData<fn() -> T>,
}

impl<T> NodeRegion<T> {
    fn prepare(&self, ctx: &CudaContext, accesses: &mut impl Record, write: bool) -> Result<u64> {
        if self.ctx != ctx.cu_ctx() {
            return Err(other_device(ctx, ctx.ordinal()));
        }
        accesses.record(Access { space: Space::Device, lo: self.ptr, hi: self.ptr + self.bytes, write });
        Ok(self.ptr)
    }
}

// SAFETY: the parameter is the `u64` address of `bytes` bytes of a live buffer of `T`s on the
// graph's context (checked), recorded as read.
unsafe impl<'a, T> NodeArg<'a, crate::args::In<T>> for NodeRegion<T> {
    type Param = u64;
    #[inline]
    fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<u64> {
        NodeRegion::prepare(&self, ctx, accesses, false)
    }
}

// SAFETY: as for `In<T>`, recorded as written; only an output's memory (an `NdNodeOutput`, a
// writable buffer) is accepted where the kernel writes.
unsafe impl<'a, T> NodeArg<'a, crate::args::Out<T>> for NodeRegion<T> {
    type Param = u64;
    #[inline]
    fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<u64> {
        if !self.write {
            return Err(Error::Graph {
                device: ctx.ordinal(),
                cause: "internal error: an input's memory was passed where the kernel writes".into(),
                fix: None,
            });
        }
        NodeRegion::prepare(&self, ctx, accesses, true)
    }
}

//! Passing tensor maps to kernels: to generated launchers ([`TensorMapArg`], checked and bound
//! through [`crate::bind::descriptor`]), to [`Kernel`](crate::Kernel) values ([`KernelArg`]) and
//! to graph nodes ([`NodeArg`]).

use super::{RawTensorMap, TensorMap, TensorMapMut};
use crate::args::node::{Access, NodeArg, Record, Space};
use crate::args::KernelArg;
use crate::bind::{other_device, same_context, DescriptorOperand};
use crate::error::Result;
use cudarc::driver::{sys, CudaContext, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use std::ffi::c_void;
use std::sync::Arc;

mod sealed {
    pub trait Sealed {}
}

/// What a generated launcher takes for a `const __grid_constant__ CUtensorMap` parameter:
/// `&TensorMap` (the kernel reads through it) or `&mut TensorMapMut` (it may write through it).
/// Sealed. The launch checks that the map's memory is in the stream's context, orders the
/// launch after the memory's earlier uses (cudarc's events, as for a buffer) and passes the
/// 128-byte descriptor by value.
///
/// ```no_run
/// # use cuda_embed_runtime::tensor_map::{TensorMap, TensorMapArg, TensorMapMut};
/// fn takes(map: impl TensorMapArg) {}
/// # fn f(src: &TensorMap<'_, f32, 2>, dst: &mut TensorMapMut<'_, f32, 2>) {
/// takes(src);
/// takes(dst); // `&mut`: the kernel may write through it
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "a `CUtensorMap` parameter takes `&TensorMap` or `&mut TensorMapMut`, not `{Self}`",
    label = "not a tensor map",
    note = "make one from an N-D view: `TensorMap::new(&NdView::new(&x, &[rows, cols])?, [box_rows, box_cols])?`"
)]
pub trait TensorMapArg: sealed::Sealed + DescriptorOperand<Descriptor = RawTensorMap> {}

impl<T, const R: usize> sealed::Sealed for &TensorMap<'_, T, R> {}
impl<T, const R: usize> sealed::Sealed for &mut TensorMapMut<'_, T, R> {}

impl<T, const R: usize> TensorMapArg for &TensorMap<'_, T, R> {}
impl<T, const R: usize> TensorMapArg for &mut TensorMapMut<'_, T, R> {}

impl<T, const R: usize> DescriptorOperand for &TensorMap<'_, T, R> {
    type Descriptor = RawTensorMap;
    #[inline(always)]
    fn memory_context(&self) -> &Arc<CudaContext> {
        self.buf.stream().context()
    }
    #[inline(always)]
    fn bind_on<'b>(self, stream: &'b CudaStream) -> (RawTensorMap, SyncOnDrop<'b>)
    where
        Self: 'b,
    {
        let (_, guard) = self.buf.device_ptr(stream);
        (self.map.raw, guard)
    }
}

impl<T, const R: usize> DescriptorOperand for &mut TensorMapMut<'_, T, R> {
    type Descriptor = RawTensorMap;
    #[inline(always)]
    fn memory_context(&self) -> &Arc<CudaContext> {
        self.buf.stream().context()
    }
    #[inline(always)]
    fn bind_on<'b>(self, stream: &'b CudaStream) -> (RawTensorMap, SyncOnDrop<'b>)
    where
        Self: 'b,
    {
        let raw = self.map.raw;
        let (_, guard) = self.buf.device_ptr_mut(stream);
        (raw, guard)
    }
}

macro_rules! kernel_arg {
    ($($ref:tt)*) => {
        // SAFETY: the parameter is the descriptor (`RawTensorMap`, CUtensorMap's size and at least
        // its alignment), kept in the bound value for the launch with the memory's guard; the
        // placement lets the launch check the context before any driver call.
        unsafe impl<T, const R: usize> KernelArg<RawTensorMap> for $($ref)* {
            type Bound<'s>
                = (RawTensorMap, SyncOnDrop<'s>)
            where
                Self: 's;
            #[inline(always)]
            fn bind<'s>(self, stream: &'s CudaStream) -> Self::Bound<'s>
            where
                Self: 's,
            {
                self.bind_on(stream)
            }
            #[inline(always)]
            fn param<'s>(bound: &Self::Bound<'s>) -> *mut c_void
            where
                Self: 's,
            {
                &bound.0 as *const RawTensorMap as *mut c_void
            }
            #[inline(always)]
            fn placement(&self) -> Option<(sys::CUcontext, usize)> {
                let ctx = self.memory_context();
                Some((ctx.cu_ctx(), ctx.ordinal()))
            }
        }
    };
}
kernel_arg!(&TensorMap<'_, T, R>);
kernel_arg!(&mut TensorMapMut<'_, T, R>);

macro_rules! node_arg {
    ($ty:ident, $write:expr) => {
        // SAFETY: the parameter is the descriptor; the access names the bytes the map can address
        // (written for a `TensorMapMut`), for the graph's dependency inference and aliasing check.
        // The map is borrowed for the graph's lifetime `'a`, so its memory outlives every launch.
        unsafe impl<'a, T, const R: usize> NodeArg<'a, RawTensorMap> for &'a $ty<'_, T, R> {
            type Param = RawTensorMap;
            fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<RawTensorMap> {
                let own = self.buf.stream().context();
                if !same_context(own, ctx) {
                    return Err(other_device(ctx, own.ordinal()));
                }
                let (lo, hi) = self.map.range;
                accesses.record(Access { space: Space::Device, lo, hi, write: $write });
                Ok(self.map.raw)
            }
        }
    };
}
node_arg!(TensorMap, false);
node_arg!(TensorMapMut, true);

//! Graph nodes of `elementwise_kernel!` and `reduction_kernel!` kernels: what their generated
//! `NAME::node` functions call. Support for generated code, not a stable API.
//!
//! An elementwise node is one kernel node, its launch configuration chosen as `launch` chooses it
//! (cached per device). A reduction node is the kernel node(s) of the reduction's launch plan for
//! the graph's device, chosen when the node is added; a plan kernel that needs scratch memory (the
//! partial values and the last-block counters) gets a zeroed buffer of its own, owned by the graph
//! and every instantiation of it (the kernels leave the counters at zero, so every replay starts
//! from a clean buffer).

use super::args::{Access, NodeArg, Record, Space};
use super::{Graph, Label, Node};
use crate::args::Out;
use crate::bind::{node_buffer, other_device};
use crate::error::{DriverCode, Error, Result};
use crate::module::kernel::KernelRef;
use crate::reduction::Shape;
use cudarc::driver::{sys, CudaContext, CudaSlice, DevicePtr, DevicePtrMut, LaunchConfig};
use std::ffi::c_void;
use std::sync::Arc;

/// A kernel node being put together by generated code: each buffer is checked (the graph's
/// device) and recorded (read or written, for the inferred dependencies), then the kernel added.
#[doc(hidden)]
pub struct NodeBuilder<'g, 'a> {
    graph: &'g mut Graph<'a>,
    accesses: Vec<Access>,
}

impl std::fmt::Debug for NodeBuilder<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeBuilder").field("buffers", &self.accesses.len()).finish_non_exhaustive()
    }
}

impl<'a> Graph<'a> {
    /// Starts a kernel node assembled argument by argument (generated elementwise nodes).
    #[doc(hidden)]
    pub fn __node_builder(&mut self) -> NodeBuilder<'_, 'a> {
        let accesses = self.take_scratch();
        NodeBuilder { graph: self, accesses }
    }

    /// A zeroed device buffer of at least `bytes` bytes on the graph's device, owned by the graph
    /// and its instantiations, for one reduction node's scratch memory.
    #[doc(hidden)]
    pub fn __scratch(&mut self, bytes: u64) -> Result<GraphScratch> {
        let device = self.ctx.ordinal();
        let fail =
            |call: &'static str, e: cudarc::driver::DriverError| Error::Driver { call, device, cause: DriverCode(e.0) };
        let stream = self.ctx.default_stream();
        let buf: CudaSlice<u8> = stream.alloc_zeros(bytes.max(1) as usize).map_err(|e| fail("cuMemAllocAsync", e))?;
        // The graph's launches are not ordered after the zeroing on this stream: wait for it.
        crate::driver::sync::stream(&stream)?;
        let (ptr, guard) = buf.device_ptr(&stream);
        drop(guard);
        let scratch = GraphScratch { ptr, bytes, ctx: self.ctx.cu_ctx() };
        self.owned.push(Arc::new(buf));
        Ok(scratch)
    }
}

impl<'a> NodeBuilder<'_, 'a> {
    /// The graph's context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.graph.ctx
    }

    /// The address of a buffer the kernel reads (an error for another device's buffer).
    #[inline]
    pub fn read<T, S: DevicePtr<T>>(&mut self, buffer: &'a S) -> Result<u64> {
        let (p, access) = node_buffer(buffer, &self.graph.ctx, false)?;
        self.accesses.push(access);
        Ok(p)
    }

    /// The address of a buffer the kernel writes (an error for another device's buffer).
    #[inline]
    pub fn write<T, S: DevicePtr<T> + DevicePtrMut<T>>(&mut self, buffer: &'a S) -> Result<u64> {
        let (p, access) = node_buffer(buffer, &self.graph.ctx, true)?;
        self.accesses.push(access);
        Ok(p)
    }

    /// Adds the node: `kernel` with `config` (checked against the kernel's limits as a launch
    /// is) and `params`, depending on what the recorded buffers need.
    ///
    /// # Safety
    /// `params` holds one pointer per kernel parameter to a value of its exact type (the buffers'
    /// addresses as returned by [`NodeBuilder::read`] and [`NodeBuilder::write`]), and the
    /// recorded buffers are every one the kernel touches.
    pub unsafe fn kernel(self, kernel: KernelRef, config: &LaunchConfig, params: &mut [*mut c_void]) -> Result<Node> {
        let ctx = self.graph.ctx.clone();
        let (_, target) = kernel.target(&ctx)?;
        // SAFETY: the function was looked up in the graph's context; the rest is the caller's.
        unsafe { self.graph.kernel_raw(&target, config, params, self.accesses, Label::Kernel(kernel)) }
    }
}

/// The builder records the ranges of the N-D operands (`ndarray::NodeMemory::record`) as the
/// node's own.
impl Record for NodeBuilder<'_, '_> {
    #[inline]
    fn record(&mut self, access: Access) {
        self.accesses.push(access);
    }
}

/// The scratch memory of one reduction node (see [`Graph::__scratch`]), passed for the plan
/// kernel's `unsigned char*` scratch parameter.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct GraphScratch {
    ptr: u64,
    bytes: u64,
    ctx: sys::CUcontext,
}

// SAFETY: the parameter is the address of a live buffer of `bytes` bytes (owned by the graph and
// its instantiations) on the graph's context (checked), recorded as written.
unsafe impl<'a> NodeArg<'a, Out<u8>> for GraphScratch {
    type Param = u64;
    #[inline]
    fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<u64> {
        if self.ctx != ctx.cu_ctx() {
            return Err(other_device(ctx, ctx.ordinal()));
        }
        accesses.record(Access { space: Space::Device, lo: self.ptr, hi: self.ptr + self.bytes, write: true });
        Ok(self.ptr)
    }
}

/// Checks the lengths of a reduction node's arguments as its `launch` does and returns
/// `(rows, n, outputs' length)`: `inputs` are the array inputs (name, length), the first one the
/// reference; `outputs` the outputs; `device` the graph's, for the error.
#[doc(hidden)]
pub fn reduction_shape(
    device: usize,
    (reduction, origin): (&str, &str),
    shape: Shape,
    cols: usize,
    inputs: &[(&str, usize)],
    outputs: &[(&str, usize)],
) -> Result<(usize, usize, usize)> {
    let fail = |cause: String| Error::Launch {
        kernel: reduction.to_string(),
        origin: origin.to_string(),
        device,
        cause,
        fix: None,
    };
    let (first, len) = inputs.first().copied().unwrap_or(("", 0));
    for (name, n) in inputs {
        if *n != len {
            return Err(fail(format!("input `{name}` has {n} elements but `{first}` has {len}")));
        }
    }
    let (rows, n, want) = match shape {
        Shape::Full => (1, len, 1),
        Shape::Rows | Shape::Cols if cols == 0 => {
            if len != 0 {
                return Err(fail(format!("`cols` is 0 but `{first}` has {len} elements")));
            }
            let rows = if shape == Shape::Rows { outputs.first().map_or(0, |o| o.1) } else { 0 };
            (rows, 0, rows)
        }
        _ => {
            if len % cols != 0 {
                return Err(fail(format!("`{first}` has {len} elements, not a multiple of `cols` = {cols}")));
            }
            let rows = len / cols;
            (rows, cols, if shape == Shape::Rows { rows } else { cols })
        }
    };
    for (name, n) in outputs {
        if *n != want {
            return Err(fail(format!("output `{name}` has {n} elements but the reduction gives {want}")));
        }
    }
    Ok((rows, n, want))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape rules: the same as the generated `launch`'s.
    fn shape(
        s: Shape,
        cols: usize,
        ins: &[(&str, usize)],
        outs: &[(&str, usize)],
    ) -> std::result::Result<(usize, usize, usize), String> {
        reduction_shape(0, ("r", "here"), s, cols, ins, outs).map_err(|e| e.to_string())
    }

    #[test]
    fn shapes() {
        assert_eq!(shape(Shape::Full, 0, &[("x", 10)], &[("y", 1)]), Ok((1, 10, 1)));
        assert_eq!(shape(Shape::Full, 0, &[("x", 0)], &[("y", 1)]), Ok((1, 0, 1)));
        assert_eq!(shape(Shape::Rows, 5, &[("x", 10)], &[("y", 2)]), Ok((2, 5, 2)));
        assert_eq!(shape(Shape::Cols, 5, &[("x", 10)], &[("y", 5)]), Ok((2, 5, 5)));
        assert_eq!(shape(Shape::Rows, 0, &[("x", 0)], &[("y", 3)]), Ok((3, 0, 3)));
        assert!(shape(Shape::Full, 0, &[("x", 10), ("w", 9)], &[("y", 1)]).unwrap_err().contains("`w` has 9"));
        assert!(shape(Shape::Rows, 3, &[("x", 10)], &[("y", 3)]).unwrap_err().contains("not a multiple"));
        assert!(shape(Shape::Cols, 5, &[("x", 10)], &[("y", 2)]).unwrap_err().contains("gives 5"));
        assert!(shape(Shape::Cols, 0, &[("x", 4)], &[("y", 0)]).unwrap_err().contains("`cols` is 0"));
    }
}

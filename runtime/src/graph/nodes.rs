//! The nodes other than kernels: memcpy (host to device, device to host, device to device),
//! memset, host closures, empty nodes, child graphs, event record and wait.

use super::args::{Access, Space};
use super::host::{trampoline, HostCell};
use super::{Graph, Node, NodeKind};
use crate::args::buffer::{DeviceBuffer, DeviceBufferMut};
use crate::bind::{node_buffer, other_device};
use crate::error::{Error, Result};
use cudarc::driver::{sys, CudaEvent, DeviceRepr};
use std::marker::PhantomData;

/// Where a memcpy node copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    HtoD,
    DtoH,
    DtoD,
}

/// A memcpy node: derefs to its [`Node`]; its copy is changed in an instantiated graph with
/// [`GraphExec::set_memcpy_htod`](crate::GraphExec::set_memcpy_htod) and friends.
#[derive(Debug, Clone, Copy)]
pub struct MemcpyNode {
    pub(crate) node: Node,
    pub(crate) direction: Direction,
}

impl std::ops::Deref for MemcpyNode {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.node
    }
}

/// A memset node of elements `T` (1, 2 or 4 bytes): derefs to its [`Node`]; its value is changed
/// in an instantiated graph with [`GraphExec::set_memset`](crate::GraphExec::set_memset).
#[derive(Debug)]
pub struct MemsetNode<T> {
    pub(crate) node: Node,
    pub(crate) dst: sys::CUdeviceptr,
    pub(crate) len: usize,
    _t: PhantomData<fn(T)>,
}

impl<T> Clone for MemsetNode<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for MemsetNode<T> {}

impl<T> std::ops::Deref for MemsetNode<T> {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.node
    }
}

/// One end of a copy.
#[derive(Clone, Copy)]
pub(crate) enum End {
    Host(*const u8),
    Device(sys::CUdeviceptr),
}

/// The driver's description of a 1-D copy of `bytes` from `src` to `dst`.
pub(crate) fn copy_params(src: End, dst: End, bytes: usize) -> sys::CUDA_MEMCPY3D {
    use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    let (src_type, src_host, src_device) = match src {
        End::Host(h) => (CU_MEMORYTYPE_HOST, h as *const std::ffi::c_void, 0),
        End::Device(d) => (CU_MEMORYTYPE_DEVICE, std::ptr::null(), d),
    };
    let (dst_type, dst_host, dst_device) = match dst {
        End::Host(h) => (CU_MEMORYTYPE_HOST, h as *mut std::ffi::c_void, 0),
        End::Device(d) => (CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), d),
    };
    // Every field spelled out: the memory-type enums have no zero value, so no `zeroed()`.
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: src_device,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: bytes,
        Height: 1,
        Depth: 1,
    }
}

fn host_access<T>(s: &[T], write: bool) -> Access {
    let lo = s.as_ptr() as u64;
    Access { space: Space::Host, lo, hi: lo + std::mem::size_of_val(s) as u64, write }
}

/// The checked ends and byte count of a copy; shared by node creation and update.
pub(crate) fn htod<T: DeviceRepr, D: DeviceBuffer<T> + DeviceBufferMut<T>>(
    g_ctx: &cudarc::driver::CudaContext,
    src: &[T],
    dst: &D,
    acc: &mut Vec<Access>,
) -> Result<(End, End, usize)> {
    let (d, a) = node_buffer(dst, g_ctx, true)?;
    if src.len() > dst.len() {
        return Err(too_long(g_ctx.ordinal(), "host-to-device", src.len(), dst.len()));
    }
    acc.push(host_access(src, false));
    acc.push(Access { hi: a.lo + std::mem::size_of_val(src) as u64, ..a });
    Ok((End::Host(src.as_ptr() as *const u8), End::Device(d), std::mem::size_of_val(src)))
}

pub(crate) fn dtoh<T: DeviceRepr, S: DeviceBuffer<T>>(
    g_ctx: &cudarc::driver::CudaContext,
    src: &S,
    dst: &mut [T],
    acc: &mut Vec<Access>,
) -> Result<(End, End, usize)> {
    let (s, a) = node_buffer(src, g_ctx, false)?;
    if dst.len() > src.len() {
        return Err(too_long(g_ctx.ordinal(), "device-to-host", dst.len(), src.len()));
    }
    acc.push(Access { hi: a.lo + std::mem::size_of_val(dst) as u64, ..a });
    acc.push(host_access(dst, true));
    Ok((End::Device(s), End::Host(dst.as_mut_ptr() as *const u8), std::mem::size_of_val(dst)))
}

pub(crate) fn dtod<T: DeviceRepr, S: DeviceBuffer<T>, D: DeviceBuffer<T> + DeviceBufferMut<T>>(
    g_ctx: &cudarc::driver::CudaContext,
    src: &S,
    dst: &D,
    acc: &mut Vec<Access>,
) -> Result<(End, End, usize)> {
    let (s, sa) = node_buffer(src, g_ctx, false)?;
    let (d, da) = node_buffer(dst, g_ctx, true)?;
    if src.len() > dst.len() {
        return Err(too_long(g_ctx.ordinal(), "device-to-device", src.len(), dst.len()));
    }
    let bytes = src.num_bytes();
    acc.push(sa);
    acc.push(Access { hi: da.lo + bytes as u64, ..da });
    Ok((End::Device(s), End::Device(d), bytes))
}

#[cold]
fn too_long(device: usize, what: &str, n: usize, room: usize) -> Error {
    Error::Graph {
        device,
        cause: format!("{what} copy of {n} elements into (or from) a buffer of {room}"),
        fix: Some("copy at most as many elements as the smaller side holds (slice it)".into()),
    }
}

/// A value a memset node can write: a scalar of 1, 2 or 4 bytes without padding, whose bits are
/// read safely (a struct's padding bytes are uninitialised, so the size alone is not enough).
#[diagnostic::on_unimplemented(
    message = "a memset node cannot write `{Self}`",
    label = "not a 1-, 2- or 4-byte scalar",
    note = "memset nodes write u8/i8/bool, u16/i16/f16/bf16 or u32/i32/f32 elements; fill wider elements with a kernel node"
)]
///
/// The trait is sealed: its size and bits are trusted (a memset node writes `size` bytes per
/// element over the buffer's length), so only this crate implements it, for the types above.
///
/// ```compile_fail,E0277
/// use cuda_embed_runtime::graph::MemsetValue;
/// /// A 1-byte type that would claim 4-byte elements: 4 times the buffer's bytes written.
/// #[derive(Clone, Copy)]
/// #[repr(transparent)]
/// struct Byte(u8);
/// unsafe impl cuda_embed_runtime::cudarc::driver::DeviceRepr for Byte {}
/// impl MemsetValue for Byte {
///     fn memset_bits(self) -> (u32, u32) { (4, 0) }
/// }
/// ```
pub trait MemsetValue: DeviceRepr + Copy + sealed::Sealed {
    /// The element size (1, 2 or 4) and the value's bits, as `cuMemsetD*` takes them.
    fn memset_bits(self) -> (u32, u32);
}

/// The supertrait only this crate can implement ([`MemsetValue`] is sealed).
mod sealed {
    pub trait Sealed {}
}

macro_rules! memset_value {
    ($($t:ty => |$v:ident| $bits:expr),* $(,)?) => { $(
        impl sealed::Sealed for $t {}
        impl MemsetValue for $t {
            #[inline]
            fn memset_bits(self) -> (u32, u32) {
                let $v = self;
                (std::mem::size_of::<$t>() as u32, $bits)
            }
        }
    )* };
}

memset_value!(
    u8 => |v| u32::from(v),
    i8 => |v| u32::from(v as u8),
    bool => |v| u32::from(v),
    u16 => |v| u32::from(v),
    i16 => |v| u32::from(v as u16),
    crate::f16 => |v| u32::from(v.to_bits()),
    crate::bf16 => |v| u32::from(v.to_bits()),
    u32 => |v| v,
    i32 => |v| v as u32,
    f32 => |v| v.to_bits(),
);

/// The memset element size and value bits of `value`.
pub(crate) fn memset_bits<T: MemsetValue>(value: T) -> (u32, u32) {
    value.memset_bits()
}

impl<'a> Graph<'a> {
    fn copy(
        &mut self,
        label: String,
        ends: (End, End, usize),
        acc: Vec<Access>,
        direction: Direction,
    ) -> Result<MemcpyNode> {
        let p = copy_params(ends.0, ends.1, ends.2);
        let (graph, ctx) = (self.raw.0, self.ctx.cu_ctx());
        let node = self.add(
            NodeKind::Memcpy,
            || label.into(),
            acc,
            "cuGraphAddMemcpyNode",
            |deps| {
                let mut n = std::ptr::null_mut();
                // SAFETY: live graph and context; `deps` are nodes of this graph; `p` describes
                // memory borrowed for the graph's lifetime.
                let r = unsafe { sys::cuGraphAddMemcpyNode(&mut n, graph, deps.as_ptr(), deps.len(), &p, ctx) };
                (r, n)
            },
        )?;
        Ok(MemcpyNode { node, direction })
    }

    /// Copies `src` (host memory, borrowed and pinned in place for `'a`) to the start of `dst`.
    /// `src` may be shorter than `dst`, not longer. Device buffers of the copy and memset nodes
    /// are [`DeviceBuffer`]s: their `len()` bounds the copy, so a buffer type of your own needs
    /// the `unsafe impl` that promises it, as for a launch.
    pub fn memcpy_htod<T: DeviceRepr, D: DeviceBuffer<T> + DeviceBufferMut<T>>(
        &mut self,
        src: &'a [T],
        dst: &'a D,
    ) -> Result<MemcpyNode> {
        self.device_only("a host-to-device memcpy")?;
        let mut acc = self.take_scratch();
        let ends = htod(&self.ctx, src, dst, &mut acc)?;
        self.copy(format!("memcpy HtoD {} B", ends.2), ends, acc, Direction::HtoD)
    }

    /// Copies the start of `src` into `dst` (host memory, exclusively borrowed for `'a`).
    pub fn memcpy_dtoh<T: DeviceRepr, S: DeviceBuffer<T>>(
        &mut self,
        src: &'a S,
        dst: &'a mut [T],
    ) -> Result<MemcpyNode> {
        self.device_only("a device-to-host memcpy")?;
        let mut acc = self.take_scratch();
        let ends = dtoh(&self.ctx, src, dst, &mut acc)?;
        self.copy(format!("memcpy DtoH {} B", ends.2), ends, acc, Direction::DtoH)
    }

    /// Copies all of `src` to the start of `dst` (device to device).
    pub fn memcpy_dtod<T: DeviceRepr, S: DeviceBuffer<T>, D: DeviceBuffer<T> + DeviceBufferMut<T>>(
        &mut self,
        src: &'a S,
        dst: &'a D,
    ) -> Result<MemcpyNode> {
        let mut acc = self.take_scratch();
        let ends = dtod(&self.ctx, src, dst, &mut acc)?;
        self.copy(format!("memcpy DtoD {} B", ends.2), ends, acc, Direction::DtoD)
    }

    /// Sets every element of `dst` to `value`: a [`MemsetValue`] (integers, `bool`, `f16`,
    /// `bf16`, `f32`: elements of 1, 2 or 4 bytes; wider elements need a kernel node).
    pub fn memset<T: MemsetValue, D: DeviceBuffer<T> + DeviceBufferMut<T>>(
        &mut self,
        dst: &'a D,
        value: T,
    ) -> Result<MemsetNode<T>> {
        let (size, bits) = memset_bits(value);
        let mut acc = self.take_scratch();
        let (d, a) = node_buffer(dst, &self.ctx, true)?;
        acc.push(a);
        let len = dst.len();
        let p =
            sys::CUDA_MEMSET_NODE_PARAMS { dst: d, pitch: 0, value: bits, elementSize: size, width: len, height: 1 };
        let (graph, ctx) = (self.raw.0, self.ctx.cu_ctx());
        let label = move || format!("memset {len} x {size} B").into();
        let node = self.add(NodeKind::Memset, label, acc, "cuGraphAddMemsetNode", |deps| {
            let mut n = std::ptr::null_mut();
            // SAFETY: live graph and context; `p` describes `dst`, borrowed for `'a`.
            let r = unsafe { sys::cuGraphAddMemsetNode(&mut n, graph, deps.as_ptr(), deps.len(), &p, ctx) };
            (r, n)
        })?;
        Ok(MemsetNode { node, dst: d, len, _t: PhantomData })
    }

    /// Runs `f` on a driver thread when the node's dependencies are done. A panic in `f` is
    /// caught there and returned as an [`Error::Graph`] by the next
    /// [`GraphExec::launch`](crate::GraphExec::launch) or
    /// [`GraphExec::synchronize`](crate::GraphExec::synchronize). `f` must not call CUDA.
    /// Its dependencies are only the explicit ones ([`Graph::after`]).
    pub fn host(&mut self, f: impl FnMut() + Send + 'static) -> Result<Node> {
        self.device_only("a host node")?;
        let label = format!("host #{}", self.hosts.len());
        let cell = HostCell::new(label.clone(), Box::new(f));
        let p = sys::CUDA_HOST_NODE_PARAMS { fn_: Some(trampoline), userData: cell.user_data() };
        let graph = self.raw.0;
        let acc = self.take_scratch();
        let node = self.add(
            NodeKind::Host,
            || label.into(),
            acc,
            "cuGraphAddHostNode",
            |deps| {
                let mut n = std::ptr::null_mut();
                // SAFETY: live graph; `userData` is a HostCell the graph and its instantiations keep.
                let r = unsafe { sys::cuGraphAddHostNode(&mut n, graph, deps.as_ptr(), deps.len(), &p) };
                (r, n)
            },
        )?;
        self.hosts.push(cell);
        Ok(node)
    }

    /// A node with no work: a join point for [`Graph::after`].
    pub fn empty(&mut self) -> Result<Node> {
        let graph = self.raw.0;
        let acc = self.take_scratch();
        self.add(
            NodeKind::Empty,
            || "empty".into(),
            acc,
            "cuGraphAddEmptyNode",
            |deps| {
                let mut n = std::ptr::null_mut();
                // SAFETY: live graph; dependencies of this graph.
                let r = unsafe { sys::cuGraphAddEmptyNode(&mut n, graph, deps.as_ptr(), deps.len()) };
                (r, n)
            },
        )
    }

    /// Embeds (a copy of) `child` as one node. Its reads and writes count as the node's for the
    /// inference; its host closures stay alive with this graph.
    pub fn child(&mut self, child: &Graph<'a>) -> Result<Node> {
        if child.ctx.cu_ctx() != self.ctx.cu_ctx() {
            return Err(other_device(&self.ctx, child.ctx.ordinal()));
        }
        if !child.hosts.is_empty() {
            self.device_only("a child graph with host nodes")?;
        }
        let mut acc = self.take_scratch();
        acc.extend(child.tracker.accesses());
        let (graph, raw) = (self.raw.0, child.raw.0);
        let label = format!("child graph ({} nodes)", child.nodes.len());
        let node = self.add(
            NodeKind::Child,
            || label.into(),
            acc,
            "cuGraphAddChildGraphNode",
            |deps| {
                let mut n = std::ptr::null_mut();
                // SAFETY: two live graphs of one context; the driver clones the child.
                let r = unsafe { sys::cuGraphAddChildGraphNode(&mut n, graph, deps.as_ptr(), deps.len(), raw) };
                (r, n)
            },
        )?;
        self.hosts.extend(child.hosts.iter().cloned());
        self.owned.extend(child.owned.iter().cloned());
        Ok(node)
    }

    /// Records `event` when the node's dependencies are done.
    pub fn event_record(&mut self, event: &'a CudaEvent) -> Result<Node> {
        self.event(event, true)
    }

    /// Waits for `event` (recorded elsewhere) before the node's dependents run.
    pub fn event_wait(&mut self, event: &'a CudaEvent) -> Result<Node> {
        self.event(event, false)
    }

    fn event(&mut self, event: &'a CudaEvent, record: bool) -> Result<Node> {
        self.device_only("an event node")?;
        if event.context().cu_ctx() != self.ctx.cu_ctx() {
            return Err(other_device(&self.ctx, event.context().ordinal()));
        }
        let (graph, e) = (self.raw.0, event.cu_event());
        let acc = self.take_scratch();
        let (kind, call) = if record {
            (NodeKind::EventRecord, "cuGraphAddEventRecordNode")
        } else {
            (NodeKind::EventWait, "cuGraphAddEventWaitNode")
        };
        let label = if record { "event record" } else { "event wait" };
        self.add(
            kind,
            || label.into(),
            acc,
            call,
            |deps| {
                let mut n = std::ptr::null_mut();
                // SAFETY: live graph and event of one context.
                let r = unsafe {
                    if record {
                        sys::cuGraphAddEventRecordNode(&mut n, graph, deps.as_ptr(), deps.len(), e)
                    } else {
                        sys::cuGraphAddEventWaitNode(&mut n, graph, deps.as_ptr(), deps.len(), e)
                    }
                };
                (r, n)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_params_describe_a_1d_copy() {
        let host = [0u8; 16];
        let p = copy_params(End::Host(host.as_ptr()), End::Device(0x1000), 16);
        assert_eq!(p.srcMemoryType, sys::CUmemorytype::CU_MEMORYTYPE_HOST);
        assert_eq!(p.srcHost, host.as_ptr() as *const std::ffi::c_void);
        assert_eq!((p.dstMemoryType, p.dstDevice), (sys::CUmemorytype::CU_MEMORYTYPE_DEVICE, 0x1000));
        assert_eq!((p.WidthInBytes, p.Height, p.Depth), (16, 1, 1));
        let p = copy_params(End::Device(0x2000), End::Device(0x1000), 8);
        assert_eq!((p.srcDevice, p.dstDevice, p.srcHost), (0x2000, 0x1000, std::ptr::null()));
    }

    #[test]
    fn memset_sizes() {
        assert_eq!(memset_bits(1.5f32), (4, 1.5f32.to_bits()));
        assert_eq!(memset_bits(0xabu8), (1, 0xab));
        assert_eq!(memset_bits(7u16), (2, 7));
        assert_eq!(memset_bits(-1i16), (2, 0xffff));
        assert_eq!(memset_bits(-1i8), (1, 0xff), "no sign extension into the unused bits");
        assert_eq!(memset_bits(crate::f16::from_f32(1.0)), (2, 0x3c00));
        assert_eq!(memset_bits(true), (1, 1));
    }
}

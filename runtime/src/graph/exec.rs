//! The instantiated graph: upload, launch, synchronise (reporting host-node panics), typed
//! kernel-node updates, memcpy/memset node updates and whole-graph update.

use super::args::{Access, Discard, NodeArgs, Record, StackAccesses};
use super::host::{self, HostCell};
use super::kernel::{check, node_params, KernelNode};
use super::nodes::{copy_params, dtod, dtoh, htod, memset_bits, Direction, MemcpyNode, MemsetNode, MemsetValue};
use super::{driver, Graph, Node, NodeKind, RawGraph};
use crate::args::buffer::{DeviceBuffer, DeviceBufferMut};
use crate::bind::{node_buffer, other_device};
use crate::driver::bind;
use crate::error::{DriverCode, Error, Result};
use crate::module::kernel::KernelRef;
use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::Arc;

/// An instantiated [`Graph`]: launch it on any stream of its context, as often as needed, and
/// change its nodes' parameters between launches. Borrows every buffer its nodes refer to for
/// `'a`, like the graph it came from.
pub struct GraphExec<'a> {
    ctx: Arc<CudaContext>,
    raw: sys::CUgraphExec,
    /// The graph it was instantiated from: its node handles address the nodes in updates.
    _graph: std::rc::Rc<RawGraph>,
    graph_id: u64,
    /// Each node's driver handle and kind, in the order added.
    nodes: Vec<(sys::CUgraphNode, NodeKind)>,
    /// The edges it was instantiated with, in the order added (sorted only by a whole-graph
    /// update, which refuses another topology before the driver is asked).
    edges: Vec<(usize, usize)>,
    hosts: Vec<Arc<HostCell>>,
    /// The node handles of the bodies of its conditional nodes (their nodes are updated too).
    bodies: Vec<super::conditional::Body>,
    /// The graph-owned device memory its nodes use (freed after the drop's synchronisation).
    owned: Vec<Arc<CudaSlice<u8>>>,
    /// The last kernel-node update's configuration that passed the checks.
    checked: super::kernel::CheckedConfig,
    /// Whether it was ever launched: then dropping it waits for the context first.
    launched: std::cell::Cell<bool>,
    _borrows: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl std::fmt::Debug for GraphExec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphExec")
            .field("device", &self.ctx.ordinal())
            .field("nodes", &self.nodes.len())
            .finish_non_exhaustive()
    }
}

/// Dropping a launched `GraphExec` waits for its context (`cuCtxSynchronize`): the borrows of
/// `'a` end with it, so a buffer (or host memory, or a host node's closure) it refers to may be
/// freed or read right after, and no launch of it may still be running then.
impl Drop for GraphExec<'_> {
    fn drop(&mut self) {
        let raw = self.raw;
        // SAFETY: instantiated once, destroyed once, here, after every launch finished.
        let destroy = || unsafe {
            sys::cuGraphExecDestroy(raw);
        };
        if self.launched.get() {
            // The driver's wait (a deferred error of cudarc's must not cut it short, or the
            // borrows end while a launch still runs); when the work cannot finish, leaked.
            let _ = crate::driver::sync::context_then(&self.ctx, destroy);
        } else {
            let _ = bind(&self.ctx);
            destroy();
        }
        SpareLists::keep(std::mem::take(&mut self.nodes), std::mem::take(&mut self.edges));
    }
}

/// The node and edge lists of the last instantiation this thread dropped, emptied, for the next
/// one (as a graph keeps its lists): instantiating again and again copies the graph's lists
/// into room already there. Lists of at most 4096 nodes are kept.
struct SpareLists {
    nodes: Vec<(sys::CUgraphNode, NodeKind)>,
    edges: Vec<(usize, usize)>,
}

thread_local! {
    static SPARE_LISTS: std::cell::Cell<Option<SpareLists>> = const { std::cell::Cell::new(None) };
}

impl SpareLists {
    /// `g`'s node handles and kinds and its edges, copied into this thread's spare lists if any.
    fn copy(g: &Graph<'_>) -> SpareLists {
        let mut lists = SPARE_LISTS
            .try_with(|s| s.take())
            .ok()
            .flatten()
            .unwrap_or(SpareLists { nodes: Vec::new(), edges: Vec::new() });
        lists.nodes.extend(g.nodes.iter().map(|n| (n.raw, n.kind)));
        lists.edges.extend_from_slice(&g.edges);
        lists
    }

    fn keep(mut nodes: Vec<(sys::CUgraphNode, NodeKind)>, mut edges: Vec<(usize, usize)>) {
        if nodes.capacity() > 4096 || edges.capacity() > 4 * 4096 {
            return;
        }
        nodes.clear();
        edges.clear();
        // A thread being torn down has no spare lists any more; they are freed here then.
        let _ = SPARE_LISTS.try_with(|s| s.set(Some(SpareLists { nodes, edges })));
    }
}

impl<'a> GraphExec<'a> {
    pub(crate) fn new(g: &Graph<'a>) -> Result<Self> {
        if g.has_conditions() {
            g.conditions_done()?;
        }
        bind(&g.ctx)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: live graph; valid out-pointer; no flags.
        let r = unsafe { sys::cuGraphInstantiateWithFlags(&mut raw, g.raw.0, 0) };
        driver(&g.ctx, "cuGraphInstantiateWithFlags", r)?;
        let SpareLists { nodes, edges } = SpareLists::copy(g);
        Ok(GraphExec {
            ctx: g.ctx.clone(),
            raw,
            _graph: g.raw.clone(),
            graph_id: g.id,
            nodes,
            edges,
            hosts: g.hosts.clone(),
            bodies: if g.bodies.is_empty() { Vec::new() } else { g.bodies.clone() },
            owned: g.owned.clone(),
            checked: super::kernel::CheckedConfig::default(),
            launched: std::cell::Cell::new(false),
            _borrows: PhantomData,
        })
    }

    /// The context the graph was instantiated on.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The driver's executable-graph handle.
    pub fn cu_graph_exec(&self) -> sys::CUgraphExec {
        self.raw
    }

    fn check_stream(&self, stream: &CudaStream) -> Result<()> {
        let s = stream.context();
        if s.cu_ctx() != self.ctx.cu_ctx() {
            return Err(Error::Graph {
                device: self.ctx.ordinal(),
                cause: format!(
                    "a stream of device {} was given to a graph of device {}",
                    s.ordinal(),
                    self.ctx.ordinal()
                ),
                fix: Some("launch the graph on a stream of its own context".into()),
            });
        }
        Ok(())
    }

    pub(crate) fn panics(&self) -> Result<()> {
        match host::check(&self.hosts, self.ctx.ordinal()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Uploads the graph's resources to the device ahead of the first launch
    /// (`cuGraphUpload`), on `stream`.
    pub fn upload(&self, stream: &CudaStream) -> Result<()> {
        self.check_stream(stream)?;
        bind(&self.ctx)?;
        // SAFETY: live executable graph and stream of one context.
        let r = unsafe { sys::cuGraphUpload(self.raw, stream.cu_stream()) };
        driver(&self.ctx, "cuGraphUpload", r)
    }

    /// Launches the whole graph on `stream` (`cuGraphLaunch`); it runs after the work queued
    /// there before, and work queued after it waits for it. A host node that panicked since the
    /// last check is reported here (as [`Error::Graph`]) and the graph is not launched.
    ///
    /// # Safety
    /// The kernels run arbitrary device code: each must stay within the buffers it is given.
    /// The graph's nodes are not stream operations, so cudarc's per-buffer event tracking does
    /// not see them: use its buffers on other streams only after synchronising (e.g.
    /// [`GraphExec::synchronize`]). Dropping a launched `GraphExec` waits for the context, so the
    /// buffers it borrows are free to use once it is gone. Instantiations of one graph share the
    /// scratch memory of its reduction nodes: do not run two of them at the same time (the
    /// launches of one `GraphExec` are ordered by the driver).
    #[inline]
    pub unsafe fn launch(&self, stream: &CudaStream) -> Result<()> {
        #[cfg(feature = "nvtx")]
        let _range = crate::nvtx::graph(self.nodes.len());
        if !self.hosts.is_empty() {
            self.panics()?;
        }
        self.check_stream(stream)?;
        bind(&self.ctx)?;
        // SAFETY: live executable graph and stream of one context; the rest is the caller's.
        let r = unsafe { sys::cuGraphLaunch(self.raw, stream.cu_stream()) };
        self.launched.set(true);
        driver(&self.ctx, "cuGraphLaunch", r)
    }

    /// Waits for `stream`, then reports a host node that panicked (as [`Error::Graph`]), then,
    /// as [`crate::synchronize`] does, the first out-of-range index recorded by a bounds-checked
    /// Rust-syntax kernel launched in the context (as [`Error::IndexOutOfBounds`]).
    ///
    /// The stream's context is made current for the wait (and stays current), whatever context
    /// the thread had: the null, legacy and per-thread stream handles name a stream of the
    /// current context.
    pub fn synchronize(&self, stream: &CudaStream) -> Result<()> {
        // Binds the stream's context before the wait (see `sync::stream`).
        crate::driver::sync::stream(stream)?;
        self.panics()?;
        crate::device::report::check_launched(stream)
    }

    #[inline(always)]
    fn node(&self, node: Node) -> Result<sys::CUgraphNode> {
        match self.nodes.get(node.index) {
            Some(&(n, _)) if node.graph == self.graph_id => Ok(n),
            _ => match self.body_of(node) {
                Some(b) => Ok(b.nodes[node.index].0),
                None => Err(self.foreign_node()),
            },
        }
    }

    /// The conditional body `node` is a node of, if it is one of this instantiation's bodies.
    #[cold]
    #[inline(never)]
    fn body_of(&self, node: Node) -> Option<&super::conditional::Body> {
        body_in(&self.bodies, node)
    }

    #[cold]
    #[inline(never)]
    fn foreign_node(&self) -> Error {
        Error::Graph {
            device: self.ctx.ordinal(),
            cause: "a node of another graph was used to update this instantiation".into(),
            fix: Some("update with the nodes of the graph this was instantiated from".into()),
        }
    }

    /// Changes a kernel node's launch configuration and arguments (typed like the node:
    /// a wrong type is a compile error), with the checks of a launch
    /// (`cuGraphExecKernelNodeSetParams`). The graph's edges stay as they were built: keep the
    /// new arguments' reads and writes compatible with them. A written buffer that overlaps
    /// another argument is an [`Error::Argument`], as when the node was added.
    #[inline]
    pub fn set<Sig, A: NodeArgs<'a, Sig>>(
        &mut self,
        node: &KernelNode<Sig>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        // The node is of the graph this was instantiated from (or of one of its conditional
        // bodies), and was in it then; its handle is the one the driver knows it by.
        let body = if node.node.graph == self.graph_id && node.node.index < self.nodes.len() {
            None
        } else {
            match body_in(&self.bodies, node.node) {
                Some(b) => Some(b),
                None => return Err(self.foreign_node()),
            }
        };
        // The node's kernel was looked up on the graph's context when it was added: the same
        // context as this instantiation's.
        self.checked.check(node.kernel, node.func, &self.ctx, &config)?;
        let (exec, ctx, f, n) = (self.raw, &*self.ctx, node.func.raw, node.raw);
        // Every buffer is still checked against the graph's context, and the ranges are checked
        // for aliasing as when the node was added (`bind`); they are not kept: an update keeps the
        // edges the graph was built with.
        let kernel = node.kernel;
        let write = |params: &mut [*mut std::ffi::c_void]| {
            let p = node_params(f, &config, params);
            // SAFETY: a kernel node of the graph this was instantiated from, with the same
            // function; one pointer per parameter of the types `Sig` names, copied by the driver.
            let r = unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, n, &p) };
            if r == sys::CUresult::CUDA_SUCCESS {
                Ok(())
            } else {
                // SAFETY: as above.
                unsafe { set_params_bound(ctx, exec, n, &p) }
            }
        };
        if A::MEMORY < 2 && A::CONDITIONS == 0 {
            // One argument naming memory cannot alias another, and there is no condition to
            // check: nothing to record (known at compile time).
            args.with_params(ctx, &mut Discard, |params, _| write(params))
        } else {
            args.with_params(ctx, &mut StackAccesses::new(), |params, acc| {
                if A::MEMORY >= 2 {
                    crate::bind::disjoint(acc.as_slice(), || (kernel.name(), kernel.module().origin()))?;
                }
                if A::CONDITIONS > 0 {
                    // The conditions the kernel may set: those of the node's own graph and of the
                    // graphs it is nested in.
                    let parents = body.map_or(&[][..], |b| &b.parents[..]);
                    crate::bind::conditions(node.node.graph, parents, acc.as_slice(), ctx.ordinal(), kernel.name())?;
                }
                write(params)
            })
        }
    }

    fn set_copy(
        &mut self,
        node: &MemcpyNode,
        want: Direction,
        ends: (super::nodes::End, super::nodes::End, usize),
    ) -> Result<()> {
        let n = self.node(node.node)?;
        if node.direction != want {
            return Err(Error::Graph {
                device: self.ctx.ordinal(),
                cause: format!("a {:?} memcpy node cannot be changed into a {want:?} copy", node.direction),
                fix: Some("update a node with the copy's own direction".into()),
            });
        }
        let p = copy_params(ends.0, ends.1, ends.2);
        bind(&self.ctx)?;
        // SAFETY: a memcpy node of the source graph; memory borrowed for `'a`.
        let r = unsafe { sys::cuGraphExecMemcpyNodeSetParams(self.raw, n, &p, self.ctx.cu_ctx()) };
        driver(&self.ctx, "cuGraphExecMemcpyNodeSetParams", r)
    }

    /// Points a host-to-device memcpy node at other memory.
    pub fn set_memcpy_htod<T: DeviceRepr, D: DeviceBuffer<T> + DeviceBufferMut<T>>(
        &mut self,
        node: &MemcpyNode,
        src: &'a [T],
        dst: &'a D,
    ) -> Result<()> {
        let ends = htod(&self.ctx, src, dst, &mut Vec::new())?;
        self.set_copy(node, Direction::HtoD, ends)
    }

    /// Points a device-to-host memcpy node at other memory.
    pub fn set_memcpy_dtoh<T: DeviceRepr, S: DeviceBuffer<T>>(
        &mut self,
        node: &MemcpyNode,
        src: &'a S,
        dst: &'a mut [T],
    ) -> Result<()> {
        let ends = dtoh(&self.ctx, src, dst, &mut Vec::new())?;
        self.set_copy(node, Direction::DtoH, ends)
    }

    /// Points a device-to-device memcpy node at other memory.
    pub fn set_memcpy_dtod<T: DeviceRepr, S: DeviceBuffer<T>, D: DeviceBuffer<T> + DeviceBufferMut<T>>(
        &mut self,
        node: &MemcpyNode,
        src: &'a S,
        dst: &'a D,
    ) -> Result<()> {
        let ends = dtod(&self.ctx, src, dst, &mut Vec::new())?;
        self.set_copy(node, Direction::DtoD, ends)
    }

    /// Changes the value a memset node writes.
    pub fn set_memset<T: MemsetValue>(&mut self, node: &MemsetNode<T>, value: T) -> Result<()> {
        let n = self.node(node.node)?;
        let (size, bits) = memset_bits(value);
        let p = sys::CUDA_MEMSET_NODE_PARAMS {
            dst: node.dst,
            pitch: 0,
            value: bits,
            elementSize: size,
            width: node.len,
            height: 1,
        };
        bind(&self.ctx)?;
        // SAFETY: a memset node of the source graph, on the buffer it was built with.
        let r = unsafe { sys::cuGraphExecMemsetNodeSetParams(self.raw, n, &p, self.ctx.cu_ctx()) };
        driver(&self.ctx, "cuGraphExecMemsetNodeSetParams", r)
    }

    /// Takes every node's parameters from `graph`, which must have the same topology as the one
    /// this was instantiated from (same nodes of the same kinds, added in the same order, same
    /// edges) (`cuGraphExecUpdate`). Anything else is an [`Error::Graph`] naming the driver's
    /// reason; instantiate `graph` instead then. Node handles of the original graph stay the
    /// ones [`GraphExec::set`] takes.
    pub fn update(&mut self, graph: &Graph<'a>) -> Result<()> {
        if graph.ctx.cu_ctx() != self.ctx.cu_ctx() {
            return Err(other_device(&self.ctx, graph.ctx.ordinal()));
        }
        let (kinds, edges) = topology(graph.nodes.iter().map(|n| n.kind), &graph.edges);
        let (old_kinds, old_edges) = topology(self.nodes.iter().map(|n| n.1), &self.edges);
        if (&kinds, &edges) != (&old_kinds, &old_edges) {
            return Err(self.topology_changed((&kinds, &edges), (&old_kinds, &old_edges)));
        }
        bind(&self.ctx)?;
        // SAFETY: all-zero is a valid result record (SUCCESS, null nodes) the driver fills.
        let mut info: sys::CUgraphExecUpdateResultInfo = unsafe { std::mem::zeroed() };
        // SAFETY: live executable graph and graph of one context; valid out-pointer.
        let r = unsafe { sys::cuGraphExecUpdate_v2(self.raw, graph.raw.0, &mut info) };
        if r == sys::CUresult::CUDA_SUCCESS {
            // The new graph's host closures are what the updated nodes call now.
            self.hosts.extend(graph.hosts.iter().cloned());
            self.owned.extend(graph.owned.iter().cloned());
            return Ok(());
        }
        use sys::CUgraphExecUpdateResult::*;
        let why = match info.result {
            CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED => {
                "the topology changed (nodes or edges were added or removed)"
            }
            CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED => "a node's type changed",
            CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED => "a kernel node's function changed",
            CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE => "a kernel node's function changed unsupportedly",
            CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED => {
                "a node's parameters changed in a way that cannot be updated"
            }
            CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED => "a node's attributes changed",
            CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED => "the change is not supported by the driver",
            _ => "the driver refused it",
        };
        let label = graph
            .nodes
            .iter()
            .position(|n| n.raw == info.errorNode && !info.errorNode.is_null())
            .map(|i| format!(" (at node {i}, `{}`)", graph.nodes[i].label))
            .unwrap_or_default();
        Err(Error::Graph {
            device: self.ctx.ordinal(),
            cause: format!("cuGraphExecUpdate: {why}{label}; {}", DriverCode(r)),
            fix: Some("instantiate the new graph instead of updating this one".into()),
        })
    }

    /// What differs between the instantiated topology and `kinds`/`edges` (see `update`).
    #[cold]
    fn topology_changed(
        &self,
        (kinds, edges): (&[NodeKind], &[(usize, usize)]),
        (old_kinds, old_edges): (&[NodeKind], &[(usize, usize)]),
    ) -> Error {
        let why = if kinds.len() != old_kinds.len() {
            format!("the graph has {} nodes, the instantiated one {}", kinds.len(), old_kinds.len())
        } else if let Some(i) = (0..kinds.len()).find(|&i| kinds[i] != old_kinds[i]) {
            format!("node {i} is a {:?} node, in the instantiated graph a {:?} node", kinds[i], old_kinds[i])
        } else {
            let added = edges.iter().filter(|e| !old_edges.contains(e)).count();
            let removed = old_edges.iter().filter(|e| !edges.contains(e)).count();
            format!("{added} edge(s) added and {removed} removed")
        };
        Error::Graph {
            device: self.ctx.ordinal(),
            cause: format!("whole-graph update: the topology changed ({why})"),
            fix: Some("instantiate the new graph instead of updating this one".into()),
        }
    }
}

/// An update of an N-D node (`node_nd`) being put together by generated code (the generated
/// `NAME::update_nd`): the new operands' addresses are taken on the graph's context, then the
/// kernel and launch configuration they need are compared with the node's, and only when both
/// are the same are the new arguments written (`cuGraphExecKernelNodeSetParams`).
#[doc(hidden)]
pub struct NdUpdate<'e, 'a> {
    exec: &'e mut GraphExec<'a>,
    node: Node,
    raw: sys::CUgraphNode,
    kind: NodeKind,
    /// The ranges of the new operands, for the aliasing check (`bind`).
    accesses: StackAccesses,
}

impl std::fmt::Debug for NdUpdate<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NdUpdate").field("node", &self.node).field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl<'a> GraphExec<'a> {
    /// Starts the update of an N-D node (support for the generated `NAME::update_nd`).
    #[doc(hidden)]
    pub fn __nd_update(&mut self, node: Node) -> Result<NdUpdate<'_, 'a>> {
        let raw = self.node(node)?;
        let kind = self.nodes[node.index].1;
        Ok(NdUpdate { exec: self, node, raw, kind, accesses: StackAccesses::new() })
    }
}

impl<'a> NdUpdate<'_, 'a> {
    /// The address of a buffer the kernel reads (an error for another device's buffer).
    #[inline]
    pub fn read<T, S: DevicePtr<T>>(&mut self, buffer: &'a S) -> Result<u64> {
        let (p, access) = node_buffer(buffer, &self.exec.ctx, false)?;
        self.accesses.record(access);
        Ok(p)
    }

    /// The address of a buffer the kernel writes (an error for another device's buffer).
    #[inline]
    pub fn write<T, S: DevicePtr<T> + DevicePtrMut<T>>(&mut self, buffer: &'a S) -> Result<u64> {
        let (p, access) = node_buffer(buffer, &self.exec.ctx, true)?;
        self.accesses.record(access);
        Ok(p)
    }

    #[cold]
    fn rebuild(&self, kernel: &str, cause: String) -> Error {
        Error::Graph {
            device: self.exec.ctx.ordinal(),
            cause: format!("`{kernel}::update_nd` of node {}: {cause}; nothing was changed", self.node.index),
            fix: Some(
                "build the graph again with the new operands (`node_nd`), then instantiate it or pass it to \
                 `GraphExec::update`; `update_nd` only takes operands of the node's shapes and layout class"
                    .into(),
            ),
        }
    }

    /// The new operands have no element: the node must be the empty node `node_nd` made for
    /// operands without elements, and then there is nothing to change.
    pub fn empty(self, kernel: &str) -> Result<()> {
        if self.kind == NodeKind::Empty {
            return Ok(());
        }
        Err(self.rebuild(kernel, format!("the new operands have no element, the node is {}", kind_name(self.kind))))
    }

    /// Writes the node's new arguments: `kernel` with `config` must be the function and launch
    /// configuration the node was built with (else an [`Error::Graph`] saying to rebuild the
    /// graph, and nothing is changed). `name` is the generated kernel's name, for errors.
    ///
    /// # Safety
    /// `params` holds one pointer per parameter of `kernel` to a value of its exact type, every
    /// buffer address is of a buffer borrowed for `'a`, and the kernel stays within them.
    pub unsafe fn kernel(
        self,
        name: &str,
        kernel: KernelRef,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        if self.kind != NodeKind::Kernel {
            return Err(
                self.rebuild(name, format!("the new operands have elements, the node is {}", kind_name(self.kind)))
            );
        }
        crate::bind::disjoint(self.accesses.as_slice(), || (kernel.name(), kernel.module().origin()))?;
        let ctx = self.exec.ctx.clone();
        let (_, target) = kernel.target(&ctx)?;
        check(&target, &ctx, config)?;
        bind(&ctx)?;
        // SAFETY: all-zero is a valid parameter record (null pointers) for the driver to fill.
        let mut old: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        // SAFETY: a live kernel node of the graph this was instantiated from (the kind is
        // checked above); valid out-pointer. The parameters read back are not dereferenced.
        let r = unsafe { sys::cuGraphKernelNodeGetParams_v2(self.raw, &mut old) };
        driver(&ctx, "cuGraphKernelNodeGetParams", r)?;
        if old.func != target.f {
            return Err(self.rebuild(
                name,
                format!(
                    "the new operands need kernel `{}` ({}), the node runs another one (another rank or layout \
                     class, flat or strided, or another kernel's node)",
                    kernel.name(),
                    describe(kernel.name())
                ),
            ));
        }
        let (g, b) = (config.grid_dim, config.block_dim);
        let was = ((old.gridDimX, old.gridDimY, old.gridDimZ), (old.blockDimX, old.blockDimY, old.blockDimZ));
        if (g, b, config.shared_mem_bytes) != (was.0, was.1, old.sharedMemBytes) {
            return Err(self.rebuild(
                name,
                format!(
                    "the new operands need the launch grid {g:?} x block {b:?} ({} B shared), the node was built \
                     with grid {:?} x block {:?} ({} B shared): another element count or vector width",
                    config.shared_mem_bytes, was.0, was.1, old.sharedMemBytes
                ),
            ));
        }
        let p = node_params(target.f, config, params);
        // SAFETY: a kernel node of the graph this was instantiated from, running this function
        // (checked); the caller's contract for the parameters, which the driver copies now.
        let r = unsafe { sys::cuGraphExecKernelNodeSetParams_v2(self.exec.raw, self.raw, &p) };
        driver(&ctx, "cuGraphExecKernelNodeSetParams", r)
    }
}

/// `cuGraphExecKernelNodeSetParams` again after binding the context, for a driver that refused
/// the first call (the node's function carries its context, so none is made current first).
///
/// # Safety
/// As for the first call: a kernel node of the graph `exec` was instantiated from, with
/// parameters the driver may read.
#[cold]
#[inline(never)]
unsafe fn set_params_bound(
    ctx: &CudaContext,
    exec: sys::CUgraphExec,
    node: sys::CUgraphNode,
    p: &sys::CUDA_KERNEL_NODE_PARAMS,
) -> Result<()> {
    bind(ctx)?;
    // SAFETY: the caller's contract.
    let r = unsafe { sys::cuGraphExecKernelNodeSetParams_v2(exec, node, p) };
    driver(ctx, "cuGraphExecKernelNodeSetParams", r)
}

/// The update records the ranges of the N-D operands (`ndarray::NodeMemory::update`), for its
/// aliasing check.
impl Record for NdUpdate<'_, '_> {
    #[inline]
    fn record(&mut self, access: Access) {
        self.accesses.record(access);
    }
}

/// What a node of `kind` is, for the errors of [`NdUpdate`].
fn kind_name(kind: NodeKind) -> String {
    match kind {
        NodeKind::Empty => "the empty node of operands without elements".into(),
        NodeKind::Kernel => "a kernel node".into(),
        other => format!("a {other:?} node, not an N-D kernel node"),
    }
}

/// How a generated kernel's name reads in an error (`NAME_ndK` is the strided kernel of rank K).
fn describe(name: &str) -> String {
    let rank = name.rsplit_once("_nd").map(|(_, k)| k.bytes().take_while(u8::is_ascii_digit).count());
    match (rank, name.rsplit_once("_nd")) {
        (Some(d), Some((_, k))) if d > 0 => format!("the strided kernel of rank {}", &k[..d]),
        _ => "the flat kernel".to_string(),
    }
}

/// The node kinds and the sorted edges of a graph (or an instantiation): what a whole-graph
/// update compares.
fn topology(kinds: impl Iterator<Item = NodeKind>, edges: &[(usize, usize)]) -> (Vec<NodeKind>, Vec<(usize, usize)>) {
    let mut edges = edges.to_vec();
    edges.sort_unstable();
    (kinds.collect(), edges)
}

/// The body of `bodies` that `node` is a node of (see `GraphExec::body_of`).
#[cold]
#[inline(never)]
fn body_in(bodies: &[super::conditional::Body], node: Node) -> Option<&super::conditional::Body> {
    bodies.iter().find(|b| b.id == node.graph && node.index < b.nodes.len())
}

#[cfg(test)]
mod tests {
    use super::{describe, kind_name, NodeKind};

    /// The kernel of an N-D node as an error names it: `NAME_ndK` (with or without template
    /// arguments) is the strided kernel of rank K, anything else the flat kernel.
    #[test]
    fn kernel_descriptions() {
        assert_eq!(describe("add_nd2"), "the strided kernel of rank 2");
        assert_eq!(describe("add_nd3<float>"), "the strided kernel of rank 3");
        assert_eq!(describe("add"), "the flat kernel");
        assert_eq!(describe("add<double>"), "the flat kernel");
        assert_eq!(describe("my_ndarray"), "the flat kernel");
        assert_eq!(describe("x_nd"), "the flat kernel");
    }

    #[test]
    fn node_kinds() {
        assert!(kind_name(NodeKind::Empty).contains("empty node"));
        assert!(kind_name(NodeKind::Memcpy).contains("Memcpy node, not an N-D kernel node"));
    }
}

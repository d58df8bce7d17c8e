//! Kernel nodes: from generated launchers (`NAME::node`), typed [`Kernel`] values and run-time
//! [`ProgramKernel`]s. Every one is checked like a launch (the same limit checks of the one
//! launch path, the same argument packing) and then added with `cuGraphAddKernelNode`.

use super::args::{Access, GraphArg, GraphArgKind, NodeArg, NodeArgs, StackAccesses};
use super::{Graph, Label, Node, NodeKind};
use crate::error::{Error, Result};
use crate::launch::kernel::Kernel;
use crate::launch::limits::check_config;
use crate::launch::Target;
use crate::module::kernel::KernelRef;
use crate::module::load::Function;
use crate::program::ProgramKernel;
use cudarc::driver::{sys, CudaContext, LaunchConfig};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A kernel node of a kernel of signature `Sig`: derefs to its [`Node`]; its arguments and launch
/// configuration are changed in an instantiated graph with
/// [`GraphExec::set`](crate::GraphExec::set) (or the generated `NAME::update`), typed like the
/// node itself.
pub struct KernelNode<Sig> {
    pub(crate) node: Node,
    /// The node's driver handle in the graph it was added to (an update of an instantiation of
    /// that graph addresses the node with it).
    pub(crate) raw: sys::CUgraphNode,
    pub(crate) kernel: KernelRef,
    /// The kernel's function and launch limits on the graph's context, looked up once when the
    /// node was added: an update (on an instantiation of that graph, so of that context) reuses
    /// them.
    pub(crate) func: &'static Function,
    _sig: PhantomData<fn(Sig)>,
}

/// Refuses a configuration `kernel` (loaded as `func`) cannot take, as a launch would: a few
/// compares, and the launch's full check (which reads the dynamic shared memory limit again,
/// then explains) only when they fail.
#[inline(always)]
fn check_function(kernel: KernelRef, func: &'static Function, ctx: &CudaContext, cfg: &LaunchConfig) -> Result<()> {
    match check_config(cfg, func.max_threads.load(Ordering::Relaxed), func.max_dyn_smem.load(Ordering::Relaxed)) {
        Ok(()) => Ok(()),
        Err(_) => check_again(kernel, func, ctx, cfg),
    }
}

#[cold]
#[inline(never)]
fn check_again(kernel: KernelRef, func: &'static Function, ctx: &CudaContext, cfg: &LaunchConfig) -> Result<()> {
    let target =
        Target { f: func.raw, max_threads: &func.max_threads, max_dyn_smem: &func.max_dyn_smem, who: kernel.who() };
    target.check(ctx.ordinal(), cfg)
}

impl<Sig> Clone for KernelNode<Sig> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Sig> Copy for KernelNode<Sig> {}

impl<Sig> std::fmt::Debug for KernelNode<Sig> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelNode").field("node", &self.node).field("kernel", &self.kernel.name()).finish()
    }
}

impl<Sig> std::ops::Deref for KernelNode<Sig> {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.node
    }
}

/// The driver's kernel-node parameters for `f` with `cfg` and `params`.
pub(crate) fn node_params(
    f: sys::CUfunction,
    cfg: &LaunchConfig,
    params: &mut [*mut c_void],
) -> sys::CUDA_KERNEL_NODE_PARAMS {
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    sys::CUDA_KERNEL_NODE_PARAMS {
        func: f,
        gridDimX: g.0,
        gridDimY: g.1,
        gridDimZ: g.2,
        blockDimX: b.0,
        blockDimY: b.1,
        blockDimZ: b.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        kernelParams: params.as_mut_ptr(),
        extra: std::ptr::null_mut(),
        kern: std::ptr::null_mut(),
        ctx: std::ptr::null_mut(),
    }
}

/// Refuses a configuration the kernel cannot take, as a launch would.
#[inline(always)]
pub(crate) fn check(target: &Target<'_>, ctx: &CudaContext, cfg: &LaunchConfig) -> Result<()> {
    target.check(ctx.ordinal(), cfg)
}

/// The function, grid and block of the last kernel configuration that passed the checks, in a
/// graph (for its nodes) or an instantiation (for its updates): the same function with the same
/// grid and block only compares the dynamic shared memory (the one limit that can change)
/// instead of checking the whole configuration again. Loaded modules stay loaded, so the
/// function stays valid.
#[derive(Clone, Copy, Default)]
pub(crate) struct CheckedConfig {
    func: Option<&'static Function>,
    dims: [u32; 6],
}

impl CheckedConfig {
    /// Refuses a configuration `kernel` (loaded as `func` on `ctx`) cannot take, as a launch
    /// would: the checks of [`check_function`], or for the function, grid and block last
    /// checked, only the dynamic shared memory.
    #[inline(always)]
    pub(crate) fn check(
        &mut self,
        kernel: KernelRef,
        func: &'static Function,
        ctx: &CudaContext,
        cfg: &LaunchConfig,
    ) -> Result<()> {
        let smem = cfg.shared_mem_bytes;
        if self.func.is_some_and(|last| std::ptr::eq(last, func))
            && self.dims == dims(cfg)
            && (smem == 0 || smem <= func.max_dyn_smem.load(Ordering::Relaxed))
        {
            return Ok(());
        }
        self.check_again(kernel, func, ctx, cfg)
    }

    #[inline(never)]
    fn check_again(
        &mut self,
        kernel: KernelRef,
        func: &'static Function,
        ctx: &CudaContext,
        cfg: &LaunchConfig,
    ) -> Result<()> {
        check_function(kernel, func, ctx, cfg)?;
        *self = CheckedConfig { func: Some(func), dims: dims(cfg) };
        Ok(())
    }
}

/// `cfg`'s grid and block, for [`CheckedConfig`].
#[inline(always)]
fn dims(cfg: &LaunchConfig) -> [u32; 6] {
    let (g, b) = (cfg.grid_dim, cfg.block_dim);
    [g.0, g.1, g.2, b.0, b.1, b.2]
}

impl<'a> Graph<'a> {
    /// `kernel`'s function on the graph's context (loading its module there first if needed):
    /// the next node of the kernel of the last kernel node takes it from there.
    #[inline(always)]
    pub(crate) fn function(&mut self, kernel: KernelRef) -> Result<&'static Function> {
        match self.last_kernel {
            Some((last, func)) if last.same(&kernel) => Ok(func),
            _ => self.look_up(kernel),
        }
    }

    #[inline(never)]
    fn look_up(&mut self, kernel: KernelRef) -> Result<&'static Function> {
        let func = kernel.function_on(&self.ctx)?;
        self.last_kernel = Some((kernel, func));
        Ok(func)
    }

    /// Adds a kernel node for `target` with `params` (one pointer per parameter).
    ///
    /// # Safety
    /// `target.f` belongs to the graph's context; `params` holds one pointer per kernel parameter
    /// to a value of its exact type; `accesses` lists the ranges the arguments name. `label` is
    /// the node's label (the kernel's name).
    pub(crate) unsafe fn kernel_raw(
        &mut self,
        target: &Target<'_>,
        cfg: &LaunchConfig,
        params: &mut [*mut c_void],
        accesses: Vec<Access>,
        label: Label,
    ) -> Result<Node> {
        check(target, &self.ctx, cfg)?;
        let p = node_params(target.f, cfg, params);
        // SAFETY: forwarded.
        let r = unsafe { self.kernel_node(&p, &accesses, label) };
        self.scratch.0 = accesses;
        r.map(|_| self.node_at(self.nodes.len() - 1)).map_err(|e| *e)
    }

    /// Adds the kernel node `p` after the limit checks (the graph's last node then); returns its
    /// driver handle. One copy for every kernel (the typed `Kernel::node` of each signature ends
    /// here).
    ///
    /// # Safety
    /// `p.func` belongs to the graph's context; `p.kernelParams` holds one pointer per kernel
    /// parameter to a value of its exact type; `accesses` lists the ranges the arguments name.
    #[inline(never)]
    pub(crate) unsafe fn kernel_node(
        &mut self,
        p: &sys::CUDA_KERNEL_NODE_PARAMS,
        accesses: &[Access],
        label: Label,
    ) -> std::result::Result<sys::CUgraphNode, Box<Error>> {
        // Outputs are borrowed shared for the graph's lifetime: the aliasing check of every
        // kernel node, whatever family made it (`bind`).
        crate::bind::disjoint(accesses, || (label.as_str(), label.origin()))?;
        if self.programmatic {
            // SAFETY: forwarded.
            return unsafe { self.programmatic_node(p, accesses, label) };
        }
        let graph = self.cu;
        self.add_node(NodeKind::Kernel, label, accesses, "cuGraphAddKernelNode", &mut move |deps| {
            let mut n = std::ptr::null_mut();
            // SAFETY: the caller's contract; the driver copies the parameter values now.
            let r = unsafe { sys::cuGraphAddKernelNode_v2(&mut n, graph, deps.as_ptr(), deps.len(), p) };
            (r, n)
        })
    }
}

impl Graph<'_> {
    /// Makes the edges of the next kernel node added from the kernel nodes it depends on
    /// programmatic (`CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC` from the port
    /// `CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC`): the graph's counterpart of a
    /// [`LaunchKind::Dependent`](crate::LaunchKind::Dependent) launch. The node's kernel may start
    /// while those kernels still run (sm_90 and newer), so it must call
    /// `cudaGridDependencySynchronize()` before it touches what they write or read (a kernel that
    /// does not wait starts as their blocks finish when they do not call
    /// `cudaTriggerProgrammaticLaunchCompletion()`). Its edges from other nodes (copies, memsets)
    /// stay full dependencies. Returns the graph: `saxpy::node(g.dependent(), cfg, ...)`.
    ///
    /// A dependency that another of the node's dependencies follows directly is left out (the
    /// inferred edge from link k - 2 of a ping-pong chain, which link k - 1 follows: the driver
    /// overlaps a node of one programmatic edge, not of two). The node still runs after it:
    /// it waits for link k - 1, which completed after link k - 2 did. So a dependent kernel must
    /// wait in *every* launch, in at least one thread, even one that touches no memory (call
    /// `cudaGridDependencySynchronize()` unconditionally, first): a launch that returns without
    /// waiting may complete before its predecessors, and then no longer orders what follows it.
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::Graph;
    /// # fn f(g: &mut Graph<'_>) -> cuda_embed_runtime::Result<()> {
    /// let a = g.empty()?;
    /// // step::node(g.dependent(), cfg, &x, &y, n)?;   (a kernel that waits for its inputs)
    /// assert!(g.programmatic_edges().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn dependent(&mut self) -> &mut Self {
        self.programmatic = true;
        self
    }

    /// The programmatic edges (see [`Graph::dependent`]), in the order added; [`Graph::edges`]
    /// lists them with the others. Example at [`Graph::dependent`].
    pub fn programmatic_edges(&self) -> Vec<(Node, Node)> {
        self.edges
            .iter()
            .filter(|&&(f, t)| self.programmatic_nodes.contains(&t) && self.nodes[f].kind == NodeKind::Kernel)
            .map(|&(f, t)| (self.node_at(f), self.node_at(t)))
            .collect()
    }

    /// [`Graph::kernel_node`] for a node of [`Graph::dependent`]: `cuGraphAddNode` with
    /// programmatic edge data on the edges from kernel nodes.
    ///
    /// # Safety
    /// As for [`Graph::kernel_node`].
    #[cold]
    #[inline(never)]
    unsafe fn programmatic_node(
        &mut self,
        p: &sys::CUDA_KERNEL_NODE_PARAMS,
        accesses: &[Access],
        label: Label,
    ) -> std::result::Result<sys::CUgraphNode, Box<Error>> {
        self.programmatic = false;
        let graph = self.cu;
        let kernel = sys::CUDA_KERNEL_NODE_PARAMS_v3 {
            func: p.func,
            gridDimX: p.gridDimX,
            gridDimY: p.gridDimY,
            gridDimZ: p.gridDimZ,
            blockDimX: p.blockDimX,
            blockDimY: p.blockDimY,
            blockDimZ: p.blockDimZ,
            sharedMemBytes: p.sharedMemBytes,
            kernelParams: p.kernelParams,
            extra: p.extra,
            kern: p.kern,
            ctx: p.ctx,
        };
        self.reduce = true;
        let r =
            self.add_node(NodeKind::Kernel, label, accesses, "cuGraphAddNode (kernel, programmatic)", &mut |deps| {
                let data: Vec<sys::CUgraphEdgeData> = deps.iter().map(|&d| edge_data(d)).collect();
                // SAFETY: all-zero is a valid parameter record (kernel type, null pointers); the
                // kernel parameters are set below.
                let mut params: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
                params.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL;
                params.__bindgen_anon_1.kernel = kernel;
                let mut n = std::ptr::null_mut();
                // SAFETY: the caller's contract for the kernel; `deps` are nodes of this graph, one
                // edge-data record each; the driver copies the parameter values now.
                let r = unsafe {
                    sys::cuGraphAddNode_v2(&mut n, graph, deps.as_ptr(), data.as_ptr(), deps.len(), &mut params)
                };
                (r, n)
            });
        self.reduce = false;
        let r = r?;
        self.programmatic_nodes.push(self.nodes.len() - 1);
        Ok(r)
    }
}

/// The edge data of an edge from `from` into a programmatic node: programmatic from a kernel
/// node, a full dependency from any other node.
fn edge_data(from: sys::CUgraphNode) -> sys::CUgraphEdgeData {
    let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
    // SAFETY: a live node of the graph; valid out-pointer.
    let r = unsafe { sys::cuGraphNodeGetType(from, &mut kind) };
    let programmatic = r == sys::CUresult::CUDA_SUCCESS && kind == sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL;
    sys::CUgraphEdgeData {
        from_port: if programmatic { sys::CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC as u8 } else { 0 },
        to_port: 0,
        type_: if programmatic { sys::CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC as u8 } else { 0 },
        reserved: [0; 5],
    }
}

impl<Sig> Kernel<Sig> {
    /// Adds a node launching this kernel with `config` and `args` (a tuple typed like the
    /// generated `launch`'s arguments, buffers borrowed for the graph's lifetime) to `graph`.
    /// Generated kernels also have `NAME::node(&mut graph, config, args...)`.
    ///
    /// The configuration is checked against the kernel's limits as a launch is; a buffer of
    /// another device is an [`Error::Graph`]. Creating the node runs nothing; launching the
    /// instantiated graph is what is `unsafe`.
    #[inline]
    pub fn node<'a, A: NodeArgs<'a, Sig>>(
        &self,
        graph: &mut Graph<'a>,
        config: LaunchConfig,
        args: A,
    ) -> Result<KernelNode<Sig>> {
        let raw = self.untyped();
        let func = graph.function(raw)?;
        let mut acc = StackAccesses::new();
        // SAFETY: the context lives in the `Arc`'s allocation, not in `graph`, and adding a node
        // never replaces or drops `graph.ctx`: the reference stays valid while `graph` is
        // borrowed mutably below (it saves an `Arc` clone per node).
        let ctx: &CudaContext = unsafe { &*Arc::as_ptr(&graph.ctx) };
        let r = args.with_params(ctx, &mut acc, |params, acc| {
            if A::CONDITIONS > 0 {
                // Known at compile time: a kernel of no `cudaGraphConditionalHandle` parameter
                // has no condition to check.
                crate::bind::conditions(graph.id, &graph.parents, acc.as_slice(), ctx.ordinal(), raw.name())?;
            }
            graph.checked.check(raw, func, ctx, &config)?;
            let p = node_params(func.raw, &config, params);
            // SAFETY: the function was looked up in the graph's context; `NodeArgs<Sig>` packs
            // one pointer per parameter of the types `Sig` names (the kernel's).
            let r = unsafe { graph.kernel_node(&p, acc.as_slice(), Label::Kernel(raw)) };
            r.map(|handle| (graph.node_at(graph.nodes.len() - 1), handle)).map_err(|e| *e)
        });
        r.map(|(node, handle)| KernelNode { node, raw: handle, kernel: raw, func, _sig: PhantomData })
    }
}

impl ProgramKernel {
    /// Adds a node launching this run-time kernel with `config` and `args` to `graph`. The
    /// argument count and sizes are checked against the compiled kernel, and, for a kernel
    /// taken with a C signature ([`ProgramModule::kernel_with_signature`],
    /// [`ProgramModule::kernel_checked`]), every argument against it (value or buffer, element
    /// and value types, a written buffer passed with [`GraphArg::write`]), as
    /// [`ProgramKernel::launch`] does; the kernel's module must be loaded on the graph's device.
    ///
    /// [`ProgramModule::kernel_with_signature`]: crate::ProgramModule::kernel_with_signature
    /// [`ProgramModule::kernel_checked`]: crate::ProgramModule::kernel_checked
    pub fn node<'a>(&'a self, graph: &mut Graph<'a>, config: LaunchConfig, args: &[GraphArg<'a>]) -> Result<Node> {
        let ctx = graph.ctx.clone();
        let target = self.target();
        if self.context().cu_ctx() != ctx.cu_ctx() {
            return Err(Error::Graph {
                device: ctx.ordinal(),
                cause: format!(
                    "kernel `{}` is loaded on device {}, the graph is on device {}",
                    self.name(),
                    self.context().ordinal(),
                    ctx.ordinal()
                ),
                fix: Some("load the program on the graph's device: `program.load(graph.context())`".into()),
            });
        }
        if let Some(sig) = self.signature() {
            let given: Vec<_> = args.iter().map(|a| (a.is_buffer(), a.elem)).collect();
            crate::program::sigcheck::check_given(sig, &given, &crate::program::sigcheck::NODE).map_err(|detail| {
                Error::Signature { kernel: self.name().to_string(), origin: target.who.origin.to_string(), detail }
            })?;
        }
        if let Some(params) = self.params() {
            if params.len() != args.len() || params.iter().zip(args).any(|(p, a)| p.1 != a.size) {
                return Err(Error::Arguments {
                    origin: target.who.origin.to_string(),
                    kernel: self.name().to_string(),
                    expected: params.iter().map(|p| p.1).collect(),
                    given: args.iter().map(|a| a.size).collect(),
                });
            }
        }
        let mut acc = graph.take_scratch();
        let mut conditions = false;
        let mut pointers = vec![0u64; args.len()];
        for (a, p) in args.iter().zip(pointers.iter_mut()) {
            match a.kind {
                GraphArgKind::Buffer { object, address, write } => {
                    // SAFETY: `object` is the `&'a S` the GraphArg constructor took for this
                    // `address`.
                    let (ptr, access) = unsafe { address(object, &ctx, write) }?;
                    *p = ptr;
                    acc.push(access);
                }
                GraphArgKind::Condition(c) => {
                    // SAFETY: `GraphArg::condition` took a `&'a Condition`.
                    let c = unsafe { &*c };
                    *p = NodeArg::<'_, super::ConditionalHandle>::prepare(c, &ctx, &mut acc)?.raw();
                    conditions = true;
                }
                GraphArgKind::Value(_) => {}
            }
        }
        let mut params: Vec<*mut c_void> = args
            .iter()
            .zip(&pointers)
            .map(|(a, p)| match a.kind {
                GraphArgKind::Value(v) => v as *mut c_void,
                GraphArgKind::Buffer { .. } | GraphArgKind::Condition(_) => p as *const u64 as *mut c_void,
            })
            .collect();
        if conditions {
            crate::bind::conditions(graph.id, &graph.parents, &acc, ctx.ordinal(), self.name())?;
        }
        // SAFETY: the function belongs to the graph's context (checked); one pointer per
        // parameter of the parameter's size (checked), alive for the call.
        unsafe { graph.kernel_raw(&target, &config, &mut params, acc, Label::Text(self.name().to_string().into())) }
    }
}

//! CUDA graphs built from typed nodes: kernel nodes from every generated launcher
//! (`NAME::node` of `cuda_kernel!`, `elementwise_kernel!` and `reduction_kernel!` modules),
//! [`Kernel`](crate::Kernel) values and [`ProgramKernel`](crate::ProgramKernel)s;
//! memcpy, memset, host, empty, child-graph and event nodes. Dependencies are given explicitly
//! ([`Graph::after`], [`Graph::add_edge`]) and inferred from what each node reads and writes.
//!
//! # Borrows
//!
//! A `Graph<'a>` and its [`GraphExec<'a>`] refer to buffers by address, so every buffer (device or
//! host) a node names is borrowed for `'a`: neither can outlive one (a compile error), and a host
//! buffer cannot move or be freed while they exist. Device buffers are borrowed *shared*, also the
//! ones a kernel writes: a graph typically writes one buffer from several nodes, which `&'a mut`
//! would forbid. What a node writes is known from the kernel's signature (the `Out`/`OutAny`
//! markers), from the memcpy/memset destination, and is recorded for the dependency inference; a
//! read-only view (`CudaView`) is refused where something is written. A host buffer a memcpy
//! writes is borrowed `&'a mut` (Rust forbids writing through a shared borrow): read it after the
//! graph and its instantiations are dropped, or copy device results into a host node.
//!
//! # Dependencies
//!
//! A node that reads a range depends on the last node that wrote an overlapping range; a node that
//! writes depends on the last writer and every reader since (write-after-read, write-after-write).
//! Ranges are device (or host) addresses, so two disjoint views of one buffer give no edge and
//! overlapping ones do. A host node's closure is opaque: give its dependencies with
//! [`Graph::after`]. [`Graph::edges`] lists the edges, [`Graph::to_dot`] draws them.
//!
//! # Capture or builder
//!
//! Generated launchers also work inside cudarc's stream capture (`stream.begin_capture(..)`,
//! launches, `stream.end_capture(..)`): prefer capture to record an existing sequence of stream
//! work, library calls included, as it is. Prefer the builder for typed node handles (typed
//! parameter updates without re-capturing), inferred concurrency between independent nodes,
//! host closures with panic reporting, and a graph whose shape you can inspect.

pub(crate) mod args;
mod conditional;
mod deps;
mod exec;
#[doc(hidden)]
pub mod generated;
mod host;
mod kernel;
mod nodes;

#[doc(hidden)]
pub use args::ByValue;
pub use args::{GraphArg, NodeArg, NodeArgs};
pub use conditional::{Condition, ConditionalHandle, LaunchCondition};
pub use exec::GraphExec;
#[doc(hidden)]
pub use exec::NdUpdate;
pub use kernel::KernelNode;
pub use nodes::{MemcpyNode, MemsetNode, MemsetValue};

use crate::driver::bind;
use crate::error::{DriverCode, Error, Result};
use args::Access;
use cudarc::driver::{sys, CudaContext, CudaSlice};
use host::HostCell;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

/// One node of a [`Graph`]: `Copy`, valid for the graph it was added to (and its
/// instantiations). Use it in [`Graph::after`] and [`Graph::add_edge`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    graph: u64,
    index: usize,
}

impl Node {
    /// The node's position in its graph (0 for the first node added).
    pub fn index(&self) -> usize {
        self.index
    }
}

/// What kind of node a [`Node`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeKind {
    /// A kernel launch.
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memset.
    Memset,
    /// A Rust closure run on the host.
    Host,
    /// No work: a join or fork point.
    Empty,
    /// A whole graph embedded as one node.
    Child,
    /// Records a CUDA event.
    EventRecord,
    /// Waits for a CUDA event.
    EventWait,
    /// A conditional node (`while`, `if`, `switch`) and its bodies.
    Conditional,
}

pub(crate) struct NodeInfo {
    pub(crate) raw: sys::CUgraphNode,
    pub(crate) kind: NodeKind,
    pub(crate) label: Label,
}

/// What a node is called ([`Graph::label`], [`Graph::to_dot`], errors).
pub(crate) enum Label {
    /// A `cuda_kernel!` kernel: its name is looked up only when asked for (adding a node
    /// touches nothing of the module's description).
    Kernel(crate::module::kernel::KernelRef),
    /// A run-time kernel's name, or a made-up description (`memcpy HtoD 4096 B`).
    Text(std::borrow::Cow<'static, str>),
}

impl Label {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Label::Kernel(k) => k.name(),
            Label::Text(t) => t,
        }
    }

    /// Where the node's kernel comes from, for errors.
    pub(crate) fn origin(&self) -> &str {
        match self {
            Label::Kernel(k) => k.module().origin(),
            Label::Text(_) => "a run-time program",
        }
    }
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The driver's graph, destroyed when the last of the graph and its instantiations goes (they
/// use its node handles for updates), if it is owned (the second field): a conditional node's
/// body belongs to that node.
pub(crate) struct RawGraph(pub(crate) sys::CUgraph, bool);

impl Drop for RawGraph {
    fn drop(&mut self) {
        if self.1 {
            // SAFETY: created by cuGraphCreate, destroyed once, here.
            unsafe { sys::cuGraphDestroy(self.0) };
        }
    }
}

/// A list of a [`Graph`] that, when the graph is dropped, is kept (emptied) for the next graph
/// its thread makes: a thread that builds graphs again and again (a graph per step, per shape)
/// allocates and grows its node and edge lists once, not for every graph. One list of each kind
/// per thread, of a graph of at most [`Reused::MAX`] entries (a longer list is freed as before).
/// The list's own `Drop` does it, so `Graph` itself has no `Drop` (which would make every buffer
/// a graph borrows outlive it: `let g = ...; let x = ...; node(&mut g, &x)` compiles).
pub(crate) struct Reused<T: Spare>(Vec<T>);

/// A kind of entry of [`Reused`] lists: where its thread's spare list is.
pub(crate) trait Spare: Sized + 'static {
    fn spare() -> &'static std::thread::LocalKey<std::cell::Cell<Vec<Self>>>;
}

thread_local! {
    static SPARE_NODES: std::cell::Cell<Vec<NodeInfo>> = const { std::cell::Cell::new(Vec::new()) };
    static SPARE_EDGES: std::cell::Cell<Vec<(usize, usize)>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Spare for NodeInfo {
    fn spare() -> &'static std::thread::LocalKey<std::cell::Cell<Vec<Self>>> {
        &SPARE_NODES
    }
}

impl Spare for (usize, usize) {
    fn spare() -> &'static std::thread::LocalKey<std::cell::Cell<Vec<Self>>> {
        &SPARE_EDGES
    }
}

impl<T: Spare> Reused<T> {
    /// The longest list kept.
    const MAX: usize = 4096;

    /// This thread's spare list, else a new one with room for `capacity` entries.
    fn new(capacity: usize) -> Self {
        let spare = T::spare().try_with(|s| s.take()).unwrap_or_default();
        Reused(if spare.capacity() == 0 { Vec::with_capacity(capacity) } else { spare })
    }
}

impl<T: Spare> std::ops::Deref for Reused<T> {
    type Target = Vec<T>;
    #[inline(always)]
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T: Spare> std::ops::DerefMut for Reused<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<T: Spare> Drop for Reused<T> {
    fn drop(&mut self) {
        let mut list = std::mem::take(&mut self.0);
        if list.capacity() > Self::MAX {
            return;
        }
        list.clear();
        // A thread being torn down has no spare lists any more; the list is freed here then.
        let _ = T::spare().try_with(|s| s.set(list));
    }
}

/// A CUDA graph under construction, on one context. `'a` is how long every buffer its nodes
/// refer to stays borrowed; see the [module docs](self) for the borrow rules and the inference.
///
/// ```no_run
/// # use cuda_embed_runtime::{Graph, LaunchConfig};
/// # fn f() -> cuda_embed_runtime::Result<()> {
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let host = vec![1.0f32; 1024];
/// let x = stream.alloc_zeros::<f32>(1024)?;
/// let mut g = Graph::new(&ctx)?;
/// let up = g.memcpy_htod(&host, &x)?;
/// let log = g.after(&[*up]).host(|| println!("copied"))?;
/// assert_eq!(g.edges(), vec![(*up, log)]);
/// let exec = g.instantiate()?;
/// unsafe { exec.launch(&stream)? };
/// exec.synchronize(&stream)?;
/// # Ok(()) }
/// ```
pub struct Graph<'a> {
    pub(crate) ctx: Arc<CudaContext>,
    /// The context's handle, to compare with the one this thread last bound.
    cu_ctx: usize,
    pub(crate) raw: Rc<RawGraph>,
    /// `raw`'s handle (one load less per node).
    pub(crate) cu: sys::CUgraph,
    pub(crate) id: u64,
    pub(crate) nodes: Reused<NodeInfo>,
    pub(crate) edges: Reused<(usize, usize)>,
    /// The ranges later nodes may have to wait for; also what a parent graph that embeds this
    /// one as a child node records for it (see [`deps::Tracker::accesses`]).
    tracker: deps::Tracker,
    pending: Vec<usize>,
    infer: bool,
    pub(crate) hosts: Vec<Arc<HostCell>>,
    /// Device memory the graph's nodes use that the graph itself owns (reduction scratch).
    pub(crate) owned: Vec<Arc<CudaSlice<u8>>>,
    /// Scratch for one node's accesses, dependencies and their driver handles (no allocation
    /// per node).
    scratch: (Vec<Access>, Vec<usize>, Vec<sys::CUgraphNode>),
    /// The kernel of the last kernel node added, with its function on the graph's context.
    pub(crate) last_kernel: Option<(crate::module::kernel::KernelRef, &'static crate::module::load::Function)>,
    /// The last kernel configuration its nodes passed the checks with.
    pub(crate) checked: kernel::CheckedConfig,
    /// The ids of the graphs it is a conditional body of, innermost first (none for a graph
    /// made by `new`): with its own, the graphs whose conditions its kernels may set.
    pub(crate) parents: Vec<u64>,
    /// Whether it is the body of a conditional node (which holds only device work).
    pub(crate) in_body: bool,
    /// The conditions (graph id, handle) that already control a conditional node.
    used_conditions: Vec<(u64, u64)>,
    /// The handles of the conditions made for this graph.
    made_conditions: Vec<u64>,
    /// A conditional node was refused after a body of it had made a condition: the driver keeps
    /// that handle (there is no call that deletes one) without a node, and would refuse to
    /// instantiate the graph, so `instantiate` says so first.
    orphaned_condition: bool,
    /// The node handles of every body nested in this graph (for updates of their nodes).
    pub(crate) bodies: Vec<conditional::Body>,
    /// Whether the next kernel node's edges from kernel nodes are programmatic
    /// ([`Graph::dependent`]), and the nodes added so.
    pub(crate) programmatic: bool,
    pub(crate) programmatic_nodes: Vec<usize>,
    /// Set while a programmatic node is added: its dependencies that another of them directly
    /// depends on are dropped (`reduce`), so that a chain stays a chain.
    pub(crate) reduce: bool,
    _borrows: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl std::fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("device", &self.ctx.ordinal())
            .field("nodes", &self.nodes.len())
            .field("edges", &self.edges.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Graph<'a> {
    /// An empty graph on `ctx`'s device.
    pub fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        bind(ctx)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid out-pointer; flags must be 0.
        let r = unsafe { sys::cuGraphCreate(&mut raw, 0) };
        driver(ctx, "cuGraphCreate", r)?;
        Ok(Graph::wrap(ctx, raw, true))
    }

    /// The builder of the driver's graph `raw` (empty), destroyed with the last of this and its
    /// instantiations if `owned`.
    fn wrap(ctx: &Arc<CudaContext>, raw: sys::CUgraph, owned: bool) -> Self {
        let id = NEXT_GRAPH.fetch_add(1, Ordering::Relaxed);
        Graph {
            ctx: ctx.clone(),
            cu_ctx: ctx.cu_ctx() as usize,
            raw: Rc::new(RawGraph(raw, owned)),
            cu: raw,
            id,
            // Room for the nodes and edges of a typical graph up front (growing from empty cost
            // a dozen reallocations, and copies, over the first hundred nodes), unless the
            // thread has the lists of a graph it dropped.
            nodes: Reused::new(64),
            edges: Reused::new(64),
            tracker: deps::Tracker::default(),
            pending: Vec::new(),
            infer: true,
            hosts: Vec::new(),
            owned: Vec::new(),
            scratch: (Vec::new(), Vec::new(), Vec::new()),
            last_kernel: None,
            checked: kernel::CheckedConfig::default(),
            parents: Vec::new(),
            in_body: !owned,
            used_conditions: Vec::new(),
            made_conditions: Vec::new(),
            orphaned_condition: false,
            bodies: Vec::new(),
            programmatic: false,
            programmatic_nodes: Vec::new(),
            reduce: false,
            _borrows: PhantomData,
        }
    }

    /// The graph's context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The driver's graph handle, for calls cuda-embed does not wrap.
    pub fn cu_graph(&self) -> sys::CUgraph {
        self.raw.0
    }

    /// Makes the next node added depend on `deps` (besides what is inferred). Returns the graph,
    /// so it reads `g.after(&[a, b]).host(..)` or `saxpy::node(g.after(&[up]), ...)`.
    ///
    /// A node of another graph is remembered as an error for the next node added.
    pub fn after(&mut self, deps: &[Node]) -> &mut Self {
        for d in deps {
            // A foreign node is kept as an impossible index and refused when the node is added.
            self.pending.push(if d.graph == self.id { d.index } else { usize::MAX });
        }
        self
    }

    /// Turns dependency inference on (the default) or off. Off, only explicit dependencies
    /// ([`Graph::after`], [`Graph::add_edge`]) order nodes.
    pub fn infer_dependencies(&mut self, on: bool) -> &mut Self {
        self.infer = on;
        self
    }

    /// Adds the edge `from -> to` between two nodes already in the graph.
    pub fn add_edge(&mut self, from: Node, to: Node) -> Result<()> {
        let (f, t) = (self.check_node(from)?, self.check_node(to)?);
        if self.edges.contains(&(f, t)) {
            return Ok(());
        }
        bind(&self.ctx)?;
        let (a, b) = (self.nodes[f].raw, self.nodes[t].raw);
        // SAFETY: two nodes of this graph; one edge with default (null) edge data.
        let r = unsafe { sys::cuGraphAddDependencies_v2(self.raw.0, &a, &b, std::ptr::null(), 1) };
        driver(&self.ctx, "cuGraphAddDependencies", r)?;
        self.edges.push((f, t));
        Ok(())
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node, in the order added.
    pub fn nodes(&self) -> Vec<Node> {
        (0..self.nodes.len()).map(|index| Node { graph: self.id, index }).collect()
    }

    /// A node's kind.
    pub fn kind(&self, node: Node) -> Option<NodeKind> {
        self.check_node(node).ok().map(|i| self.nodes[i].kind)
    }

    /// A node's label (the kernel's name, `memcpy HtoD 4096 B`, ...), as [`Graph::to_dot`] shows it.
    pub fn label(&self, node: Node) -> Option<&str> {
        self.check_node(node).ok().map(|i| self.nodes[i].label.as_str())
    }

    /// Every edge `(from, to)`, explicit and inferred, in the order added.
    pub fn edges(&self) -> Vec<(Node, Node)> {
        let n = |index| Node { graph: self.id, index };
        self.edges.iter().map(|&(f, t)| (n(f), n(t))).collect()
    }

    /// The graph in Graphviz DOT: one box per node (`n3 [label="saxpy"]`), one arrow per edge
    /// (dashed for a programmatic edge, see [`Graph::dependent`]).
    pub fn to_dot(&self) -> String {
        let mut s = String::from("digraph cuda_graph {\n    node [shape=box];\n");
        for (i, n) in self.nodes.iter().enumerate() {
            let label = n.label.as_str().replace('\\', "\\\\").replace('"', "\\\"");
            s.push_str(&format!("    n{i} [label=\"{label}\"];\n"));
        }
        for &(f, t) in self.edges.iter() {
            let programmatic = self.programmatic_nodes.contains(&t) && self.nodes[f].kind == NodeKind::Kernel;
            let style = if programmatic { " [style=dashed]" } else { "" };
            s.push_str(&format!("    n{f} -> n{t}{style};\n"));
        }
        s.push_str("}\n");
        s
    }

    /// Writes the driver's own DOT rendering (`cuGraphDebugDotPrint`, verbose) to `path`.
    pub fn write_driver_dot(&self, path: &std::path::Path) -> Result<()> {
        let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).map_err(|_| Error::Graph {
            device: self.ctx.ordinal(),
            cause: format!("the path {} contains a NUL byte", path.display()),
            fix: None,
        })?;
        bind(&self.ctx)?;
        // SAFETY: live graph; NUL-terminated path; flag 1 = CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE.
        let r = unsafe { sys::cuGraphDebugDotPrint(self.raw.0, c.as_ptr(), 1) };
        driver(&self.ctx, "cuGraphDebugDotPrint", r)
    }

    /// Instantiates the graph (`cuGraphInstantiateWithFlags`): an executable graph to launch on
    /// any stream of the context, as often as needed. The graph stays usable (to instantiate
    /// again, or as the source of [`GraphExec::update`]). A [`Condition`] made for the graph that
    /// controls no conditional node is an [`Error::Graph`] (the driver may refuse such a graph).
    pub fn instantiate(&self) -> Result<GraphExec<'a>> {
        GraphExec::new(self)
    }

    /// Whether [`Graph::conditions_done`] has anything to check: a graph that made no condition
    /// has none (the common graph: one test, in `GraphExec::new`).
    #[inline(always)]
    pub(crate) fn has_conditions(&self) -> bool {
        !self.made_conditions.is_empty() | self.orphaned_condition
    }

    /// [`Graph::instantiate`]'s checks of a graph that made conditions: each controls a node,
    /// and no refused conditional node left one behind.
    #[cold]
    #[inline(never)]
    pub(crate) fn conditions_done(&self) -> Result<()> {
        self.all_conditions_used()?;
        if self.orphaned_condition {
            return Err(Error::Graph {
                device: self.ctx.ordinal(),
                cause: "a conditional node of this graph was refused after one of its bodies had made a condition; \
                        the driver keeps that condition without a node and cannot delete it, so it would refuse to \
                        instantiate the graph"
                    .into(),
                fix: Some("build the graph again without the refused conditional node".into()),
            });
        }
        Ok(())
    }

    pub(crate) fn check_node(&self, node: Node) -> Result<usize> {
        if node.graph == self.id && node.index < self.nodes.len() {
            Ok(node.index)
        } else {
            Err(self.foreign())
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn foreign(&self) -> Error {
        Error::Graph {
            device: self.ctx.ordinal(),
            cause: "a node of another graph was used".into(),
            fix: Some("use the nodes this graph returned (nodes are not shared between graphs)".into()),
        }
    }

    /// The scratch access list for the next node, emptied.
    pub(crate) fn take_scratch(&mut self) -> Vec<Access> {
        let mut v = std::mem::take(&mut self.scratch.0);
        v.clear();
        v
    }

    /// The handle of this graph's node `index`.
    #[inline(always)]
    pub(crate) fn node_at(&self, index: usize) -> Node {
        Node { graph: self.id, index }
    }

    /// Adds one node that is not a kernel node. `accesses` are its memory ranges; `add` calls
    /// the driver with the dependency list and returns the new node. The list goes back to the
    /// scratch for reuse.
    #[inline]
    pub(crate) fn add(
        &mut self,
        kind: NodeKind,
        label: impl FnOnce() -> std::borrow::Cow<'static, str>,
        accesses: Vec<Access>,
        call: &'static str,
        mut add: impl FnMut(&[sys::CUgraphNode]) -> (sys::CUresult, sys::CUgraphNode),
    ) -> Result<Node> {
        let r = self.add_other(kind, Label::Text(label()), &accesses, call, &mut add);
        self.scratch.0 = accesses;
        r.map(|_| self.node_at(self.nodes.len() - 1)).map_err(|e| *e)
    }

    /// [`Graph::add`]'s node, one copy per kind of node.
    #[inline(never)]
    fn add_other(
        &mut self,
        kind: NodeKind,
        label: Label,
        accesses: &[Access],
        call: &'static str,
        add: &mut impl FnMut(&[sys::CUgraphNode]) -> (sys::CUresult, sys::CUgraphNode),
    ) -> std::result::Result<sys::CUgraphNode, Box<Error>> {
        self.add_node(kind, label, accesses, call, add)
    }

    /// Adds one node: its dependencies (explicit, then inferred from `accesses`), the driver call
    /// `add` with their handles, then the node (the graph's last now), its edges and its ranges
    /// on record; returns its driver handle. Inlined into one function per kind of node
    /// ([`Graph::add_other`], and `Graph::kernel_node` for every kernel node of every kernel),
    /// kept short: with a real driver, whose calls evict most of the caches, most of what a node
    /// costs over the raw calls is cache misses, one per line of code and data it touches. The
    /// error is boxed so that what each node passes back fits in two registers.
    #[inline(always)]
    pub(crate) fn add_node(
        &mut self,
        kind: NodeKind,
        label: Label,
        accesses: &[Access],
        call: &'static str,
        add: &mut impl FnMut(&[sys::CUgraphNode]) -> (sys::CUresult, sys::CUgraphNode),
    ) -> std::result::Result<sys::CUgraphNode, Box<Error>> {
        let index = self.nodes.len();
        // The dependencies: the first found (with its driver handle) in registers; any others,
        // and the explicit ones, in the graph's scratch list (no allocation per node).
        let more = &mut self.scratch.1;
        more.clear();
        let found = if self.infer { self.tracker.deps(accesses, more) } else { deps::Found::NONE };
        // The dependencies' driver handles: none or one (a chain) on the stack; several (or
        // explicit ones) sorted, without repeats, in the graph's scratch list of handles.
        let one;
        let several = !(self.pending.is_empty() & more.is_empty());
        let raw_deps: &[sys::CUgraphNode] = if several {
            if !gather(&self.nodes, &mut self.pending, more, found.first, index, &mut self.scratch.2) {
                return Err(Box::new(self.foreign()));
            }
            if self.reduce && deps::reduce(&self.edges, more) {
                let raw = &mut self.scratch.2;
                raw.clear();
                raw.extend(more.iter().map(|&d| self.nodes[d].raw));
            }
            &self.scratch.2
        } else if found.first != deps::Found::NONE.first {
            one = [found.first_raw];
            &one
        } else {
            &[]
        };
        // As a launch does: skip the current-context query when this thread last bound the
        // graph's context through cuda-embed, and bind and add again if the driver says the
        // context was changed behind our back (a refused add creates no node).
        let fast = crate::driver::BOUND.with(|b| b.get()) == self.cu_ctx;
        let (r, raw) =
            if fast { add(raw_deps) } else { (sys::CUresult::CUDA_ERROR_INVALID_CONTEXT, std::ptr::null_mut()) };
        let raw =
            if r == sys::CUresult::CUDA_SUCCESS { raw } else { add_again(&self.ctx, fast, r, call, raw_deps, add)? };
        self.nodes.push(NodeInfo { raw, kind, label });
        if several {
            self.edges.extend(self.scratch.1.iter().map(|&d| (d, index)));
        } else if found.first != deps::Found::NONE.first {
            self.edges.push((found.first, index));
        }
        self.tracker.record(index, raw, accesses, found.covered);
        Ok(raw)
    }
}

/// A node's dependencies when there are several, or explicit ones ([`Graph::after`]): the
/// explicit ones moved from `pending` into `deps` (which holds the inferred ones after the
/// first), the first inferred one (`first`, unless [`deps::Found::NONE`]) added, sorted, repeats
/// dropped, and their driver handles in `raw` (emptied first); false if one is a node of another
/// graph (not below `len`).
#[inline(never)]
fn gather(
    nodes: &[NodeInfo],
    pending: &mut Vec<usize>,
    deps: &mut Vec<usize>,
    first: usize,
    len: usize,
    raw: &mut Vec<sys::CUgraphNode>,
) -> bool {
    deps.append(pending);
    if !deps.iter().all(|&d| d < len) {
        return false;
    }
    if first != deps::Found::NONE.first {
        deps.push(first);
    }
    deps.sort_unstable();
    deps.dedup();
    raw.clear();
    raw.extend(deps.iter().map(|&d| nodes[d].raw));
    true
}

/// A node the driver refused to add, or one to add with the context bound first (`fast`
/// false): bound and added (once more); else the driver's error.
#[cold]
#[inline(never)]
fn add_again(
    ctx: &CudaContext,
    fast: bool,
    r: sys::CUresult,
    call: &'static str,
    raw_deps: &[sys::CUgraphNode],
    add: &mut dyn FnMut(&[sys::CUgraphNode]) -> (sys::CUresult, sys::CUgraphNode),
) -> std::result::Result<sys::CUgraphNode, Box<Error>> {
    let (mut r, mut raw) = (r, std::ptr::null_mut());
    if !fast || crate::driver::wrong_context(r) {
        bind(ctx)?;
        (r, raw) = add(raw_deps);
    }
    driver(ctx, call, r)?;
    Ok(raw)
}

/// `Ok` for success, else an [`Error::Driver`] naming `call` and the context's device.
pub(crate) fn driver(ctx: &CudaContext, call: &'static str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Driver { call, device: ctx.ordinal(), cause: DriverCode(r) })
    }
}

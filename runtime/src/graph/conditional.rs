//! Conditional nodes (`while`, `if`, `if`/`else`, `switch`; CUDA 12.4+ conditional graph nodes)
//! and the typed [`Condition`] a kernel of the graph sets with `cudaGraphSetConditional`.
//!
//! A condition belongs to the graph it was made for ([`Graph::condition`]): exactly one
//! conditional node of that graph tests it, and only kernel nodes of that graph, or of the bodies
//! nested in it, may set it. A kernel parameter of type `cudaGraphConditionalHandle` (or the
//! driver's `CUgraphConditionalHandle`) takes a `&Condition` in `NAME::node` and `NAME::update`;
//! a stream launch (`NAME::launch`) cannot take one (a compile error: outside a graph the device
//! has no condition to set). A condition of another graph, or one that already controls a node,
//! is an [`Error::Graph`] before the driver is called.
//!
//! Bodies are built with the same typed builder (a closure receives the body as a
//! `&mut Graph<'a>`, with the parent's lifetime `'a`: a buffer the body names must outlive the
//! whole graph, or it does not compile), their edges inferred the same way. What a body reads and
//! writes counts as the conditional node's own accesses in its parent, so the node depends on the
//! nodes before it that touch the same memory (and on a kernel that sets its condition), and
//! later nodes depend on it. Kernel nodes inside a body are updated like any other
//! ([`GraphExec::set`](crate::GraphExec::set), `NAME::update`).

use super::args::{Access, NodeArg, Record};
use super::{driver, Graph, Node, NodeKind};
use crate::driver::bind;
use crate::error::{Error, Result};
use cudarc::driver::{sys, CudaContext};

/// A kernel parameter of CUDA type `cudaGraphConditionalHandle` (`CUgraphConditionalHandle`):
/// the 64-bit handle the kernel passes to `cudaGraphSetConditional`. The signature marker of such
/// a parameter; its argument is a [`&Condition`](Condition) of the graph the node is in.
///
/// ```no_run
/// # use cuda_embed_runtime::{ConditionalHandle, Graph};
/// # fn f(g: &mut Graph<'_>) -> cuda_embed_runtime::Result<()> {
/// let stop = g.condition(1)?;
/// let h: ConditionalHandle = stop.handle(); // what the kernel receives
/// println!("handle {:#x}", h.raw());
/// # Ok(()) }
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConditionalHandle(u64);

impl ConditionalHandle {
    /// The driver's value of the handle (see the type's example).
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// The condition of one conditional node of a [`Graph`]: made with [`Graph::condition`], tested
/// by one of [`Graph::while_loop`], [`Graph::if_then`], [`Graph::if_else`], [`Graph::switch`] of
/// the same graph, and set on the device by kernel nodes of that graph or of its bodies
/// (`cudaGraphSetConditional(handle, value)` in the kernel, `&cond` for the handle parameter in
/// `NAME::node`). Every launch of the graph starts with the condition at its initial value.
///
/// ```no_run
/// # use cuda_embed_runtime::Graph;
/// # fn f() -> cuda_embed_runtime::Result<()> {
/// let ctx = cuda_embed_runtime::context(0)?;
/// let mut g = Graph::new(&ctx)?;
/// let more = g.condition(1)?; // run the body at least once
/// g.while_loop(&more, |body| {
///     // step::node(body, cfg, &x, &more)?;  (a kernel that sets `more` to 0 to stop)
///     body.empty()?;
///     Ok(())
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition {
    handle: u64,
    /// The id of the graph the condition was made for.
    graph: u64,
    /// The range that stands for it in the dependency inference and the scope check (its key:
    /// the graph's id and the condition's ordinal in it, `Access::condition`), as read.
    key: Access,
    initial: u32,
    ctx: sys::CUcontext,
    device: usize,
}

impl Condition {
    /// The value every launch of the graph starts with (`g.condition(3)?.initial() == 3`).
    pub fn initial(&self) -> u32 {
        self.initial
    }

    /// The typed handle a kernel receives (see [`ConditionalHandle`]).
    pub fn handle(&self) -> ConditionalHandle {
        ConditionalHandle(self.handle)
    }

    /// A condition of graph `graph` that no driver made, for checks that add no node.
    #[cfg(test)]
    pub(crate) fn test(graph: u64) -> Condition {
        let key = Access::condition(graph, 0, false).expect("a test graph id below 2^44");
        Condition { handle: 1, graph, key, initial: 0, ctx: std::ptr::null_mut(), device: 0 }
    }

    /// The range that stands for the condition in dependency inference: kernels that set it
    /// write it, the node that tests it reads it.
    fn access(&self, write: bool) -> Access {
        Access { write, ..self.key }
    }
}

// SAFETY: the parameter is the handle itself (a u64, the layout of `cudaGraphConditionalHandle`);
// the access records that the kernel sets the condition (for the inferred edges and the scope
// check every kernel node and update makes: `bind::conditions`).
unsafe impl<'a> NodeArg<'a, ConditionalHandle> for &Condition {
    type Param = ConditionalHandle;
    const CONDITION: bool = true;
    #[inline]
    fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<ConditionalHandle> {
        crate::bind::node_condition(self.ctx, self.device, ctx)?;
        accesses.record(self.access(true));
        Ok(self.handle())
    }
}

/// What a stream launch would take for a `cudaGraphConditionalHandle` parameter: nothing
/// implements it, so `NAME::launch` of a kernel with such a parameter does not compile. A
/// condition is set on the device only by kernel nodes of its graph (`NAME::node`).
///
/// ```compile_fail
/// # use cuda_embed_runtime::{Condition, graph::LaunchCondition};
/// fn launch(_: impl LaunchCondition) {}
/// fn f(c: &Condition) { launch(c) } // `&Condition` is for graph nodes only
/// ```
#[diagnostic::on_unimplemented(
    message = "a kernel that sets a graph condition cannot be launched on a stream",
    label = "a `cudaGraphConditionalHandle` parameter",
    note = "add the kernel to the graph that owns the condition: `NAME::node(&mut graph, config, .., &condition)`"
)]
pub trait LaunchCondition: sealed::Never {
    /// The handle (never called: no type implements the trait).
    fn handle(&self) -> ConditionalHandle;
}

mod sealed {
    /// Implemented by no type.
    pub trait Never {}
}

/// Which conditional node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    While,
    If,
    Switch,
}

/// The node handles of one body graph, kept by the root graph and its instantiations so that a
/// node inside a body can be updated: the body's id, the ids of the graphs it is nested in (the
/// innermost first), and its nodes' driver handles and kinds.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pub(crate) id: u64,
    pub(crate) parents: Vec<u64>,
    pub(crate) nodes: Vec<(sys::CUgraphNode, NodeKind)>,
}

impl<'a> Graph<'a> {
    /// A new condition of this graph, starting every launch at `initial`
    /// (`cuGraphConditionalHandleCreate` with `CU_GRAPH_COND_ASSIGN_DEFAULT`). A `while` or `if`
    /// body runs when the value is not 0; a `switch` runs the case of that number.
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::Graph;
    /// # fn f(g: &mut Graph<'_>) -> cuda_embed_runtime::Result<()> {
    /// let run = g.condition(0)?; // off unless a kernel before the node sets it
    /// g.if_then(&run, |body| body.empty().map(drop))?;
    /// # Ok(()) }
    /// ```
    pub fn condition(&mut self, initial: u32) -> Result<Condition> {
        let Some(key) = Access::condition(self.id, self.made_conditions.len(), false) else {
            return Err(Error::Graph {
                device: self.ctx.ordinal(),
                cause: format!(
                    "graph {} has made {} conditions: a condition is keyed by its graph's id (below 2^44) and its \
                     ordinal in the graph (below 2^20), and this one would have no key",
                    self.id,
                    self.made_conditions.len()
                ),
                fix: Some("make fewer conditions in one graph (one per conditional node it tests)".into()),
            });
        };
        bind(&self.ctx)?;
        let mut handle = 0;
        // SAFETY: live graph of this context; valid out-pointer.
        let r = unsafe {
            sys::cuGraphConditionalHandleCreate(
                &mut handle,
                self.cu,
                self.ctx.cu_ctx(),
                initial,
                sys::CU_GRAPH_COND_ASSIGN_DEFAULT,
            )
        };
        driver(&self.ctx, "cuGraphConditionalHandleCreate", r)?;
        self.made_conditions.push(handle);
        Ok(Condition { handle, graph: self.id, key, initial, ctx: self.ctx.cu_ctx(), device: self.ctx.ordinal() })
    }

    /// A `while` node: runs `body` (built by the closure) as long as `cond` is not 0 when
    /// tested, before each iteration (so not at all if it starts at 0). A kernel of the body
    /// sets `cond` to 0 to stop. Returns the conditional node (in this graph).
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::Graph;
    /// # fn f(g: &mut Graph<'_>) -> cuda_embed_runtime::Result<()> {
    /// let more = g.condition(0)?; // a zero-trip loop unless a kernel sets it first
    /// let lp = g.while_loop(&more, |body| {
    ///     // step::node(body, cfg, &x, &more)?;
    ///     body.empty().map(drop)
    /// })?;
    /// assert_eq!(g.label(lp), Some("while (1 nodes)"));
    /// # Ok(()) }
    /// ```
    pub fn while_loop(&mut self, cond: &Condition, body: impl FnOnce(&mut Graph<'a>) -> Result<()>) -> Result<Node> {
        let mut body = Some(body);
        self.conditional(cond, Kind::While, 1, &mut |_, g| body.take().map_or(Ok(()), |f| f(g)))
    }

    /// An `if` node: runs `then` when `cond` is not 0.
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::Graph;
    /// # fn f<'a>(g: &mut Graph<'a>, x: &'a cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
    /// let reset = g.condition(1)?;
    /// g.if_then(&reset, |body| body.memset(x, 0.0f32).map(drop))?;
    /// # Ok(()) }
    /// ```
    pub fn if_then(&mut self, cond: &Condition, then: impl FnOnce(&mut Graph<'a>) -> Result<()>) -> Result<Node> {
        let mut then = Some(then);
        self.conditional(cond, Kind::If, 1, &mut |_, g| then.take().map_or(Ok(()), |f| f(g)))
    }

    /// An `if`/`else` node: runs `then` when `cond` is not 0, `otherwise` when it is 0.
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::Graph;
    /// # fn f<'a>(g: &mut Graph<'a>, x: &'a cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
    /// let positive = g.condition(0)?;
    /// g.if_else(&positive, |then| then.memset(x, 1.0f32).map(drop), |otherwise| otherwise.memset(x, -1.0f32).map(drop))?;
    /// # Ok(()) }
    /// ```
    pub fn if_else(
        &mut self,
        cond: &Condition,
        then: impl FnOnce(&mut Graph<'a>) -> Result<()>,
        otherwise: impl FnOnce(&mut Graph<'a>) -> Result<()>,
    ) -> Result<Node> {
        let (mut then, mut otherwise) = (Some(then), Some(otherwise));
        self.conditional(cond, Kind::If, 2, &mut |i, g| match i {
            0 => then.take().map_or(Ok(()), |f| f(g)),
            _ => otherwise.take().map_or(Ok(()), |f| f(g)),
        })
    }

    /// A `switch` node of `cases` bodies: runs case `cond` (0-based), built by `case(i, body)`
    /// for each `i` in `0..cases`. No case, or a condition whose initial value has no case, is an
    /// [`Error::Graph`]; a value set on the device past the last case runs no body (as CUDA
    /// does).
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::Graph;
    /// # fn f<'a>(g: &mut Graph<'a>, x: &'a cuda_embed_runtime::CudaSlice<f32>) -> cuda_embed_runtime::Result<()> {
    /// let mode = g.condition(0)?;
    /// g.switch(&mode, 3, |case, body| body.memset(x, case as f32).map(drop))?;
    /// # Ok(()) }
    /// ```
    pub fn switch(
        &mut self,
        cond: &Condition,
        cases: u32,
        mut case: impl FnMut(u32, &mut Graph<'a>) -> Result<()>,
    ) -> Result<Node> {
        if cases == 0 || cond.initial >= cases {
            return Err(Error::Graph {
                device: self.ctx.ordinal(),
                cause: if cases == 0 {
                    "a switch node with no case".into()
                } else {
                    format!(
                        "the switch's condition starts every launch at {}, but the switch has cases 0..{cases}: \
                         value {} has no case",
                        cond.initial, cond.initial
                    )
                },
                fix: Some(format!(
                    "give the switch a case for every value its condition takes, at least {} (its initial value)",
                    cond.initial + 1
                )),
            });
        }
        self.conditional(cond, Kind::Switch, cases, &mut |i, g| case(i as u32, g))
    }

    /// Adds a conditional node of `size` bodies testing `cond`, fills body `i` with
    /// `fill(i, body)`, then gives the node its dependencies (from what the bodies touch and the
    /// condition it reads): the driver makes the bodies with the node, so the node is added
    /// first, without edges, and its edges follow.
    fn conditional(
        &mut self,
        cond: &Condition,
        kind: Kind,
        size: u32,
        fill: &mut dyn FnMut(usize, &mut Graph<'a>) -> Result<()>,
    ) -> Result<Node> {
        self.check_condition(cond)?;
        bind(&self.ctx)?;
        // SAFETY: all-zero is a valid parameter record (kernel-node type, null pointers), and
        // every field the conditional node reads is set below.
        let mut p: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
        p.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        p.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
            handle: cond.handle,
            type_: match kind {
                Kind::While => sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
                Kind::If => sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
                Kind::Switch => sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH,
            },
            size,
            // An output: the driver points it at the body graphs it makes with the node.
            phGraph_out: std::ptr::null_mut(),
            ctx: self.ctx.cu_ctx(),
        };
        let mut node = std::ptr::null_mut();
        // SAFETY: live graph and context; no dependencies yet; the driver writes the bodies'
        // array into `p`.
        let r = unsafe { sys::cuGraphAddNode_v2(&mut node, self.cu, std::ptr::null(), std::ptr::null(), 0, &mut p) };
        driver(&self.ctx, "cuGraphAddNode (conditional)", r)?;
        // SAFETY: `p` is the record of the conditional node of `size` bodies just added.
        let Some(bodies) = (unsafe { body_graphs(&p, size) }) else {
            destroy(node);
            return Err(Error::Graph {
                device: self.ctx.ordinal(),
                cause: format!(
                    "the driver added the conditional node but returned no body graph for its {size} bodies"
                ),
                fix: None,
            });
        };
        match self.fill_bodies(cond, kind, &bodies, fill) {
            Ok((accesses, label, records)) => {
                let to = node;
                let graph = self.cu;
                let added = self.add(
                    NodeKind::Conditional,
                    || label.into(),
                    accesses,
                    "cuGraphAddDependencies",
                    |deps| {
                        if deps.is_empty() {
                            return (sys::CUresult::CUDA_SUCCESS, to);
                        }
                        let targets = vec![to; deps.len()];
                        // SAFETY: nodes of this graph; one edge per dependency, default edge data.
                        let r = unsafe {
                            sys::cuGraphAddDependencies_v2(
                                graph,
                                deps.as_ptr(),
                                targets.as_ptr(),
                                std::ptr::null(),
                                deps.len(),
                            )
                        };
                        (r, to)
                    },
                );
                match added {
                    Ok(n) => {
                        self.used_conditions.push((cond.graph, cond.handle));
                        self.bodies.extend(records);
                        Ok(n)
                    }
                    Err(e) => {
                        destroy(node);
                        Err(e)
                    }
                }
            }
            Err(e) => {
                destroy(node);
                Err(e)
            }
        }
    }

    /// Builds every body with `fill`; returns the accesses of the node (the bodies' and the
    /// condition it reads), its label and the bodies' node records.
    fn fill_bodies(
        &mut self,
        cond: &Condition,
        kind: Kind,
        bodies: &[sys::CUgraph],
        fill: &mut dyn FnMut(usize, &mut Graph<'a>) -> Result<()>,
    ) -> Result<(Vec<Access>, String, Vec<Body>)> {
        let mut accesses = self.take_scratch();
        accesses.push(cond.access(false));
        let mut records = Vec::new();
        let mut counts = Vec::new();
        for (i, &raw) in bodies.iter().enumerate() {
            let mut body = Graph::body(self, raw);
            if let Err(e) = fill(i, &mut body).and_then(|()| body.all_conditions_used()) {
                // A condition the body made outlives the node (the driver cannot delete it).
                self.orphaned_condition |= !body.made_conditions.is_empty() || body.orphaned_condition;
                return Err(e);
            }
            accesses.extend(body.tracker.accesses());
            self.hosts.extend(body.hosts.iter().cloned());
            self.owned.extend(body.owned.iter().cloned());
            counts.push(body.nodes.len());
            records.push(Body {
                id: body.id,
                parents: body.parents.clone(),
                nodes: body.nodes.iter().map(|n| (n.raw, n.kind)).collect(),
            });
            records.append(&mut body.bodies);
        }
        let name = match (kind, bodies.len()) {
            (Kind::While, _) => "while",
            (Kind::If, 1) => "if",
            (Kind::If, _) => "if/else",
            (Kind::Switch, _) => "switch",
        };
        let counts: Vec<String> = counts.iter().map(|n| n.to_string()).collect();
        Ok((accesses, format!("{name} ({} nodes)", counts.join(" | ")), records))
    }

    /// Refuses a graph (or body) with a condition that controls no conditional node: the driver
    /// may refuse to instantiate it.
    pub(crate) fn all_conditions_used(&self) -> Result<()> {
        let unused = self.made_conditions.iter().filter(|h| !self.used_conditions.contains(&(self.id, **h))).count();
        if unused == 0 {
            return Ok(());
        }
        Err(Error::Graph {
            device: self.ctx.ordinal(),
            cause: format!(
                "{unused} condition(s) made with `condition()` for this {} control no conditional node",
                if self.in_body { "body" } else { "graph" }
            ),
            fix: Some(
                "give every condition its node (`while_loop`, `if_then`, `if_else`, `switch`), or do not make it"
                    .into(),
            ),
        })
    }

    /// Refuses a condition of another graph, or one that already controls a conditional node.
    fn check_condition(&self, cond: &Condition) -> Result<()> {
        let cause = if cond.graph != self.id {
            if self.parents.contains(&cond.graph) {
                "the condition was made for an enclosing graph, not for this body: a conditional node tests a \
                 condition of its own graph"
            } else {
                "the condition was made for another graph"
            }
        } else if self.used_conditions.contains(&(cond.graph, cond.handle)) {
            "the condition already controls a conditional node (each condition controls exactly one)"
        } else {
            return Ok(());
        };
        Err(Error::Graph {
            device: self.ctx.ordinal(),
            cause: cause.into(),
            fix: Some(
                "make a condition with `condition()` on the graph (or body) that gets the conditional node".into(),
            ),
        })
    }

    /// An empty body graph `raw` (made by the driver with a conditional node of `parent`, and
    /// owned by it).
    fn body(parent: &Graph<'a>, raw: sys::CUgraph) -> Graph<'a> {
        let mut g = Graph::wrap(&parent.ctx, raw, false);
        g.parents.push(parent.id);
        g.parents.extend(parent.parents.iter().copied());
        g
    }

    /// Refuses, in a conditional body, a node that is not device work (`what`): the driver
    /// allows only kernels, device memcpy and memset, empty, child and conditional nodes there.
    pub(crate) fn device_only(&self, what: &str) -> Result<()> {
        if !self.in_body {
            return Ok(());
        }
        Err(Error::Graph {
            device: self.ctx.ordinal(),
            cause: format!("{what} cannot be part of the body of a conditional node, which holds only device work"),
            fix: Some(
                "keep host closures, host copies and events outside the conditional node (before or after it)".into(),
            ),
        })
    }
}

/// The body graphs of a conditional node, as `cuGraphAddNode` returned them in the node's
/// parameter record: `phGraph_out` is an output, which the driver points at a CUDA-owned array of
/// `size` graphs, valid as long as the node (the CUDA Driver API's `CUDA_CONDITIONAL_NODE_PARAMS`:
/// "CUDA-owned array populated with conditional node child graphs during creation of the node").
/// An array passed in is not filled: reading one (null handles) made every node added to a body,
/// and every condition made for one, fail with `CUDA_ERROR_INVALID_VALUE`. `None` when the
/// record holds no array or a null graph.
///
/// # Safety
/// `p` is the record of a conditional node of `size` bodies that `cuGraphAddNode` added (or a
/// record whose `phGraph_out` is null or points to `size` graph handles).
unsafe fn body_graphs(p: &sys::CUgraphNodeParams, size: u32) -> Option<Vec<sys::CUgraph>> {
    // SAFETY: the caller's record is a conditional node's.
    let out = unsafe { p.__bindgen_anon_1.conditional.phGraph_out };
    if out.is_null() {
        return None;
    }
    // SAFETY: the driver's array holds `size` graphs (the caller's contract).
    let graphs = unsafe { std::slice::from_raw_parts(out, size as usize) }.to_vec();
    graphs.iter().all(|g| !g.is_null()).then_some(graphs)
}

/// Removes a conditional node that could not be completed (its bodies go with it).
fn destroy(node: sys::CUgraphNode) {
    // SAFETY: a node this graph just added and nothing refers to.
    unsafe { sys::cuGraphDestroyNode(node) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A conditional node's record as the driver leaves it: `phGraph_out` pointing at `graphs`.
    fn record(graphs: *mut sys::CUgraph, size: u32) -> sys::CUgraphNodeParams {
        // SAFETY: all-zero is a valid record.
        let mut p: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
        p.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        p.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
            handle: 1,
            type_: sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH,
            size,
            phGraph_out: graphs,
            ctx: std::ptr::null_mut(),
        };
        p
    }

    /// The bodies are read from the array the driver's record points to (the driver does not
    /// fill one passed in; null graphs there were the GPU failure); no array, or a null graph in
    /// it, is no bodies.
    #[test]
    fn the_bodies_are_the_graphs_the_record_points_to() {
        let mut driver_owned: Vec<sys::CUgraph> = (1..=3).map(std::ptr::without_provenance_mut).collect();
        let p = record(driver_owned.as_mut_ptr(), 3);
        // SAFETY: the record points to 3 graph handles.
        assert_eq!(unsafe { body_graphs(&p, 3) }, Some(driver_owned.clone()));
        // SAFETY: a null array.
        assert_eq!(unsafe { body_graphs(&record(std::ptr::null_mut(), 2), 2) }, None);
        driver_owned[1] = std::ptr::null_mut();
        // SAFETY: the record points to 3 graph handles, one null.
        assert_eq!(unsafe { body_graphs(&record(driver_owned.as_mut_ptr(), 3), 3) }, None);
    }
}

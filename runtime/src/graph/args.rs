//! Kernel-node arguments: the dynamic [`GraphArg`] list of
//! [`ProgramKernel::node`](crate::ProgramKernel::node), and the typed ones ([`NodeArg`],
//! [`NodeArgs`]) every generated `NAME::node` and [`Kernel::node`](crate::Kernel::node) take,
//! which are argument vocabulary shared with the binding path and the N-D nodes and so are
//! declared in `args/node.rs` (re-exported here).

pub use crate::args::node::{Access, ByValue, NodeArg, NodeArgs, Record};
pub(crate) use crate::args::node::{Discard, Space, StackAccesses};
use crate::error::Result;
use crate::types::DeviceSafe;
use cudarc::driver::{CudaContext, DevicePtr, DevicePtrMut};
use std::ffi::c_void;

/// Reads a buffer's address and access record through a type-erased pointer.
type Address = unsafe fn(*const (), &CudaContext, bool) -> Result<(u64, Access)>;

/// # Safety
/// `object` must point at a live `S`.
unsafe fn address_of<T, S: DevicePtr<T>>(object: *const (), ctx: &CudaContext, write: bool) -> Result<(u64, Access)> {
    // SAFETY: the caller's contract; `GraphArg::read`/`write` made `object` from a `&'a S`.
    crate::bind::node_buffer(unsafe { &*(object as *const S) }, ctx, write)
}

#[derive(Clone, Copy)]
pub(crate) enum GraphArgKind {
    Value(*const c_void),
    Buffer {
        object: *const (),
        address: Address,
        write: bool,
    },
    /// A graph condition the kernel sets (`GraphArg::condition`).
    Condition(*const super::Condition),
}

/// One argument of a [`ProgramKernel`](crate::ProgramKernel) node: a value, or a buffer the
/// kernel reads or writes, borrowed (shared) for the graph's lifetime `'a`. The dynamic
/// counterpart of [`NodeArg`]; sizes are checked against the compiled kernel's parameters.
#[derive(Clone, Copy)]
pub struct GraphArg<'a> {
    pub(crate) size: usize,
    pub(crate) kind: GraphArgKind,
    /// The value's or the elements' Rust type, for kernels taken with a C signature.
    pub(crate) elem: crate::args::dynamic::Elem,
    _borrow: std::marker::PhantomData<&'a ()>,
}

impl std::fmt::Debug for GraphArg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            GraphArgKind::Value(_) => "value",
            GraphArgKind::Buffer { write: false, .. } => "read buffer",
            GraphArgKind::Buffer { write: true, .. } => "written buffer",
            GraphArgKind::Condition(_) => "graph condition",
        };
        f.debug_struct("GraphArg").field("kind", &kind).field("size", &self.size).finish()
    }
}

impl<'a> GraphArg<'a> {
    /// A value passed by value (a scalar, a CUDA vector type, a `DeviceSafe` struct); copied into
    /// the node when it is added.
    pub fn value<T: DeviceSafe>(value: &'a T) -> Self {
        GraphArg {
            size: std::mem::size_of::<T>(),
            kind: GraphArgKind::Value(value as *const T as *const c_void),
            elem: crate::args::dynamic::Elem::of::<T>(1, false),
            _borrow: std::marker::PhantomData,
        }
    }

    /// A buffer the kernel reads (`const T*`).
    pub fn read<T, S: DevicePtr<T>>(buffer: &'a S) -> Self {
        let object = buffer as *const S as *const ();
        GraphArg {
            size: 8,
            kind: GraphArgKind::Buffer { object, address: address_of::<T, S>, write: false },
            elem: crate::args::dynamic::Elem::of::<T>(buffer.len(), false),
            _borrow: std::marker::PhantomData,
        }
    }

    /// A buffer the kernel writes (`T*`): a `CudaSlice` or `CudaViewMut`, shared-borrowed.
    pub fn write<T, S: DevicePtr<T> + DevicePtrMut<T>>(buffer: &'a S) -> Self {
        let object = buffer as *const S as *const ();
        GraphArg {
            size: 8,
            kind: GraphArgKind::Buffer { object, address: address_of::<T, S>, write: true },
            elem: crate::args::dynamic::Elem::of::<T>(buffer.len(), true),
            _borrow: std::marker::PhantomData,
        }
    }

    /// A condition of the graph (or of a graph the node is nested in) for a
    /// `cudaGraphConditionalHandle` parameter, which the kernel sets with
    /// `cudaGraphSetConditional`; checked as for a typed node (`bind::conditions`).
    ///
    /// ```no_run
    /// # use cuda_embed_runtime::{graph::GraphArg, Graph};
    /// # fn f(g: &mut Graph<'_>) -> cuda_embed_runtime::Result<()> {
    /// let more = g.condition(1)?;
    /// let arg = GraphArg::condition(&more);
    /// assert_eq!(arg.size(), 8);
    /// # Ok(()) }
    /// ```
    pub fn condition(condition: &'a super::Condition) -> Self {
        GraphArg {
            size: 8,
            kind: GraphArgKind::Condition(condition),
            elem: crate::args::dynamic::Elem::of::<super::ConditionalHandle>(1, false),
            _borrow: std::marker::PhantomData,
        }
    }

    /// The argument's size in bytes (8 for a buffer).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether the argument is a buffer (not a value).
    pub(crate) fn is_buffer(&self) -> bool {
        matches!(self.kind, GraphArgKind::Buffer { .. })
    }

    /// A buffer argument of elements `T` that is never bound, for checks that add no node.
    #[cfg(test)]
    pub(crate) fn test_buffer<T>(write: bool) -> GraphArg<'static> {
        /// Never called: test arguments are only compared.
        unsafe fn unbound(_: *const (), _: &CudaContext, _: bool) -> Result<(u64, Access)> {
            unreachable!("test arguments are never bound")
        }
        GraphArg {
            size: 8,
            kind: GraphArgKind::Buffer { object: std::ptr::null(), address: unbound, write },
            elem: crate::args::dynamic::Elem::of::<T>(0, write),
            _borrow: std::marker::PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Condition;
    use crate::program::sigcheck::{check_given, parse, ParamKind, NODE};

    /// A graph node's arguments are checked against the signature as a launch's are, with
    /// fixes in `GraphArg`'s words.
    #[test]
    fn node_arguments_are_checked_like_launch_arguments() {
        let sig = parse("const float* x, float* y, float alpha, int n").unwrap();
        let given = |args: &[GraphArg<'_>]| args.iter().map(|a| (a.is_buffer(), a.elem)).collect::<Vec<_>>();
        let (alpha, n, n64) = (2.0f32, 4i32, 4i64);
        let ok = [
            GraphArg::test_buffer::<f32>(false),
            GraphArg::test_buffer::<f32>(true),
            GraphArg::value(&alpha),
            GraphArg::value(&n),
        ];
        assert_eq!(check_given(&sig, &given(&ok), &NODE), Ok(()));
        let cases: Vec<(Vec<GraphArg<'_>>, &str)> = vec![
            (
                vec![
                    GraphArg::test_buffer::<i32>(false),
                    GraphArg::test_buffer::<f32>(true),
                    GraphArg::value(&alpha),
                    GraphArg::value(&n),
                ],
                "parameter `x` (`const float* x`) points to `f32` elements but the buffer holds `i32`",
            ),
            (
                vec![
                    GraphArg::test_buffer::<f32>(false),
                    GraphArg::test_buffer::<f32>(false),
                    GraphArg::value(&alpha),
                    GraphArg::value(&n),
                ],
                "passed read-only (`GraphArg::read`): pass it with `GraphArg::write`",
            ),
            (
                vec![
                    GraphArg::test_buffer::<f32>(false),
                    GraphArg::test_buffer::<f32>(true),
                    GraphArg::value(&alpha),
                    GraphArg::value(&n64),
                ],
                "parameter `n` (`int n`) takes `i32` but the argument is `i64`",
            ),
            (
                vec![
                    GraphArg::test_buffer::<f32>(false),
                    GraphArg::test_buffer::<f32>(true),
                    GraphArg::test_buffer::<f32>(false),
                    GraphArg::value(&n),
                ],
                "is a value but a buffer was given: pass it with `GraphArg::value`",
            ),
        ];
        for (args, want) in cases {
            let e = check_given(&sig, &given(&args), &NODE).unwrap_err();
            assert!(e.contains(want), "{e}\n  should contain: {want}");
        }
    }

    /// A `cudaGraphConditionalHandle` parameter takes `GraphArg::condition`, not a plain `u64`.
    #[test]
    fn a_graph_condition_is_its_own_type() {
        let sig = parse("int* counter, cudaGraphConditionalHandle more").unwrap();
        assert_eq!(sig[1].kind, ParamKind::Value(Some("ConditionalHandle")));
        let given = |args: &[GraphArg<'_>]| args.iter().map(|a| (a.is_buffer(), a.elem)).collect::<Vec<_>>();
        let cond = Condition::test(1);
        let ok = [GraphArg::test_buffer::<i32>(true), GraphArg::condition(&cond)];
        assert_eq!(check_given(&sig, &given(&ok), &NODE), Ok(()));
        let raw = 1u64;
        let e = check_given(&sig, &given(&[GraphArg::test_buffer::<i32>(true), GraphArg::value(&raw)]), &NODE);
        assert!(e.unwrap_err().contains("ConditionalHandle"));
    }
}

//! Kernel-node arguments, the node side of the argument vocabulary: the typed [`NodeArg`] and
//! [`NodeArgs`] every generated `NAME::node` and [`Kernel::node`](crate::Kernel::node) take, and
//! the [`Access`] ranges they report through [`Record`]. Declared here, below the binding path
//! (`bind`: `node_buffer`, `disjoint`), the graphs (`graph`) and the N-D nodes (`ndarray`), which
//! all use them; `graph` re-exports them.
//!
//! A node argument is packed exactly as a launch packs it (the value itself, or the buffer's
//! device address as a `u64`, one pointer per parameter), and also reports which device range it
//! reads or writes, so the graph can infer the node's dependencies.

#[cfg(doc)]
use super::{In, InAny, Out, OutAny};
use crate::error::Result;
use crate::types::DeviceSafe;
use cudarc::driver::CudaContext;
use std::ffi::c_void;

/// Which memory an access touches: device addresses and host addresses are kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    Device,
    Host,
    /// A CUDA array (textures and surfaces over it), by handle: arrays have no device address.
    Array,
    /// The condition of a conditional node (a kernel that sets it writes it, the conditional
    /// node reads it), by its key: `lo` is the graph's id shifted left by
    /// [`CONDITION_ORDINAL_BITS`] plus the condition's ordinal in that graph, `hi` is `lo + 1`
    /// ([`Access::condition`]). The graph id lives in the key, not in the variant, so that an
    /// `Access` stays 24 bytes (every node records and compares them).
    Condition,
}

/// The bits of a condition's key ([`Space::Condition`]) that count the conditions of one graph;
/// the graph's id takes the others (graph ids below 2^44, fewer than 2^20 conditions a graph:
/// `Graph::condition` refuses more with an `Error`, so two conditions never share a key).
pub(crate) const CONDITION_ORDINAL_BITS: u32 = 20;

/// One range of memory a node reads or writes (opaque: built by the node arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub(crate) space: Space,
    pub(crate) lo: u64,
    pub(crate) hi: u64,
    pub(crate) write: bool,
}

// An access is recorded for every operand of every node, and the dependency inference walks them:
// it stays three words (the condition's graph is in its key, not in `Space`).
const _: () = assert!(std::mem::size_of::<Access>() == 24);

/// Where node arguments report the ranges they touch: the graph's list while a node is added
/// (for the dependency inference and the aliasing check), a list on the stack while an
/// instantiated graph's node is updated (for the aliasing check only: its edges stay as built).
pub trait Record {
    /// Notes one range.
    fn record(&mut self, access: Access);
}

impl Record for Vec<Access> {
    #[inline(always)]
    fn record(&mut self, access: Access) {
        self.push(access);
    }
}

/// Drops every range: what an update passes when its node has fewer than two arguments that name
/// memory (no aliasing is possible, and the edges stay as built).
pub(crate) struct Discard;

impl Record for Discard {
    #[inline(always)]
    fn record(&mut self, _: Access) {}
}

/// The ranges of one typed node's arguments, on the stack: a typed node has at most 20
/// parameters and each reports at most one range (more spill to the heap), so adding a kernel
/// node needs neither an allocation nor the graph's scratch list. Nothing is written to make
/// one, and dropping one tests only `len` (the heap list exists only past 20 ranges).
pub(crate) struct StackAccesses {
    few: [std::mem::MaybeUninit<Access>; 20],
    len: usize,
    /// Every range, once there are more than 20 (`len` > 20); uninitialised before.
    more: std::mem::MaybeUninit<Vec<Access>>,
}

impl StackAccesses {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        StackAccesses {
            few: [const { std::mem::MaybeUninit::uninit() }; 20],
            len: 0,
            more: std::mem::MaybeUninit::uninit(),
        }
    }

    /// Every range noted, in order.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[Access] {
        if self.len <= self.few.len() {
            // SAFETY: the first `len` entries were written by `record` (`len` <= 20).
            unsafe { std::slice::from_raw_parts(self.few.as_ptr() as *const Access, self.len) }
        } else {
            // SAFETY: `spill` initialised `more` when `len` passed 20.
            unsafe { self.more.assume_init_ref() }
        }
    }

    #[cold]
    #[inline(never)]
    fn spill(&mut self, access: Access) {
        if self.len == self.few.len() {
            let mut all = Vec::with_capacity(2 * self.few.len());
            all.extend_from_slice(self.as_slice());
            self.more.write(all);
        }
        // SAFETY: initialised just above or by an earlier spill (`len` >= 20 here).
        unsafe { self.more.assume_init_mut() }.push(access);
        self.len += 1;
    }
}

impl Drop for StackAccesses {
    #[inline(always)]
    fn drop(&mut self) {
        if self.len > self.few.len() {
            // SAFETY: initialised by `spill` (`len` > 20), dropped once, here.
            unsafe { self.more.assume_init_drop() };
        }
    }
}

impl Record for StackAccesses {
    #[inline(always)]
    fn record(&mut self, access: Access) {
        if self.len < self.few.len() {
            self.few[self.len].write(access);
            self.len += 1;
        } else {
            self.spill(access);
        }
    }
}

impl Access {
    /// Whether the two ranges share a byte (in the same memory); the tracker's pass spells
    /// this out with the bounds it has loaded.
    #[cfg(test)]
    pub(crate) fn overlaps(&self, other: &Access) -> bool {
        (self.space == other.space) & (self.lo < other.hi) & (other.lo < self.hi)
    }

    /// The range of condition `ordinal` of graph `graph`, or `None` when the pair has no key
    /// ([`CONDITION_ORDINAL_BITS`]).
    pub(crate) fn condition(graph: u64, ordinal: usize, write: bool) -> Option<Access> {
        let ordinal = u64::try_from(ordinal).ok().filter(|&o| o < 1 << CONDITION_ORDINAL_BITS)?;
        if graph >> (64 - CONDITION_ORDINAL_BITS) != 0 {
            return None;
        }
        let lo = (graph << CONDITION_ORDINAL_BITS) | ordinal;
        Some(Access { space: Space::Condition, lo, hi: lo.checked_add(1)?, write })
    }

    /// The graph whose condition this range stands for, if it is a condition's.
    #[inline(always)]
    pub(crate) fn condition_graph(&self) -> Option<u64> {
        (self.space == Space::Condition).then_some(self.lo >> CONDITION_ORDINAL_BITS)
    }

    /// Whether this range contains all of `other` (in the same memory).
    pub(crate) fn covers(&self, other: &Access) -> bool {
        (self.space == other.space) & (self.lo <= other.lo) & (other.hi <= self.hi)
    }
}

/// One argument of a kernel node for a parameter marked `M` (the markers of
/// [`args`](crate::args)): the value itself for a by-value parameter; for a pointer parameter a
/// buffer borrowed for the graph's lifetime `'a`.
///
/// | Marker | Argument |
/// |---|---|
/// | a value type `T` | `T` |
/// | [`In<T>`] (`const T*`) | `&'a CudaSlice<T>`, `&'a CudaView<T>`, `&'a CudaViewMut<T>` |
/// | [`Out<T>`] (`T*`) | `&'a CudaSlice<T>`, `&'a CudaViewMut<T>` (a writable buffer, shared-borrowed) |
/// | [`InAny`], [`OutAny`] | as `In`/`Out`, any element type |
///
/// Written buffers are borrowed *shared* for `'a`, not exclusively: one buffer is written by
/// many nodes of one graph, and `&'a mut` would allow only one. The write is known from the
/// kernel's signature (the marker), which is what the dependency inference uses; a read-only
/// `CudaView` is still refused where the kernel writes.
///
/// # Safety
/// [`NodeArg::prepare`] must return the parameter's exact C++ layout (the value, or the `u64`
/// address of a buffer of the marker's element type) and report every device range the kernel
/// may touch through it.
pub unsafe trait NodeArg<'a, M> {
    /// What the kernel parameter holds: the value, or a `u64` device address.
    type Param;
    /// Whether the argument may name memory (a range the aliasing check compares); `true`
    /// unless it is a value. An update of a node with fewer than two such arguments skips the
    /// aliasing check, which cannot find anything there.
    #[doc(hidden)]
    const MEMORY: bool = true;
    /// Whether the argument is a graph condition (a `cudaGraphConditionalHandle`), which every
    /// node and update checks against the graphs the node is in (`bind::conditions`).
    #[doc(hidden)]
    const CONDITION: bool = false;
    /// Checks the argument against the graph's context, records the range it reads or writes,
    /// and returns the parameter.
    #[doc(hidden)]
    fn prepare(self, ctx: &CudaContext, accesses: &mut impl Record) -> Result<Self::Param>;
}

// SAFETY: the value itself is the parameter (DeviceSafe: plain data with the C++ layout).
unsafe impl<T: DeviceSafe> NodeArg<'_, T> for T {
    type Param = T;
    const MEMORY: bool = false;
    #[inline(always)]
    fn prepare(self, _: &CudaContext, _: &mut impl Record) -> Result<T> {
        Ok(self)
    }
}

/// A by-value argument as the generated `NAME::node` passes it: the macro has already checked
/// the type (`DeviceSafe`, layout), so this adds no second trait error for the same mistake.
#[doc(hidden)]
pub struct ByValue<T>(pub T);

// SAFETY: `ByValue<T>` only stands for marker `T` itself, a kernel parameter type the macro
// checked; the value is the parameter.
unsafe impl<T> NodeArg<'_, T> for ByValue<T> {
    type Param = T;
    const MEMORY: bool = false;
    #[inline(always)]
    fn prepare(self, _: &CudaContext, _: &mut impl Record) -> Result<T> {
        Ok(self.0)
    }
}

/// A whole argument list of a kernel node for a kernel of signature `Sig`: tuples whose
/// elements are [`NodeArg`]s of the markers, in order (the node counterpart of
/// [`KernelArgs`](crate::args::KernelArgs)).
///
/// # Safety
/// `with_params` must call `f` with one pointer per marker, each to the prepared parameter,
/// valid for the call.
pub unsafe trait NodeArgs<'a, Sig> {
    /// How many arguments may name memory ([`NodeArg::MEMORY`]).
    #[doc(hidden)]
    const MEMORY: usize;
    /// How many arguments are graph conditions ([`NodeArg::CONDITION`]): a node of none skips
    /// the condition check at compile time.
    #[doc(hidden)]
    const CONDITIONS: usize;
    /// Prepares every argument (noting its ranges in `accesses`) and calls `f` with the
    /// parameter pointers and the ranges.
    #[doc(hidden)]
    fn with_params<A: Record, R>(
        self,
        ctx: &CudaContext,
        accesses: &mut A,
        f: impl FnOnce(&mut [*mut c_void], &mut A) -> Result<R>,
    ) -> Result<R>;
}

// The implementations for cudarc buffers and tuples are in `bind/impls.rs`, with the launch side.

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranges of a node with more arguments than fit on the stack are all kept, in order.
    #[test]
    fn stack_accesses_keep_every_range_in_order() {
        let acc = |i: u64| Access { space: Space::Device, lo: i, hi: i + 1, write: i.is_multiple_of(2) };
        for n in [0, 1, 19, 20, 21, 45] {
            let mut s = StackAccesses::new();
            for i in 0..n {
                s.record(acc(i));
            }
            assert_eq!(s.as_slice(), (0..n).map(acc).collect::<Vec<_>>().as_slice(), "{n} ranges");
        }
    }
}

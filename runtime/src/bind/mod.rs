//! Binding operands: the one checked path from a launcher's arguments to the addresses a kernel
//! receives. Every check of every launcher family is here. The generated launchers can only get
//! an operand's address from a value that exists after its device check passed ([`input`],
//! [`output`], [`nd_input`], [`nd_output`]); the typed argument tuples of `Kernel` values and the
//! dynamic argument lists of the run-time twins run `placement` over every argument before they
//! bind one; every graph node and update takes its buffers through `node_buffer` and is checked
//! with `disjoint`.
//!
//! | check | launches (`launch*`, `tuned`, `fuse!`, Rust-syntax, `Kernel::launch`, run-time twins) | graph nodes and updates (`node*`, `update*`, `GraphExec::set`, `ProgramKernel::node`) |
//! |---|---|---|
//! | (a) device | [`input`], [`output`], [`nd_input`], [`nd_output`], [`descriptor`], `placement`: memory of another context than the stream's is an [`Error::Launch`] naming the parameter and both devices, before any driver call | `node_buffer`: another context than the graph's is an [`Error::Graph`], before the node is added |
//! | (b) extent | a flat buffer's length comes from this crate's `unsafe` [`DeviceBuffer`] traits; a view's layout is checked against its buffer when the view is made, and a view's buffer cannot be replaced afterwards (`NdViewMut` lends it only by value) | the same views; the N-D node traits are sealed, so no foreign type can report a layout its memory does not have |
//! | (c) aliasing | outputs are borrowed `&mut`, inputs `&`: the borrow checker refuses an output that overlaps another operand | outputs are borrowed shared for the graph's lifetime, so `disjoint` refuses, where every kernel node is added or updated, a written range that overlaps any other range of the same node ([`Error::Argument`] naming both) |
//! | (d) configuration | [`one_d`] for the generated 1-D kernels (elementwise) | [`one_d`] in `node_with` |
//! | (e) graph conditions | a stream launch cannot take a `cudaGraphConditionalHandle` (no `LaunchCondition` exists: a compile error) | `conditions`: a kernel node (or update) setting a condition of a graph it is not in, nor nested in, is an [`Error::Graph`] |
//!
//! In-place operations stay possible where they are one operand: an elementwise output that the
//! operation also reads (`y = a * y`) is a single `T*` parameter, never two pointers to one array.
//! Two *reads* of one buffer (`add(x, x, y)`) are no hazard and are allowed everywhere.

use crate::args::buffer::{DeviceBuffer, DeviceBufferMut};
use crate::args::node::{Access, Space};
use crate::error::{Error, Result};
use crate::module::kernel::KernelRef;
use capture::{keep, Binding};
use cudarc::driver::{sys, CudaContext, CudaStream, DevicePtr, DevicePtrMut, LaunchConfig, SyncOnDrop};
use std::marker::PhantomData;
use std::sync::Arc;

/// Whether memory allocated through `own` may be used by work of `ctx`: the same `CudaContext`
/// object (the common case: one `Arc` shared by the buffer's stream and the launch stream), or
/// another object for the same driver context. The one device test of every family.
#[inline(always)]
pub(crate) fn same_context(own: &CudaContext, ctx: &CudaContext) -> bool {
    std::ptr::eq(own, ctx) || own.cu_ctx() == ctx.cu_ctx()
}

/// A buffer read by a launch, after the device check ([`input`]); [`Checked::bind`] gives its
/// address.
#[doc(hidden)]
pub struct Checked<'a, T, B: ?Sized>(&'a B, PhantomData<fn() -> T>);

/// A buffer written by a launch, after the device check ([`output`]).
#[doc(hidden)]
pub struct CheckedMut<'a, T, B: ?Sized>(&'a mut B, PhantomData<fn() -> T>);

/// Checks that `buffer`, passed for parameter `param` (`` `x` `` or `#2`) of `kernel`, lives in
/// the context of `stream`; the result binds it. A pointer compare; the error is built off the
/// hot path. Support for generated code.
#[doc(hidden)]
#[inline(always)]
pub fn input<'a, T, B: DeviceBuffer<T> + ?Sized>(
    buffer: &'a B,
    stream: &CudaStream,
    kernel: KernelRef,
    param: &'static str,
) -> Result<Checked<'a, T, B>> {
    device(buffer.stream().context(), stream, kernel, param)?;
    Ok(Checked(buffer, PhantomData))
}

/// [`input`] for a buffer the kernel writes.
#[doc(hidden)]
#[inline(always)]
pub fn output<'a, T, B: DeviceBufferMut<T> + ?Sized>(
    buffer: &'a mut B,
    stream: &CudaStream,
    kernel: KernelRef,
    param: &'static str,
) -> Result<CheckedMut<'a, T, B>> {
    device(buffer.stream().context(), stream, kernel, param)?;
    Ok(CheckedMut(buffer, PhantomData))
}

impl<'a, T, B: ?Sized> Checked<'a, T, B> {
    /// `buffer` as if [`input`] had checked it: for the launch benchmark, which measures what
    /// the checks cost by leaving them out.
    ///
    /// # Safety
    /// `buffer` must be memory of the launch stream's context.
    #[doc(hidden)]
    pub unsafe fn unchecked(buffer: &'a B) -> Self {
        Checked(buffer, PhantomData)
    }
}

impl<'a, T, B: ?Sized> CheckedMut<'a, T, B> {
    /// `buffer` as if [`output`] had checked it (see [`Checked::unchecked`]).
    ///
    /// # Safety
    /// `buffer` must be memory of the launch stream's context.
    #[doc(hidden)]
    pub unsafe fn unchecked(buffer: &'a mut B) -> Self {
        CheckedMut(buffer, PhantomData)
    }
}

impl<'a, T, B: DevicePtr<T> + ?Sized> Checked<'a, T, B> {
    /// The buffer's device address on `binding` and cudarc's ordering guard for the launch to
    /// hold until it is queued (see [`Binding`]).
    #[inline(always)]
    pub fn bind(self, binding: &'a Binding<'_>) -> (sys::CUdeviceptr, Option<SyncOnDrop<'a>>) {
        let (ptr, guard) = self.0.device_ptr(binding);
        (ptr, keep(binding, guard))
    }
}

impl<'a, T, B: DevicePtrMut<T> + ?Sized> CheckedMut<'a, T, B> {
    /// As [`Checked::bind`], for writing (the binding stream also waits on the buffer's reads).
    #[inline(always)]
    pub fn bind(self, binding: &'a Binding<'_>) -> (sys::CUdeviceptr, Option<SyncOnDrop<'a>>) {
        let (ptr, guard) = self.0.device_ptr_mut(binding);
        (ptr, keep(binding, guard))
    }
}

/// An N-D view as an operand the kernel reads (`ndarray`'s `NdView`): the context of the buffer
/// it is over, which [`nd_input`] checks, and the address of its element `[0, ..]`. Declared here
/// and implemented by the views, as [`DescriptorOperand`] is by tensor maps, so that the one
/// checked path does not depend on the views' module.
#[doc(hidden)]
pub trait ViewOperand {
    /// The context of the view's buffer.
    fn buffer_context(&self) -> &Arc<CudaContext>;
    /// The address of element `[0, ..]` on `stream`, and cudarc's ordering guard of the buffer
    /// for a read.
    fn device_ptr_on<'s>(&'s self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>);
}

/// [`ViewOperand`] for a view the kernel writes (`ndarray`'s `NdViewMut`).
#[doc(hidden)]
pub trait ViewOperandMut {
    /// The context of the view's buffer.
    fn buffer_context(&self) -> &Arc<CudaContext>;
    /// The address of element `[0, ..]` on `stream`, and cudarc's ordering guard of the buffer
    /// for a write.
    fn device_ptr_mut_on<'s>(&'s mut self, stream: &'s CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'s>);
}

/// An N-D view read by a launch, after the device check ([`nd_input`]).
#[doc(hidden)]
pub struct CheckedView<'a, V: ?Sized>(&'a V);

/// An N-D view written by a launch, after the device check ([`nd_output`]).
#[doc(hidden)]
pub struct CheckedViewMut<'a, V: ?Sized>(&'a mut V);

/// [`input`] for an N-D view: its buffer lives in `stream`'s context. Its extent needs no check
/// here: the layout was checked against the buffer when the view was made, and the buffer cannot
/// be replaced since.
#[doc(hidden)]
#[inline(always)]
pub fn nd_input<'a, V: ViewOperand + ?Sized>(
    view: &'a V,
    stream: &CudaStream,
    kernel: KernelRef,
    param: &'static str,
) -> Result<CheckedView<'a, V>> {
    device(view.buffer_context(), stream, kernel, param)?;
    Ok(CheckedView(view))
}

/// [`nd_input`] for a view the kernel writes.
#[doc(hidden)]
#[inline(always)]
pub fn nd_output<'a, V: ViewOperandMut + ?Sized>(
    view: &'a mut V,
    stream: &CudaStream,
    kernel: KernelRef,
    param: &'static str,
) -> Result<CheckedViewMut<'a, V>> {
    device(view.buffer_context(), stream, kernel, param)?;
    Ok(CheckedViewMut(view))
}

impl<'a, V: ViewOperand + ?Sized> CheckedView<'a, V> {
    /// The address of element `[0, ..]` on `binding`, and the buffer's ordering guard.
    #[inline(always)]
    pub fn bind(self, binding: &'a Binding<'_>) -> (sys::CUdeviceptr, Option<SyncOnDrop<'a>>) {
        let (ptr, guard) = self.0.device_ptr_on(binding);
        (ptr, keep(binding, guard))
    }
}

impl<'a, V: ViewOperandMut + ?Sized> CheckedViewMut<'a, V> {
    /// The address of element `[0, ..]` on `binding`, for writing, and the buffer's guard.
    #[inline(always)]
    pub fn bind(self, binding: &'a Binding<'_>) -> (sys::CUdeviceptr, Option<SyncOnDrop<'a>>) {
        let (ptr, guard) = self.0.device_ptr_mut_on(binding);
        (ptr, keep(binding, guard))
    }
}

/// An operand passed to a kernel as a descriptor of device memory rather than its address (a
/// TMA tensor map, `tensor_map::TensorMapArg`): [`descriptor`] checks its memory's context, and
/// [`CheckedDescriptor::bind`] orders the launch after the memory's other uses.
#[doc(hidden)]
pub trait DescriptorOperand {
    /// What the kernel parameter receives, by value.
    type Descriptor: Copy;
    /// The context of the described memory.
    fn memory_context(&self) -> &Arc<CudaContext>;
    /// The descriptor, and cudarc's ordering guard of the memory on `stream` (for a read or a
    /// write, as the operand is lent).
    fn bind_on<'b>(self, stream: &'b CudaStream) -> (Self::Descriptor, SyncOnDrop<'b>)
    where
        Self: 'b;
}

/// A descriptor operand of a launch, after the device check ([`descriptor`]).
#[doc(hidden)]
pub struct CheckedDescriptor<A>(A);

/// [`input`] for a descriptor operand (a `CUtensorMap` parameter's `&TensorMap` or `&mut
/// TensorMapMut`): the memory it describes lives in `stream`'s context. Its extent needs no check
/// here: a tensor map was checked against its view when made, and borrows the view's buffer since.
#[doc(hidden)]
#[inline(always)]
pub fn descriptor<A: DescriptorOperand>(
    operand: A,
    stream: &CudaStream,
    kernel: KernelRef,
    param: &'static str,
) -> Result<CheckedDescriptor<A>> {
    device(operand.memory_context(), stream, kernel, param)?;
    Ok(CheckedDescriptor(operand))
}

impl<A: DescriptorOperand> CheckedDescriptor<A> {
    /// The descriptor to pass by value, and the memory's ordering guard on `binding`.
    #[inline(always)]
    pub fn bind<'b>(self, binding: &'b Binding<'_>) -> (A::Descriptor, Option<SyncOnDrop<'b>>)
    where
        A: 'b,
    {
        let (d, guard) = self.0.bind_on(binding);
        (d, keep(binding, guard))
    }
}

/// The device check of a launch: `own` (the context a buffer was allocated in) against the
/// launch stream's.
#[inline(always)]
fn device(own: &Arc<CudaContext>, stream: &CudaStream, kernel: KernelRef, param: &'static str) -> Result<()> {
    if same_context(own, stream.context()) {
        Ok(())
    } else {
        Err(wrong_device(kernel.name(), kernel.module().origin(), param, own.ordinal(), stream))
    }
}

/// The device check of launches that know each buffer only by its context handle and device
/// (typed argument tuples, dynamic argument lists): `None` when every one is the stream's, else
/// the first one that is not.
#[inline(always)]
pub(crate) fn placement(
    placements: impl IntoIterator<Item = Option<(sys::CUcontext, usize)>>,
    stream: &CudaStream,
) -> Option<(usize, usize)> {
    let ctx = stream.context().cu_ctx();
    placements.into_iter().enumerate().find_map(|(i, p)| match p {
        Some((c, device)) if c != ctx => Some((i, device)),
        _ => None,
    })
}

/// The error for device memory of context `buffer_device` passed to a launch on `stream`.
#[cold]
#[inline(never)]
pub(crate) fn wrong_device(
    kernel: &str,
    origin: &str,
    param: &str,
    buffer_device: usize,
    stream: &CudaStream,
) -> Error {
    let device = stream.context().ordinal();
    let cause = if buffer_device == device {
        format!(
            "parameter {param} is device memory of another CUDA context on device {device} than the launch stream's"
        )
    } else {
        format!(
            "parameter {param} is device memory of device {buffer_device}, but the launch stream is on device {device}"
        )
    };
    Error::Launch {
        kernel: kernel.to_string(),
        origin: origin.to_string(),
        device,
        cause,
        fix: Some(format!("launch on a stream of device {buffer_device}, or copy the buffer to device {device} first")),
    }
}

/// The device address of `buffer` for a graph node of context `ctx`, and the range it covers,
/// after checking that the buffer lives in `ctx` (a buffer of another device is an
/// [`Error::Graph`]). The one device check of every node family.
///
/// The address is read through cudarc's `DevicePtr` on the buffer's own stream; the ordering
/// guard it returns is not used (a graph node is not a stream operation: the graph orders its own
/// nodes, and [`GraphExec::launch`](crate::GraphExec::launch) documents the ordering with other
/// work), so it is forgotten rather than recorded.
#[inline(always)]
pub(crate) fn node_buffer<T, S: DevicePtr<T> + ?Sized>(
    buffer: &S,
    ctx: &CudaContext,
    write: bool,
) -> Result<(u64, Access)> {
    let stream = buffer.stream();
    let own = stream.context();
    if !same_context(own, ctx) {
        return Err(other_device(ctx, own.ordinal()));
    }
    let (p, guard) = buffer.device_ptr(stream);
    std::mem::forget(guard);
    Ok((p, Access { space: Space::Device, lo: p, hi: p + buffer.num_bytes() as u64, write }))
}

/// The error for a buffer of device `buffer_device` given to a graph of context `ctx`.
#[cold]
#[inline(never)]
pub(crate) fn other_device(ctx: &CudaContext, buffer_device: usize) -> Error {
    Error::Graph {
        device: ctx.ordinal(),
        cause: format!(
            "a buffer of device {buffer_device} was given to a graph of device {}; a graph belongs to one context",
            ctx.ordinal()
        ),
        fix: Some(format!(
            "copy the data to device {} first, or build a separate graph on device {buffer_device}",
            ctx.ordinal()
        )),
    }
}

/// The first two device ranges of one node (`(i, j)`, `i < j`, in the order they were recorded:
/// the node's buffer operands in parameter order) of which one is written and which share a byte.
/// Every kernel node, whatever made it, is added and updated through a check of this. Only the
/// written ranges are compared with the others (a node of reads only costs one pass).
#[inline]
pub(crate) fn overlapping(accesses: &[Access]) -> Option<(usize, usize)> {
    if accesses.len() < 2 {
        return None; // one range cannot overlap another (the common node of one buffer)
    }
    for (i, a) in accesses.iter().enumerate() {
        if !a.write || a.space != Space::Device {
            continue;
        }
        for (j, b) in accesses.iter().enumerate() {
            if (j != i) & (b.space == Space::Device) & (a.lo < b.hi) & (b.lo < a.hi) {
                return Some((i.min(j), i.max(j)));
            }
        }
    }
    None
}

/// [`overlapping`] as the error of a node of the kernel `who` names (`(kernel, origin)`, asked
/// only when there is an error), or `Ok`.
#[inline]
pub(crate) fn disjoint<'w>(accesses: &[Access], who: impl FnOnce() -> (&'w str, &'w str)) -> Result<()> {
    match overlapping(accesses) {
        None => Ok(()),
        Some((i, j)) => {
            let (kernel, origin) = who();
            Err(aliased(accesses, (i, j), kernel, origin))
        }
    }
}

#[cold]
#[inline(never)]
fn aliased(accesses: &[Access], (i, j): (usize, usize), kernel: &str, origin: &str) -> Error {
    let what = |k: usize| if accesses[k].write { "written" } else { "read" };
    Error::Argument {
        kernel: kernel.to_string(),
        origin: origin.to_string(),
        parameter: format!("buffer operands #{i} and #{j}"),
        detail: format!(
            "buffer operand #{i} ({}, bytes {:#x}..{:#x}) and buffer operand #{j} ({}, bytes {:#x}..{:#x}) overlap \
             (operands counted in parameter order, buffers only); a kernel may not write memory that another of \
             its operands reads or writes (a launch refuses the same through its `&`/`&mut` borrows): pass \
             separate buffers, or for an in-place update use one operand that is both read and written",
            what(i),
            accesses[i].lo,
            accesses[i].hi,
            what(j),
            accesses[j].lo,
            accesses[j].hi
        ),
    }
}

/// The device check of a graph condition given to a kernel node (`&Condition`,
/// `GraphArg::condition`): a condition made on context `own` (device `own_device`) of another
/// context than the graph's `ctx` is an [`Error::Graph`], as a buffer of another device is
/// (`node_buffer`).
#[inline(always)]
pub(crate) fn node_condition(own: sys::CUcontext, own_device: usize, ctx: &CudaContext) -> Result<()> {
    if own == ctx.cu_ctx() {
        Ok(())
    } else {
        Err(other_device_condition(ctx, own_device))
    }
}

#[cold]
#[inline(never)]
fn other_device_condition(ctx: &CudaContext, own_device: usize) -> Error {
    Error::Graph {
        device: ctx.ordinal(),
        cause: format!(
            "a condition of a graph of device {own_device} was given to a kernel node of a graph of device {}",
            ctx.ordinal()
        ),
        fix: Some("pass a condition made with `condition()` on this graph or on one it is nested in".into()),
    }
}

/// The condition check of every kernel node and update that takes a condition (the typed ones
/// whose `NodeArgs::CONDITIONS` is not 0, every run-time one): each condition the kernel sets (an
/// access in [`Space::Condition`], whose key holds its graph's id) belongs to the node's graph
/// (`own`) or to one of the graphs it is a conditional body of (`parents`), else an
/// [`Error::Graph`] naming `kernel`.
#[inline]
pub(crate) fn conditions(own: u64, parents: &[u64], accesses: &[Access], device: usize, kernel: &str) -> Result<()> {
    for a in accesses {
        if let Some(g) = a.condition_graph() {
            if g != own && !parents.contains(&g) {
                return Err(foreign_condition(device, kernel));
            }
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn foreign_condition(device: usize, kernel: &str) -> Error {
    Error::Graph {
        device,
        cause: format!(
            "kernel `{kernel}` is given a condition of another graph; a kernel sets only conditions of the graph it \
             is in or of a graph that encloses it"
        ),
        fix: Some("pass a condition made with `condition()` on this graph or on one it is nested in".into()),
    }
}

/// Checks that `config` is one-dimensional, as the generated 1-D kernels (elementwise) index
/// their elements with `blockIdx.x * blockDim.x + threadIdx.x` only: a 2-D or 3-D block or grid
/// would run threads that share an index and race on its output. Support for generated code.
#[doc(hidden)]
#[inline]
pub fn one_d(kernel: KernelRef, device: usize, config: &LaunchConfig) -> Result<()> {
    one_d_named(kernel.name(), kernel.module().origin(), device, config)
}

/// [`one_d`] for a kernel known by name and origin (the run-time twins).
#[inline]
pub(crate) fn one_d_named(kernel: &str, origin: &str, device: usize, config: &LaunchConfig) -> Result<()> {
    let (g, b) = (config.grid_dim, config.block_dim);
    if (g.1, g.2, b.1, b.2) == (1, 1, 1, 1) {
        return Ok(());
    }
    Err(not_one_d(kernel, origin, device, config))
}

#[cold]
#[inline(never)]
fn not_one_d(kernel: &str, origin: &str, device: usize, config: &LaunchConfig) -> Error {
    Error::Launch {
        kernel: kernel.to_string(),
        origin: origin.to_string(),
        device,
        cause: format!(
            "grid {:?} x block {:?} is not 1-D: the kernel indexes its elements in x only, so threads in y or z \
             would repeat the same elements",
            config.grid_dim, config.block_dim
        ),
        fix: Some("use a 1-D configuration, (n, 1, 1) x (t, 1, 1) (e.g. `LaunchConfig::for_num_elems`)".into()),
    }
}

pub(crate) mod capture; // the stream buffers are bound on, under stream capture too
pub(crate) mod dynamic; // the binding of dynamic argument lists (run-time twins)
mod impls; // KernelArg/NodeArg impls for buffers and tuples (one table for both)
#[cfg(test)]
mod tests;

//! What a Rust-syntax kernel (`#[cuda_embed::kernel]`) calls: thread and block indices,
//! barriers, shared memory, atomics, warp shuffles and votes.
//!
//! These functions exist so that `use cuda_embed::device::*;` names them and their docs say what
//! they do; the kernel's body is translated to CUDA C++ by the macro and never runs on the host.
//! Calling one on the host panics.
//!
//! ```ignore
//! use cuda_embed::device::*;
//!
//! #[cuda_embed::kernel]
//! fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
//!     let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
//!     if i < y.len() {
//!         y[i] = a * x[i] + y[i];
//!     }
//! }
//! ```
//!
//! In a kernel body, besides these functions: `printf!("format %d\n", args...)` (CUDA's
//! `printf`, C format), the scalar methods listed in the guide, and the CUDA vector types of the
//! crate root (`cuda_embed::Float4`, ..., `Half2`, `Bf162`: fields `.x .y .z .w`,
//! `Float4::new(x, y, z, w)`; `Half2`/`Bf162` also take `+ - * /`).
//!
//! With bounds checks on (the default), an out-of-range index is reported by the next
//! `cuda_embed::synchronize(&stream)`, `GraphExec::synchronize(&stream)` or the kernel's own
//! `NAME::check_errors(&stream)`; cudarc's `stream.synchronize()` does not report it (see
//! [`report`]).

pub mod report;

/// A thread, block or grid position or extent (CUDA's `uint3`/`dim3`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dim3 {
    /// The x component.
    pub x: u32,
    /// The y component.
    pub y: u32,
    /// The z component.
    pub z: u32,
}

#[cold]
fn device_only(name: &str) -> ! {
    panic!("cuda_embed::device::{name} only exists inside a #[cuda_embed::kernel] body, which runs on the GPU")
}

/// The thread's index in its block (`threadIdx`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn thread_idx() -> Dim3 {
    device_only("thread_idx")
}

/// The block's index in the grid (`blockIdx`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn block_idx() -> Dim3 {
    device_only("block_idx")
}

/// The block's extent in threads (`blockDim`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn block_dim() -> Dim3 {
    device_only("block_dim")
}

/// The grid's extent in blocks (`gridDim`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn grid_dim() -> Dim3 {
    device_only("grid_dim")
}

/// Waits until every thread of the block reached it and their shared-memory writes are visible
/// (`__syncthreads()`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn sync_threads() {
    device_only("sync_threads")
}

/// Synchronises the threads of the warp (`__syncwarp()`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn sync_warp() {
    device_only("sync_warp")
}

/// A device-wide memory fence (`__threadfence()`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn thread_fence() {
    device_only("thread_fence")
}

/// A statically sized array in shared memory, one per block: `let tile = shared::<f32, 256>();`
/// (`__shared__ float tile[256];`). Only as the value of a `let`; `N` is a literal or a `{ }`
/// block of literals with `+ - *`.
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn shared<T, const N: usize>() -> &'static mut [T; N] {
    device_only("shared")
}

macro_rules! atomics {
    ($($(#[$doc:meta])* $name:ident => $cuda:literal;)*) => {$(
        $(#[$doc])*
        #[doc = concat!("\n\nCUDA's `", $cuda, "`: returns the old value. Written `", stringify!($name), "(&mut x[i], v)` with `x` a `&mut [T]` or a shared array.")]
        ///
        /// # Panics
        /// On the host: it only exists in a kernel.
        pub fn $name<T>(_place: &mut T, _value: T) -> T {
            device_only(stringify!($name))
        }
    )*};
}

atomics! {
    /// Atomically adds `value` to the element.
    atomic_add => "atomicAdd";
    /// Atomically subtracts `value` from the element.
    atomic_sub => "atomicSub";
    /// Atomically stores the minimum of the element and `value`.
    atomic_min => "atomicMin";
    /// Atomically stores the maximum of the element and `value`.
    atomic_max => "atomicMax";
    /// Atomically replaces the element with `value`.
    atomic_exch => "atomicExch";
    /// Atomically ANDs `value` into the element.
    atomic_and => "atomicAnd";
    /// Atomically ORs `value` into the element.
    atomic_or => "atomicOr";
    /// Atomically XORs `value` into the element.
    atomic_xor => "atomicXor";
}

/// Atomically replaces the element with `new` if it equals `old` (`atomicCAS`); returns the old
/// value.
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn atomic_cas<T>(_place: &mut T, _old: T, _new: T) -> T {
    device_only("atomic_cas")
}

/// The value of `value` in lane `lane` of the warp (`__shfl_sync`), for the lanes in `mask`.
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn shfl_sync<T>(_mask: u32, _value: T, _lane: i32) -> T {
    device_only("shfl_sync")
}

/// The value of `value` in the lane `delta` below (`__shfl_up_sync`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn shfl_up_sync<T>(_mask: u32, _value: T, _delta: u32) -> T {
    device_only("shfl_up_sync")
}

/// The value of `value` in the lane `delta` above (`__shfl_down_sync`): the step of a warp
/// reduction.
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn shfl_down_sync<T>(_mask: u32, _value: T, _delta: u32) -> T {
    device_only("shfl_down_sync")
}

/// The value of `value` in lane `own lane ^ lane_mask` (`__shfl_xor_sync`): a butterfly step.
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn shfl_xor_sync<T>(_mask: u32, _value: T, _lane_mask: u32) -> T {
    device_only("shfl_xor_sync")
}

/// One bit per lane of `mask` whose `predicate` holds (`__ballot_sync`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn ballot_sync(_mask: u32, _predicate: bool) -> u32 {
    device_only("ballot_sync")
}

/// Whether `predicate` holds in every lane of `mask` (`__all_sync`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn all_sync(_mask: u32, _predicate: bool) -> bool {
    device_only("all_sync")
}

/// Whether `predicate` holds in any lane of `mask` (`__any_sync`).
///
/// # Panics
/// On the host: it only exists in a kernel.
pub fn any_sync(_mask: u32, _predicate: bool) -> bool {
    device_only("any_sync")
}

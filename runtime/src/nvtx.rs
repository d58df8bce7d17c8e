//! NVTX ranges for profilers (Nsight Systems, Nsight Compute): [`range`] marks a span of host
//! code, and with the `nvtx` cargo feature every kernel launch (`NAME::launch*`, `Kernel`
//! values, run-time `ProgramKernel`s) and every graph launch pushes a range of its own, named by
//! the kernel and the Rust `file:line` of its `cuda_kernel!` (`saxpy (src/main.rs:12)`), or
//! `graph (N nodes)`.
//!
//! Without the feature everything here is an empty inline function and [`Range`] has no size:
//! no code is added to any launch. With it, the ranges go through cudarc's NVTX bindings
//! (`nvtxRangePushA`/`nvtxRangePop` of `libnvToolsExt`, opened at the first range); when that
//! library cannot be opened, ranges are skipped ([`available`] says so), never a panic. CUDA 13
//! ships NVTX as headers only: a `libnvToolsExt.so.1` is one C file away (`#define
//! NVTX_EXPORT_API` then `#include <nvtx3/nvToolsExt.h>`, built with `-shared -fPIC -ldl`; the
//! guide's "Profiling" section has the commands).
//!
//! ```no_run
//! for step in 0..10 {
//!     let _r = cuda_embed_runtime::nvtx::range("step");
//!     // launches here appear nested in "step" in the profiler's timeline
//! }
//! ```

use std::marker::PhantomData;

/// An open NVTX range, closed when dropped (`nvtxRangePop`). Ranges nest per thread, so a
/// `Range` stays on the thread that opened it (it is not `Send`).
#[must_use = "the range closes when this is dropped"]
#[derive(Debug)]
pub struct Range {
    #[cfg(feature = "nvtx")]
    pushed: bool,
    _thread: PhantomData<*const ()>,
}

/// Opens a range named `name` on this thread, until the returned guard is dropped. Without the
/// `nvtx` feature, nothing (and the guard has no size).
///
/// ```no_run
/// let r = cuda_embed_runtime::nvtx::range("solve");
/// // ... launches ...
/// drop(r);
/// ```
#[inline(always)]
pub fn range(name: &str) -> Range {
    #[cfg(feature = "nvtx")]
    {
        Range { pushed: imp::push(name.as_bytes(), &[]), _thread: PhantomData }
    }
    #[cfg(not(feature = "nvtx"))]
    {
        let _ = name;
        Range { _thread: PhantomData }
    }
}

/// Whether ranges reach a profiler's library: the `nvtx` feature is on and `libnvToolsExt`
/// could be opened.
///
/// ```no_run
/// if !cuda_embed_runtime::nvtx::available() {
///     eprintln!("no NVTX library: profiles will show no ranges");
/// }
/// ```
pub fn available() -> bool {
    #[cfg(feature = "nvtx")]
    {
        imp::available()
    }
    #[cfg(not(feature = "nvtx"))]
    {
        false
    }
}

/// The range of one kernel launch: `kernel (origin)` (launches open it only with the feature:
/// without it they carry no code for it, not even the reads of the names).
#[cfg(feature = "nvtx")]
#[inline(always)]
pub(crate) fn launch(kernel: &str, origin: &str) -> Range {
    Range { pushed: imp::push(kernel.as_bytes(), origin.as_bytes()), _thread: PhantomData }
}

/// The range of one graph launch: `graph (N nodes)` (with the feature only, as [`launch`]).
#[cfg(feature = "nvtx")]
#[inline(always)]
pub(crate) fn graph(nodes: usize) -> Range {
    {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = nodes;
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut detail = [0u8; 26];
        let len = digits.len() - i;
        detail[..len].copy_from_slice(&digits[i..]);
        detail[len..len + 6].copy_from_slice(b" nodes");
        Range { pushed: imp::push(b"graph", &detail[..len + 6]), _thread: PhantomData }
    }
}

impl Drop for Range {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(feature = "nvtx")]
        if self.pushed {
            imp::pop();
        }
    }
}

#[cfg(feature = "nvtx")]
mod imp {
    use cudarc::nvtx::sys;
    use std::cell::RefCell;
    use std::sync::OnceLock;

    /// Whether the NVTX library opens (asked once).
    pub(super) fn available() -> bool {
        static PRESENT: OnceLock<bool> = OnceLock::new();
        #[cfg(feature = "dynamic-loading")]
        {
            // SAFETY: only tries to open the library.
            *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
        }
        #[cfg(not(feature = "dynamic-loading"))]
        {
            *PRESENT.get_or_init(|| true)
        }
    }

    thread_local! {
        /// The message of the next push, NUL-terminated (no allocation per range once grown).
        static TEXT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }

    /// Pushes a range named `name`, or `name (detail)` when `detail` is not empty; false when no
    /// library is there (nothing pushed). A NUL inside the name ends it there.
    pub(super) fn push(name: &[u8], detail: &[u8]) -> bool {
        if !available() {
            return false;
        }
        TEXT.with(|t| {
            let mut t = t.borrow_mut();
            t.clear();
            t.extend_from_slice(name);
            if !detail.is_empty() {
                t.extend_from_slice(b" (");
                t.extend_from_slice(detail);
                t.push(b')');
            }
            t.push(0);
            // SAFETY: a NUL-terminated string that lives for the call (the library copies it).
            unsafe { sys::nvtxRangePushA(t.as_ptr() as *const std::ffi::c_char) };
        });
        true
    }

    pub(super) fn pop() {
        // SAFETY: closes the range this thread's guard pushed.
        unsafe { sys::nvtxRangePop() };
    }
}

#[cfg(test)]
mod tests {
    /// Without the feature the guard has no size and nothing is pushed; with it, a range on a
    /// machine without the library is skipped, not a panic.
    #[test]
    fn ranges_cost_nothing_off_and_never_panic_on() {
        #[cfg(not(feature = "nvtx"))]
        assert_eq!(std::mem::size_of::<super::Range>(), 0);
        #[cfg(not(feature = "nvtx"))]
        assert!(!super::available());
        let outer = super::range("outer");
        #[cfg(feature = "nvtx")]
        {
            let _inner = super::launch("saxpy", "src/main.rs:3");
            let _graph = super::graph(100);
        }
        drop(outer);
    }
}

//! Host nodes: a Rust closure the driver calls on one of its own threads, with every panic
//! caught there (never unwinding into the driver) and kept for the next launch or
//! synchronisation to report as an [`Error::Graph`].

use crate::error::Error;
use std::any::Any;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

type Closure = Box<dyn FnMut() + Send + 'static>;

/// One host node's closure and what happened when it last panicked. Shared (`Arc`) by the graph
/// and every instantiation of it: the driver holds a pointer to it for as long as any of them
/// can run the node.
pub(crate) struct HostCell {
    label: String,
    f: Mutex<Closure>,
    panicked: AtomicBool,
    message: Mutex<Option<String>>,
}

impl HostCell {
    pub(crate) fn new(label: String, f: Closure) -> Arc<Self> {
        Arc::new(HostCell { label, f: Mutex::new(f), panicked: AtomicBool::new(false), message: Mutex::new(None) })
    }

    /// The pointer the driver passes back to [`trampoline`].
    pub(crate) fn user_data(self: &Arc<Self>) -> *mut c_void {
        Arc::as_ptr(self) as *mut c_void
    }

    /// The panic since the last call, as an error for `device`, clearing it.
    pub(crate) fn take_panic(&self, device: usize) -> Option<Error> {
        if !self.panicked.swap(false, Ordering::Acquire) {
            return None;
        }
        let message = self.message.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
        Some(Error::Graph {
            device,
            cause: format!("host node `{}` panicked: {message}", self.label),
            fix: Some(
                "the panic was caught on the driver's thread; fix the closure (its later nodes still ran)".into(),
            ),
        })
    }
}

fn panic_text(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_string()
    }
}

/// The host function of every host node.
///
/// # Safety
/// `user` is [`HostCell::user_data`] of a cell that outlives the graph's instantiations (they
/// hold an `Arc` of it).
pub(crate) unsafe extern "C" fn trampoline(user: *mut c_void) {
    // SAFETY: the caller's contract.
    let cell = unsafe { &*(user as *const HostCell) };
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut f = cell.f.lock().unwrap_or_else(|p| p.into_inner());
        (f)()
    }));
    if let Err(p) = r {
        // Nothing here may unwind: the text is built from the payload, the lock poisoning ignored.
        let text = catch_unwind(AssertUnwindSafe(|| panic_text(&*p))).unwrap_or_default();
        *cell.message.lock().unwrap_or_else(|p| p.into_inner()) = Some(text);
        cell.panicked.store(true, Ordering::Release);
        // The payload's own drop could panic; leak it instead of risking an unwind here.
        std::mem::forget(p);
    }
}

/// The first panic of any of `cells`, as an error for `device`.
pub(crate) fn check(cells: &[Arc<HostCell>], device: usize) -> Option<Error> {
    let mut first = None;
    for c in cells {
        if let Some(e) = c.take_panic(device) {
            first.get_or_insert(e);
        }
    }
    first
}

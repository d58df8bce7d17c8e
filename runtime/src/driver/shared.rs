//! One handle per device: what [`crate::context`] hands out.
//!
//! cudarc's `CudaContext::new` retains the device's primary context and wraps it in a new
//! `Arc<CudaContext>` on every call, each with state of its own: its streams count (whether
//! cudarc tracks buffer events between streams at all), its event-tracking switch and its
//! recorded deferred error. Two handles of one device therefore do not order each other's
//! buffers, and everything kept per handle (the futures' pooled events and watcher streams were)
//! is kept once per call. So [`crate::context`] hands out one `Arc` per device for as long as any
//! clone of it lives: the registry holds a [`Weak`], never the handle itself, so it keeps no
//! context alive; once every clone is dropped the primary context is released as cudarc releases
//! it, and the next call opens a new handle.

use cudarc::driver::CudaContext;
use std::sync::{Arc, Mutex, Weak};

/// The primary contexts' handles [`crate::context`] hands out.
pub(crate) static PRIMARY: PerDevice<CudaContext> = PerDevice::new();

/// The handle [`crate::context`] hands out for `ctx`'s context, if one lives and `ctx` is a
/// handle of the same context (of the primary context, not a non-primary one of the device).
pub(crate) fn primary_twin(ctx: &CudaContext) -> Option<Arc<CudaContext>> {
    PRIMARY.live(ctx.ordinal()).filter(|p| p.cu_ctx() == ctx.cu_ctx())
}

/// Per device ordinal, the handle handed out last (`Weak`: dead once every clone is dropped).
pub(crate) struct PerDevice<C> {
    handles: Mutex<Vec<Weak<C>>>,
}

impl<C> PerDevice<C> {
    pub(crate) const fn new() -> Self {
        PerDevice { handles: Mutex::new(Vec::new()) }
    }

    /// The live handle of device `ordinal`, if one was handed out and a clone of it still lives.
    pub(crate) fn live(&self, ordinal: usize) -> Option<Arc<C>> {
        let handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        handles.get(ordinal).and_then(Weak::upgrade)
    }

    /// The live handle of device `ordinal`, else a new one from `open` (called under the
    /// registry's lock, so two threads never open two handles of one device), and whether it was
    /// opened now. An `open` that fails leaves nothing behind.
    pub(crate) fn get_or_open<E>(
        &self,
        ordinal: usize,
        open: impl FnOnce() -> Result<Arc<C>, E>,
    ) -> Result<(Arc<C>, bool), E> {
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(live) = handles.get(ordinal).and_then(Weak::upgrade) {
            return Ok((live, false));
        }
        let opened = open()?;
        if handles.len() <= ordinal {
            handles.resize_with(ordinal + 1, Weak::new);
        }
        handles[ordinal] = Arc::downgrade(&opened);
        Ok((opened, true))
    }
}

#[cfg(test)]
mod tests {
    use super::PerDevice;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A stand-in for `CudaContext` that counts how many were opened and how many live.
    struct Handle {
        live: Arc<AtomicUsize>,
    }

    impl Drop for Handle {
        fn drop(&mut self) {
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn opener<'a>(opened: &'a AtomicUsize, live: &Arc<AtomicUsize>) -> impl FnOnce() -> Result<Arc<Handle>, ()> + 'a {
        let live = live.clone();
        move || {
            opened.fetch_add(1, Ordering::SeqCst);
            live.fetch_add(1, Ordering::SeqCst);
            Ok(Arc::new(Handle { live }))
        }
    }

    #[test]
    fn one_handle_per_device_while_any_clone_lives() {
        let reg = PerDevice::<Handle>::new();
        let (opened, live) = (AtomicUsize::new(0), Arc::new(AtomicUsize::new(0)));
        let (a, new_a) = reg.get_or_open(0, opener(&opened, &live)).unwrap();
        assert!(new_a);
        // A thousand calls in a loop: the same handle, nothing more opened.
        for _ in 0..1000 {
            let (b, new_b) = reg.get_or_open(0, opener(&opened, &live)).unwrap();
            assert!(Arc::ptr_eq(&a, &b) && !new_b);
        }
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        // Another device has its own.
        let (c, _) = reg.get_or_open(3, opener(&opened, &live)).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(reg.live(1).is_none() && reg.live(2).is_none() && reg.live(9).is_none());
        assert_eq!((opened.load(Ordering::SeqCst), live.load(Ordering::SeqCst)), (2, 2));
    }

    #[test]
    fn the_registry_keeps_no_handle_alive() {
        let reg = PerDevice::<Handle>::new();
        let (opened, live) = (AtomicUsize::new(0), Arc::new(AtomicUsize::new(0)));
        let (a, _) = reg.get_or_open(0, opener(&opened, &live)).unwrap();
        let clone = a.clone();
        drop(a);
        assert!(reg.live(0).is_some(), "a clone still lives");
        drop(clone);
        assert_eq!(live.load(Ordering::SeqCst), 0, "every clone dropped: the handle is gone");
        assert!(reg.live(0).is_none());
        let (_b, new_b) = reg.get_or_open(0, opener(&opened, &live)).unwrap();
        assert!(new_b, "a new handle once the last one went");
        assert_eq!(opened.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_open_leaves_nothing() {
        let reg = PerDevice::<Handle>::new();
        assert_eq!(reg.get_or_open(2, || Err::<Arc<Handle>, _>("no device")).err(), Some("no device"));
        assert!(reg.live(2).is_none());
    }

    #[test]
    fn racing_threads_get_one_handle() {
        let reg = PerDevice::<Handle>::new();
        let (opened, live) = (AtomicUsize::new(0), Arc::new(AtomicUsize::new(0)));
        let handles: Vec<Arc<Handle>> = std::thread::scope(|s| {
            let joins: Vec<_> =
                (0..8).map(|_| s.spawn(|| reg.get_or_open(0, opener(&opened, &live)).unwrap().0)).collect();
            joins.into_iter().map(|j| j.join().unwrap()).collect()
        });
        assert!(handles.iter().all(|h| Arc::ptr_eq(h, &handles[0])));
        assert_eq!(opened.load(Ordering::SeqCst), 1);
    }
}

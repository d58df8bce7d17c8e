//! What the futures keep per CUDA context (idle watches with their events, watcher streams),
//! found from any live handle of the context, and kept only while the context is known to live.
//!
//! # Keyed by the context, proved alive by a handle
//!
//! The driver objects kept here belong to a *context*, not to one `Arc<CudaContext>`: cudarc
//! wraps one primary context in a new handle at every `CudaContext::new`, and a user may hold
//! several (or another library's). Kept per handle, they would be made again for each new handle
//! and stranded when it is dropped while the context lives on (up to a pool's worth of events and
//! [`WATCHERS`](super::WATCHERS) streams per handle, for as long as the context lives). So an
//! entry is keyed by the driver's context handle (`CUcontext`), and every `Arc` that reaches it
//! joins its *anchors* (a [`Weak`] each).
//!
//! A `CUcontext` alone does not prove that its objects are still valid: once every handle is
//! dropped the primary context is released and destroyed with everything in it, and the next one
//! may well come back under the same `CUcontext` value. The anchors are that proof. An anchor
//! that is alive now has been alive since it joined (it holds a retain of the context all that
//! while), and it joined when a live handle of the entry's context reached the entry; two live
//! contexts never share a handle value, so a live anchor means that the context of everything in
//! the entry has lived, without a break, from the moment it was put there until now. Hence:
//!
//! - a handle that is an anchor (the same `Arc`, found by its address, which the anchor's `Weak`
//!   keeps from being reused) reaches the entry at once: the common case, one comparison, as
//!   cheap as keying by that `Arc` was;
//! - a new handle with the entry's `CUcontext` joins it when some anchor is still alive, and all
//!   that is kept is reused; the handle [`crate::context`] hands out for the same context, if one
//!   lives, joins with it (so handles made elsewhere, e.g. by `CudaContext::new`, may come and go
//!   while that one lives);
//! - when no anchor is alive, the context may have been destroyed and made again: what the entry
//!   kept is dropped *without a driver call* (never a `cuEventDestroy` or `cuStreamDestroy` on
//!   objects of a context that may be gone) and the entry starts afresh.
//!
//! # Who keeps the context alive: nobody here
//!
//! The table holds only `Weak` handles: it never keeps a context alive. Work in flight does (a
//! watch holds its context's handle until the watch goes idle), so the events of pending
//! futures are always valid. Idle objects whose every anchor is gone are left to the driver: when
//! the context was destroyed they went with it; only when it lives on solely through handles that
//! never reached this table (made by `CudaContext::new` or another library, never used for
//! awaited work) do they stay allocated, unused, until that context goes — at most one pool and
//! one set of watcher streams each time every anchor of a context is dropped, never a growth per
//! handle. [`crate::context`] hands out one handle per device, and that handle anchors every
//! entry of its context while it lives, so code that keeps one never gets there.

use cudarc::driver::CudaContext;
use std::sync::{Arc, Weak};

/// What [`PerContext::get`] asks of a `CudaContext` off its common path: the driver's handle,
/// and the handle [`crate::context`] hands out for the same context if one lives.
#[cold]
pub(crate) fn about(ctx: &CudaContext) -> (usize, Option<Arc<CudaContext>>) {
    (ctx.cu_ctx() as usize, crate::driver::shared::primary_twin(ctx))
}

/// What is kept for each context, `T`, keyed by the context and proved alive by its anchors
/// (see the module docs). A list, not a map: a process has a context or a few, and a scan of
/// them costs less than hashing a key (this is on every awaited launch's path).
pub(crate) struct PerContext<C, T> {
    entries: Vec<Entry<C, T>>,
}

struct Entry<C, T> {
    /// The address of the anchor that reached the entry last (0: none): what the common path
    /// compares. Always one of `anchors` (whose `Weak` keeps the address from being reused).
    last: usize,
    /// The driver's handle of the context.
    raw: usize,
    /// Every handle that reached the entry and may be alive (dead ones are pruned when a new
    /// handle joins).
    anchors: Vec<Weak<C>>,
    value: T,
}

impl<C, T: Default> PerContext<C, T> {
    pub(crate) const fn new() -> Self {
        PerContext { entries: Vec::new() }
    }

    /// What is kept for the context of `ctx`, made empty for a context not seen before (or not
    /// known to have lived since: see the module docs). `about` says, when asked (not on the
    /// common path), the context's driver handle and another live handle of it if one is known
    /// (the one [`crate::context`] hands out), which joins the anchors too.
    #[inline]
    pub(crate) fn get(&mut self, ctx: &Arc<C>, about: impl FnOnce() -> (usize, Option<Arc<C>>)) -> &mut T {
        let key = Arc::as_ptr(ctx) as usize;
        let at = match self.entries.iter().position(|e| e.last == key) {
            Some(at) => at,
            None => {
                let (raw, twin) = about();
                self.join(ctx, raw, twin)
            }
        };
        &mut self.entries[at].value
    }

    /// [`PerContext::get`] handing what is kept to `f`: for the common path of every awaited
    /// launch, where it costs what a scan keyed by the handle did (no index to check).
    #[inline]
    pub(crate) fn with<R>(
        &mut self,
        ctx: &Arc<C>,
        about: impl FnOnce() -> (usize, Option<Arc<C>>),
        f: impl FnOnce(&mut T) -> R,
    ) -> R {
        let key = Arc::as_ptr(ctx) as usize;
        if let Some(e) = self.entries.iter_mut().find(|e| e.last == key) {
            return f(&mut e.value);
        }
        let (raw, twin) = about();
        let at = self.join(ctx, raw, twin);
        f(&mut self.entries[at].value)
    }

    /// The entry `ctx` (of driver handle `raw`; `twin` another live handle of its context)
    /// reaches when it is not the one that reached an entry last.
    #[cold]
    #[inline(never)]
    fn join(&mut self, ctx: &Arc<C>, raw: usize, twin: Option<Arc<C>>) -> usize {
        let key = Arc::as_ptr(ctx) as usize;
        // An anchor already (several handles of one context, taking turns).
        if let Some(at) = self.entries.iter().position(|e| e.anchors.iter().any(|a| a.as_ptr() as usize == key)) {
            self.entries[at].last = key;
            return at;
        }
        let at = match self.entries.iter().position(|e| e.raw == raw) {
            Some(at) => at,
            None => {
                // A context not seen before: entries of contexts with no live anchor are dropped
                // (they may live on, but nothing proves it).
                self.entries.retain(|e| e.anchors.iter().any(|a| a.strong_count() > 0));
                self.entries.push(Entry { last: 0, raw, anchors: Vec::new(), value: T::default() });
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[at];
        e.anchors.retain(|a| a.strong_count() > 0);
        if e.anchors.is_empty() {
            // No handle proves that the context lived since its objects were kept: dropped
            // without a driver call (a new entry is empty already).
            e.value = T::default();
        }
        e.anchors.push(Arc::downgrade(ctx));
        // A second live handle of the context (alive now, with the same driver handle as `ctx`,
        // so of the same context) anchors as well: it may outlive `ctx`.
        if let Some(twin) = twin.filter(|t| !e.anchors.iter().any(|a| a.as_ptr() == Arc::as_ptr(t))) {
            e.anchors.push(Arc::downgrade(&twin));
        }
        e.last = key;
        at
    }

    /// Every entry's value (for the counts of [`pool_stats`](super::pool_stats)).
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|e| &e.value)
    }

    /// How many handles the entries hold (live or not yet pruned).
    pub(crate) fn anchors(&self) -> usize {
        self.entries.iter().map(|e| e.anchors.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::PerContext;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A stand-in for `CudaContext`: its driver handle.
    struct Ctx(usize);

    /// A stand-in for what is kept: driver objects, counted when dropped without a driver call.
    #[derive(Default)]
    struct Kept {
        objects: Vec<u32>,
        dropped: Option<Arc<AtomicUsize>>,
    }

    impl Drop for Kept {
        fn drop(&mut self) {
            if let Some(d) = &self.dropped {
                d.fetch_add(self.objects.len(), Ordering::SeqCst);
            }
        }
    }

    fn get<'t>(t: &'t mut PerContext<Ctx, Kept>, ctx: &Arc<Ctx>, dropped: &Arc<AtomicUsize>) -> &'t mut Kept {
        let k = t.get(ctx, || (ctx.0, None));
        k.dropped.get_or_insert_with(|| dropped.clone());
        k
    }

    #[test]
    fn new_handles_of_a_living_context_share_what_is_kept() {
        let mut t = PerContext::new();
        let dropped = Arc::new(AtomicUsize::new(0));
        let first = Arc::new(Ctx(0x1000));
        get(&mut t, &first, &dropped).objects.push(1);
        // Hundreds of handles of the same context, each dropped after use (what a program
        // calling `CudaContext::new` in a loop does) while `first` lives: one entry, nothing lost.
        for i in 0..500 {
            let h = Arc::new(Ctx(0x1000));
            let kept = get(&mut t, &h, &dropped);
            assert_eq!(kept.objects.len(), 1 + i as usize, "handle {i} reaches what the others kept");
            kept.objects.push(2);
        }
        assert_eq!(t.values().count(), 1);
        assert!(t.anchors() <= 3, "dead handles are pruned: {} kept", t.anchors());
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        // And a chain: each handle made before the previous one goes keeps the proof alive.
        let mut prev = Arc::new(Ctx(0x1000));
        get(&mut t, &prev, &dropped);
        drop(first);
        for _ in 0..10 {
            let next = Arc::new(Ctx(0x1000));
            get(&mut t, &next, &dropped);
            prev = next;
        }
        assert_eq!(get(&mut t, &prev, &dropped).objects.len(), 501);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_context_whose_handles_all_went_starts_afresh_without_driver_calls() {
        let mut t = PerContext::new();
        let dropped = Arc::new(AtomicUsize::new(0));
        let a = Arc::new(Ctx(0x2000));
        get(&mut t, &a, &dropped).objects.extend([1, 2, 3]);
        drop(a);
        // The same driver handle value again, with no live anchor in between: maybe a new
        // context. What was kept is dropped (counted, never used), the entry starts empty.
        let b = Arc::new(Ctx(0x2000));
        assert!(get(&mut t, &b, &dropped).objects.is_empty());
        assert_eq!(dropped.load(Ordering::SeqCst), 3);
        assert_eq!(t.values().count(), 1);
    }

    #[test]
    fn contexts_are_kept_apart_and_dead_ones_pruned() {
        let mut t = PerContext::new();
        let dropped = Arc::new(AtomicUsize::new(0));
        let (a, b) = (Arc::new(Ctx(0x10)), Arc::new(Ctx(0x20)));
        get(&mut t, &a, &dropped).objects.push(1);
        get(&mut t, &b, &dropped).objects.extend([1, 2]);
        assert_eq!(get(&mut t, &a, &dropped).objects.len(), 1);
        assert_eq!(get(&mut t, &b, &dropped).objects.len(), 2);
        drop(b);
        // Non-primary contexts made and dropped in a loop: the list does not grow.
        for i in 0..100 {
            let c = Arc::new(Ctx(0x100 + i));
            get(&mut t, &c, &dropped).objects.push(7);
        }
        assert!(t.values().count() <= 3, "{} entries", t.values().count());
        assert_eq!(get(&mut t, &a, &dropped).objects.len(), 1, "a live context keeps its entry");
    }

    #[test]
    fn a_twin_handle_keeps_the_proof_when_the_user_s_handles_go() {
        let mut t = PerContext::<Ctx, Kept>::new();
        let dropped = Arc::new(AtomicUsize::new(0));
        // The handle `context()` hands out, which never reaches the table itself, lives on while
        // handles made elsewhere come and go.
        let twin = Arc::new(Ctx(0x40));
        for i in 0..10 {
            let h = Arc::new(Ctx(0x40));
            let k = t.get(&h, || (0x40, Some(twin.clone())));
            k.dropped.get_or_insert_with(|| dropped.clone());
            assert_eq!(k.objects.len(), i);
            k.objects.push(1);
        }
        assert_eq!(dropped.load(Ordering::SeqCst), 0, "the twin proved the context alive throughout");
        assert!(t.anchors() <= 3, "{}", t.anchors());
    }

    #[test]
    fn with_reaches_what_get_does() {
        let mut t = PerContext::<Ctx, Kept>::new();
        let (a, b) = (Arc::new(Ctx(0x50)), Arc::new(Ctx(0x50)));
        t.with(&a, || (0x50, None), |k| k.objects.push(1));
        t.with(&b, || (0x50, None), |k| k.objects.push(2));
        // `b` reached the entry last: found without asking about the context.
        assert_eq!(t.with(&b, || unreachable!("the common path"), |k| k.objects.clone()), [1, 2]);
        assert_eq!(t.get(&a, || (0x50, None)).objects, [1, 2]);
        assert_eq!(t.values().count(), 1);
    }

    #[test]
    fn two_live_handles_taking_turns() {
        let mut t = PerContext::new();
        let dropped = Arc::new(AtomicUsize::new(0));
        let (a, b) = (Arc::new(Ctx(0x30)), Arc::new(Ctx(0x30)));
        for i in 0..20 {
            let h = if i % 2 == 0 { &a } else { &b };
            get(&mut t, h, &dropped).objects.push(i);
        }
        assert_eq!(get(&mut t, &a, &dropped).objects.len(), 20);
        assert_eq!(t.anchors(), 2);
    }
}

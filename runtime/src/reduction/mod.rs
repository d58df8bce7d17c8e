//! What the launchers of `reduction_kernel!` (and the run-time reductions) need besides the
//! kernels: the GPU's multiprocessor count (cached per device), the launch plan, and one scratch
//! buffer per stream for the partial values and the last-block counters.
//!
//! The scratch buffer of a stream is allocated zeroed on that stream the first time a reduction
//! needs one there and grows (a new zeroed buffer) when a plan needs more. Its counters come
//! first, in a region whose size is fixed for the buffer's life (partials of one plan never
//! overlap counters of another); the kernels leave every counter at zero when they finish, so
//! the buffer is reused without clearing. Launches that use it hold one lock from the plan to the
//! launch, so two threads launching on one stream never see a buffer freed under them; work on
//! different streams uses different buffers.
//!
//! # Freeing a buffer that another thread's work may still use
//!
//! A buffer is freed when it is replaced (grown), released ([`release_scratch`]) or evicted (more
//! than 64 kept), possibly on another thread than the one whose reductions
//! used it, while those may still run. The free is stream-ordered after every launch that used
//! the buffer:
//!
//! - A stream of its own (`ctx.new_stream()`): the buffer was allocated on it and keeps it alive,
//!   and only launches on it use the buffer; freed on it, the free follows them.
//! - The null or legacy stream: one stream per context, whatever the thread; freed there with the
//!   buffer's context current (pushed for the free), the free follows every launch on it.
//! - The per-thread stream: the handle names the *calling* thread's stream, so no other thread can
//!   free on the stream that used the buffer. Each launch on it records an event on the owner's
//!   stream (cheap, no wait), and the free, from whichever thread, first makes the freeing stream
//!   wait for that event. Without an event (it could not be made or recorded) the free waits for
//!   the whole context first, and a buffer whose work cannot finish is leaked, not freed.
//!
//! Freeing only buffers of the current thread (never evicting another thread's) would be simpler
//! but would keep the buffers of threads that are gone forever; waiting for the context at every
//! eviction would be correct too but would stall every thread's reductions, and with more than
//! 64 busy threads eviction happens at most calls.

pub(crate) mod program; // run-time reductions (ReductionProgram, Reduction)

use crate::error::{DriverCode, Error, Result};
use cuda_embed_source::reduction::{self, Plan};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, LaunchConfig};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

const MAX_CACHED_DEVICES: usize = 64;
static SMS: [AtomicU32; MAX_CACHED_DEVICES] = [const { AtomicU32::new(0) }; MAX_CACHED_DEVICES];

/// The number of multiprocessors of `stream`'s device (read once per device).
pub fn sm_count(stream: &CudaStream) -> Result<u32> {
    let ctx = stream.context();
    let ordinal = ctx.ordinal();
    if let Some(slot) = SMS.get(ordinal) {
        let v = slot.load(Ordering::Relaxed);
        if v != 0 {
            return Ok(v);
        }
    }
    let v = ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(|e| Error::Driver {
        call: "cuDeviceGetAttribute",
        device: ordinal,
        cause: DriverCode(e.0),
    })?;
    let v = v.max(1) as u32;
    if let Some(slot) = SMS.get(ordinal) {
        slot.store(v, Ordering::Relaxed);
    }
    Ok(v)
}

thread_local! {
    /// The full-reduction plan [`with_full_plan`] imposes on this thread: (blocks, threads).
    static FULL_PLAN: std::cell::Cell<Option<(u32, u32)>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with every full reduction (`NAME::launch`, one segment) that this thread plans
/// launched as `blocks` blocks of `threads` threads instead of the automatic plan, then restores
/// the previous plan (also when `f` panics). For measuring the configurations a tuner would try
/// (`benches/reduction_sweep.rs`): the result is computed correctly under any of them, but the
/// partial values meet in another order, so a floating-point result may differ in its last bits
/// from the automatic plan's (which is the same on every run of a given GPU model).
///
/// `threads` must be a multiple of 32 from 32 to 256 (the kernels are built for at most 256
/// threads per block) and `blocks` from 1 to 2^31 - 1; anything else is an error and `f` does
/// not run.
///
/// ```
/// use cuda_embed_runtime::reduction::with_full_plan;
/// assert!(with_full_plan(64, 128, || ()).is_ok());
/// let e = with_full_plan(64, 512, || ()).unwrap_err().to_string();
/// assert!(e.contains("512 threads"), "{e}");
/// ```
pub fn with_full_plan<R>(blocks: u32, threads: u32, f: impl FnOnce() -> R) -> Result<R> {
    let bad = |cause: String| Error::Tune {
        what: "`reduction::with_full_plan`".into(),
        cause,
        fix: Some(format!(
            "give a block of 32, 64, ... up to {} threads and 1 to {} blocks",
            reduction::BLOCK,
            i32::MAX
        )),
    };
    if threads == 0 || !threads.is_multiple_of(32) || threads > reduction::BLOCK {
        return Err(bad(format!(
            "{threads} threads per block is not a multiple of 32 from 32 to {}",
            reduction::BLOCK
        )));
    }
    if blocks == 0 || blocks > i32::MAX as u32 {
        return Err(bad(format!("{blocks} blocks is outside 1..={}", i32::MAX)));
    }
    struct Restore(Option<(u32, u32)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FULL_PLAN.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(FULL_PLAN.with(|p| p.replace(Some((blocks, threads)))));
    Ok(f())
}

/// The shapes a reduction launcher is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Everything into one value.
    Full,
    /// Each contiguous row of `cols` elements.
    Rows,
    /// Each column of the row-major matrix with `cols` columns.
    Cols,
}

/// The launch plan for `rows` segments of `n` elements (`Full`: one segment; `Rows`: contiguous
/// rows) or the `n` columns of a `rows` x `n` row-major matrix (`Cols`), the array inputs' element
/// sizes giving the vector width. Lengths are checked before.
pub fn plan(stream: &CudaStream, shape: Shape, rows: u64, n: u64, input_sizes: &[usize]) -> Result<Plan> {
    let sms = sm_count(stream)?;
    let v = reduction::vec_width(input_sizes);
    Ok(match shape {
        Shape::Full => match FULL_PLAN.with(std::cell::Cell::get) {
            Some((blocks, threads)) => reduction::plan_full_fixed(blocks, threads),
            None => reduction::plan_segments(sms, rows, n, v),
        },
        Shape::Rows => reduction::plan_segments(sms, rows, n, v),
        Shape::Cols => reduction::plan_cols(sms, rows, n, v),
    })
}

/// The `LaunchConfig` of a plan.
pub fn config(plan: &Plan) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (plan.grid.0, plan.grid.1, 1),
        block_dim: (plan.block.0, plan.block.1, 1),
        shared_mem_bytes: 0,
    }
}

/// A stream's scratch buffer: `counter_bytes` of last-block counters first, the partial values
/// after them. The counters region is fixed for the buffer's life, whatever the plan, so partials
/// written by one plan never land where a later plan keeps counters (counters must read zero).
struct Scratch {
    buf: CudaSlice<u8>,
    counter_bytes: u64,
    /// When it was last used (a counter), for evicting the least recently used buffer.
    used: u64,
    /// Per-thread stream only: recorded on the owner thread's stream after each launch that
    /// used the buffer, so a free from another thread can wait for it (module docs). `None`
    /// when it could not be made or its last record failed.
    last_use: Option<CudaEvent>,
}

/// The per-thread default stream's handle (`CU_STREAM_PER_THREAD`).
const PER_THREAD_HANDLE: usize = 2;

/// Which scratch buffer a launch uses: one per (context, stream), and per thread on the
/// per-thread default stream (one handle, a different stream in each thread) and the legacy
/// stream handles (the same handle in every context).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct ScratchKey {
    ctx: usize,
    stream: usize,
    thread: Option<std::thread::ThreadId>,
}

impl ScratchKey {
    fn of(stream: &CudaStream) -> ScratchKey {
        ScratchKey::new(stream.context().cu_ctx() as usize, stream.cu_stream() as usize, std::thread::current().id())
    }

    /// The key of stream handle `stream` of context `ctx` used on `thread`.
    fn new(ctx: usize, stream: usize, thread: std::thread::ThreadId) -> ScratchKey {
        // 0: the null stream; 1: CU_STREAM_LEGACY; 2: CU_STREAM_PER_THREAD.
        let shared_handle = stream <= PER_THREAD_HANDLE;
        ScratchKey { ctx, stream, thread: shared_handle.then_some(thread) }
    }

    /// Whether the key's stream is a per-thread stream, which only its owner thread can name
    /// (its launches record `Scratch::last_use`).
    fn per_thread(&self) -> bool {
        self.stream == PER_THREAD_HANDLE
    }
}

/// The key to evict from `entries` (key, last use): the least recently used, or `None` when
/// there is none.
fn least_recently_used(entries: impl Iterator<Item = (ScratchKey, u64)>) -> Option<ScratchKey> {
    entries.min_by_key(|&(_, used)| used).map(|(k, _)| k)
}

/// Frees `s` (of `key`) after every launch that used it, from any thread (module docs): with
/// its context pushed current, so the shared stream handles name that context's streams, and,
/// for a per-thread stream, after making this thread's stream wait for the owner's last use.
/// A buffer whose work cannot be waited for is leaked rather than freed under it.
fn free_scratch(key: &ScratchKey, s: Scratch) {
    let stream = s.buf.stream().clone();
    let ctx = stream.context();
    // SAFETY: the context is alive (the buffer holds it); pushed once here, popped once below.
    if unsafe { sys::cuCtxPushCurrent_v2(ctx.cu_ctx()) } != sys::CUresult::CUDA_SUCCESS {
        std::mem::forget(s.buf);
        return;
    }
    let Scratch { buf, last_use, .. } = s;
    let ordered = match (key.per_thread(), last_use.as_ref()) {
        (false, _) => true,
        // SAFETY: a live event of this context and a stream handle of it (the context is
        // current); the wait is queued, nothing blocks.
        (true, Some(e)) => {
            let r = unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), e.cu_event(), 0) };
            r == sys::CUresult::CUDA_SUCCESS
        }
        (true, None) => false,
    };
    if ordered {
        // cudarc frees it on `stream` (this thread's stream of that handle, in the pushed
        // context), now ordered after the buffer's last use.
        drop(buf);
    } else {
        // No event to wait for: wait for all of the context's work, or leak the buffer.
        let mut buf = Some(buf);
        if crate::driver::sync::context_then(ctx, || drop(buf.take())).is_err() {
            std::mem::forget(buf.take());
        }
    }
    drop(last_use);
    let mut popped: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: pops what was pushed above; a valid out-pointer.
    unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
}

/// At most this many scratch buffers are kept; beyond it the least recently used is freed (on
/// its own stream, after the work that used it), so streams and contexts that are gone do not
/// keep theirs forever.
const MAX_SCRATCH_BUFFERS: usize = 64;

#[derive(Default)]
struct ScratchMap {
    map: HashMap<ScratchKey, Scratch>,
    clock: u64,
}

static SCRATCH: Mutex<Option<ScratchMap>> = Mutex::new(None);

/// The (counter, partial) region sizes of a new scratch buffer when the current one (`old`, if
/// any) cannot hold `counters` counter bytes and `partials` partial bytes; `None` when it can.
/// Each region at least doubles when it grows, and neither is ever empty (a plan that needs no
/// scratch still passes the buffer to its kernel).
fn scratch_regions(old: Option<(u64, u64)>, counters: u64, partials: u64) -> Option<(u64, u64)> {
    match old {
        Some((c, p)) if c >= counters && p >= partials => None,
        _ => {
            let (c, p) = old.unwrap_or((0, 0));
            let grow = |old: u64, need: u64, least: u64| if old >= need { old } else { need.max(old * 2) }.max(least);
            Some((grow(c, counters, 256), grow(p, partials, 4096)))
        }
    }
}

fn alloc_error(stream: &CudaStream, call: &'static str, r: cudarc::driver::sys::CUresult) -> Error {
    Error::Driver { call, device: stream.context().ordinal(), cause: DriverCode(r) }
}

/// Runs `f` with `stream`'s scratch buffer and the byte offset of its partials region (the
/// kernels' `__partial_off`), holding the scratch lock (so `f` should only launch). The buffer
/// has room for `plan.counters` counters before that offset and `plan.partials` partials after
/// it; a plan that needs no scratch gets a small buffer it never touches.
///
/// While `stream` is being captured, the launch gets a buffer of its own that the captured graph
/// allocates, zeroes and frees (graph memory nodes) instead: a kept buffer could be freed or
/// regrown while the graph still points at it.
pub fn with_scratch<R>(
    stream: &Arc<CudaStream>,
    plan: &Plan,
    f: impl FnOnce(&mut CudaSlice<u8>, i64) -> Result<R>,
) -> Result<R> {
    let counters = plan.partial_offset();
    let partials = plan.scratch_bytes() - counters;
    if crate::bind::capture::is_capturing(stream) {
        return with_captured_scratch(stream, counters, partials, f);
    }
    let mut guard = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    let scratch_map = guard.get_or_insert_with(ScratchMap::default);
    scratch_map.clock += 1;
    let now = scratch_map.clock;
    let map = &mut scratch_map.map;
    let key = ScratchKey::of(stream);
    let old = map.get(&key).map(|s| (s.counter_bytes, s.buf.len() as u64 - s.counter_bytes));
    if let Some((counter_bytes, partial_bytes)) = scratch_regions(old, counters, partials) {
        let bytes = counter_bytes + partial_bytes;
        let buf = stream.alloc_zeros::<u8>(bytes as usize).map_err(|e| alloc_error(stream, "cuMemAllocAsync", e.0))?;
        if old.is_none() && map.len() >= MAX_SCRATCH_BUFFERS {
            if let Some(lru) = least_recently_used(map.iter().map(|(k, s)| (*k, s.used))) {
                if let Some(evicted) = map.remove(&lru) {
                    free_scratch(&lru, evicted);
                }
            }
        }
        let last_use = if key.per_thread() { new_event(stream) } else { None };
        if let Some(replaced) = map.insert(key, Scratch { buf, counter_bytes, used: now, last_use }) {
            free_scratch(&key, replaced);
        }
    }
    let Some(scratch) = map.get_mut(&key) else {
        return Err(alloc_error(stream, "cuMemAllocAsync", sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    };
    scratch.used = now;
    let offset = scratch.counter_bytes as i64;
    let out = f(&mut scratch.buf, offset);
    if key.per_thread() {
        // After every use, whatever `f` returned (it may have queued something before failing).
        let recorded = scratch.last_use.as_ref().is_some_and(|e| e.record(stream).is_ok());
        if !recorded {
            scratch.last_use = None;
        }
    }
    out
}

/// A new event without timing in `stream`'s context, or `None` when it cannot be made.
fn new_event(stream: &CudaStream) -> Option<CudaEvent> {
    stream.context().new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)).ok()
}

/// The scratch of a launch being captured: allocated, zeroed and freed on the capturing stream,
/// so the graph owns it (alloc, memset and free nodes) and every replay starts from zeroed
/// counters.
fn with_captured_scratch<R>(
    stream: &Arc<CudaStream>,
    counters: u64,
    partials: u64,
    f: impl FnOnce(&mut CudaSlice<u8>, i64) -> Result<R>,
) -> Result<R> {
    let (counter_bytes, partial_bytes) = scratch_regions(None, counters, partials).unwrap_or((256, 4096));
    let bytes = (counter_bytes + partial_bytes) as usize;
    crate::driver::bind(stream.context())?;
    let mut ptr: sys::CUdeviceptr = 0;
    // SAFETY: `ptr` is a valid out-pointer; the stream is live; captured, this becomes a graph
    // allocation node.
    let r = unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream.cu_stream()) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(alloc_error(stream, "cuMemAllocAsync (captured)", r));
    }
    // SAFETY: `ptr` holds `bytes` bytes (just allocated on this stream, ordered before).
    let r = unsafe { sys::cuMemsetD8Async(ptr, 0, bytes, stream.cu_stream()) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(alloc_error(stream, "cuMemsetD8Async (captured)", r));
    }
    // The buffer as a `CudaSlice` for the launcher, never dropped: its drop would wait on its
    // tracking events (recorded outside the capture) from its stream and free it there; it is
    // freed below instead. It is made on the context's side stream, which lives as long as the
    // process, so only its two tracking events (if any) are leaked, not a user's stream.
    let side = crate::bind::capture::side_stream(stream.context())?;
    // SAFETY: `ptr` is a live allocation of `bytes` bytes in this context.
    let mut buf = std::mem::ManuallyDrop::new(unsafe { side.upgrade_device_ptr::<u8>(ptr, bytes) });
    let out = f(&mut buf, counter_bytes as i64);
    // SAFETY: `ptr` came from cuMemAllocAsync on this stream; the launch that uses it was
    // captured before this free, which the graph orders after it.
    let r = unsafe { sys::cuMemFreeAsync(ptr, stream.cu_stream()) };
    if r != sys::CUresult::CUDA_SUCCESS && out.is_ok() {
        return Err(alloc_error(stream, "cuMemFreeAsync (captured)", r));
    }
    out
}

/// Frees the scratch buffer reductions keep for `stream` (it is allocated again by the next
/// reduction on that stream). Returns whether there was one.
pub fn release_scratch(stream: &CudaStream) -> bool {
    let mut guard = SCRATCH.lock().unwrap_or_else(|e| e.into_inner());
    let key = ScratchKey::of(stream);
    match guard.as_mut().and_then(|m| m.map.remove(&key)) {
        Some(s) => {
            free_scratch(&key, s);
            true
        }
        None => false,
    }
}

/// How many scratch buffers are kept, in all contexts and threads (for tests; at most 64).
#[doc(hidden)]
pub fn scratch_buffers() -> usize {
    SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(0, |m| m.map.len())
}

/// The error for arguments of the wrong length: names the reduction, the parameters and lengths.
pub fn length_error(reduction: &str, origin: &str, stream: &CudaStream, cause: String) -> Error {
    Error::Launch {
        kernel: reduction.to_string(),
        origin: origin.to_string(),
        device: stream.context().ordinal(),
        cause,
        fix: None,
    }
}

#[cfg(test)]
mod tests {
    use super::{least_recently_used, scratch_regions, with_full_plan, ScratchKey, FULL_PLAN};

    /// The shared handles (null 0, legacy 1, per-thread 2) name another stream in each thread,
    /// so their keys hold the thread; a stream of its own does not. Contexts always differ.
    #[test]
    fn scratch_keys_per_context_stream_and_thread() {
        let here = std::thread::current().id();
        let there = std::thread::spawn(|| std::thread::current().id()).join().unwrap();
        for shared in [0usize, 1, 2] {
            assert_ne!(ScratchKey::new(7, shared, here), ScratchKey::new(7, shared, there), "handle {shared}");
            assert_ne!(ScratchKey::new(7, shared, here), ScratchKey::new(8, shared, here), "handle {shared}");
            assert_eq!(ScratchKey::new(7, shared, here), ScratchKey::new(7, shared, here));
        }
        let own = 0x5555_0000usize;
        assert_eq!(ScratchKey::new(7, own, here), ScratchKey::new(7, own, there));
        assert_ne!(ScratchKey::new(7, own, here), ScratchKey::new(8, own, here));
        assert_ne!(ScratchKey::new(7, own, here), ScratchKey::new(7, own + 1, here));
        // Only the per-thread handle needs an event per launch for a free from another thread:
        // the null and legacy streams are one per context, and a stream of its own is named
        // by its handle from any thread.
        let per_thread: Vec<bool> = [0, 1, 2, own].iter().map(|&h| ScratchKey::new(7, h, here).per_thread()).collect();
        assert_eq!(per_thread, [false, false, true, false]);
    }

    #[test]
    fn the_least_recently_used_buffer_is_evicted() {
        let t = std::thread::current().id();
        let k = |c| ScratchKey::new(c, 2, t);
        assert_eq!(least_recently_used(std::iter::empty()), None);
        assert_eq!(least_recently_used([(k(1), 9), (k(2), 3), (k(3), 5)].into_iter()), Some(k(2)));
    }

    #[test]
    fn a_full_plan_is_imposed_for_its_closure_only() {
        let now = || FULL_PLAN.with(std::cell::Cell::get);
        assert_eq!(now(), None);
        let inner = with_full_plan(8, 64, || {
            let outer = now();
            let inner = with_full_plan(1, 256, now).unwrap();
            (outer, inner, now())
        })
        .unwrap();
        assert_eq!(inner, (Some((8, 64)), Some((1, 256)), Some((8, 64))));
        assert_eq!(now(), None);
        // Restored after a panic too.
        let _ = std::panic::catch_unwind(|| with_full_plan(4, 32, || panic!("in the closure")));
        assert_eq!(now(), None);
        // Bad shapes are errors naming the value; the closure does not run.
        for (blocks, threads, what) in
            [(1, 48, "48 threads"), (1, 0, "0 threads"), (1, 512, "512 threads"), (0, 256, "0 blocks")]
        {
            let e = with_full_plan(blocks, threads, || panic!("ran")).unwrap_err().to_string();
            assert!(e.contains(what) && e.contains("give a block of 32, 64"), "{e}");
        }
    }

    #[test]
    fn scratch_regions_grow_and_keep_counters_apart() {
        // A first buffer is never empty, even for a plan that needs no scratch.
        assert_eq!(scratch_regions(None, 0, 0), Some((256, 4096)));
        // Enough room: the buffer (and its counter region) is kept.
        assert_eq!(scratch_regions(Some((256, 8192)), 256, 8000), None);
        // More counters: a new buffer whose counter region at least doubles; the partials
        // region is kept at its size.
        assert_eq!(scratch_regions(Some((256, 8192)), 2560, 100), Some((2560, 8192)));
        assert_eq!(scratch_regions(Some((2048, 8192)), 2560, 100), Some((4096, 8192)));
        // More partials: the counter region stays where it was.
        assert_eq!(scratch_regions(Some((512, 4096)), 256, 10_000), Some((512, 10_000)));
    }
}

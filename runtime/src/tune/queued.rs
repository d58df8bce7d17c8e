//! GPU time of a batch of launches, without the launch gaps: the batch is queued behind a
//! *blocking kernel* and timed by CUDA events around it.
//!
//! # Why a blocking kernel
//!
//! Events recorded around launches made one after another measure the host as much as the GPU:
//! a kernel that runs for 2 us behind a launch path that takes 4 us leaves the GPU idle between
//! launches, and the events see 4 us per launch whatever the kernel does. [`time_queued`] first
//! enqueues a one-thread kernel that spins until the host releases it (or a timeout passes),
//! then the start event, the batch and the end event; only then does the host release the
//! spinning kernel. The whole batch is already in the stream's queue when the GPU reaches it, so
//! the GPU runs it back to back and the events measure the kernels' own execution (plus the
//! GPU's own gap between consecutive kernels, well under a microsecond on current GPUs).
//!
//! The other way to remove launch gaps, capturing the batch into a CUDA graph and timing its
//! replays, was not taken: it would capture on the caller's stream (which another thread may
//! be using), a launch that fails inside a capture invalidates the whole capture, and graph
//! replays run with their own, slightly different, launch overheads from those of the plain
//! launches `NAME::tuned` makes afterwards.
//!
//! # The blocking kernel
//!
//! It is a few lines of PTX below (this crate's own, no compiler needed: the driver's JIT
//! builds it), loaded once per context at the first timing, never at start-up. It reads a
//! release counter in host memory mapped into the device (`cuMemHostAlloc` with
//! `CU_MEMHOSTALLOC_DEVICEMAP`) until the counter reaches its ticket; each timing takes a fresh
//! ticket and the host raises the counter with `fetch_max`, so concurrent timings never hold
//! one another back for longer than their own batch (a timing on another stream of the same
//! context may release this one's blocking kernel early, before its batch is all queued: its
//! time then includes some launch gaps, unflagged; the tuner times one kernel at a time). The
//! kernel and the counter are kept for the process, keyed by the context handle, and hold their
//! context alive (as a loaded `cuda_kernel!` module does), so the handle is never another
//! context's. If the host has not released it after [`TIMEOUT_MS`] milliseconds (a batch larger than the stream's queue, a launch that blocks),
//! the kernel gives up and says so in a second word, and [`Queued::with_gaps`] reports that the
//! time includes launch gaps. Where the blocking kernel cannot be had at all (a driver without
//! mapped pinned memory, a failed JIT), the batch is timed by events alone, as before this
//! existed, `with_gaps` is set and a note is printed once.
//!
//! The batch must only enqueue asynchronous work (kernel launches, event records, async copies):
//! a synchronous call in it waits for the blocking kernel, i.e. for the timeout. Launch each
//! kernel once before timing it, so that its module is not loaded (lazily, by the driver or by
//! this crate) while the blocking kernel holds the stream; the tuner does (its warm-up launch).

use crate::error::{DriverCode, Error, Result};
use cudarc::driver::{sys, CudaContext, CudaStream};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How long the blocking kernel waits for the host before it gives up.
pub const TIMEOUT_MS: u64 = 200;

/// The blocking kernel: spins (with `nanosleep` between reads) until `flag[0] >= ticket`, or
/// until `timeout_ns` have passed on the GPU's global timer, in which case it writes `ticket` to
/// `flag[1]`. Generic loads and stores: `flag` is a host allocation mapped into the device.
pub(crate) const BLOCKER_PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64

.visible .entry cuda_embed_tune_blocker(
    .param .u64 flag,
    .param .u64 ticket,
    .param .u64 timeout_ns
)
{
    .reg .pred %p<3>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [flag];
    ld.param.u64 %rd2, [ticket];
    ld.param.u64 %rd3, [timeout_ns];
    mov.u64 %rd4, %globaltimer;
WAIT:
    ld.volatile.u64 %rd5, [%rd1];
    setp.ge.u64 %p1, %rd5, %rd2;
    @%p1 bra DONE;
    nanosleep.u32 256;
    mov.u64 %rd6, %globaltimer;
    sub.u64 %rd7, %rd6, %rd4;
    setp.lt.u64 %p2, %rd7, %rd3;
    @%p2 bra WAIT;
    st.volatile.u64 [%rd1+8], %rd2;
DONE:
    ret;
}
\0";

/// The time [`time_queued`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Queued {
    /// Milliseconds between the start and end events (the whole batch).
    pub ms: f64,
    /// Whether `ms` may include launch gaps, as a plain event timing would: the blocking kernel
    /// gave up waiting before the batch was queued, or could not be loaded on this device.
    pub with_gaps: bool,
}

/// One context's blocking kernel and release counter (raw handles, kept for the process).
struct Blocker {
    /// Holds the context (and so the module and the mapped counter) alive for the rest of the
    /// process, as a loaded `cuda_kernel!` module does: the table is keyed by the context's
    /// driver handle, which a context made after this one was released could reuse, and
    /// [`Blocker::counter`] reads the counter's host memory, freed with its context.
    _ctx: Arc<CudaContext>,
    function: usize,
    /// Host address of two `u64`: the release counter, the last ticket that timed out.
    host: usize,
    /// The same memory's device address.
    device: u64,
    next_ticket: u64,
}

/// Each context's blocking kernel, or `Err(())` where it could not be loaded (not tried again).
static BLOCKERS: Mutex<Option<HashMap<usize, std::result::Result<Blocker, ()>>>> = Mutex::new(None);

fn driver_error(ordinal: usize, call: &'static str, r: sys::CUresult) -> Error {
    Error::Driver { call, device: ordinal, cause: DriverCode(r) }
}

fn check(ordinal: usize, call: &'static str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(ordinal, call, r))
    }
}

impl Blocker {
    /// Loads the blocking kernel and maps its counter into the current context.
    fn load(ctx: &Arc<CudaContext>) -> Result<Blocker> {
        let ordinal = ctx.ordinal();
        let module = crate::module::image::load_raw(BLOCKER_PTX.as_bytes()).map_err(|(r, log)| {
            if !log.is_empty() {
                eprintln!("cuda-embed tune: the blocking kernel did not load: {log}");
            }
            driver_error(ordinal, "cuModuleLoadDataEx (tune blocking kernel)", r)
        })?;
        let mut function: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` was just loaded; the name is NUL-terminated and defined in the PTX.
        let r = unsafe { sys::cuModuleGetFunction(&mut function, module, c"cuda_embed_tune_blocker".as_ptr()) };
        check(ordinal, "cuModuleGetFunction (tune blocking kernel)", r)?;
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: a plain pinned host allocation of 16 bytes in the current context.
        let host = unsafe { cudarc::driver::result::malloc_host(16, flags) }
            .map_err(|e| driver_error(ordinal, "cuMemHostAlloc", e.0))?;
        // SAFETY: `host` holds 16 bytes, 8-aligned (page-aligned); nothing else uses it yet.
        unsafe { std::ptr::write_bytes(host as *mut u8, 0, 16) };
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` is a mapped allocation of this context; `device` a valid out-pointer.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) };
        check(ordinal, "cuMemHostGetDevicePointer", r)?;
        Ok(Blocker { _ctx: ctx.clone(), function: function as usize, host: host as usize, device, next_ticket: 1 })
    }

    fn counter(&self, word: usize) -> &'static AtomicU64 {
        // SAFETY: `host` is a 16-byte, page-aligned pinned allocation that is never freed; the
        // host only touches it through atomics, the device through volatile accesses.
        unsafe { &*(self.host as *const AtomicU64).add(word) }
    }
}

/// Raises the release counter to `ticket` when dropped, so an error or a panic in the batch
/// never leaves the blocking kernel waiting for its timeout.
struct Release {
    counter: &'static AtomicU64,
    ticket: u64,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.counter.fetch_max(self.ticket, Ordering::SeqCst);
    }
}

/// Times what `batch` enqueues on `stream`, queued behind a blocking kernel so that the GPU runs
/// it back to back: the events around it measure the GPU's execution, not the host's launch
/// path (see the module docs for how, and why not a CUDA graph). `batch` must only enqueue
/// asynchronous work on `stream`. Waits for the batch to finish.
///
/// ```no_run
/// # fn main() -> cuda_embed_runtime::Result<()> {
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let mut y = stream.alloc_zeros::<u8>(1 << 20)?;
/// // 20 back-to-back memsets, their GPU time only.
/// let t = cuda_embed_runtime::tune::time_queued(&stream, || {
///     for _ in 0..20 {
///         stream.memset_zeros(&mut y)?;
///     }
///     Ok(())
/// })?;
/// println!("{:.2} us each{}", t.ms * 1e3 / 20.0, if t.with_gaps { " (with launch gaps)" } else { "" });
/// # Ok(())
/// # }
/// ```
pub fn time_queued(stream: &CudaStream, batch: impl FnOnce() -> Result<()>) -> Result<Queued> {
    let ctx = stream.context();
    let ordinal = ctx.ordinal();
    crate::driver::bind(ctx)?;
    let blocker = {
        let mut guard = BLOCKERS.lock().unwrap_or_else(|p| p.into_inner());
        let map = guard.get_or_insert_with(HashMap::new);
        let key = ctx.cu_ctx() as usize;
        let b = match map.entry(key) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Blocker::load(ctx).map_err(|e| {
                eprintln!("cuda-embed tune: no blocking kernel on device {ordinal} ({e}); timings include launch gaps");
            })),
        };
        b.as_mut().ok().map(|b| {
            let ticket = b.next_ticket;
            b.next_ticket += 1;
            (b.function, b.device, b.counter(0), b.counter(1), ticket)
        })
    };
    let event = |e: cudarc::driver::DriverError| driver_error(ordinal, "cuEventRecord", e.0);
    let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let (start, end) = (ctx.new_event(timing).map_err(event)?, ctx.new_event(timing).map_err(event)?);
    let mut release = None;
    if let Some((function, device, counter, _, ticket)) = blocker {
        release = Some(Release { counter, ticket });
        let timeout_ns: u64 = TIMEOUT_MS * 1_000_000;
        let mut params: [*mut c_void; 3] = [
            &device as *const u64 as *mut c_void,
            &ticket as *const u64 as *mut c_void,
            &timeout_ns as *const u64 as *mut c_void,
        ];
        // SAFETY: the blocking kernel of this context (loaded above), one thread; its three
        // `u64` parameters point at locals that outlive the call (the driver copies them at
        // launch).
        let r = unsafe {
            sys::cuLaunchKernel(
                function as sys::CUfunction,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream.cu_stream(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(ordinal, "cuLaunchKernel (tune blocking kernel)", r)?;
    }
    start.record(stream).map_err(event)?;
    let queued = batch();
    let recorded = end.record(stream).map_err(event);
    drop(release);
    queued?;
    recorded?;
    end.synchronize().map_err(event)?;
    let ms = start.elapsed_ms(&end).map_err(event)? as f64;
    let with_gaps = blocker.is_none_or(|(_, _, _, timeouts, ticket)| timeouts.load(Ordering::SeqCst) == ticket);
    Ok(Queued { ms, with_gaps })
}

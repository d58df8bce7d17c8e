//! The build-time NVRTC side of separate compilation, for builds with libnvrtc but no nvcc:
//! each translation unit compiled by NVRTC for every architecture (`-rdc=true`: relocatable
//! cubins; with LTO `-dlto`: LTO-IR), the units and architectures on threads of their own
//! ([`parallel`]), then linked per architecture by nvJitLink ([`super::nvjitlink`]; with
//! `libcudadevrt.a` where a unit needs a symbol no unit defines) into one cubin each, which the
//! module embeds as build-time NVRTC embeds a plain module's cubins.
//!
//! NVRTC compiles different programs from several threads at once (each thread creates, compiles
//! and destroys its own `nvrtcProgram`; with NVRTC 13.0 two threads built a two-unit module 1.6x
//! as fast as one on a 2-core machine, and no faster than one on the 32-core GPU host). The links stay one after another: nvJitLink is not
//! relied on from several threads (cuda-python#1023 reports `nvJitLinkAddData` failing now and
//! then while threads link with handles of their own), and without the device runtime library a
//! small module's link takes about a millisecond.
//!
//! The probes are answered as for nvcc: every unit is also compiled with `-rdc=true` for the
//! lowest architecture, and its PTX (with the kernel symbols NVRTC resolves as name expressions,
//! since it cannot take a kernel's address in device code) is what the checker reads. Each unit's
//! compile is cached like a plain module's, keyed by the library, the mode, the arguments and the
//! full text; the link is not cached.
//!
//! The linked image holds cubins only (nvJitLink writes PTX only of an LTO link, and the device
//! runtime library has none): a GPU that none of them runs on cannot load it, and the error at
//! load says to list its architecture in `archs`.

use super::nvcc::{device_runtime_dir, Mode, Object};
use super::nvjitlink::{Input, NvJitLink};
use super::symbols;
use crate::oracle::nvcc::{Arch, Request};
use crate::oracle::nvrtc::{self, Emit, Nvrtc};
use crate::oracle::probe;
use cuda_embed_source::cache::{self, Entry, Store};
use cuda_embed_source::key::Key;
use std::path::{Path, PathBuf};

/// The key scheme of relocatable unit compiles by NVRTC.
const KEY_SCHEME: &str = "cuda-embed nvrtc rdc unit v1";

fn sorted(archs: &[Arch]) -> Vec<Arch> {
    let mut a = archs.to_vec();
    a.sort();
    a.dedup();
    a
}

/// NVRTC's arguments for one unit, `arch` and `emit`: the plain module's, plus `-rdc=true`
/// (and `-dlto` for LTO-IR).
fn unit_args(n: &Nvrtc, req: &Request<'_>, arch: &Arch, emit: Emit) -> Vec<String> {
    let mut a = nvrtc::args(n, req, arch);
    a.push("-rdc=true".into());
    if emit == Emit::LtoIr {
        a.push("-dlto".into());
    }
    a
}

/// Compiles one unit (`req.source` holds the probes) for every architecture, or returns the
/// cached result. `label` names the unit in NVRTC's log. `Err` is the log.
pub fn compile_unit(n: &Nvrtc, mode: Mode, req: &Request<'_>, label: &str) -> Result<Object, String> {
    let archs = sorted(req.archs);
    let Some(lowest) = archs.first().cloned() else {
        return Err("no target architecture".into());
    };
    let (source, addresses) = probe::take_kernel_addresses(req.source);
    let exprs: Vec<String> = addresses.iter().map(|a| a.1.clone()).collect();
    let req = Request { source: &source, ..*req };
    let emit = if mode == Mode::Lto { Emit::LtoIr } else { Emit::Cubin };
    let mut key = Key::new(KEY_SCHEME);
    key.field("nvrtc", nvrtc::identity(n))
        .field("mode", format!("{mode:?}"))
        .field("line", req.line_directive)
        .field("source", req.source)
        .list("exprs", &exprs);
    for a in &archs {
        key.list("args", unit_args(n, &req, a, emit));
    }
    let key = key.finish();
    let store = Store::new(cache::build_dir(), "rdc");
    if let Some(hit) = store.read(&key).and_then(|e| object(e, &archs, &addresses)) {
        return Ok(hit);
    }
    let text = format!("{}\n{}", req.line_directive, req.source);
    let fail = |log: String| log.replace("\"kernel.cu\"", &format!("\"{label}\""));
    // The compiles: first the probes' PTX (and, without LTO, the lowest architecture's
    // relocatable cubin), then every other architecture's code. The name expressions also
    // instantiate the templates they name, in every image.
    let mut jobs = vec![(unit_args(n, &req, &lowest, Emit::Cubin), Emit::Cubin)];
    for a in &archs {
        if !(*a == lowest && emit == Emit::Cubin) {
            jobs.push((unit_args(n, &req, a, emit), emit));
        }
    }
    let compile = |(args, emit): &(Vec<String>, Emit)| {
        let _slot = Slot::take();
        nvrtc::run(n, &text, args, &exprs, *emit)
    };
    let mut ran = parallel(jobs.iter().map(|job| move || compile(job)).collect());
    let (lowest_bin, ptx, lowered) = ran.remove(0).map_err(fail)?;
    let mut rest = ran.into_iter();
    let mut bins = Vec::new();
    for a in &archs {
        if *a == lowest && emit == Emit::Cubin {
            bins.push(lowest_bin.clone());
        } else {
            bins.push(rest.next().ok_or("an NVRTC compile is missing")?.map_err(fail)?.0);
        }
    }
    let deps = nvrtc::header_deps(&req);
    let mut strings = vec![ptx.unwrap_or_default()];
    strings.extend(lowered);
    let entry = Entry { blobs: bins, strings, deps };
    store.write_or_warn(&key, &entry); // an unwritable cache only costs time
    object(entry, &archs, &addresses).ok_or_else(|| format!("NVRTC produced no relocatable code for `{label}`"))
}

/// Runs `jobs` on threads of their own (one alone on this thread) and returns their results in
/// order. The units of a module and each unit's architectures compile this way: NVRTC takes
/// different programs on different threads (each thread creates, compiles and destroys its own
/// program); a `Slot` held around each compile keeps at most [`slots`] running across the
/// process. Whether they then run at once is NVRTC's affair: NVRTC 13.0 did on the 2-core build
/// machine and did not on the GPU host (BENCHMARKS.md, issue 21 build time).
pub fn parallel<T: Send>(jobs: Vec<impl FnOnce() -> T + Send>) -> Vec<T> {
    if jobs.len() < 2 {
        return jobs.into_iter().map(|j| j()).collect();
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs.into_iter().map(|j| s.spawn(j)).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    })
}

/// How many NVRTC compiles run at once: the machine's available parallelism, unless
/// [`set_slots`] said otherwise.
pub fn slots() -> usize {
    match SLOTS.load(std::sync::atomic::Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Sets how many NVRTC compiles run at once (`0`: the machine's available parallelism; `1`:
/// one after another). For benchmarks that compare the two in one process.
pub fn set_slots(n: usize) {
    SLOTS.store(n, std::sync::atomic::Ordering::Relaxed);
    FREED.notify_all();
}

static SLOTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One of the [`slots`], held while one NVRTC compile runs (never while waiting for others, so
/// nested [`parallel`] calls cannot deadlock).
struct Slot;

static TAKEN: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static FREED: std::sync::Condvar = std::sync::Condvar::new();

impl Slot {
    fn take() -> Slot {
        let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
        while *taken >= slots() {
            taken = FREED.wait(taken).unwrap_or_else(|p| p.into_inner());
        }
        *taken += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *TAKEN.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        FREED.notify_one();
    }
}

/// The object a cache entry holds: one non-empty binary per architecture, the PTX, and one
/// lowered name per kernel-address probe (else `None`).
fn object(entry: Entry, archs: &[Arch], addresses: &[(String, String)]) -> Option<Object> {
    let mut strings = entry.strings.into_iter();
    let ptx = strings.next().filter(|p| !p.is_empty())?;
    let lowered: Vec<String> = strings.collect();
    if lowered.len() != addresses.len() || entry.blobs.len() != archs.len() || entry.blobs.iter().any(Vec::is_empty) {
        return None;
    }
    Some(Object {
        bytes: Vec::new(),
        ptx,
        deps: entry.deps.into_iter().map(|d| d.path).collect(),
        per_arch: archs.iter().map(Arch::sm).zip(entry.blobs).collect(),
        symbols: addresses.iter().map(|a| a.0.clone()).zip(lowered).collect(),
    })
}

/// `libcudadevrt.a` of the toolkit NVRTC came from (`<lib>/..`) or of a toolkit root, if any.
pub fn device_runtime(n: &Nvrtc) -> Option<PathBuf> {
    let mut roots: Vec<PathBuf> = n.path.parent().and_then(Path::parent).map(Path::to_path_buf).into_iter().collect();
    roots.extend(cuda_embed_source::options::toolkit_roots());
    roots.iter().find_map(|r| device_runtime_dir(r)).map(|d| d.join("libcudadevrt.a"))
}

/// Links `objects` (`(label, object)`, in order) with `libcudadevrt` for every arch: the
/// `(sm_XX, cubin)` list of the image. `Err` is nvJitLink's log (inputs named by their labels).
pub fn device_link(
    n: &Nvrtc,
    jl: &NvJitLink,
    mode: Mode,
    archs: &[Arch],
    objects: &[(&str, &Object)],
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let devrt = device_runtime(n);
    let devrt_bytes = match &devrt {
        Some(p) => Some(std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?),
        None => None,
    };
    // The device runtime only where some unit uses a symbol no unit defines (a kernel launching
    // kernels; `printf`'s `vprintf`): reading the library costs more than the rest of a small
    // module's link, and with LTO nvJitLink keeps all of its code in the image. Should a link
    // without it fail, it is linked again with it.
    let syms: Vec<symbols::Symbols> = objects.iter().map(|(_, o)| symbols::read(&o.ptx)).collect();
    let needed = !symbols::unresolved(&syms).is_empty();
    let kind = if mode == Mode::Lto { Input::LtoIr } else { Input::Cubin };
    let mut out = Vec::new();
    for arch in sorted(archs) {
        let sm = arch.sm();
        let mut inputs: Vec<(Input, &str, &[u8])> = Vec::new();
        for (label, o) in objects {
            let bin = o.per_arch.iter().find(|b| b.0 == sm).ok_or_else(|| format!("`{label}` has no code for {sm}"))?;
            inputs.push((kind, label, &bin.1));
        }
        let library = devrt_bytes.as_deref().map(|b| (Input::Library, "libcudadevrt.a", b));
        if needed {
            inputs.extend(library);
        }
        let mut linked = jl.link(&sm, mode == Mode::Lto, &inputs);
        if let (Err(_), false, Some(library)) = (&linked, needed, library) {
            inputs.push(library);
            linked = jl.link(&sm, mode == Mode::Lto, &inputs);
        }
        let cubin = linked.map_err(|mut log| {
            if devrt.is_none() && log.contains("__cudaCDP") {
                log.push_str(&format!(
                    "\nno libcudadevrt.a was found next to {} or under a toolkit root (lib64/, lib/, targets/*/lib/): \
                     kernels that launch kernels need the CUDA device runtime library (the nvidia-cuda-runtime wheel \
                     ships it)",
                    n.path.display()
                ));
            }
            log
        })?;
        out.push((sm, cubin));
    }
    Ok(out)
}

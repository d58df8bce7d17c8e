//! Loading one module on one device: the slow path behind the first launch there.
//!
//! An image embedded in the binary (an nvcc fatbin, a build-time NVRTC cubin) of a module without
//! `__device__`/`__constant__` variables is loaded in place: `cuModuleLoadData` reads the static
//! bytes, and nothing is copied or allocated for it (the first launch costs what a raw driver
//! sequence costs). cudarc's [`CudaFunction`] of such a kernel is made on demand from a second
//! load of the same image ([`Loaded::cudarc_function`]): the same code, with the kernel
//! attributes set through cuda-embed mirrored onto it.
//!
//! Every other module (with globals, or compiled at run time) is loaded through cudarc
//! (`CudaContext::load_module`), so its kernels' [`CudaFunction`]s share the very module the
//! launchers use, and `__device__` variables are the same ones cudarc's launches see.
//!
//! Each kernel's block limit (what the launch checks hold a configuration to) is read from the
//! cubin the driver loads wherever that cubin is known: an nvcc fatbin's cubin for the GPU's
//! architecture (read by the macro at build time), or a cubin handed to the driver (read here).
//! Only otherwise (a fatbin with no cubin for this GPU, whose PTX the driver may compile) does
//! the load ask the driver, a call that would cost the first launch a few percent.

use crate::driver::{bind, func_attr};
use crate::error::{DriverCode, Error, Result};
use crate::module::image::{get_function, load_in_place, load_module, load_module_vec, with_log};
use crate::module::prefault::map_first_load_code;
use crate::module::spec::{ImageKind, KernelSpec, ModuleSpec};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// One kernel's function on one device, with the limits every launch checks.
pub(crate) struct Function {
    pub(crate) raw: sys::CUfunction,
    /// cudarc's handle, for modules loaded through cudarc (`None` for a module loaded in place;
    /// see [`Loaded::cudarc_function`]).
    pub(crate) handle: Option<CudaFunction>,
    /// A block size the kernel is known to take on this device: at first, the limit read from
    /// the cubin the driver loads where that is known (an nvcc fatbin's cubin for this GPU, read
    /// at build time, see [`static_limit`]; a cubin handed to the driver, read at load); else,
    /// and after a launch asked for more, the driver's `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`
    /// (device limit, registers and `__launch_bounds__` combined). A launch over it reads the
    /// driver's value before it is refused.
    pub(crate) max_threads: AtomicU32,
    /// The dynamic shared memory limit last read from the driver (0 until a launch asks for
    /// dynamic shared memory); re-read when a launch would exceed it, since it starts unread and
    /// cudarc users may raise it on the `CudaFunction`.
    pub(crate) max_dyn_smem: AtomicU32,
}

impl Function {
    /// The function `raw`, whose block limit is `known` (0: not known, read from the driver now).
    pub(crate) fn new(raw: sys::CUfunction, handle: Option<CudaFunction>, known: u32) -> Function {
        use sys::CUfunction_attribute::*;
        // A limit the driver cannot report is not checked (u32::MAX), rather than failing the load.
        let max_threads = match known {
            0 => func_attr(raw, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK).unwrap_or(u32::MAX),
            known => known,
        };
        Function {
            raw,
            handle,
            max_threads: AtomicU32::new(max_threads),
            // Read at the first launch that asks for dynamic shared memory (the limit check
            // re-reads the driver's value before refusing), not at load: one driver call less
            // on every first launch, and most kernels never use dynamic shared memory.
            max_dyn_smem: AtomicU32::new(0),
        }
    }
}

/// The block limit of kernel `index` of an nvcc fatbin on `ctx`'s device, as read from the
/// fatbin's cubins at build time (0: not known; the driver is asked).
///
/// Known only where the driver is sure to load one of those cubins: the fatbin holds one built
/// for exactly this GPU's architecture (`sm_90` or `sm_90a` on a 9.0 GPU; the least of their
/// limits if both), and `CUDA_FORCE_PTX_JIT` does not make the driver compile the PTX instead.
/// Where only a cubin of an older architecture of the family (or only PTX) matches, the driver
/// may compile the PTX, whose registers are not known before.
pub(crate) fn static_limit(limits: &[(u32, &[u32])], ctx: &CudaContext, index: usize) -> u32 {
    if limits.is_empty() || ptx_jit_forced() {
        return 0;
    }
    let arch = device_arch(ctx);
    let mut limit = 0u32;
    for &(target, threads) in limits {
        if arch == 0 || target != arch {
            continue;
        }
        match threads.get(index) {
            Some(&n) if n > 0 => limit = if limit == 0 { n } else { limit.min(n) },
            _ => return 0,
        }
    }
    limit
}

/// Reads now what the first load on `ctx`'s device would otherwise read: the device's compute
/// capability and `CUDA_FORCE_PTX_JIT` ([`static_limit`]), so that [`crate::context`] pays
/// them once instead of the first launch.
pub(crate) fn prepare(ctx: &CudaContext, elsewhere: &[usize]) {
    ptx_jit_forced();
    device_arch(ctx);
    map_first_load_code(elsewhere);
}

/// Whether `CUDA_FORCE_PTX_JIT` makes the driver ignore the cubins of a fatbin (set, not empty
/// and not `0`); read once per process.
fn ptx_jit_forced() -> bool {
    // 0: not read yet, 1: not forced, 2: forced.
    static FORCED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    match FORCED.load(Ordering::Relaxed) {
        0 => {
            let forced = std::env::var_os("CUDA_FORCE_PTX_JIT").is_some_and(|v| !v.is_empty() && v != "0");
            FORCED.store(1 + forced as u8, Ordering::Relaxed);
            forced
        }
        v => v == 2,
    }
}

/// The compute capability of `ctx`'s device as `major * 10 + minor` (0: the driver could not
/// say), read once per device (the first 64 ordinals; others every time).
fn device_arch(ctx: &CudaContext) -> u32 {
    static ARCHS: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];
    let slot = ARCHS.get(ctx.ordinal());
    if let Some(arch) = slot.map(|s| s.load(Ordering::Relaxed)).filter(|&a| a != 0) {
        return arch;
    }
    use sys::CUdevice_attribute::*;
    let read = |a| {
        let mut v = 0i32;
        // SAFETY: a device handle of a live context; a valid out-pointer.
        let r = unsafe { sys::cuDeviceGetAttribute(&mut v, a, ctx.cu_device()) };
        (r == sys::CUresult::CUDA_SUCCESS).then_some(v)
    };
    let (Some(major), Some(minor)) =
        (read(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), read(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
    else {
        return 0;
    };
    let arch = u32::try_from(major * 10 + minor).unwrap_or(0);
    if let Some(s) = slot {
        s.store(arch, Ordering::Relaxed);
    }
    arch
}

/// Who owns the driver's module.
enum Owner {
    /// cudarc: the kernels' `CudaFunction`s share the module.
    Cudarc(Arc<CudaModule>),
    /// Loaded in place from a static image (see the module docs). Holds the context (and so the
    /// primary context and the module) alive; `twin` is the second load of `image` through cudarc
    /// that [`Loaded::cudarc_function`] makes on first request.
    InPlace { _ctx: Arc<CudaContext>, image: &'static [u8], twin: Mutex<Option<Arc<CudaModule>>> },
}

/// A module loaded in one context. Lives for the rest of the process once published.
///
/// `repr(C)` keeps the fields a launch's common path reads (`functions`, `cu_ctx`, `plain`:
/// [`Module::plain_function`](crate::module::registry::Module)) together at the start, in one or
/// two cache lines, instead of wherever the compiler would put them.
#[repr(C)]
pub(crate) struct Loaded {
    pub(crate) functions: Box<[Function]>,
    pub(crate) cu_ctx: sys::CUcontext,
    /// No globals, so launches need no ordering (`order` is `None`): what the common path checks.
    pub(crate) plain: bool,
    // Holds the context (and so the primary context and the module) alive for the life of the
    // process, even if the user drops every `CudaContext` they made.
    owner: Owner,
    /// The driver's module handle (for `cuModuleGetGlobal`; null for a module without globals
    /// loaded through cudarc, which never needs it).
    pub(crate) raw_module: sys::CUmodule,
    /// Symbol of each global variable (NVRTC path: lowered at load; nvcc path: from the spec).
    pub(crate) global_symbols: Box<[String]>,
    pub(crate) from_disk_cache: bool,
    /// Stream ordering of global copies and launches, for modules with globals.
    pub(crate) order: Option<crate::module::order::GlobalOrder>,
}

// SAFETY: CUDA driver handles (contexts, modules, functions) may be used from any thread; the
// only state changed after publication is atomic or behind a mutex.
unsafe impl Send for Loaded {}
// SAFETY: as above.
unsafe impl Sync for Loaded {}

/// The kernel attributes cuda-embed sets ([`KernelRef::set_max_dynamic_shared_memory`],
/// [`KernelRef::set_preferred_shared_carveout`]) and mirrors onto the cudarc twin of a module
/// loaded in place.
///
/// [`KernelRef::set_max_dynamic_shared_memory`]: crate::KernelRef::set_max_dynamic_shared_memory
/// [`KernelRef::set_preferred_shared_carveout`]: crate::KernelRef::set_preferred_shared_carveout
const MIRRORED: [sys::CUfunction_attribute; 2] = [
    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
];

impl Loaded {
    /// cudarc's handle of kernel `index` (symbol `symbol`) in `ctx`, the context this module was
    /// loaded in. For a module loaded through cudarc, the handle made at load (the same module);
    /// for one loaded in place, a function of the module's cudarc twin (loaded now if this is
    /// the first request), with the attributes set through cuda-embed copied onto it.
    pub(crate) fn cudarc_function(
        &self,
        ctx: &Arc<CudaContext>,
        index: usize,
        symbol: &str,
    ) -> std::result::Result<CudaFunction, String> {
        let (image, twin) = match &self.owner {
            Owner::Cudarc(_) => {
                return self
                    .functions
                    .get(index)
                    .and_then(|f| f.handle.clone())
                    .ok_or_else(|| format!("kernel #{index} has no cudarc handle"));
            }
            Owner::InPlace { image, twin, .. } => (image, twin),
        };
        let ours = self.functions.get(index).ok_or_else(|| format!("there is no kernel #{index}"))?;
        let mut twin = twin.lock().unwrap_or_else(|p| p.into_inner());
        bind(ctx).map_err(|e| e.to_string())?;
        let module = match twin.as_ref() {
            Some(m) => m.clone(),
            None => {
                let m = load_module(ctx, image).map_err(|(code, log)| with_log(code, &log))?;
                twin.insert(m).clone()
            }
        };
        let f = module.load_function(symbol).map_err(|e| format!("`{symbol}`: {}", DriverCode(e.0)))?;
        for attr in MIRRORED {
            // The carveout reads back as -1 until set; a value the driver does not report is not
            // copied.
            let mut v = 0i32;
            // SAFETY: a live function handle of the current context; a valid out-pointer.
            if unsafe { sys::cuFuncGetAttribute(&mut v, attr, ours.raw) } == sys::CUresult::CUDA_SUCCESS && v >= 0 {
                // SAFETY: a live function handle; the value was just read from the same kind of
                // function (the same code) on the same device.
                let r = unsafe { sys::cuFuncSetAttribute(f.cu_function(), attr, v) };
                if r != sys::CUresult::CUDA_SUCCESS {
                    return Err(format!("cuFuncSetAttribute({attr:?}) on the cudarc handle: {}", DriverCode(r)));
                }
            }
        }
        Ok(f)
    }

    /// Sets `attr` to `value` on the cudarc twin's function `symbol` too, when the module was
    /// loaded in place and a twin was made: cudarc's launches of the handles
    /// [`Loaded::cudarc_function`] gave out then see the limit cuda-embed's launches see.
    pub(crate) fn mirror_attribute(
        &self,
        symbol: &str,
        attr: sys::CUfunction_attribute,
        value: u32,
    ) -> std::result::Result<(), String> {
        let Owner::InPlace { twin, .. } = &self.owner else { return Ok(()) };
        let twin = twin.lock().unwrap_or_else(|p| p.into_inner());
        let Some(module) = twin.as_ref() else { return Ok(()) };
        let f = module.load_function(symbol).map_err(|e| format!("`{symbol}`: {}", DriverCode(e.0)))?;
        // SAFETY: a live function handle (the caller made its context current); the value was
        // accepted for the same code on the same device just before.
        let r = unsafe { sys::cuFuncSetAttribute(f.cu_function(), attr, value as i32) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(format!("cuFuncSetAttribute({attr:?}) on the cudarc handle: {}", DriverCode(r)));
        }
        Ok(())
    }
}

/// With `CUDA_EMBED_TRACE_LOAD` set, each module load prints how long its phases took (stderr),
/// to find where a first launch spends its time. The in-place load of an nvcc fatbin (one
/// `cuModuleLoadData`, see [`fatbin_in_place`]) is not traced: reading the variable would cost
/// that path more than its own host code.
pub(crate) struct Trace(Option<(std::time::Instant, &'static str)>);

impl Trace {
    pub(crate) fn start(what: &'static str) -> Trace {
        // The variable is read once per process (0: not yet, 1: unset, 2: set).
        static ON: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
        let on = match ON.load(std::sync::atomic::Ordering::Relaxed) {
            0 => {
                let on = std::env::var_os("CUDA_EMBED_TRACE_LOAD").is_some();
                ON.store(1 + on as u8, std::sync::atomic::Ordering::Relaxed);
                on
            }
            v => v == 2,
        };
        Trace(on.then(|| (std::time::Instant::now(), what)))
    }

    pub(crate) fn lap(&mut self, phase: &str) {
        if let Some((t, what)) = &mut self.0 {
            let took = t.elapsed();
            eprintln!("cuda-embed load {what}: {phase} {:.1} us", took.as_secs_f64() * 1e6);
            // The next phase starts after the print, so no phase is charged for the last one's.
            *t = std::time::Instant::now();
        }
    }
}

pub(crate) fn load(spec: &'static ModuleSpec, ctx: &Arc<CudaContext>) -> Result<Loaded> {
    match fatbin_in_place(spec, ctx) {
        Some(loaded) => Ok(loaded),
        None => load_any(spec, ctx),
    }
}

/// The first load of most modules, kept short: an nvcc fatbin of a module without globals,
/// loaded in place. The driver calls are those of a hand-written sequence (`cuModuleLoadData`,
/// `cuModuleGetFunction` per kernel) plus the current-context check, and the device's compute
/// capability once per device; each kernel's block limit comes from the fatbin's cubin for this
/// GPU, read at build time ([`static_limit`]; the driver is asked only where that is not known).
/// Nothing is copied, and the only allocation is the list of functions.
///
/// `None` for other modules, and when any step fails: [`load_any`] then loads the module (again)
/// and explains the failure.
#[inline(never)]
pub(crate) fn fatbin_in_place(spec: &'static ModuleSpec, ctx: &Arc<CudaContext>) -> Option<Loaded> {
    let ImageKind::Fatbin { bytes, limits, .. } = &spec.image.0 else { return None };
    if !spec.globals.is_empty() || !(bytes.as_ptr() as usize).is_multiple_of(8) {
        return None;
    }
    bind(ctx).ok()?;
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: a complete, 8-byte aligned image (the image constructor's contract, alignment
    // checked above) that lives for the whole process; a valid out-pointer.
    if unsafe { sys::cuModuleLoadData(&mut module, bytes.as_ptr() as *const c_void) } != sys::CUresult::CUDA_SUCCESS {
        return None;
    }
    let mut functions = Vec::with_capacity(spec.kernels.len());
    for (i, k) in spec.kernels.iter().enumerate() {
        match k.symbol.map(|symbol| get_function(module, symbol)) {
            Some(Ok(f)) => functions.push(Function::new(f, None, static_limit(limits, ctx, i))),
            _ => {
                // SAFETY: loaded above in the current context; no handle of it was handed out.
                unsafe { sys::cuModuleUnload(module) };
                return None;
            }
        }
    }
    Some(Loaded {
        cu_ctx: ctx.cu_ctx(),
        plain: true,
        owner: Owner::InPlace { _ctx: ctx.clone(), image: bytes, twin: Mutex::new(None) },
        raw_module: module,
        global_symbols: Box::default(),
        functions: functions.into_boxed_slice(),
        from_disk_cache: false,
        order: None,
    })
}

/// Loads any module (and explains any failure): see the module docs.
pub(crate) fn load_any(spec: &'static ModuleSpec, ctx: &Arc<CudaContext>) -> Result<Loaded> {
    let mut trace = Trace::start(spec.origin);
    let device = ctx.ordinal();
    // The architecture picks the code of the build-time NVRTC and run-time paths; a fatbin needs
    // it only to explain a failed load, so it is read there (two driver calls off the first
    // launch). Not knowing it would pick the wrong code (or report an "sm_0" GPU): an error.
    let read_arch = || -> Result<u32> {
        let (major, minor) = ctx.compute_capability().map_err(|e| Error::Load {
            origin: spec.origin.to_string(),
            device,
            device_name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
            arch: 0,
            cause: format!("cannot read the device's compute capability: {}", DriverCode(e.0)),
            fix: None,
        })?;
        Ok((major * 10 + minor) as u32)
    };
    // An `arch` of 0 (not read yet, on the fatbin path) is read for the message.
    let load_error = |arch: u32, cause: String, fix: Option<String>| Error::Load {
        origin: spec.origin.to_string(),
        device,
        device_name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
        arch: if arch == 0 { read_arch().unwrap_or(0) } else { arch },
        cause,
        fix,
    };
    // A failure names the module (its `cuda_kernel!`), not just the device.
    bind(ctx).map_err(|e| match e {
        Error::Driver { call, cause, .. } => load_error(0, format!("{call}: {cause}"), None),
        e => e,
    })?;

    // NVRTC path: each kernel's parameter count, read from the cubin (see `cubin.rs`).
    let mut counts: Option<Vec<(String, usize)>> = None;
    // NVRTC path: what the load checks are checked against, and whether an earlier process
    // recorded them as passed in the cubin's cache entry (then they are skipped); else the
    // compiled cubin to record them with once they pass.
    let mut checks_passed = false;
    let mut to_record: Option<CheckRecord> = None;
    // Images in the binary of modules without globals load in place (see the module docs).
    let in_place = spec.globals.is_empty();
    // Where the driver is handed one cubin (compiled now, or chosen here from the binary's), its
    // kernels' block limits, read from it: no limit read before the first launch.
    let mut cubin_limits: Option<Vec<(String, u32)>> = None;
    // `symbols`: the kernels' symbols when compiled now (else the spec's). `arch` is 0 on the
    // fatbin path, where it is only read to explain a failure.
    let (owner, raw_module, symbols, global_symbols, from_disk_cache, arch) = match &spec.image.0 {
        ImageKind::Fatbin { bytes, targets, compiler, .. } => {
            let explain = |(code, log): (sys::CUresult, String)| {
                let arch = match read_arch() {
                    Ok(arch) => arch,
                    Err(e) => return e,
                };
                let fix = match code {
                    sys::CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU | sys::CUresult::CUDA_ERROR_INVALID_SOURCE => {
                        Some(format!(
                            "this binary holds {} (built by nvcc {compiler}) and nothing this sm_{arch} GPU can run: \
                             add {arch} to the kernel's archs (`archs = [..., {arch}]`) or to CUDA_EMBED_ARCHS and rebuild",
                            targets.join(", ")
                        ))
                    }
                    sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => Some(format!(
                        "the embedded PTX (nvcc {compiler}) is newer than this driver accepts and there is no SASS for \
                         sm_{arch} among {}: install a newer NVIDIA driver, or add {arch} to the archs and rebuild",
                        targets.join(", ")
                    )),
                    _ => None,
                };
                load_error(arch, with_log(code, &log), fix)
            };
            let (owner, raw_module) = if in_place {
                let m = load_in_place(bytes).map_err(explain)?;
                (Owner::InPlace { _ctx: ctx.clone(), image: bytes, twin: Mutex::new(None) }, m)
            } else {
                (Owner::Cudarc(load_module(ctx, bytes).map_err(explain)?), std::ptr::null_mut())
            };
            trace.lap("cuModuleLoadData of the fatbin");
            let globals = spec.globals.iter().map(|g| g.symbol.unwrap_or(g.name).to_string()).collect();
            (owner, raw_module, None, globals, false, 0)
        }
        ImageKind::Cubins { cubins, ptx, ptx_target, compiler } => {
            let arch = read_arch()?;
            let names: Vec<&str> = cubins.iter().map(|c| c.0).collect();
            let fail = |(code, log): (sys::CUresult, String)| load_error(arch, with_log(code, &log), None);
            let (owner, raw_module) = match crate::module::typecheck::pick(&names, arch) {
                Some(i) if in_place => {
                    let image = cubins[i].1;
                    cubin_limits = cuda_embed_source::cubin::block_limits(image, arch);
                    let m = load_in_place(image).map_err(fail)?;
                    (Owner::InPlace { _ctx: ctx.clone(), image, twin: Mutex::new(None) }, m)
                }
                Some(i) => {
                    cubin_limits = cuda_embed_source::cubin::block_limits(cubins[i].1, arch);
                    (Owner::Cudarc(load_module(ctx, cubins[i].1).map_err(fail)?), std::ptr::null_mut())
                }
                None if crate::module::typecheck::ptx_runs(ptx_target, arch) => {
                    let mut text = ptx.as_bytes().to_vec();
                    text.push(0);
                    // By reference: a failed JIT is loaded again for its log.
                    (Owner::Cudarc(load_module(ctx, &text).map_err(fail)?), std::ptr::null_mut())
                }
                None => {
                    // A module linked by nvJitLink (`rdc`, `link`, `lto`) embeds cubins only.
                    let ptx = if ptx_target.is_empty() {
                        "no PTX (a linked module)".to_string()
                    } else {
                        format!("{ptx_target} PTX")
                    };
                    let fix = format!(
                        "this binary holds {} and {ptx} (built by NVRTC {compiler}) and nothing this sm_{arch} GPU can \
                         run: add {arch} to the kernel's archs (`archs = [..., {arch}]`) or to CUDA_EMBED_ARCHS and \
                         rebuild",
                        names.join(", ")
                    );
                    let code = sys::CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU;
                    return Err(load_error(arch, DriverCode(code).to_string(), Some(fix)));
                }
            };
            let globals = spec.globals.iter().map(|g| g.symbol.unwrap_or(g.name).to_string()).collect();
            (owner, raw_module, None, globals, false, arch)
        }
        ImageKind::Linked { units, headers, lto, .. } => {
            let arch = read_arch()?;
            let (cubin, mut symbols) = crate::BUILD.link(spec, units, headers, *lto, ctx)?;
            trace.lap("NVRTC + link of the units (cache lookups or compiles)");
            counts = cuda_embed_source::cubin::param_counts(&cubin);
            cubin_limits = cuda_embed_source::cubin::block_limits(&cubin, arch);
            let module =
                load_module_vec(ctx, cubin).map_err(|(code, log)| load_error(arch, with_log(code, &log), None))?;
            let globals = symbols.split_off(spec.kernels.len());
            (Owner::Cudarc(module), std::ptr::null_mut(), Some(symbols), globals, false, arch)
        }
        ImageKind::Source { source, options, headers, probe, checks, mark, unit, own_len, .. } => {
            let arch = read_arch()?;
            let exprs = spec.name_expressions();
            // The module that runs is compiled without the macro's type probe: the probe's
            // `__device__` answers would make every load allocate and fill module globals (about
            // 0.6 ms on an H100). The macro appends the check as `static_assert`s instead, which
            // leave nothing in the cubin, so this one compile is also the type check; the probe
            // is compiled on its own only to explain a failure (or, for a spec without the
            // asserts, to check, below).
            let digest = Some(*unit).filter(|d| !d.is_empty());
            let mut compiled =
                match crate::BUILD.compile(spec.origin, source, *own_len, options, headers, &exprs, digest, arch) {
                    Ok(compiled) => compiled,
                    // The source carries the type check as `static_assert`s: a failed compile may
                    // be a parameter of the wrong type. The probe's answers say which, and what it
                    // is; anything else (every type right, or the probe failing as the source does)
                    // is the compile's own error, with its log.
                    Err(e) if !probe.is_empty() && *own_len < source.len() => {
                        return Err(
                            match check_probe_of(spec, source, options, headers, probe, checks, arch, device) {
                                Err(wrong @ Error::Signature { .. }) => wrong,
                                _ => e,
                            },
                        );
                    }
                    Err(e) => return Err(e),
                };
            trace.lap("nvrtc::compile (cache lookup or NVRTC)");
            // The checks below (parameter sizes, the type probe) are a pure function of the
            // cubin and the probe, which includes the source: the mark names both (the macro
            // computed it; a hit does not hash the source and the probe again).
            let mark = crate::module::typecheck::checks_mark(source, probe, mark);
            checks_passed = compiled.checked.as_deref() == Some(&mark[..]);
            let from_cache = compiled.from_cache;
            if !checks_passed {
                counts = cuda_embed_source::cubin::param_counts(&compiled.cubin);
                if let Some(record) = compiled.record.take() {
                    let (cubin, symbols) = (compiled.cubin.clone(), compiled.symbols.clone());
                    to_record = Some(CheckRecord { record, cubin, symbols, mark });
                }
            }
            let crate::module::build::Built { cubin, mut symbols, .. } = compiled;
            cubin_limits = cuda_embed_source::cubin::block_limits(&cubin, arch);
            // Handed to cudarc without a copy.
            let module =
                load_module_vec(ctx, cubin).map_err(|(code, log)| load_error(arch, with_log(code, &log), None))?;
            trace.lap("cuModuleLoadData of the cubin");
            let globals = symbols.split_off(spec.kernels.len());
            (Owner::Cudarc(module), std::ptr::null_mut(), Some(symbols), globals, from_cache, arch)
        }
    };

    trace.lap("image loaded");
    let mut functions = Vec::with_capacity(spec.kernels.len());
    let mut size_error = None;
    for (i, k) in spec.kernels.iter().enumerate() {
        let symbol = match &symbols {
            Some(s) => s.get(i).map(String::as_str),
            None => k.symbol,
        };
        let Some(symbol) = symbol else {
            let cause = format!("kernel `{}` has no symbol in the embedded image", k.name);
            return Err(load_error(arch, cause, None));
        };
        let not_found =
            |cause: String| load_error(arch, format!("kernel `{}` (symbol `{symbol}`) {cause}", k.name), None);
        let (raw, handle) = match &owner {
            Owner::Cudarc(module) => {
                if symbol.contains('\0') {
                    return Err(not_found("has a NUL byte in its symbol".into()));
                }
                let f = module
                    .load_function(symbol)
                    .map_err(|e| not_found(format!("not found in the module: {}", DriverCode(e.0))))?;
                (f.cu_function(), Some(f))
            }
            Owner::InPlace { .. } => (get_function(raw_module, symbol).map_err(not_found)?, None),
        };
        if symbols.is_some() && !checks_passed && size_error.is_none() {
            // The nvcc path was checked against PTX at build time; NVRTC code only exists now.
            let count = counts.as_deref().and_then(|c| cuda_embed_source::cubin::lookup(c, symbol));
            // Reported after the type check, which names the parameter and both types.
            size_error = check_params(spec, k, raw, count).err();
        }
        let known = match (&spec.image.0, &cubin_limits) {
            (ImageKind::Fatbin { limits, .. }, _) => static_limit(limits, ctx, i),
            (_, Some(limits)) => limits.iter().find(|(s, _)| s == symbol).map_or(0, |&(_, n)| n),
            _ => 0,
        };
        functions.push(Function::new(raw, handle, known));
    }
    // Only global lookups need the module handle: modules without globals skip the call.
    let raw_module = match functions.first().filter(|_| raw_module.is_null() && !spec.globals.is_empty()) {
        Some(f) => {
            let mut m: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: a live function handle of the current context; a valid out-pointer.
            let r = unsafe { sys::cuFuncGetModule(&mut m, f.raw) };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(load_error(arch, format!("cuFuncGetModule: {}", DriverCode(r)), None));
            }
            m
        }
        None => raw_module,
    };
    if let ImageKind::Source { source, options, headers, probe, checks, own_len, .. } = &spec.image.0 {
        trace.lap("functions and limits");
        // A source that carries the type check as `static_assert`s passed it by compiling.
        let compiled_checks = *own_len < source.len();
        if !probe.is_empty() && !checks_passed && !compiled_checks {
            check_probe_of(spec, source, options, headers, probe, checks, arch, device)?;
        }
        trace.lap("first-load type check");
    }
    if let Some(e) = size_error {
        return Err(e);
    }
    if let Some(CheckRecord { record, cubin, symbols, mark }) = to_record {
        record(cubin, symbols, mark);
        trace.lap("checks recorded");
    }
    trace.lap("done");
    Ok(Loaded {
        cu_ctx: ctx.cu_ctx(),
        plain: spec.globals.is_empty(),
        owner,
        raw_module,
        global_symbols: global_symbols.into_boxed_slice(),
        functions: functions.into_boxed_slice(),
        from_disk_cache,
        order: (!spec.globals.is_empty()).then(Default::default),
    })
}

/// The first-load type check of a module compiled by NVRTC, by its probe: `source` with `probe`
/// appended, compiled on its own with the source's `static_assert` form of the check left out
/// ([`cuda_embed_source::typecode::PROBE_ANSWERS`]), and its answers held to `checks`.
#[allow(clippy::too_many_arguments)]
fn check_probe_of(
    spec: &ModuleSpec,
    source: &str,
    options: &[&str],
    headers: &[(&str, &str)],
    probe: &str,
    checks: &[crate::module::spec::ParamCheck],
    arch: u32,
    device: usize,
) -> Result<()> {
    let text = format!("{source}\n{probe}");
    let define = format!("-D{}", cuda_embed_source::typecode::PROBE_ANSWERS);
    let options: Vec<&str> = options.iter().copied().chain([define.as_str()]).collect();
    let unit = crate::module::typecheck::ProbeUnit { text: &text, options: &options, headers, arch };
    crate::module::typecheck::check_probe(spec, &unit, checks, device)
}

/// What an NVRTC-path load records in its cubin's cache entry once its checks passed.
struct CheckRecord {
    /// Writes the entry again with the mark.
    record: crate::module::build::Recorder,
    /// The entry's cubin and symbols (the loaded ones went to the driver).
    cubin: Vec<u8>,
    symbols: Vec<String>,
    /// [`crate::module::typecheck::checks_mark`] of the module.
    mark: Vec<u8>,
}

/// Checks the loaded kernel's parameter layout against what the launcher packs. The macro checks
/// this against PTX at build time on the nvcc path; this catches the NVRTC path, where the code is
/// only compiled now.
fn check_params(spec: &ModuleSpec, k: &KernelSpec, f: sys::CUfunction, count: Option<usize>) -> Result<()> {
    // Nothing to check with on drivers older than CUDA 12.4 (no cuFuncGetParamInfo).
    let Some(info) = crate::module::params::param_info(f, count) else {
        return Ok(());
    };
    let sizes: Vec<u32> = info.iter().map(|&(_, size)| size as u32).collect();
    if sizes != k.param_sizes {
        return Err(Error::Signature {
            kernel: k.name.to_string(),
            origin: spec.origin.to_string(),
            detail: format!(
                "the compiled kernel takes parameters of {sizes:?} bytes but the launcher was generated for \
                 {:?}; a typedef or macro changed a parameter type: check the signature",
                k.param_sizes
            ),
        });
    }
    Ok(())
}

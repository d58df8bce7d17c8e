//! Loading one module on one device: the slow path behind the first launch there.
//!
//! The image is loaded through cudarc (`CudaContext::load_module`), so every kernel also has a
//! cudarc [`CudaFunction`] sharing the same module: cudarc's launch builder and other cudarc APIs
//! work on these kernels, and `__device__` variables are the same ones the launchers see.

use crate::error::{DriverCode, Error, Result};
use crate::launch::limits::{bind, func_attr};
use crate::module::spec::{ImageKind, KernelSpec, ModuleSpec};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;
use std::ffi::{c_void, CString};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// One kernel's function on one device, with the limits every launch checks.
pub(crate) struct Function {
    pub(crate) raw: sys::CUfunction,
    pub(crate) handle: CudaFunction,
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` on this device (device limit, registers and
    /// `__launch_bounds__` combined).
    pub(crate) max_threads: u32,
    /// The dynamic shared memory limit last read from the driver (0 until a launch asks for
    /// dynamic shared memory); re-read when a launch would exceed it, since it starts unread and
    /// cudarc users may raise it on the `CudaFunction`.
    pub(crate) max_dyn_smem: AtomicU32,
}

impl Function {
    pub(crate) fn new(handle: CudaFunction) -> Function {
        use sys::CUfunction_attribute::*;
        let raw = handle.cu_function();
        // A limit the driver cannot report is not checked (u32::MAX), rather than failing the load.
        let limit = |a| func_attr(raw, a).unwrap_or(u32::MAX);
        Function {
            raw,
            handle,
            max_threads: limit(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            // Read at the first launch that asks for dynamic shared memory (the limit check
            // re-reads the driver's value before refusing), not at load: one driver call less
            // on every first launch, and most kernels never use dynamic shared memory.
            max_dyn_smem: AtomicU32::new(0),
        }
    }
}

/// A module loaded in one context. Lives for the rest of the process once published.
pub(crate) struct Loaded {
    pub(crate) cu_ctx: sys::CUcontext,
    // Holds the context (and so the primary context and the module) alive for the life of the
    // process, even if the user drops every `CudaContext` they made.
    pub(crate) _module: Arc<CudaModule>,
    /// The driver's module handle (for `cuModuleGetGlobal`).
    pub(crate) raw_module: sys::CUmodule,
    /// Symbol of each global variable (NVRTC path: lowered at load; nvcc path: from the spec).
    pub(crate) global_symbols: Box<[String]>,
    pub(crate) functions: Box<[Function]>,
    pub(crate) from_disk_cache: bool,
    /// Stream ordering of global copies and launches, for modules with globals.
    pub(crate) order: Option<crate::module::order::GlobalOrder>,
}

// SAFETY: CUDA driver handles (contexts, modules, functions) may be used from any thread; the
// only state changed after publication is atomic.
unsafe impl Send for Loaded {}
// SAFETY: as above.
unsafe impl Sync for Loaded {}

/// With `CUDA_EMBED_TRACE_LOAD` set, each module load prints how long its phases took (stderr),
/// to find where a first launch spends its time.
pub(crate) struct Trace(Option<(std::time::Instant, &'static str)>);

impl Trace {
    pub(crate) fn start(what: &'static str) -> Trace {
        Trace(std::env::var_os("CUDA_EMBED_TRACE_LOAD").map(|_| (std::time::Instant::now(), what)))
    }

    pub(crate) fn lap(&mut self, phase: &str) {
        if let Some((t, what)) = &mut self.0 {
            let now = std::time::Instant::now();
            eprintln!("cuda-embed load {what}: {phase} {:.1} us", (now - *t).as_secs_f64() * 1e6);
            *t = now;
        }
    }
}

pub(crate) fn load(spec: &'static ModuleSpec, ctx: &Arc<CudaContext>) -> Result<Loaded> {
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
    // `arch` is 0 on the fatbin path, where it is only read to explain a failure.
    let (module, symbols, global_symbols, from_disk_cache, arch) = match &spec.image.0 {
        ImageKind::Fatbin { bytes, targets, compiler } => {
            let module = load_module(ctx, bytes).map_err(|(code, log)| {
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
            })?;
            trace.lap("cuModuleLoadData of the fatbin (with the copy)");
            let (symbols, globals) = built_symbols(spec).map_err(|e| load_error(0, e, None))?;
            (module, symbols, globals, false, 0)
        }
        ImageKind::Cubins { cubins, ptx, ptx_target, compiler } => {
            let arch = read_arch()?;
            let names: Vec<&str> = cubins.iter().map(|c| c.0).collect();
            let image = match crate::module::typecheck::pick(&names, arch) {
                Some(i) => cubins[i].1.to_vec(),
                None if crate::module::typecheck::ptx_runs(ptx_target, arch) => {
                    let mut text = ptx.as_bytes().to_vec();
                    text.push(0);
                    text
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
            let module =
                load_module(ctx, &image).map_err(|(code, log)| load_error(arch, with_log(code, &log), None))?;
            let (symbols, globals) = built_symbols(spec).map_err(|e| load_error(arch, e, None))?;
            (module, symbols, globals, false, arch)
        }
        ImageKind::Linked { units, headers, lto, .. } => {
            let arch = read_arch()?;
            let (cubin, mut symbols) = crate::link::link_units(spec, units, headers, *lto, ctx)?;
            trace.lap("NVRTC + link of the units (cache lookups or compiles)");
            let module =
                load_module(ctx, &cubin).map_err(|(code, log)| load_error(arch, with_log(code, &log), None))?;
            counts = crate::module::cubin::param_counts(&cubin);
            let globals = symbols.split_off(spec.kernels.len());
            (module, symbols, globals, false, arch)
        }
        ImageKind::Source { source, options, headers, probe, .. } => {
            let arch = read_arch()?;
            // Kernels first, then globals: NVRTC lowers both kinds of name expression.
            let exprs: Vec<&str> = spec
                .kernels
                .iter()
                .map(|k| k.name_expression)
                .chain(spec.globals.iter().map(|g| g.name_expression))
                .collect();
            // The module that runs is compiled without the macro's type probe: the probe's
            // `__device__` answers would make every load allocate and fill module globals (about
            // 0.6 ms on an H100). The probe is compiled and checked on its own, below.
            let compiled = crate::program::nvrtc::compile(spec.origin, source, options, headers, &exprs, arch)?;
            trace.lap("nvrtc::compile (cache lookup or NVRTC)");
            // The checks below (parameter sizes, the type probe) are a pure function of the
            // cubin and the probe, which includes the source: the mark names both.
            let mark = crate::module::typecheck::checks_mark(source, probe);
            checks_passed = compiled.checked.as_deref() == Some(&mark[..]);
            let module = load_module(ctx, &compiled.cubin)
                .map_err(|(code, log)| load_error(arch, with_log(code, &log), None))?;
            trace.lap("cuModuleLoadData of the cubin (with the copy)");
            if !checks_passed {
                counts = crate::module::cubin::param_counts(&compiled.cubin);
                if let Some(file) = &compiled.cache_file {
                    to_record = Some(CheckRecord {
                        file: file.clone(),
                        cubin: compiled.cubin.clone(),
                        symbols: compiled.symbols.clone(),
                        mark,
                    });
                }
            }
            let mut symbols = compiled.symbols;
            let globals = symbols.split_off(spec.kernels.len());
            (module, symbols, globals, compiled.from_cache, arch)
        }
    };

    trace.lap("image loaded");
    let mut functions = Vec::with_capacity(spec.kernels.len());
    let mut size_error = None;
    for (k, symbol) in spec.kernels.iter().zip(&symbols) {
        let not_found =
            |cause: String| load_error(arch, format!("kernel `{}` (symbol `{symbol}`) {cause}", k.name), None);
        if symbol.contains('\0') {
            return Err(not_found("has a NUL byte in its symbol".into()));
        }
        let f = module
            .load_function(symbol)
            .map_err(|e| not_found(format!("not found in the module: {}", DriverCode(e.0))))?;
        let compiled_now = matches!(spec.image.0, ImageKind::Source { .. } | ImageKind::Linked { .. });
        if compiled_now && !checks_passed && size_error.is_none() {
            // The nvcc path was checked against PTX at build time; NVRTC code only exists now.
            let count = counts.as_deref().and_then(|c| crate::module::cubin::lookup(c, symbol));
            // Reported after the type check, which names the parameter and both types.
            size_error = check_params(spec, k, f.cu_function(), count).err();
        }
        functions.push(Function::new(f));
    }
    // Only global lookups need the module handle: modules without globals skip the call.
    let raw_module = match functions.first().filter(|_| !spec.globals.is_empty()) {
        Some(f) => {
            let mut m: sys::CUmodule = std::ptr::null_mut();
            // SAFETY: a live function handle of the current context; a valid out-pointer.
            let r = unsafe { sys::cuFuncGetModule(&mut m, f.raw) };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(load_error(arch, format!("cuFuncGetModule: {}", DriverCode(r)), None));
            }
            m
        }
        None => std::ptr::null_mut(),
    };
    if let ImageKind::Source { source, options, headers, probe, checks, .. } = &spec.image.0 {
        trace.lap("functions and limits");
        if !probe.is_empty() && !checks_passed {
            let text = format!("{source}\n{probe}");
            let unit = crate::module::typecheck::ProbeUnit { text: &text, options, headers, arch };
            crate::module::typecheck::check_probe(spec, &unit, checks, device)?;
        }
        trace.lap("first-load type check");
    }
    if let Some(e) = size_error {
        return Err(e);
    }
    if let Some(CheckRecord { file, cubin, symbols, mark }) = to_record {
        crate::program::nvrtc::record_checked(&file, &cubin, &symbols, mark);
        trace.lap("checks recorded");
    }
    trace.lap("done");
    Ok(Loaded {
        cu_ctx: ctx.cu_ctx(),
        _module: module,
        raw_module,
        global_symbols: global_symbols.into_boxed_slice(),
        functions: functions.into_boxed_slice(),
        from_disk_cache,
        order: (!spec.globals.is_empty()).then(Default::default),
    })
}

/// What an NVRTC-path load records in its cubin's cache entry once its checks passed.
struct CheckRecord {
    /// The cache file.
    file: std::path::PathBuf,
    cubin: Vec<u8>,
    symbols: Vec<String>,
    /// [`crate::module::typecheck::checks_mark`] of the module.
    mark: Vec<u8>,
}

/// The kernel and global symbols a build-time compiler recorded.
fn built_symbols(spec: &ModuleSpec) -> std::result::Result<(Vec<String>, Vec<String>), String> {
    let mut symbols = Vec::with_capacity(spec.kernels.len());
    for k in spec.kernels {
        let Some(symbol) = k.symbol else {
            return Err(format!("kernel `{}` has no symbol in the embedded image", k.name));
        };
        symbols.push(symbol.to_string());
    }
    let globals = spec.globals.iter().map(|g| g.symbol.unwrap_or(g.name).to_string()).collect();
    Ok((symbols, globals))
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

/// Loads `image` (a fatbin or cubin) as a cudarc module. On failure the image is loaded once more
/// with an error-log buffer, so a failed PTX JIT says why.
pub(crate) fn load_module(
    ctx: &Arc<CudaContext>,
    image: &[u8],
) -> std::result::Result<Arc<CudaModule>, (sys::CUresult, String)> {
    // cudarc takes the image by value; the driver reads fatbin headers with 8-byte loads.
    let copy = image.to_vec();
    if !(copy.as_ptr() as usize).is_multiple_of(8) {
        return Err((sys::CUresult::CUDA_ERROR_INVALID_IMAGE, "the allocator returned an unaligned buffer".into()));
    }
    match ctx.load_module(Ptx::from_binary(copy)) {
        Ok(m) => Ok(m),
        Err(e) => {
            let log = match load_raw(image) {
                Ok(module) => {
                    // SAFETY: loaded just now in the current context and not used.
                    unsafe { sys::cuModuleUnload(module) };
                    String::new()
                }
                Err((_, log)) => log,
            };
            Err((e.0, log))
        }
    }
}

pub(crate) fn with_log(code: sys::CUresult, log: &str) -> String {
    if log.is_empty() {
        DriverCode(code).to_string()
    } else {
        format!("{}\n{log}", DriverCode(code))
    }
}

/// Loads a cubin as a raw driver module (for run-time programs, which own and unload theirs),
/// with the JIT error log on failure.
pub(crate) fn load_raw(image: &[u8]) -> std::result::Result<sys::CUmodule, (sys::CUresult, String)> {
    let mut aligned = vec![0u64; image.len().div_ceil(8)];
    // SAFETY: `aligned` has room for `image.len()` bytes; the regions do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr() as *mut u8, image.len()) };
    load_image_with_log(aligned.as_ptr() as *const c_void)
}

/// `cuModuleLoadDataEx` with an error-log buffer.
fn load_image_with_log(image: *const c_void) -> std::result::Result<sys::CUmodule, (sys::CUresult, String)> {
    let mut log = vec![0u8; 8192];
    let mut options =
        [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: `image` points at a complete, aligned fatbin/cubin that outlives the call; the
    // option arrays have matching lengths and the log buffer outlives the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(&mut module, image, options.len() as u32, options.as_mut_ptr(), values.as_mut_ptr())
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(module)
    } else {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        Err((r, String::from_utf8_lossy(&log[..end]).trim().to_string()))
    }
}

/// A C string for a driver call, or a message naming the bad name.
pub(crate) fn c_string(s: &str) -> std::result::Result<CString, String> {
    CString::new(s).map_err(|_| format!("name `{s}` contains a NUL byte"))
}

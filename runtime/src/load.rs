//! Loading one module on one device: the slow path behind the first launch there.

use crate::error::{DriverCode, Error, Result};
use crate::module::{c_string, Image, Loaded, ModuleSpec};
use cudarc::driver::{sys, CudaContext};
use std::ffi::c_void;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

pub(crate) fn load(spec: &'static ModuleSpec, ctx: &Arc<CudaContext>) -> Result<Loaded> {
    let device = ctx.ordinal();
    let load_error = |cause: String, fix: Option<String>| {
        let (major, minor) = ctx.compute_capability().unwrap_or((0, 0));
        Error::Load {
            origin: spec.origin,
            device,
            device_name: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
            arch: (major * 10 + minor) as u32,
            cause,
            fix,
        }
    };
    ctx.bind_to_thread().map_err(|e| Error::Driver { call: "cuCtxSetCurrent", device, cause: DriverCode(e.0) })?;
    let (major, minor) = ctx.compute_capability()?;
    let arch = (major * 10 + minor) as u32;

    let (module, symbols, global_symbols, from_disk_cache) = match &spec.image {
        Image::Fatbin { bytes, targets, compiler } => {
            let module = load_image(bytes.as_ptr() as *const c_void).map_err(|(code, log)| {
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
                load_error(with_log(code, &log), fix)
            })?;
            let symbols = spec.kernels.iter().map(|k| k.symbol.to_string()).collect();
            let globals: Vec<String> = spec.globals.iter().map(|g| g.symbol.to_string()).collect();
            (module, symbols, globals, false)
        }
        Image::Source { source, options, headers, .. } => {
            // Kernels first, then globals: NVRTC lowers both kinds of name expression.
            let exprs: Vec<&str> = spec
                .kernels
                .iter()
                .map(|k| k.name_expression)
                .chain(spec.globals.iter().map(|g| g.name_expression))
                .collect();
            let compiled = crate::nvrtc::compile(spec.origin, source, options, headers, &exprs, arch)?;
            let module = load_image(compiled.cubin.as_ptr() as *const c_void)
                .map_err(|(code, log)| load_error(with_log(code, &log), None))?;
            let mut symbols = compiled.symbols;
            let globals = symbols.split_off(spec.kernels.len());
            (module, symbols, globals, compiled.from_cache)
        }
    };

    let mut functions = Vec::with_capacity(spec.kernels.len());
    let mut limits = Vec::with_capacity(spec.kernels.len());
    let mut smem = Vec::with_capacity(spec.kernels.len());
    for (k, symbol) in spec.kernels.iter().zip(&symbols) {
        let name = c_string(symbol).map_err(|e| load_error(e, None))?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: `module` is a live module of the current context; `name` is a valid C string.
        let r = unsafe { sys::cuModuleGetFunction(&mut f, module, name.as_ptr()) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(load_error(
                format!("kernel `{}` (symbol `{symbol}`) not found in the module: {}", k.name, DriverCode(r)),
                None,
            ));
        }
        if matches!(spec.image, Image::Source { .. }) {
            // The nvcc path was checked against PTX at build time; NVRTC code only exists now.
            check_params(spec, k, f)?;
        }
        use sys::CUfunction_attribute::*;
        // A limit the driver cannot report is not checked (u32::MAX), rather than failing the load.
        let limit = |a| crate::control::attr(f, a).unwrap_or(u32::MAX);
        limits.push(limit(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
        smem.push(AtomicU32::new(limit(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)));
        functions.push(f);
    }
    Ok(Loaded {
        cu_ctx: ctx.cu_ctx(),
        _ctx: ctx.clone(),
        module,
        global_symbols: global_symbols.into_boxed_slice(),
        functions: functions.into_boxed_slice(),
        max_threads: limits.into_boxed_slice(),
        max_dyn_smem: smem.into_boxed_slice(),
        from_disk_cache,
    })
}

/// Checks the loaded kernel's parameter layout against what the launcher packs. The macro checks
/// this against PTX at build time on the nvcc path; this catches the NVRTC path, where the code is
/// only compiled now.
fn check_params(spec: &ModuleSpec, k: &crate::module::KernelSpec, f: sys::CUfunction) -> Result<()> {
    // Nothing to check with on drivers older than CUDA 12.4 (no cuFuncGetParamInfo).
    let Some(info) = crate::params::param_info(f) else {
        return Ok(());
    };
    let sizes: Vec<u32> = info.iter().map(|&(_, size)| size as u32).collect();
    if sizes != k.param_sizes {
        return Err(Error::Signature {
            kernel: k.name,
            origin: spec.origin,
            detail: format!(
                "the compiled kernel takes parameters of {sizes:?} bytes but the launcher was generated for \
                 {:?}; a typedef or macro changed a parameter type: check the signature",
                k.param_sizes
            ),
        });
    }
    Ok(())
}

pub(crate) fn with_log(code: sys::CUresult, log: &str) -> String {
    if log.is_empty() {
        DriverCode(code).to_string()
    } else {
        format!("{}\n{log}", DriverCode(code))
    }
}

/// `cuModuleLoadDataEx` with an error-log buffer, so a failed PTX JIT says why.
pub(crate) fn load_image(image: *const c_void) -> std::result::Result<sys::CUmodule, (sys::CUresult, String)> {
    let mut log = vec![0u8; 8192];
    let mut options =
        [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: `image` points at a complete fatbin/cubin embedded for the life of the program (or a
    // live Vec); the option arrays have matching lengths and the log buffer outlives the call.
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

//! Images into driver modules: loading a fatbin or cubin (in place, or through cudarc), the
//! error log of a failed PTX JIT, and looking a kernel up by its symbol.

use crate::error::DriverCode;
use cudarc::driver::{sys, CudaContext, CudaModule};
use cudarc::nvrtc::Ptx;
use std::ffi::{c_void, CString};
use std::sync::Arc;

/// Loads `image` (a fatbin or cubin) as a cudarc module (a copy: cudarc takes the image by
/// value). On failure the image is loaded once more with an error-log buffer, so a failed PTX JIT
/// says why.
pub(crate) fn load_module(
    ctx: &Arc<CudaContext>,
    image: &[u8],
) -> std::result::Result<Arc<CudaModule>, (sys::CUresult, String)> {
    load_module_vec(ctx, image.to_vec()).map_err(|(code, log)| match load_raw(image) {
        Ok(module) => {
            // SAFETY: loaded just now in the current context and not used.
            unsafe { sys::cuModuleUnload(module) };
            (code, log)
        }
        Err((_, log)) => (code, log),
    })
}

/// [`load_module`] of a cubin the caller owns, handed to cudarc without a copy. A failure carries
/// no log: the driver writes one only for a PTX JIT, and a cubin is SASS.
pub(crate) fn load_module_vec(
    ctx: &Arc<CudaContext>,
    image: Vec<u8>,
) -> std::result::Result<Arc<CudaModule>, (sys::CUresult, String)> {
    // The driver reads fatbin and cubin headers with 8-byte loads.
    if !(image.as_ptr() as usize).is_multiple_of(8) {
        return Err((sys::CUresult::CUDA_ERROR_INVALID_IMAGE, "the allocator returned an unaligned buffer".into()));
    }
    ctx.load_module(Ptx::from_binary(image)).map_err(|e| (e.0, String::new()))
}

/// Loads a static image in place: the driver reads the bytes in the binary (no copy). On
/// failure the image is loaded once more with an error-log buffer, so a failed PTX JIT says why.
pub(crate) fn load_in_place(image: &'static [u8]) -> std::result::Result<sys::CUmodule, (sys::CUresult, String)> {
    // The image constructors promise 8-byte alignment; checked, since the driver would read
    // past a misaligned header.
    if !(image.as_ptr() as usize).is_multiple_of(8) {
        return Err((sys::CUresult::CUDA_ERROR_INVALID_IMAGE, "the embedded image is not 8-byte aligned".into()));
    }
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: a complete, 8-byte aligned image (the image constructors' contract, alignment
    // checked above) that lives for the whole process; a valid out-pointer.
    let r = unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr() as *const c_void) };
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(module);
    }
    match load_image_with_log(image.as_ptr() as *const c_void) {
        Ok(module) => {
            // SAFETY: loaded just now in the current context and not used.
            unsafe { sys::cuModuleUnload(module) };
            Err((r, String::new()))
        }
        Err(e) => Err(e),
    }
}

/// `cuModuleGetFunction` of `symbol` in `module`, without an allocation for names of up to 255
/// bytes; the error says why (for "kernel `k` (symbol `s`) ...").
pub(crate) fn get_function(module: sys::CUmodule, symbol: &str) -> std::result::Result<sys::CUfunction, String> {
    if symbol.contains('\0') {
        return Err("has a NUL byte in its symbol".into());
    }
    let mut buf = [0u8; 256];
    let heap;
    let name = if symbol.len() < buf.len() {
        buf[..symbol.len()].copy_from_slice(symbol.as_bytes());
        buf.as_ptr() as *const std::ffi::c_char
    } else {
        heap = c_string(symbol)?;
        heap.as_ptr()
    };
    let mut f: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: a live module of the current context; `name` is NUL-terminated (the buffer is
    // zeroed past the symbol, or a CString) and outlives the call; a valid out-pointer.
    let r = unsafe { sys::cuModuleGetFunction(&mut f, module, name) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(format!("not found in the module: {}", DriverCode(r)));
    }
    Ok(f)
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

//! What the driver knows about a loaded kernel's parameter list (count, offsets, sizes), used to
//! check argument lists where the compiler could not: NVRTC code compiled at run time.

use cudarc::driver::sys;
use std::ffi::c_void;
use std::sync::OnceLock;

type ParamCountFn = unsafe extern "C" fn(sys::CUfunction, *mut usize) -> sys::CUresult;

/// The driver's CUDA version (e.g. 13000), 0 when it cannot be read. Asked once per process.
pub(crate) fn driver_version() -> i32 {
    static VERSION: OnceLock<i32> = OnceLock::new();
    *VERSION.get_or_init(|| {
        let mut v = 0;
        // SAFETY: valid out-pointer; callers only get here with the driver library loaded.
        let r = unsafe { sys::cuDriverGetVersion(&mut v) };
        if r == sys::CUresult::CUDA_SUCCESS {
            v
        } else {
            0
        }
    })
}

/// `cuFuncGetParamCount` when this driver has it (newer than the CUDA 13.0 headers cudarc is built
/// against), resolved through `cuGetProcAddress` so an older driver is a `None`, not an abort.
fn param_count_fn() -> Option<ParamCountFn> {
    static FUNCTION: OnceLock<Option<ParamCountFn>> = OnceLock::new();
    *FUNCTION.get_or_init(|| {
        let version = driver_version();
        // cuGetProcAddress_v2 itself arrived with CUDA 12.0.
        if version < 12000 {
            return None;
        }
        let mut pfn: *mut c_void = std::ptr::null_mut();
        let mut status = sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        // SAFETY: a valid C string and out-pointers; the driver is CUDA 12.0 or newer, so the entry
        // point exists. Asking at the driver's own version yields its newest ABI of the symbol.
        let r = unsafe {
            sys::cuGetProcAddress_v2(
                c"cuFuncGetParamCount".as_ptr(),
                &mut pfn,
                version,
                sys::CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT as u64,
                &mut status,
            )
        };
        if r != sys::CUresult::CUDA_SUCCESS
            || status != sys::CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS
            || pfn.is_null()
        {
            return None;
        }
        // SAFETY: the driver returned its `cuFuncGetParamCount`, whose C signature is
        // `CUresult cuFuncGetParamCount(CUfunction func, size_t* paramCount)`.
        Some(unsafe { std::mem::transmute::<*mut c_void, ParamCountFn>(pfn) })
    })
}

/// A kernel can take at most 32764 bytes of parameters, so never more parameters than this.
const MAX_PARAMS: usize = 32764;

/// `(offset, size)` in bytes of every parameter of `f`, or `None` when the driver cannot say
/// (older than CUDA 12.4, which introduced `cuFuncGetParamInfo`).
///
/// The count comes from `cuFuncGetParamCount` where the driver has it, else from `cubin_count`
/// (read from the kernel's cubin, see `cubin.rs`), so only existing parameters are queried and no
/// driver call fails. With neither, indices are queried until one fails (that last, failing query
/// shows up as an API error under compute-sanitizer).
pub(crate) fn param_info(f: sys::CUfunction, cubin_count: Option<usize>) -> Option<Vec<(usize, usize)>> {
    if driver_version() < 12040 {
        return None;
    }
    let info = |i: usize| {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: `f` is a live function handle (caller's contract); out-pointers are valid.
        let r = unsafe { sys::cuFuncGetParamInfo(f, i, &mut offset, &mut size) };
        (r == sys::CUresult::CUDA_SUCCESS).then_some((offset, size))
    };
    let count = param_count_fn()
        .and_then(|count_fn| {
            let mut n = 0usize;
            // SAFETY: `count_fn` is the driver's cuFuncGetParamCount; `f` is live; `n` is a valid out-pointer.
            let r = unsafe { count_fn(f, &mut n) };
            (r == sys::CUresult::CUDA_SUCCESS).then_some(n)
        })
        .or(cubin_count.filter(|&n| n <= MAX_PARAMS));
    match count {
        Some(n) => (0..n).map(info).collect(),
        None => Some((0..MAX_PARAMS).map_while(info).collect()),
    }
}

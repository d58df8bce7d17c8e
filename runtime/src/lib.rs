//! Runtime of [cuda-embed](https://docs.rs/cuda-embed): the module registry behind every
//! `cuda_kernel!`, the launch fast path, the NVRTC fallback with its disk cache, the CUDA
//! by-value types and the one [`Error`] type.
//!
//! Users depend on the `cuda-embed` facade, which re-exports everything here.

#![warn(missing_docs)]

mod control;
mod error;
mod global;
mod load;
mod module;
pub mod nvrtc;
mod params;
mod program;
mod types;

pub use control::{ClusterDim, KernelAttributes};
pub use cudarc;
pub use cudarc::driver::{CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig};
pub use error::{DriverCode, Error, Result};
pub use global::{Global, GlobalSpec};
pub use module::{BuildPath, Image, KernelSpec, Module, ModuleSpec, FAST_DEVICE_SLOTS};
pub use program::{Arg, Program, ProgramKernel, ProgramModule};
pub use types::*;

use std::sync::Arc;

/// Whether a CUDA driver library can be loaded on this machine. Never panics.
///
/// ```
/// let _ = cuda_embed_runtime::driver_available();
/// ```
pub fn driver_available() -> bool {
    // SAFETY: only tries to dlopen the driver library; no driver function is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Opens (retains) the primary context of GPU `ordinal`, returning an [`Error`] — never a
/// panic — when there is no driver or no such device.
///
/// Prefer this over `CudaContext::new`, which panics when `libcuda` is missing.
///
/// ```no_run
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
pub fn context(ordinal: usize) -> Result<Arc<CudaContext>> {
    if !driver_available() {
        return Err(Error::NoDriver { detail: "libcuda.so could not be loaded".into() });
    }
    let count = match CudaContext::device_count() {
        Ok(n) => n.max(0) as usize,
        Err(e) => return Err(Error::NoDevice { ordinal, count: 0, cause: DriverCode(e.0) }),
    };
    if ordinal >= count {
        let cause = DriverCode(cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_DEVICE);
        return Err(Error::NoDevice { ordinal, count, cause });
    }
    CudaContext::new(ordinal).map_err(|e| Error::NoDevice { ordinal, count, cause: DriverCode(e.0) })
}

/// Support for generated code. Not a public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::types::check_layout;
    pub use crate::types::DeviceSafe;
    pub use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceRepr};
    pub use std::ffi::c_void;

    /// Compile-time proof that `T` is marked device-safe.
    pub const fn assert_device_safe<T: DeviceSafe>() {}
}

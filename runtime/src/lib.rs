//! Runtime of [cuda-embed](https://docs.rs/cuda-embed): the module registry behind every
//! `cuda_kernel!`, the launch fast path, the NVRTC fallback with its disk cache, the CUDA
//! by-value types and the one [`Error`] type.
//!
//! Users depend on the `cuda-embed` facade, which re-exports everything here.

#![warn(missing_docs)]

// Layered bottom-up: each module uses only those above it in this list.
mod arg; // the dynamic argument list of run-time kernels
mod arg_impls; // KernelArg/NodeArg impls for buffers and tuples (one table for both)
pub mod args; // typed argument lists
mod buffer; // DeviceBuffer, DeviceBufferMut
mod cubin; // parameter counts read from a cubin
pub mod elementwise; // support of elementwise kernels: cached launch configuration, length checks
pub mod elementwise_program; // the run-time twin of elementwise_kernel! (NVRTC, checked arguments)
mod error; // Error, DriverCode
mod global; // Global<T>
pub mod graph; // CUDA graphs: typed nodes, inferred dependencies
mod kernel; // kernel handles (KernelRef, Kernel<Sig>)
mod launch; // the one launch routine
mod limits; // launch limits and attribute readers
mod load; // one module on one device
mod module; // the registry: lazy per-device loading
pub mod ndarray; // N-D views (NdView, NdViewMut) and the planning of N-D launches
pub mod nvrtc; // run-time compilation and its disk cache
mod order; // stream ordering of Global copies and launches
mod params; // the driver's view of a kernel's parameter list
mod program;
mod program_module;
#[doc(hidden)]
pub mod reduce; // scratch, plans and checks of reduction launchers
mod reduction_program; // run-time reductions (ReductionProgram, Reduction)
mod sigcheck; // run-time kernels checked against a C signature
mod spec; // what cuda_kernel! embeds (ModuleSpec, Image, KernelSpec, GlobalSpec)
pub mod texture;
mod toolkit; // CudaExtent, CudaPitchedPtr, CudaPos: the runtime's by-value structs
mod typecheck; // first-load type check, cubin choice
mod typed_arg; // TypedArg, CudaType
mod types; // by-value CUDA types, DeviceSafe // run-time Program / ProgramModule / ProgramKernel // CUDA arrays, texture and surface objects (uses args, graph, types)

pub use arg::Arg;
pub use buffer::{DeviceBuffer, DeviceBufferMut};
pub use cudarc;
pub use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig};
pub use elementwise_program::{ElementwiseKernel, ElementwiseProgram};
pub use error::{DriverCode, Error, Result};
pub use global::Global;
pub use graph::{Graph, GraphExec, KernelNode, Node, NodeKind};
pub use kernel::{Kernel, KernelRef};
pub use launch::{ClusterDim, LaunchKind};
pub use limits::KernelAttributes;
pub use module::Module;
pub use ndarray::{NdInput, NdOutput, NdView, NdViewMut};
pub use program::{Program, ProgramKernel, ProgramModule};
pub use reduction_program::{Reduction, ReductionProgram};
pub use spec::BuildPath;
pub use texture::{CudaArray, Surface, Texture, TextureDesc};
pub use toolkit::{CudaExtent, CudaPitchedPtr, CudaPos};
pub use typed_arg::{CudaType, TypedArg, TypedArgKind};
pub use types::{
    bf16, f16, AnyBitPattern, Bf162, Char1, Char2, Char3, Char4, Complex32, Complex64, DeviceSafe, Double1, Double2,
    Double3, Double4, FieldLayout, Float1, Float2, Float3, Float4, Half2, Int1, Int2, Int3, Int4, Long1, Long2, Long3,
    Long4, LongLong1, LongLong2, LongLong3, LongLong4, RawDevicePtr, Short1, Short2, Short3, Short4, SurfaceObject,
    TextureObject, UChar1, UChar2, UChar3, UChar4, UInt1, UInt2, UInt3, UInt4, ULong1, ULong2, ULong3, ULong4,
    ULongLong1, ULongLong2, ULongLong3, ULongLong4, UShort1, UShort2, UShort3, UShort4, F8E4M3, F8E5M2,
};

use std::sync::Arc;

/// Whether a CUDA driver library can be loaded on this machine. Never panics.
///
/// With the `dynamic-linking` feature (or when another crate, such as candle, makes cudarc link
/// the driver) the process could not have started without `libcuda`, so this is `true`.
///
/// ```
/// let _ = cuda_embed_runtime::driver_available();
/// ```
pub fn driver_available() -> bool {
    #[cfg(feature = "dynamic-loading")]
    {
        // SAFETY: only tries to dlopen the driver library; no driver function is called.
        unsafe { cudarc::driver::sys::is_culib_present() }
    }
    #[cfg(not(feature = "dynamic-loading"))]
    {
        true
    }
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
    pub use crate::args::{check_device, In, InAny, Out, OutAny};
    pub use crate::elementwise::{common_length, AutoConfig};
    pub use crate::ndarray::{AxesPlan, AxesRoute, NdInput, NdLaunch, NdOutput};
    pub use crate::reduce;
    pub use crate::spec::{GlobalSpec, Image, KernelSpec, ModuleSpec, ParamCheck};
    pub use crate::texture::{object_arg, ObjectArg};
    pub use crate::types::{check_layout, DeviceSafe};
    pub use cuda_embed_build::elementwise::{aligned, vector_width};
    pub use cuda_embed_build::reduction::PlanKind;
    pub use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice};
    pub use std::ffi::c_void;

    /// Compile-time proof that `T` is marked device-safe.
    pub const fn assert_device_safe<T: DeviceSafe>() {}

    /// A plain launch without the launch-limit checks; exists only so the launch benchmark can
    /// measure what the checks cost. Invalid configurations reach the driver and come back as its
    /// error code.
    ///
    /// # Safety
    /// As for [`KernelRef::launch_raw`](crate::KernelRef::launch_raw).
    #[inline]
    pub unsafe fn launch_unchecked(
        kernel: crate::KernelRef,
        stream: &crate::CudaStream,
        cfg: &crate::LaunchConfig,
        args: &mut [*mut c_void],
    ) -> crate::Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { kernel.launch_unchecked(stream, cfg, args) }
    }
}

//! Runtime of [cuda-embed](https://docs.rs/cuda-embed): the module registry behind every
//! `cuda_kernel!`, the launch fast path, the NVRTC fallback with its disk cache, the CUDA
//! by-value types and the one [`Error`] type.
//!
//! Users depend on the `cuda-embed` facade, which re-exports everything here.

#![warn(missing_docs)]

// One folder per capability; each uses only those above it in this list.
pub mod args; // what a launch takes: typed argument lists, the dynamic list, buffers, typed values
pub mod bind; // the one checked path from operands to addresses: device, extent, aliasing, configuration
pub mod device; // `cuda_embed::device`: what Rust-syntax kernels call, and their bounds-check reports
mod driver; // thin checked driver calls: bind a context, read attributes, waits (the bottom)
pub mod elementwise; // elementwise kernels: launch support and the run-time ElementwiseProgram
mod error; // Error, DriverCode
pub mod future; // GPU work as futures: awaited launches, copies through pinned memory, synchronisation
pub mod graph; // CUDA graphs: typed nodes, inferred dependencies
mod launch; // the one launch routine, its limits, kernel handles
pub mod link; // run-time linking: Program::compile_to, ObjectCode, Linker (cuLink / nvJitLink)
mod module; // what cuda_kernel! embeds and how it is loaded: spec, load, registry, globals
pub mod ndarray; // N-D views (NdView, NdViewMut) and the planning of N-D launches
pub mod nvtx; // NVTX ranges for profilers: `nvtx::range`, and per launch with the `nvtx` feature
mod program; // run-time programs: Program, ProgramModule, ProgramKernel, NVRTC and its cache
#[doc(hidden)]
pub mod reduction; // reductions: scratch, plans, checks, the run-time ReductionProgram
pub mod tensor_map; // TMA tensor maps (CUtensorMap) made from N-D views
pub mod texture; // CUDA arrays, texture and surface objects
mod toolkit; // CudaExtent, CudaPitchedPtr, CudaPos: the runtime's by-value structs
pub mod tune; // autotuning: the variant choice per device and key, its records
mod types; // by-value CUDA types, DeviceSafe

pub use elementwise::program as elementwise_program;
pub use program::nvrtc; // run-time compilation and its disk cache

/// The disk cache of compiled kernels (the macro's nvcc/NVRTC builds and run-time NVRTC cubins):
/// where it is, what it holds, and emptying it; CuPy's `clear_memo` and cache directory.
///
/// It is capped at 2 GiB by default (`CUDA_EMBED_CACHE_MAX`, e.g. `512M`, `0` for no cap) with
/// least-recently-used eviction; a corrupt entry is reported and rebuilt, never loaded; an
/// unwritable directory means compiling without caching, with one warning. Eviction and
/// [`clear`](cache::clear) delete only files the cache wrote (recognised by name and entry
/// header), never other files in the same directories. Modules already
/// loaded in a running process stay loaded after [`clear`](cache::clear). On the command line:
/// `cargo run -p cuda-embed --bin cuda-embed-cache -- usage` (or `clear`).
///
/// ```no_run
/// let before = cuda_embed_runtime::cache::usage();
/// println!("{before}"); // ~/.cache/cuda-embed: 12 entries, 3.4 MiB (cap 2048.0 MiB)
/// let freed = cuda_embed_runtime::cache::clear()?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub mod cache {
    pub use cuda_embed_source::cache::{clear, max_bytes, root, usage, Usage, MAX_VAR};
}

pub use args::buffer::{DeviceBuffer, DeviceBufferMut};
pub use args::dynamic::Arg;
pub use args::typed::{CudaType, TypedArg, TypedArgKind};
pub use cudarc;
pub use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchConfig};
pub use device::report::synchronize;
pub use elementwise::program::{ElementwiseKernel, ElementwiseProgram};
pub use error::{DriverCode, Error, Result};
pub use future::GpuFuture;
pub use graph::{Condition, ConditionalHandle, Graph, GraphExec, KernelNode, Node, NodeKind};
pub use launch::kernel::Kernel;
pub use launch::limits::KernelAttributes;
pub use launch::{ClusterDim, LaunchKind};
pub use module::global::Global;
pub use module::kernel::KernelRef;
pub use module::registry::Module;
pub use module::spec::BuildPath;
pub use ndarray::{NdInput, NdNodeInput, NdNodeOutput, NdOutput, NdView, NdViewMut};
pub use program::{Program, ProgramKernel, ProgramModule};
pub use reduction::program::{Reduction, ReductionProgram};
pub use tensor_map::{RawTensorMap, TensorMap, TensorMapMut};
pub use texture::{CudaArray, Surface, Texture, TextureDesc};
pub use toolkit::{CudaExtent, CudaPitchedPtr, CudaPos};
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

/// The primary context of GPU `ordinal`, returning an [`Error`] — never a panic — when there
/// is no driver or no such device. The context is made current on the calling thread.
///
/// Every call for one device returns the same handle (clones of one `Arc`) for as long as any
/// clone of it lives, so what cudarc keeps per handle is shared by all of them: whether it
/// orders buffers between streams (its event tracking, and the switch
/// `disable_event_tracking` turns off for every clone), its deferred error. No handle is kept
/// alive by this function: once every clone is dropped, the primary context is released as
/// cudarc releases it (a module loaded by a `cuda_kernel!` launch holds it for the rest of the
/// process), and the next call opens it again. Calling it in a loop costs a lock, not a new
/// handle.
///
/// Prefer this over `CudaContext::new`, which panics when `libcuda` is missing and makes a
/// separate handle (with separate state) at every call.
///
/// ```no_run
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// assert!(std::sync::Arc::ptr_eq(&ctx, &cuda_embed_runtime::context(0)?));
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
pub fn context(ordinal: usize) -> Result<Arc<CudaContext>> {
    use driver::shared::PRIMARY;
    if let Some(ctx) = PRIMARY.live(ordinal) {
        // As cudarc's `CudaContext::new` leaves a new handle: current on this thread.
        driver::bind(&ctx)?;
        return Ok(ctx);
    }
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
    let (ctx, opened) = PRIMARY.get_or_open(ordinal, || {
        CudaContext::new(ordinal).map_err(|e| Error::NoDevice { ordinal, count, cause: DriverCode(e.0) })
    })?;
    if opened {
        // What the first load of an embedded module on this device reads (once per process and
        // device): read here, off the first launch.
        module::load::prepare(&ctx, &first_load_elsewhere());
    } else {
        // Opened by another thread meanwhile: current here too.
        driver::bind(&ctx)?;
    }
    Ok(ctx)
}

/// How the loader builds images at first use (NVRTC, the linker): [`Builder`], handed to
/// `module` here so that loading knows only the trait.
pub(crate) static BUILD: &dyn module::build::Build = &Builder;

/// The loader's builder ([`module::build::Build`]): NVRTC (`program`) for a module compiled at
/// first use, the run-time linker (`link`) for separately compiled units. Made here, above both,
/// so that neither capability imports the other and loading knows only the trait.
struct Builder;

impl module::build::Build for Builder {
    fn compile(
        &self,
        origin: &'static str,
        source: &str,
        own_len: usize,
        options: &[&str],
        headers: &[(&str, &str)],
        exprs: &[&str],
        digest: Option<&str>,
        arch: u32,
    ) -> Result<module::build::Built> {
        program::build_at_first_use(origin, source, own_len, options, headers, exprs, digest, arch)
    }

    fn link(
        &self,
        spec: &module::spec::ModuleSpec,
        units: &[module::spec::LinkedUnit],
        headers: &[(&str, &str)],
        lto: bool,
        ctx: &Arc<CudaContext>,
    ) -> Result<(Vec<u8>, Vec<String>)> {
        link::link_units(spec, units, headers, lto, ctx)
    }
}

/// The code outside `module` that a first launch runs (the launch's full path, and the NVRTC disk
/// cache's hit path of a `compiler = "nvrtc"` module), for `module::load::prepare` to map ahead.
pub(crate) fn first_load_elsewhere() -> [usize; 2] {
    [launch::kernel::launch_checked_address(), program::nvrtc::compile_module as *const () as usize]
}

/// Support for generated code. Not a public API: may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::args::{In, InAny, Out, OutAny};
    pub use crate::bind;
    pub use crate::bind::capture::kernel_binding;
    pub use crate::device::report as rust_kernel;
    pub use crate::elementwise::{common_length, AutoConfig};
    pub use crate::graph::LaunchCondition;
    pub use crate::graph::NdUpdate;
    pub use crate::module::spec::{GlobalSpec, Image, KernelSpec, LinkedUnit, ModuleSpec, ParamCheck};
    pub use crate::ndarray::{AxesPlan, AxesRoute, NdInput, NdLaunch, NdNodeInput, NdNodeOutput, NdOutput, NodeMemory};
    pub use crate::reduction as reduce;
    pub use crate::tensor_map::TensorMapArg;
    pub use crate::texture::{object_arg, ObjectArg};
    pub use crate::types::{check_layout, DeviceSafe};
    pub use cuda_embed_source::elementwise::{aligned, flat_mode, vector_width};
    pub use cuda_embed_source::reduction::PlanKind;
    pub use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice};
    pub use std::ffi::c_void;

    /// Compile-time proof that `T` is marked device-safe.
    pub const fn assert_device_safe<T: DeviceSafe>() {}

    /// `false` for every type: the stand-in that `cuda_kernel!` generates for a by-value struct it
    /// could generate no Rust twin for has an inherent `__CUDA_EMBED_NO_TWIN` of `true`, which
    /// wins over this one. The user's own type of the struct's name shadows the stand-in (a glob
    /// import), so the generated `const` check panics, with the macro's message naming the
    /// struct, exactly when the user wrote none.
    pub trait NoTwinFallback {
        /// Whether this type is the macro's stand-in for a struct without a Rust twin.
        const __CUDA_EMBED_NO_TWIN: bool = false;
    }
    impl<T: ?Sized> NoTwinFallback for T {}

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

//! # cuda-embed
//!
//! CUDA C++ kernels written inline in Rust. [`cuda_kernel!`] parses each `__global__` function's
//! C++ signature and generates a typed Rust launcher, so a wrong argument type or count is a
//! compile error. The source is compiled when your crate builds (nvcc, into a fatbin embedded in
//! the binary; with no nvcc, by NVRTC at first use), loaded lazily on each GPU at first use, and
//! launched through `cuLaunchKernel` with the arguments packed on the stack.
//!
//! ```no_run
//! use cuda_embed::{cuda_kernel, LaunchConfig};
//!
//! cuda_kernel!(r#"
//!     extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
//!         size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
//!         if (i < n) y[i] = a * x[i] + y[i];
//!     }
//! "#);
//!
//! fn main() -> cuda_embed::Result<()> {
//!     let ctx = cuda_embed::context(0)?; // an Error, not a panic, when there is no GPU
//!     let stream = ctx.default_stream();
//!     let n = 1 << 20;
//!     let x = stream.clone_htod(&vec![1.0f32; n])?;
//!     let mut y = stream.alloc_zeros::<f32>(n)?;
//!     unsafe { saxpy::launch(&stream, LaunchConfig::for_num_elems(n as u32), 2.0, &x, &mut y, n)? };
//!     Ok(())
//! }
//! ```
//!
//! ## The macro
//!
//! `cuda_kernel!(SOURCE | file = "kernels/x.cu" [, archs = [80, 90]] [, instances = ["axpy<float>"]]
//! [, defines = ["N=4"]] [, std = "c++17"] [, fast_math = true] [, maxrregcount = 64]
//! [, lineinfo = true] [, include_dirs = ["include"]] [, options = ["..."]] [, compiler = "auto"])`
//!
//! - `SOURCE`: a string literal (raw strings are easiest), or `file = "..."` relative to the crate
//!   root (cargo rebuilds when the file or a header it includes changes). Several kernels and
//!   `__device__` helpers in one source share one module, loaded once per device.
//! - `instances`: template instances to compile; `NAME::launch::<T, N>(...)` launches one (type
//!   parameters are Rust generics, integer/bool parameters const generics). An unlisted instance
//!   is a compile error.
//! - `__constant__`/`__device__` variables become `static NAME: Global<T>` handles
//!   ([`Global`]): write, read, address, per device.
//! - `defines`, `std`, `fast_math`, `maxrregcount`, `lineinfo`, `include_dirs`: typed compiler
//!   options, passed to nvcc and NVRTC alike.
//! - `archs`: GPU architectures to build SASS for; PTX is embedded for the lowest, so newer GPUs
//!   JIT it. Default: `CUDA_EMBED_ARCHS` (e.g. `80,90a`) when set, else `80, 90`.
//! - `options`: extra compiler options, passed to nvcc at build time and to NVRTC at run time
//!   alike. Nothing is added behind your back (no forced `-ftz`, no fast math).
//!
//! For each kernel `NAME` it generates `pub mod NAME` with `launch`, `launch_timed`,
//! `launch_cooperative`, `launch_cluster`, `launch_dependent` (programmatic dependent launch),
//! `KERNEL` (a typed [`Kernel`] value; `kernel::<T>()`
//! for templates), `function(&ctx)` (cudarc's [`CudaFunction`]), `attributes`, the shared-memory
//! and occupancy helpers, `NAME` and `module()`, and `node`/`update` for CUDA graphs
//! ([`Graph`]: typed nodes, dependencies inferred from the borrows). The [`cuda_kernel!`] page
//! documents every option and item.
//!
//! It works at module level and inside function bodies.
//!
//! ## Type mapping
//!
//! | CUDA parameter | Rust argument |
//! |---|---|
//! | `const T*` (`T` known) | `&impl` [`DeviceBuffer<T>`]: `&CudaSlice<T>`, `&CudaView<T>`, `&CudaViewMut<T>` |
//! | `T*` | `&mut impl` [`DeviceBufferMut<T>`]: `&mut CudaSlice<T>`, `&mut CudaViewMut<T>` |
//! | `const void*`, `void*`, pointers to opaque or user types | the same, for any element type |
//! | `T**` and deeper | [`RawDevicePtr`] |
//! | `bool`, `char`/`signed char`/`unsigned char`, `short`, `int`, `unsigned`, `long`, `long long`, `intN_t`, `uintN_t` | `bool`, `i8`/`i8`/`u8`, `i16`, `i32`, `u32`, `i64`, `i64`, `iN`, `uN` |
//! | `size_t`, `uintptr_t` / `ssize_t`, `ptrdiff_t`, `intptr_t` | `usize` / `isize` |
//! | `float`, `double` | `f32`, `f64` |
//! | `__half`, `__nv_bfloat16`, `__half2`, `__nv_bfloat162` | [`f16`](struct@f16), [`bf16`](struct@bf16), [`Half2`], [`Bf162`] |
//! | `__nv_fp8_e4m3`, `__nv_fp8_e5m2` | [`F8E4M3`], [`F8E5M2`] |
//! | `float4`, `int2`, `uchar4`, `double2`, `longlong2`, ... | [`Float4`], [`Int2`], [`UChar4`], [`Double2`], [`LongLong2`], ... |
//! | `cuComplex`, `cuDoubleComplex` | [`Complex32`], [`Complex64`] |
//! | `cudaExtent`, `cudaPitchedPtr`, `cudaPos` | [`CudaExtent`], [`CudaPitchedPtr`], [`CudaPos`] (fields checked against the toolkit's struct by the compiler probe) |
//! | `const __grid_constant__ CUtensorMap` | `&`[`TensorMap`] (the kernel reads through it) or `&mut `[`TensorMapMut`] (it may write), made from an [`NdView`]/[`NdViewMut`] and a box shape (see [`tensor_map`]; context checked, passed by value) |
//! | `cudaTextureObject_t`, `cudaSurfaceObject_t` | `&`[`Texture`], `&`[`Surface`] (owned objects over a [`CudaArray`] or a buffer, see [`texture`]; context checked), or a raw [`TextureObject`], [`SurfaceObject`] |
//! | `cudaGraphConditionalHandle`, `CUgraphConditionalHandle` | `&`[`Condition`] of the graph the node is in, in `NAME::node`/`NAME::update` only (the kernel sets it with `cudaGraphSetConditional`; a stream launch of such a kernel does not compile); the signature marker is [`ConditionalHandle`] |
//! | `struct P` by value | the `#[repr(C)]` twin `P` the macro generates from the compiler's layout (with a compiler at build time; members scalars, vectors, pointers or arrays of those), or your own `#[repr(C)]` type `P` (same name, in the invoking module, which wins) with `#[derive(Clone, Copy, DeviceSafe)]` (which replaces `unsafe impl DeviceSafe` + `unsafe impl DeviceRepr`) |
//!
//! `#[derive(DeviceSafe)]` accepts only `#[repr(C)]` structs whose fields are all `DeviceSafe`
//! (a reference, `Vec` or host pointer field is a compile error at that field) and records the
//! fields' names, offsets and sizes in [`DeviceSafe::LAYOUT`]: the macro checks the struct's size
//! and alignment against the compiled kernel, and the field layout lets a field order that differs
//! from the CUDA struct's be caught too. Declare the fields in the CUDA order, with the CUDA names.
//!
//! Qualifiers (`const` values, `__restrict__`, `volatile`, `__grid_constant__`) are understood.
//! Names the table does not know (`floatX`, `real_t`, `uint` from a header, `#define`d types) are
//! resolved by asking the compiler what the parameter's type is (see the crate README), and every
//! kernel's compiled parameter list is checked against the signature: a mismatch is a compile error.
//!
//! ## Errors
//!
//! Everything at run time returns [`Error`], which names the kernel, the device and the cause and
//! says what to do. Nothing panics when there is no driver or GPU: use [`context`] instead of
//! `CudaContext::new` (which panics when `libcuda` is missing, and makes a new handle, with state
//! of its own, at every call: [`context`] hands out one per device).
//!
//! ## Cargo features: how cudarc finds CUDA
//!
//! cudarc takes exactly one linking mode and one CUDA version for the whole program, so these are
//! cuda-embed features, passed on to cudarc:
//!
//! - `dynamic-loading` (default): libcuda and libnvrtc are opened at run time; a program starts
//!   on any machine and gets [`Error::NoDriver`] where there is no driver.
//! - `dynamic-linking`: they are linked at build time (the linker needs them; the program does not
//!   start without them). This is what candle's `cuda` feature selects: with candle, use
//!   `default-features = false, features = ["dynamic-linking"]` (`examples/candle`).
//! - `cuda-13000` (default), `cuda-13010` ... `cuda-13040`, `cuda-version-from-build-system` (asks
//!   nvcc): the CUDA version of cudarc's bindings. Leave all off when another crate picks one.
//!
//! With `dynamic-linking`, [`driver_available`] and [`nvrtc::is_available`] are always `true`.

#![warn(missing_docs)]

pub use cuda_embed_macros::{
    cuda_kernel, device, elementwise_kernel, fuse, kernel, kernels, reduction_kernel, DeviceSafe,
};
/// What Rust-syntax kernels (`#[cuda_embed::kernel]`) call: indices, barriers, shared memory,
/// atomics, warp shuffles and votes.
pub use cuda_embed_runtime::device;
/// GPU work as futures: awaited launches (`NAME::launch_async`), copies through pinned host
/// memory and stream synchronisation, under any executor ([`GpuFuture`]).
pub use cuda_embed_runtime::future;
/// CUDA graphs: [`Graph`], its node handles and argument traits.
pub use cuda_embed_runtime::graph;
/// Run-time linking: [`Program::compile_to`], [`link::ObjectCode`], [`link::Linker`].
pub use cuda_embed_runtime::link;
/// N-D views of device memory and the arithmetic of their shapes (`NdView`, `NdViewMut`).
pub use cuda_embed_runtime::ndarray;
/// Waits for a stream and reports the first out-of-range index of any bounds-checked
/// Rust-syntax kernel launched in its context (see [`mod@device`] and `#[cuda_embed::kernel]`).
pub use cuda_embed_runtime::synchronize;
/// TMA tensor maps made from N-D views: [`TensorMap`], [`TensorMapMut`] (`CUtensorMap` parameters).
pub use cuda_embed_runtime::tensor_map;
/// CUDA arrays, textures and surfaces: [`CudaArray`], [`Texture`], [`Surface`], [`TextureDesc`].
pub use cuda_embed_runtime::texture;
pub use cuda_embed_runtime::tune;
pub use cuda_embed_runtime::{
    args, cache, context, cudarc, driver_available, nvrtc, nvtx, Arg, BuildPath, ClusterDim, Condition,
    ConditionalHandle, CudaContext, CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceBuffer,
    DeviceBufferMut, DriverCode, ElementwiseKernel, ElementwiseProgram, Error, Global, GpuFuture, Graph, GraphExec,
    Kernel, KernelAttributes, KernelNode, KernelRef, LaunchConfig, LaunchKind, Module, Node, NodeKind, Program,
    ProgramKernel, ProgramModule, Result,
};
pub use cuda_embed_runtime::{CudaArray, Surface, Texture, TextureDesc};
pub use cuda_embed_runtime::{NdInput, NdOutput, NdView, NdViewMut};
pub use cuda_embed_runtime::{RawTensorMap, TensorMap, TensorMapMut};
// The CUDA runtime's plain structs kernels take by value (`cudaExtent` -> `CudaExtent`, ...).
pub use cuda_embed_runtime::{CudaExtent, CudaPitchedPtr, CudaPos};
// Run-time reductions (the twin of `reduction_kernel!`) and their typed arguments.
pub use cuda_embed_runtime::{CudaType, Reduction, ReductionProgram, TypedArg, TypedArgKind};
// The CUDA by-value types (`float4` -> `Float4`, `__half` -> `f16`, ...) and `DeviceSafe`.
/// The `DeviceSafe` trait (the derive of the same name is re-exported above from the macros).
pub use cuda_embed_runtime::DeviceSafe;
pub use cuda_embed_runtime::{
    bf16, f16, AnyBitPattern, Bf162, Char1, Char2, Char3, Char4, Complex32, Complex64, Double1, Double2, Double3,
    Double4, FieldLayout, Float1, Float2, Float3, Float4, Half2, Int1, Int2, Int3, Int4, Long1, Long2, Long3, Long4,
    LongLong1, LongLong2, LongLong3, LongLong4, RawDevicePtr, Short1, Short2, Short3, Short4, SurfaceObject,
    TextureObject, UChar1, UChar2, UChar3, UChar4, UInt1, UInt2, UInt3, UInt4, ULong1, ULong2, ULong3, ULong4,
    ULongLong1, ULongLong2, ULongLong3, ULongLong4, UShort1, UShort2, UShort3, UShort4, F8E4M3, F8E5M2,
};

/// Support for generated code. Not a public API: may change in any release.
#[doc(hidden)]
pub use cuda_embed_runtime::__private;

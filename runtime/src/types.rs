//! Rust twins of CUDA's by-value parameter types.
//!
//! Each type has exactly the size and alignment of its CUDA counterpart (checked by the tests
//! below and, for every kernel, against the compiled PTX by the macro). The generated launchers
//! take these types by value; `cudarc`'s [`DeviceRepr`](cudarc::driver::DeviceRepr) is implemented
//! for all of them so they can also live in device buffers.
//!
//! | CUDA | Rust |
//! |---|---|
//! | `char2`, `uchar4`, ... `int4`, `float3`, `double2`, `longlong2`, ... | [`Char2`], [`UChar4`], ... [`Int4`], [`Float3`], [`Double2`], [`LongLong2`], ... |
//! | `__half`, `__nv_bfloat16` | [`f16`], [`bf16`] (crate `half`) |
//! | `__half2`, `__nv_bfloat162` | [`Half2`], [`Bf162`] |
//! | `__nv_fp8_e4m3`, `__nv_fp8_e5m2` | [`F8E4M3`], [`F8E5M2`] (crate `float8`) |
//! | `cuComplex` / `cuFloatComplex`, `cuDoubleComplex` | [`Complex32`], [`Complex64`] |
//! | `cudaTextureObject_t`, `cudaSurfaceObject_t` | [`TextureObject`], [`SurfaceObject`] |
//! | `T**` and deeper pointers | [`RawDevicePtr`] |

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

pub use float8::{F8E4M3, F8E5M2};
pub use half::{bf16, f16};

/// Marks a Rust type as safe to pass by value to a kernel whose C++ parameter has the same name.
///
/// The macro checks, at compile time, that the type's size and alignment equal what the compiled
/// kernel expects. The field layout is yours to keep in step with the C++ struct.
///
/// # Safety
/// The type must be `#[repr(C)]` (or `#[repr(transparent)]`), hold no references, pointers to
/// host memory or padding-sensitive invariants, and match the C++ type's field layout exactly.
///
/// ```
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Params { scale: f32, n: u32 }
/// // SAFETY: repr(C), plain data, same fields as `struct Params { float scale; unsigned n; }`.
/// unsafe impl cuda_embed_runtime::DeviceSafe for Params {}
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is passed by value to a CUDA kernel but is not marked `DeviceSafe`",
    note = "check that `{Self}` is #[repr(C)] with the CUDA struct's fields, then add `unsafe impl cuda_embed::DeviceSafe for {Self} {{}}`"
)]
pub unsafe trait DeviceSafe: Copy + 'static {}

macro_rules! device_safe {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: plain-old-data scalar with the same layout on host and device.
        unsafe impl DeviceSafe for $t {}
    )* };
}
device_safe!(bool, i8, i16, i32, i64, u8, u16, u32, u64, isize, usize, f32, f64, f16, bf16, F8E4M3, F8E5M2);

macro_rules! vector_types {
    ($( $(#[$doc:meta])* $name:ident($elem:ty; $align:literal) { $($field:ident),+ } )*) => { $(
        $(#[$doc])*
        #[repr(C, align($align))]
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name { $( #[allow(missing_docs)] pub $field: $elem, )+ }

        impl $name {
            /// Builds the value from its components, in declaration order.
            #[allow(clippy::too_many_arguments)]
            pub const fn new($($field: $elem),+) -> Self { Self { $($field),+ } }
        }
        // SAFETY: repr(C) plain data with the CUDA type's size and alignment (tested below).
        unsafe impl DeviceRepr for $name {}
        // SAFETY: all-zero bits is a valid value of every component.
        unsafe impl ValidAsZeroBits for $name {}
        // SAFETY: as above.
        unsafe impl DeviceSafe for $name {}
    )* };
}

vector_types! {
    /// CUDA `char1`.
    Char1(i8; 1) { x }
    /// CUDA `char2`.
    Char2(i8; 2) { x, y }
    /// CUDA `char3`.
    Char3(i8; 1) { x, y, z }
    /// CUDA `char4`.
    Char4(i8; 4) { x, y, z, w }
    /// CUDA `uchar1`.
    UChar1(u8; 1) { x }
    /// CUDA `uchar2`.
    UChar2(u8; 2) { x, y }
    /// CUDA `uchar3`.
    UChar3(u8; 1) { x, y, z }
    /// CUDA `uchar4`.
    UChar4(u8; 4) { x, y, z, w }
    /// CUDA `short1`.
    Short1(i16; 2) { x }
    /// CUDA `short2`.
    Short2(i16; 4) { x, y }
    /// CUDA `short3`.
    Short3(i16; 2) { x, y, z }
    /// CUDA `short4`.
    Short4(i16; 8) { x, y, z, w }
    /// CUDA `ushort1`.
    UShort1(u16; 2) { x }
    /// CUDA `ushort2`.
    UShort2(u16; 4) { x, y }
    /// CUDA `ushort3`.
    UShort3(u16; 2) { x, y, z }
    /// CUDA `ushort4`.
    UShort4(u16; 8) { x, y, z, w }
    /// CUDA `int1`.
    Int1(i32; 4) { x }
    /// CUDA `int2`.
    Int2(i32; 8) { x, y }
    /// CUDA `int3`.
    Int3(i32; 4) { x, y, z }
    /// CUDA `int4`.
    Int4(i32; 16) { x, y, z, w }
    /// CUDA `uint1`.
    UInt1(u32; 4) { x }
    /// CUDA `uint2`.
    UInt2(u32; 8) { x, y }
    /// CUDA `uint3` (also the type of `threadIdx`).
    UInt3(u32; 4) { x, y, z }
    /// CUDA `uint4`.
    UInt4(u32; 16) { x, y, z, w }
    /// CUDA `long1` (LP64: 64-bit).
    Long1(i64; 8) { x }
    /// CUDA `long2`.
    Long2(i64; 16) { x, y }
    /// CUDA `long3`.
    Long3(i64; 8) { x, y, z }
    /// CUDA `long4` (`long4_16a`, the 16-byte aligned spelling CUDA 13 defaults to).
    Long4(i64; 16) { x, y, z, w }
    /// CUDA `ulong1`.
    ULong1(u64; 8) { x }
    /// CUDA `ulong2`.
    ULong2(u64; 16) { x, y }
    /// CUDA `ulong3`.
    ULong3(u64; 8) { x, y, z }
    /// CUDA `ulong4` (16-byte aligned).
    ULong4(u64; 16) { x, y, z, w }
    /// CUDA `longlong1`.
    LongLong1(i64; 8) { x }
    /// CUDA `longlong2`.
    LongLong2(i64; 16) { x, y }
    /// CUDA `longlong3`.
    LongLong3(i64; 8) { x, y, z }
    /// CUDA `longlong4` (16-byte aligned).
    LongLong4(i64; 16) { x, y, z, w }
    /// CUDA `ulonglong1`.
    ULongLong1(u64; 8) { x }
    /// CUDA `ulonglong2`.
    ULongLong2(u64; 16) { x, y }
    /// CUDA `ulonglong3`.
    ULongLong3(u64; 8) { x, y, z }
    /// CUDA `ulonglong4` (16-byte aligned).
    ULongLong4(u64; 16) { x, y, z, w }
    /// CUDA `float1`.
    Float1(f32; 4) { x }
    /// CUDA `float2`.
    Float2(f32; 8) { x, y }
    /// CUDA `float3`.
    Float3(f32; 4) { x, y, z }
    /// CUDA `float4`.
    Float4(f32; 16) { x, y, z, w }
    /// CUDA `double1`.
    Double1(f64; 8) { x }
    /// CUDA `double2`.
    Double2(f64; 16) { x, y }
    /// CUDA `double3`.
    Double3(f64; 8) { x, y, z }
    /// CUDA `double4` (16-byte aligned).
    Double4(f64; 16) { x, y, z, w }
    /// CUDA `__half2`.
    Half2(f16; 4) { x, y }
    /// CUDA `__nv_bfloat162`.
    Bf162(bf16; 4) { x, y }
    /// CUDA `cuComplex` / `cuFloatComplex` (a `float2`: real part `x`, imaginary part `y`).
    Complex32(f32; 8) { x, y }
    /// CUDA `cuDoubleComplex` (a `double2`: real part `x`, imaginary part `y`).
    Complex64(f64; 16) { x, y }
}

/// CUDA `cudaTextureObject_t`: an opaque 64-bit handle created with the runtime or driver API.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TextureObject(pub u64);

/// CUDA `cudaSurfaceObject_t`: an opaque 64-bit handle created with the runtime or driver API.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SurfaceObject(pub u64);

/// A raw device address, passed for parameters the borrow checker cannot describe: pointers to
/// pointers (`float**`), device-side arrays of buffers, addresses from other libraries.
///
/// Building one is safe; what the kernel does with it is covered by the launch's `unsafe`.
///
/// ```no_run
/// # fn f(stream: &cudarc::driver::CudaStream, buf: &cudarc::driver::CudaSlice<f32>) {
/// let p = cuda_embed_runtime::RawDevicePtr::of(buf, stream);
/// # }
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RawDevicePtr(pub u64);

impl RawDevicePtr {
    /// The null device pointer.
    pub const NULL: Self = RawDevicePtr(0);

    /// The device address of a cudarc buffer or view.
    ///
    /// No stream ordering is recorded for this use: synchronise yourself if the buffer is used on
    /// several streams.
    pub fn of<T, P: cudarc::driver::DevicePtr<T>>(buf: &P, stream: &cudarc::driver::CudaStream) -> Self {
        let (ptr, _sync) = buf.device_ptr(stream);
        RawDevicePtr(ptr)
    }
}

macro_rules! handle_types {
    ($($t:ty),*) => { $(
        // SAFETY: repr(transparent) over u64, same layout as the 64-bit CUDA handle.
        unsafe impl DeviceRepr for $t {}
        // SAFETY: zero is the null handle.
        unsafe impl ValidAsZeroBits for $t {}
        // SAFETY: as above.
        unsafe impl DeviceSafe for $t {}
    )* };
}
handle_types!(TextureObject, SurfaceObject, RawDevicePtr);

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    #[test]
    fn vector_types_match_cuda_layout() {
        // (size, align) from CUDA 13's vector_types.h.
        let table: &[(&str, usize, usize, usize, usize)] = &[
            ("char1", size_of::<Char1>(), align_of::<Char1>(), 1, 1),
            ("char2", size_of::<Char2>(), align_of::<Char2>(), 2, 2),
            ("char3", size_of::<Char3>(), align_of::<Char3>(), 3, 1),
            ("char4", size_of::<Char4>(), align_of::<Char4>(), 4, 4),
            ("uchar4", size_of::<UChar4>(), align_of::<UChar4>(), 4, 4),
            ("short2", size_of::<Short2>(), align_of::<Short2>(), 4, 4),
            ("short3", size_of::<Short3>(), align_of::<Short3>(), 6, 2),
            ("short4", size_of::<Short4>(), align_of::<Short4>(), 8, 8),
            ("int2", size_of::<Int2>(), align_of::<Int2>(), 8, 8),
            ("int3", size_of::<Int3>(), align_of::<Int3>(), 12, 4),
            ("int4", size_of::<Int4>(), align_of::<Int4>(), 16, 16),
            ("uint4", size_of::<UInt4>(), align_of::<UInt4>(), 16, 16),
            ("long2", size_of::<Long2>(), align_of::<Long2>(), 16, 16),
            ("longlong2", size_of::<LongLong2>(), align_of::<LongLong2>(), 16, 16),
            ("longlong4", size_of::<LongLong4>(), align_of::<LongLong4>(), 32, 16),
            ("float2", size_of::<Float2>(), align_of::<Float2>(), 8, 8),
            ("float3", size_of::<Float3>(), align_of::<Float3>(), 12, 4),
            ("float4", size_of::<Float4>(), align_of::<Float4>(), 16, 16),
            ("double2", size_of::<Double2>(), align_of::<Double2>(), 16, 16),
            ("double3", size_of::<Double3>(), align_of::<Double3>(), 24, 8),
            ("double4", size_of::<Double4>(), align_of::<Double4>(), 32, 16),
            ("__half2", size_of::<Half2>(), align_of::<Half2>(), 4, 4),
            ("__nv_bfloat162", size_of::<Bf162>(), align_of::<Bf162>(), 4, 4),
            ("cuComplex", size_of::<Complex32>(), align_of::<Complex32>(), 8, 8),
            ("cuDoubleComplex", size_of::<Complex64>(), align_of::<Complex64>(), 16, 16),
            ("cudaTextureObject_t", size_of::<TextureObject>(), align_of::<TextureObject>(), 8, 8),
        ];
        for (name, size, align, want_size, want_align) in table {
            assert_eq!((*size, *align), (*want_size, *want_align), "{name}");
        }
    }
}

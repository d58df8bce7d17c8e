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
//! | `cudaExtent`, `cudaPitchedPtr`, `cudaPos` | [`CudaExtent`](crate::CudaExtent), [`CudaPitchedPtr`](crate::CudaPitchedPtr), [`CudaPos`](crate::CudaPos) |
//! | `T**` and deeper pointers | [`RawDevicePtr`] |

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

pub use float8::{F8E4M3, F8E5M2};
pub use half::{bf16, f16};

/// Marks a Rust type as safe to pass by value to a kernel whose C++ parameter has the same name.
///
/// The macro checks, at compile time, that the type's size and alignment equal what the compiled
/// kernel expects. Write `#[derive(DeviceSafe)]` (from the `cuda-embed` facade) on a `#[repr(C)]`
/// struct rather than implementing this by hand: the derive checks that every field is itself
/// `DeviceSafe` and records the field layout in [`DeviceSafe::LAYOUT`], so a field order that
/// differs from the C++ struct can be caught at compile time too.
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
    note = "a #[repr(C)] struct with the CUDA struct's fields, in the CUDA order, gets it from `#[derive(Clone, Copy, cuda_embed::DeviceSafe)]`; references, `Vec`, `Box` and host pointers can never be passed to a kernel"
)]
pub unsafe trait DeviceSafe: Copy + 'static {
    /// The fields of a struct, in declaration order, with their offsets and sizes; `None` when
    /// unknown (scalars, CUDA vector types, arrays, hand-written impls).
    ///
    /// `#[derive(DeviceSafe)]` sets it, and the macro compares it with the C++ struct's members
    /// (names, offsets and sizes read from the compiler) so that two fields declared in a
    /// different order than in CUDA are a compile error even when the sizes add up. A hand-written
    /// impl may set it too; the default, `None`, skips that check.
    ///
    /// ```
    /// use cuda_embed_runtime::{DeviceSafe, FieldLayout};
    ///
    /// #[repr(C)]
    /// #[derive(Clone, Copy)]
    /// struct Params { scale: f32, n: i32 }
    /// // SAFETY: repr(C), plain data, same fields as `struct Params { float scale; int n; }`.
    /// unsafe impl DeviceSafe for Params {
    ///     const LAYOUT: Option<&'static [FieldLayout]> = Some(&[
    ///         FieldLayout { name: "scale", offset: core::mem::offset_of!(Params, scale), size: 4 },
    ///         FieldLayout { name: "n", offset: core::mem::offset_of!(Params, n), size: 4 },
    ///     ]);
    /// }
    /// assert_eq!(Params::LAYOUT.unwrap()[1].offset, 4);
    /// assert_eq!(f32::LAYOUT, None);
    /// ```
    const LAYOUT: Option<&'static [FieldLayout]> = None;
}

/// One field of a [`DeviceSafe`] struct: see [`DeviceSafe::LAYOUT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldLayout {
    /// The field's name as written in Rust (`"0"`, `"1"`, ... for a tuple struct).
    pub name: &'static str,
    /// Its byte offset from the start of the struct (`core::mem::offset_of!`).
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
}

/// Compares `T::LAYOUT` with the C++ struct's members, `cuda` = `(name, offset, size)` in C++
/// declaration order, and panics — at compile time, when called in a `const _: () = ...` item —
/// with a message naming the struct, the field and the two offsets or sizes.
///
/// Does nothing when `T::LAYOUT` is `None` (a hand-written impl). Rust fields match C++ members by
/// name, ignoring ASCII case and underscores (`num_rows` matches `numRows`); a tuple struct's
/// fields match by position. Support for the code `cuda_kernel!` generates: not a stable API.
#[doc(hidden)]
pub const fn check_layout<T: DeviceSafe>(rust_name: &str, cuda: &[(&str, usize, usize)]) {
    let Some(rust) = T::LAYOUT else { return };
    let by_position = rust.is_empty() || bytes_eq(rust[0].name.as_bytes(), b"0");
    // In Rust declaration order: the first field the user has to move or fix.
    let mut r = 0;
    while r < rust.len() {
        let field = rust[r];
        let found = if by_position {
            if r < cuda.len() {
                Some(r)
            } else {
                None
            }
        } else {
            find_member(cuda, field.name)
        };
        let m = Msg::new().s("field `").s(field.name).s("` of `").s(rust_name);
        let Some(c) = found else { m.s("` is not in the CUDA struct: remove it, or add it there").panic() };
        let (name, offset, size) = cuda[c];
        let m = if by_position { m.s("` (the CUDA field `").s(name).s("`)") } else { m.s("`") };
        if field.size != size {
            let m = m.s(" is ").n(field.size).s(" bytes in Rust but ").n(size);
            m.s(" in the CUDA struct: give it the CUDA field's type").panic()
        }
        if field.offset != offset {
            let m = m.s(" is at offset ").n(field.offset).s(" in Rust but at ").n(offset);
            m.s(" in the CUDA struct: declare the fields in the CUDA order").panic()
        }
        r += 1;
    }
    // Every Rust field matched: what is left are CUDA members the Rust struct lacks.
    let mut c = 0;
    while c < cuda.len() {
        let missing = if by_position { c >= rust.len() } else { !has_field(rust, cuda[c].0) };
        if missing {
            let m = Msg::new().s("the CUDA struct `").s(rust_name).s("` has a field `").s(cuda[c].0);
            m.s("` that the Rust `").s(rust_name).s("` does not have: add it, in the CUDA order").panic()
        }
        c += 1;
    }
}

const fn find_member(cuda: &[(&str, usize, usize)], name: &str) -> Option<usize> {
    let mut c = 0;
    while c < cuda.len() {
        if same_name(cuda[c].0.as_bytes(), name.as_bytes()) {
            return Some(c);
        }
        c += 1;
    }
    None
}

const fn has_field(rust: &[FieldLayout], name: &str) -> bool {
    let mut r = 0;
    while r < rust.len() {
        if same_name(rust[r].name.as_bytes(), name.as_bytes()) {
            return true;
        }
        r += 1;
    }
    false
}

const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Equal ignoring ASCII case and underscores, and a leading `r#` (`num_rows` == `numRows`).
const fn same_name(a: &[u8], b: &[u8]) -> bool {
    let (mut i, mut j) = (raw_prefix(a), raw_prefix(b));
    loop {
        while i < a.len() && a[i] == b'_' {
            i += 1;
        }
        while j < b.len() && b[j] == b'_' {
            j += 1;
        }
        if i == a.len() || j == b.len() {
            return i == a.len() && j == b.len();
        }
        if !a[i].eq_ignore_ascii_case(&b[j]) {
            return false;
        }
        i += 1;
        j += 1;
    }
}

const fn raw_prefix(a: &[u8]) -> usize {
    if a.len() > 2 && a[0] == b'r' && a[1] == b'#' {
        2
    } else {
        0
    }
}

/// A panic message built at compile time (`format!` is not available in `const fn`).
struct Msg {
    buf: [u8; 512],
    len: usize,
}

impl Msg {
    const fn new() -> Self {
        Msg { buf: [0; 512], len: 0 }
    }

    const fn s(mut self, text: &str) -> Self {
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() && self.len < self.buf.len() {
            self.buf[self.len] = b[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn n(self, mut v: usize) -> Self {
        let mut digits = [0u8; 20];
        let mut k = digits.len();
        loop {
            k -= 1;
            digits[k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        match core::str::from_utf8(digits.split_at(k).1) {
            Ok(text) => self.s(text),
            Err(_) => self,
        }
    }

    const fn panic(&self) -> ! {
        match core::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(text) => panic!("{}", text),
            // Only when a long name was cut inside a UTF-8 character.
            Err(_) => panic!("the Rust struct's field layout differs from the CUDA struct's"),
        }
    }
}

macro_rules! device_safe {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: plain-old-data scalar with the same layout on host and device.
        unsafe impl DeviceSafe for $t {}
    )* };
}
device_safe!(bool, i8, i16, i32, i64, u8, u16, u32, u64, isize, usize, f32, f64, f16, bf16, F8E4M3, F8E5M2);

// SAFETY: an array of plain data has the layout of the C array `T[N]` (no padding between
// elements, the element's alignment).
unsafe impl<T: DeviceSafe, const N: usize> DeviceSafe for [T; N] {}

/// Marks a [`DeviceSafe`] type of which every bit pattern is a valid value, so that bytes read
/// back from the device (where any kernel may have written anything) can be handed out as it:
/// [`Global::read`](crate::Global::read) and friends require it.
///
/// Implemented for the integer and floating-point types, the CUDA vector types, `f16`, `bf16`,
/// the fp8 types, the opaque handles and arrays of these; **not** for `bool` (only 0 and 1 are
/// valid) nor `char`. A user struct gets it by an `unsafe impl` when every field has it (padding
/// bytes may hold anything):
///
/// ```
/// use cuda_embed_runtime::{AnyBitPattern, DeviceSafe};
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Params { scale: f32, n: u32 }
/// // SAFETY: repr(C), plain data, same fields as `struct Params { float scale; unsigned n; }`.
/// unsafe impl DeviceSafe for Params {}
/// // SAFETY: every field is valid for any bits.
/// unsafe impl AnyBitPattern for Params {}
/// ```
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value of the type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read back from the device: not every bit pattern is a valid `{Self}`",
    note = "reading device memory needs a type every bit pattern of which is valid (`AnyBitPattern`): read a `bool` as `u8`; a struct of such fields gets it by `unsafe impl cuda_embed::AnyBitPattern for ... {{}}`"
)]
pub unsafe trait AnyBitPattern: DeviceSafe {}

macro_rules! any_bit_pattern {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: every bit pattern is a valid value of this plain integer/float type.
        unsafe impl AnyBitPattern for $t {}
    )* };
}
any_bit_pattern!(i8, i16, i32, i64, u8, u16, u32, u64, isize, usize, f32, f64, f16, bf16, F8E4M3, F8E5M2);

// SAFETY: an array is valid for any bits when its element is.
unsafe impl<T: AnyBitPattern, const N: usize> AnyBitPattern for [T; N] {}

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
        // SAFETY: repr(C) struct of integer/float components and at most tail padding.
        unsafe impl AnyBitPattern for $name {}
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
        // SAFETY: repr(transparent) over u64.
        unsafe impl AnyBitPattern for $t {}
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

    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Params {
        scale: f32,
        num_rows: i32,
    }
    // SAFETY: repr(C), plain data.
    unsafe impl DeviceSafe for Params {
        const LAYOUT: Option<&'static [FieldLayout]> = Some(&[
            FieldLayout { name: "scale", offset: 0, size: 4 },
            FieldLayout { name: "num_rows", offset: 4, size: 4 },
        ]);
    }

    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Pair(f32, f64);
    // SAFETY: repr(C), plain data.
    unsafe impl DeviceSafe for Pair {
        const LAYOUT: Option<&'static [FieldLayout]> =
            Some(&[FieldLayout { name: "0", offset: 0, size: 4 }, FieldLayout { name: "1", offset: 8, size: 8 }]);
    }

    #[test]
    fn layout_check_accepts_the_cuda_layout() {
        const _: () = check_layout::<Params>("Params", &[("scale", 0, 4), ("numRows", 4, 4)]);
        check_layout::<Params>("Params", &[("scale", 0, 4), ("NUM_ROWS", 4, 4)]);
        check_layout::<Pair>("Pair", &[("x", 0, 4), ("y", 8, 8)]);
        // No layout (a scalar, a hand-written impl): nothing to compare.
        check_layout::<f32>("f32", &[("whatever", 3, 1)]);
        assert_eq!(<[u16; 3]>::LAYOUT, None);
    }

    #[test]
    #[should_panic(
        expected = "field `scale` of `Params` is at offset 0 in Rust but at 4 in the CUDA struct: declare the fields in the CUDA order"
    )]
    fn layout_check_names_a_field_out_of_order() {
        check_layout::<Params>("Params", &[("num_rows", 0, 4), ("scale", 4, 4)]);
    }

    #[test]
    #[should_panic(expected = "field `num_rows` of `Params` is 4 bytes in Rust but 8 in the CUDA struct")]
    fn layout_check_names_a_field_of_another_size() {
        check_layout::<Params>("Params", &[("scale", 0, 4), ("num_rows", 8, 8)]);
    }

    #[test]
    #[should_panic(expected = "the CUDA struct `Params` has a field `count` that the Rust `Params` does not have")]
    fn layout_check_names_a_missing_field() {
        check_layout::<Params>("Params", &[("scale", 0, 4), ("num_rows", 4, 4), ("count", 8, 4)]);
    }

    #[test]
    #[should_panic(expected = "field `num_rows` of `Params` is not in the CUDA struct: remove it, or add it there")]
    fn layout_check_names_an_extra_field() {
        check_layout::<Params>("Params", &[("scale", 0, 4)]);
    }

    #[test]
    #[should_panic(
        expected = "field `1` of `Pair` (the CUDA field `y`) is at offset 8 in Rust but at 4 in the CUDA struct"
    )]
    fn layout_check_matches_tuple_fields_by_position() {
        check_layout::<Pair>("Pair", &[("x", 0, 4), ("y", 4, 8)]);
    }
}

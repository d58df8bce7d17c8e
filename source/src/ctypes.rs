//! The C/C++ and CUDA type names kernels take, with the Rust type each maps to and its layout:
//! the one table the `cuda_kernel!` macro maps parameters with and the runtime checks
//! `kernel_with_signature` arguments with.

/// A Rust type with its CUDA layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The Rust type.
    pub rust: RustPath,
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes.
    pub align: u32,
}

/// Where the Rust type of a [`Builtin`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RustPath {
    /// A primitive type: `f32`, `usize`, `bool`.
    Primitive(&'static str),
    /// A type exported by the `cuda_embed` crate: `Half2`, `Float4`, `f16`.
    Crate(&'static str),
}

impl RustPath {
    /// The type's name without its crate (`f32`, `Half2`), as the docs show it.
    pub fn name(self) -> &'static str {
        match self {
            RustPath::Primitive(n) | RustPath::Crate(n) => n,
        }
    }
}

const fn p(rust: &'static str, size: u32, align: u32) -> Builtin {
    Builtin { rust: RustPath::Primitive(rust), size, align }
}

const fn c(rust: &'static str, size: u32, align: u32) -> Builtin {
    Builtin { rust: RustPath::Crate(rust), size, align }
}

/// CUDA spelling -> Rust type. Integer widths assume LP64 (Linux x86-64/aarch64).
pub const BUILTINS: &[(&str, Builtin)] = &[
    ("bool", p("bool", 1, 1)),
    ("char", p("i8", 1, 1)),
    ("signed char", p("i8", 1, 1)),
    ("unsigned char", p("u8", 1, 1)),
    ("short", p("i16", 2, 2)),
    ("short int", p("i16", 2, 2)),
    ("signed short", p("i16", 2, 2)),
    ("signed short int", p("i16", 2, 2)),
    ("unsigned short", p("u16", 2, 2)),
    ("unsigned short int", p("u16", 2, 2)),
    ("int", p("i32", 4, 4)),
    ("signed", p("i32", 4, 4)),
    ("signed int", p("i32", 4, 4)),
    ("unsigned", p("u32", 4, 4)),
    ("unsigned int", p("u32", 4, 4)),
    ("long", p("i64", 8, 8)),
    ("long int", p("i64", 8, 8)),
    ("signed long", p("i64", 8, 8)),
    ("signed long int", p("i64", 8, 8)),
    ("unsigned long", p("u64", 8, 8)),
    ("unsigned long int", p("u64", 8, 8)),
    ("long long", p("i64", 8, 8)),
    ("long long int", p("i64", 8, 8)),
    ("signed long long", p("i64", 8, 8)),
    ("signed long long int", p("i64", 8, 8)),
    ("unsigned long long", p("u64", 8, 8)),
    ("unsigned long long int", p("u64", 8, 8)),
    ("float", p("f32", 4, 4)),
    ("double", p("f64", 8, 8)),
    ("int8_t", p("i8", 1, 1)),
    ("int16_t", p("i16", 2, 2)),
    ("int32_t", p("i32", 4, 4)),
    ("int64_t", p("i64", 8, 8)),
    ("uint8_t", p("u8", 1, 1)),
    ("uint16_t", p("u16", 2, 2)),
    ("uint32_t", p("u32", 4, 4)),
    ("uint64_t", p("u64", 8, 8)),
    ("size_t", p("usize", 8, 8)),
    ("uintptr_t", p("usize", 8, 8)),
    ("ssize_t", p("isize", 8, 8)),
    ("ptrdiff_t", p("isize", 8, 8)),
    ("intptr_t", p("isize", 8, 8)),
    ("uint", p("u32", 4, 4)),
    ("ushort", p("u16", 2, 2)),
    ("ulong", p("u64", 8, 8)),
    ("__half", c("f16", 2, 2)),
    ("half", c("f16", 2, 2)),
    ("__nv_bfloat16", c("bf16", 2, 2)),
    ("nv_bfloat16", c("bf16", 2, 2)),
    ("__half2", c("Half2", 4, 4)),
    ("half2", c("Half2", 4, 4)),
    ("__nv_bfloat162", c("Bf162", 4, 4)),
    ("nv_bfloat162", c("Bf162", 4, 4)),
    ("__nv_fp8_e4m3", c("F8E4M3", 1, 1)),
    ("__nv_fp8_e5m2", c("F8E5M2", 1, 1)),
    // Typedefs from the C library and the CUDA headers that kernels take (cuda-samples' clock,
    // graphConditionalNodes, simpleCUFFT): without an entry they would read as user structs.
    ("clock_t", p("i64", 8, 8)),
    // A conditional node's handle: a kernel sets the condition with `cudaGraphSetConditional`;
    // the typed `ConditionalHandle` lets only a graph's kernel nodes pass one (`&Condition`).
    ("cudaGraphConditionalHandle", c("ConditionalHandle", 8, 8)),
    ("CUgraphConditionalHandle", c("ConditionalHandle", 8, 8)),
    ("cufftReal", p("f32", 4, 4)),
    ("cufftDoubleReal", p("f64", 8, 8)),
    ("cufftComplex", c("Complex32", 8, 8)),
    ("cufftDoubleComplex", c("Complex64", 16, 16)),
    ("cuComplex", c("Complex32", 8, 8)),
    ("cuFloatComplex", c("Complex32", 8, 8)),
    ("cuDoubleComplex", c("Complex64", 16, 16)),
    ("cudaTextureObject_t", c("TextureObject", 8, 8)),
    // `dim3` has uint3's layout (its constructors do not change it).
    ("dim3", c("UInt3", 12, 4)),
    ("CUtexObject", c("TextureObject", 8, 8)),
    ("cudaSurfaceObject_t", c("SurfaceObject", 8, 8)),
    ("CUsurfObject", c("SurfaceObject", 8, 8)),
    // The TMA descriptor (`cuda.h`): 128 bytes, aligned to 128 since CUDA 13 (64 before). The
    // launcher takes `&TensorMap`/`&mut TensorMapMut` for it and passes the descriptor by value.
    ("CUtensorMap", c("RawTensorMap", 128, 128)),
];

/// CUDA vector types, in probe-id order (the id is the index + 1).
pub const VECTORS: &[(&str, Builtin)] = &[
    ("char1", c("Char1", 1, 1)),
    ("char2", c("Char2", 2, 2)),
    ("char3", c("Char3", 3, 1)),
    ("char4", c("Char4", 4, 4)),
    ("uchar1", c("UChar1", 1, 1)),
    ("uchar2", c("UChar2", 2, 2)),
    ("uchar3", c("UChar3", 3, 1)),
    ("uchar4", c("UChar4", 4, 4)),
    ("short1", c("Short1", 2, 2)),
    ("short2", c("Short2", 4, 4)),
    ("short3", c("Short3", 6, 2)),
    ("short4", c("Short4", 8, 8)),
    ("ushort1", c("UShort1", 2, 2)),
    ("ushort2", c("UShort2", 4, 4)),
    ("ushort3", c("UShort3", 6, 2)),
    ("ushort4", c("UShort4", 8, 8)),
    ("int1", c("Int1", 4, 4)),
    ("int2", c("Int2", 8, 8)),
    ("int3", c("Int3", 12, 4)),
    ("int4", c("Int4", 16, 16)),
    ("uint1", c("UInt1", 4, 4)),
    ("uint2", c("UInt2", 8, 8)),
    ("uint3", c("UInt3", 12, 4)),
    ("uint4", c("UInt4", 16, 16)),
    ("long1", c("Long1", 8, 8)),
    ("long2", c("Long2", 16, 16)),
    ("long3", c("Long3", 24, 8)),
    ("long4", c("Long4", 32, 16)),
    ("ulong1", c("ULong1", 8, 8)),
    ("ulong2", c("ULong2", 16, 16)),
    ("ulong3", c("ULong3", 24, 8)),
    ("ulong4", c("ULong4", 32, 16)),
    ("longlong1", c("LongLong1", 8, 8)),
    ("longlong2", c("LongLong2", 16, 16)),
    ("longlong3", c("LongLong3", 24, 8)),
    ("longlong4", c("LongLong4", 32, 16)),
    ("ulonglong1", c("ULongLong1", 8, 8)),
    ("ulonglong2", c("ULongLong2", 16, 16)),
    ("ulonglong3", c("ULongLong3", 24, 8)),
    ("ulonglong4", c("ULongLong4", 32, 16)),
    ("float1", c("Float1", 4, 4)),
    ("float2", c("Float2", 8, 8)),
    ("float3", c("Float3", 12, 4)),
    ("float4", c("Float4", 16, 16)),
    ("double1", c("Double1", 8, 8)),
    ("double2", c("Double2", 16, 16)),
    ("double3", c("Double3", 24, 8)),
    ("double4", c("Double4", 32, 16)),
    ("long4_16a", c("Long4", 32, 16)),
    ("ulong4_16a", c("ULong4", 32, 16)),
    ("longlong4_16a", c("LongLong4", 32, 16)),
    ("ulonglong4_16a", c("ULongLong4", 32, 16)),
    ("double4_16a", c("Double4", 32, 16)),
];

/// The CUDA runtime's plain structs that kernels take by value (`driver_types.h`), with their
/// members in declaration order (the compiler probe asks where each lies, and the generated code
/// compares with the Rust type's `DeviceSafe::LAYOUT`). Their probe ids continue after
/// [`VECTORS`]: entry `i` is id `VECTORS.len() + i + 1`.
pub const TOOLKIT: &[(&str, Builtin, &[&str])] = &[
    ("cudaExtent", c("CudaExtent", 24, 8), &["width", "height", "depth"]),
    ("cudaPitchedPtr", c("CudaPitchedPtr", 32, 8), &["ptr", "pitch", "xsize", "ysize"]),
    ("cudaPos", c("CudaPos", 24, 8), &["x", "y", "z"]),
];

/// Looks up a type name in the builtin, vector and toolkit struct tables.
pub fn builtin(name: &str) -> Option<Builtin> {
    BUILTINS.iter().chain(VECTORS).find(|(n, _)| *n == name).map(|(_, b)| *b).or_else(|| toolkit(name).map(|t| t.1))
}

/// The [`TOOLKIT`] entry of a CUDA type name (`cudaExtent`, also spelled `struct cudaExtent`).
pub fn toolkit(name: &str) -> Option<&'static (&'static str, Builtin, &'static [&'static str])> {
    let name = name.strip_prefix("struct ").unwrap_or(name);
    TOOLKIT.iter().find(|t| t.0 == name)
}

/// The builtin of a probe's vector id: [`VECTORS`] first, then [`TOOLKIT`].
pub fn by_probe_id(id: u16) -> Option<Builtin> {
    let i = usize::from(id).checked_sub(1)?;
    VECTORS.get(i).map(|v| v.1).or_else(|| TOOLKIT.get(i.checked_sub(VECTORS.len())?).map(|t| t.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolkit_structs_are_builtins_with_probe_ids_after_the_vectors() {
        assert_eq!(builtin("cudaPitchedPtr").map(|b| (b.rust.name(), b.size)), Some(("CudaPitchedPtr", 32)));
        assert_eq!(toolkit("struct cudaExtent").map(|t| t.2.len()), Some(3));
        assert_eq!(by_probe_id(1), builtin("char1"));
        assert_eq!(by_probe_id(VECTORS.len() as u16 + 1), builtin("cudaExtent"));
        assert_eq!(by_probe_id(0), None);
        assert_eq!(by_probe_id((VECTORS.len() + TOOLKIT.len() + 1) as u16), None);
    }
}

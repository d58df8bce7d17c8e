//! The types a Rust-syntax kernel can name: scalars, CUDA vector types, tuples, slices, shared
//! arrays, `Dim3`, and the types of literals before they meet a typed operand. Their CUDA C++ spellings and the typing
//! rules of operators and casts.

use std::fmt;

/// A scalar type of the type table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scalar {
    /// `f32` (`float`).
    F32,
    /// `f64` (`double`).
    F64,
    /// `f16` (`__half`; `cuda_embed::f16` on the host).
    F16,
    /// `bf16` (`__nv_bfloat16`; `cuda_embed::bf16` on the host).
    Bf16,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `isize`.
    Isize,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `usize`.
    Usize,
    /// `bool`.
    Bool,
}

impl Scalar {
    /// The scalar named `name` (`f32`, `usize`, ...).
    pub fn from_name(name: &str) -> Option<Scalar> {
        Some(match name {
            "f32" => Scalar::F32,
            "f64" => Scalar::F64,
            "f16" => Scalar::F16,
            "bf16" => Scalar::Bf16,
            "i8" => Scalar::I8,
            "i16" => Scalar::I16,
            "i32" => Scalar::I32,
            "i64" => Scalar::I64,
            "isize" => Scalar::Isize,
            "u8" => Scalar::U8,
            "u16" => Scalar::U16,
            "u32" => Scalar::U32,
            "u64" => Scalar::U64,
            "usize" => Scalar::Usize,
            "bool" => Scalar::Bool,
            _ => return None,
        })
    }

    /// The Rust name.
    pub fn rust(self) -> &'static str {
        match self {
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::F16 => "f16",
            Scalar::Bf16 => "bf16",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::Isize => "isize",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::Usize => "usize",
            Scalar::Bool => "bool",
        }
    }

    /// The CUDA C++ spelling (one the type table maps back to [`Scalar::rust`]).
    pub fn cpp(self) -> &'static str {
        match self {
            Scalar::F32 => "float",
            Scalar::F64 => "double",
            Scalar::F16 => "__half",
            Scalar::Bf16 => "__nv_bfloat16",
            Scalar::I8 => "signed char",
            Scalar::I16 => "short",
            Scalar::I32 => "int",
            Scalar::I64 => "long long",
            Scalar::Isize => "ptrdiff_t",
            Scalar::U8 => "unsigned char",
            Scalar::U16 => "unsigned short",
            Scalar::U32 => "unsigned int",
            Scalar::U64 => "unsigned long long",
            Scalar::Usize => "size_t",
            Scalar::Bool => "bool",
        }
    }

    /// `f32`, `f64`, `f16` or `bf16`.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::Bf16)
    }

    /// `f16` or `bf16`: math goes through `f32` (`__half2float` ... `__float2half`).
    pub fn is_half(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::Bf16)
    }

    /// The C++ conversions of a half type from and to `float`.
    pub fn half_conversions(self) -> (&'static str, &'static str) {
        match self {
            Scalar::Bf16 => ("__bfloat162float", "__float2bfloat16"),
            _ => ("__half2float", "__float2half"),
        }
    }

    /// The Rust type as launchers name it (`f32`, `::cuda_embed::f16`).
    pub fn rust_tokens(self) -> proc_macro2::TokenStream {
        if self.is_half() {
            crate::gen::paths::crate_type(self.rust())
        } else {
            let id = quote::format_ident!("{}", self.rust());
            quote::quote!(#id)
        }
    }

    /// Any integer type.
    pub fn is_int(self) -> bool {
        !self.is_float() && self != Scalar::Bool
    }

    /// A signed integer type.
    pub fn is_signed_int(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 | Scalar::Isize)
    }

    /// Width in bits.
    pub fn bits(self) -> u32 {
        match self {
            Scalar::I8 | Scalar::U8 | Scalar::Bool => 8,
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::Bf16 => 16,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 32,
            _ => 64,
        }
    }

    /// The unsigned type of the same width, for wrapping signed arithmetic.
    pub fn unsigned_cpp(self) -> &'static str {
        match self.bits() {
            8 => "unsigned char",
            16 => "unsigned short",
            32 => "unsigned int",
            _ => "unsigned long long",
        }
    }
}

/// A CUDA vector type (`float4`, `int2`, ..., `__half2`, `__nv_bfloat162`): the runtime's
/// `Float4`, `Int2`, ..., `Half2`, `Bf162` on the host, fields `.x .y .z .w`, built with
/// `Float4::new(a, b, c, d)` (C++ `make_float4`; `__halves2half2`, `__halves2bfloat162`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vector {
    /// The component type.
    pub elem: Scalar,
    /// The number of components, 1 to 4.
    pub len: u8,
    /// The Rust name (`Float4`), as `cuda_embed` exports it.
    pub rust: &'static str,
}

/// The vector families: Rust name prefix and component type. `Long`/`ULong` are 64-bit (LP64,
/// as the type table has them).
const VECTOR_FAMILIES: &[(&str, Scalar)] = &[
    ("Char", Scalar::I8),
    ("UChar", Scalar::U8),
    ("Short", Scalar::I16),
    ("UShort", Scalar::U16),
    ("Int", Scalar::I32),
    ("UInt", Scalar::U32),
    ("Long", Scalar::I64),
    ("ULong", Scalar::U64),
    ("LongLong", Scalar::I64),
    ("ULongLong", Scalar::U64),
    ("Float", Scalar::F32),
    ("Double", Scalar::F64),
    ("Half", Scalar::F16),
    ("Bf16", Scalar::Bf16),
];

/// Every supported vector name, for lookups that need a `&'static str`.
const VECTOR_NAMES: &[&str] = &[
    "Char1",
    "Char2",
    "Char3",
    "Char4",
    "UChar1",
    "UChar2",
    "UChar3",
    "UChar4",
    "Short1",
    "Short2",
    "Short3",
    "Short4",
    "UShort1",
    "UShort2",
    "UShort3",
    "UShort4",
    "Int1",
    "Int2",
    "Int3",
    "Int4",
    "UInt1",
    "UInt2",
    "UInt3",
    "UInt4",
    "Long1",
    "Long2",
    "Long3",
    "ULong1",
    "ULong2",
    "ULong3",
    "LongLong1",
    "LongLong2",
    "LongLong3",
    "ULongLong1",
    "ULongLong2",
    "ULongLong3",
    "Float1",
    "Float2",
    "Float3",
    "Float4",
    "Double1",
    "Double2",
    "Double3",
    "Half2",
    "Bf162",
];

/// The 4-component 64-bit vectors: CUDA 13 deprecates their plain spelling (`double4`) in favour
/// of `double4_16a`/`double4_32a`, which older toolkits lack, so kernels do not take them.
pub const DEPRECATED_VECTORS: &[&str] = &["Long4", "ULong4", "LongLong4", "ULongLong4", "Double4"];

impl Vector {
    /// The vector type named `name` (`Float4`), if it is one kernels support.
    pub fn from_name(name: &str) -> Option<Vector> {
        let rust = *VECTOR_NAMES.iter().find(|n| **n == name)?;
        let (family, digit) = rust.split_at(rust.len() - 1);
        let elem = VECTOR_FAMILIES.iter().find(|(f, _)| *f == family)?.1;
        Some(Vector { elem, len: digit.parse().ok()?, rust })
    }

    /// The CUDA C++ spelling (`float4`, `__half2`).
    pub fn cpp(self) -> String {
        match self.rust {
            "Half2" => "__half2".into(),
            "Bf162" => "__nv_bfloat162".into(),
            r => r.to_ascii_lowercase(),
        }
    }

    /// The C++ function building one from its components (`make_float4`; `__halves2half2` and
    /// `__halves2bfloat162` for the half types: every toolkit with `cuda_bf16.h` has them, while
    /// their `make_half2`/`make_bfloat162` are recent).
    pub fn make(self) -> String {
        match self.rust {
            "Half2" => "__halves2half2".into(),
            "Bf162" => "__halves2bfloat162".into(),
            _ => format!("make_{}", self.cpp()),
        }
    }

    /// `Half2` or `Bf162`: CUDA C++ defines `+ - * /` on these (`__hadd2`, ...), kernels too.
    pub fn has_arithmetic(self) -> bool {
        self.elem.is_half()
    }

    /// The CUDA intrinsic of `+ - * /` on two of these (`__hadd2`, overloaded for
    /// `__nv_bfloat162` by `cuda_bf16.h`), for the operator's C++ spelling.
    pub fn intrinsic(self, op: &str) -> Option<&'static str> {
        if !self.has_arithmetic() {
            return None;
        }
        Some(match op {
            "+" => "__hadd2",
            "-" => "__hsub2",
            "*" => "__hmul2",
            "/" => "__h2div",
            _ => return None,
        })
    }

    /// Its fields, `x` to `w`.
    pub fn fields(self) -> &'static [&'static str] {
        &["x", "y", "z", "w"][..usize::from(self.len)]
    }

    /// The Rust type as launchers name it (`::cuda_embed::Float4`).
    pub fn rust_tokens(self) -> proc_macro2::TokenStream {
        crate::gen::paths::crate_type(self.rust)
    }
}

/// The element type of a slice or a shared array: a scalar or a vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// A scalar (`f32`).
    Scalar(Scalar),
    /// A CUDA vector type (`Float4`).
    Vector(Vector),
}

impl Elem {
    /// The Rust name.
    pub fn rust(self) -> &'static str {
        match self {
            Elem::Scalar(s) => s.rust(),
            Elem::Vector(v) => v.rust,
        }
    }

    /// The CUDA C++ spelling.
    pub fn cpp(self) -> String {
        match self {
            Elem::Scalar(s) => s.cpp().to_string(),
            Elem::Vector(v) => v.cpp(),
        }
    }

    /// The Rust type as launchers name it.
    pub fn rust_tokens(self) -> proc_macro2::TokenStream {
        match self {
            Elem::Scalar(s) => s.rust_tokens(),
            Elem::Vector(v) => v.rust_tokens(),
        }
    }

    /// The type of one element.
    pub fn ty(self) -> Ty {
        match self {
            Elem::Scalar(s) => Ty::Scalar(s),
            Elem::Vector(v) => Ty::Vector(v),
        }
    }
}

/// The type of an expression or binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A scalar.
    Scalar(Scalar),
    /// A CUDA vector type by value (`Float4`).
    Vector(Vector),
    /// `&[T]` (`mutable == false`) or `&mut [T]`: a pointer and a length in C++.
    Slice {
        /// Element type.
        elem: Elem,
        /// Written through (`&mut [T]`).
        mutable: bool,
    },
    /// A statically sized shared-memory array (`shared::<T, N>()`).
    Shared {
        /// Element type.
        elem: Elem,
        /// Length.
        len: u64,
    },
    /// `thread_idx()` and friends: `.x`, `.y`, `.z` (each `u32`).
    Dim3,
    /// A tuple (`(f32, u32)`, `((f32, u32), Float4)`) of scalars, vectors and tuples, the result
    /// of a device function or an `if`: a C++ struct `__ce_tuple_f32_u32` with fields `_0`, `_1`,
    /// ... (read as `t.0`, `t.0.1`, or bound by `let ((a, b), c) = ...`). Its elements are
    /// `Scalar`, `Vector` or `Tuple`, never a literal type.
    Tuple(Vec<Ty>),
    /// A `DeviceSafe` struct passed by value, declared in C++ by the same name (`cpp`/`include`):
    /// its fields read as C++ values.
    Struct(String),
    /// An integer literal not yet tied to a type (`i32` if nothing ties it).
    IntLit,
    /// A float literal not yet tied to a type (`f64` if nothing ties it).
    FloatLit,
    /// The value of a CUDA C++ function the kernel calls (`cpp = "..."`): C++ decides (`auto`).
    Opaque,
    /// No value (`()`): statements, `sync_threads()`.
    Unit,
    /// The value of `break`, `continue`, `return`: never produced.
    Never,
}

impl Ty {
    /// The scalar, if this is one (literals count as their default type).
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            Ty::IntLit => Some(Scalar::I32),
            Ty::FloatLit => Some(Scalar::F64),
            _ => None,
        }
    }

    /// The C++ type of a local of this type (`auto` where C++ decides).
    pub fn cpp(&self) -> String {
        match self {
            Ty::Scalar(s) => s.cpp().to_string(),
            Ty::IntLit => "int".into(),
            Ty::FloatLit => "double".into(),
            Ty::Vector(v) => v.cpp(),
            Ty::Tuple(ts) => tuple_struct(ts),
            Ty::Struct(n) => n.clone(),
            _ => "auto".into(),
        }
    }

    /// A literal type: ties to the other operand.
    pub fn is_literal(&self) -> bool {
        matches!(self, Ty::IntLit | Ty::FloatLit)
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Scalar(s) => write!(f, "{}", s.rust()),
            Ty::Vector(v) => write!(f, "{}", v.rust),
            Ty::Slice { elem, mutable: false } => write!(f, "&[{}]", elem.rust()),
            Ty::Slice { elem, mutable: true } => write!(f, "&mut [{}]", elem.rust()),
            Ty::Shared { elem, len } => write!(f, "shared [{}; {len}]", elem.rust()),
            Ty::Dim3 => write!(f, "Dim3"),
            Ty::Tuple(ts) => write!(f, "({})", ts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")),
            Ty::Struct(n) => write!(f, "{n}"),
            Ty::IntLit => write!(f, "{{integer}}"),
            Ty::FloatLit => write!(f, "{{float}}"),
            Ty::Opaque => write!(f, "(C++ value)"),
            Ty::Unit => write!(f, "()"),
            Ty::Never => write!(f, "!"),
        }
    }
}

impl Ty {
    /// The type a tuple holds for a value of this type: scalars (a literal as its default type),
    /// vectors and tuples; `None` for the rest.
    pub fn tuple_element(&self) -> Option<Ty> {
        match self {
            Ty::Scalar(_) | Ty::Vector(_) | Ty::Tuple(_) => Some(self.clone()),
            Ty::IntLit | Ty::FloatLit => self.scalar().map(Ty::Scalar),
            _ => None,
        }
    }
}

/// The C++ struct holding a tuple of `ts` (`__ce_tuple_f32_u32`; a nested tuple is spelled
/// `T<arity>_` and its elements, `__ce_tuple_T2_f32_u32_Float4` for `((f32, u32), Float4)`, so
/// no two tuple types share a name).
pub fn tuple_struct(ts: &[Ty]) -> String {
    fn mangle(t: &Ty) -> String {
        match t {
            Ty::Scalar(s) => s.rust().to_string(),
            Ty::Vector(v) => v.rust.to_string(),
            Ty::Tuple(ts) => format!("T{}_{}", ts.len(), ts.iter().map(mangle).collect::<Vec<_>>().join("_")),
            other => other.to_string(),
        }
    }
    format!("__ce_tuple_{}", ts.iter().map(mangle).collect::<Vec<_>>().join("_"))
}

/// The C++ declaration of the tuple struct of `ts`.
pub fn tuple_decl(ts: &[Ty]) -> String {
    let fields: Vec<String> = ts.iter().enumerate().map(|(k, t)| format!("{} _{k};", t.cpp())).collect();
    format!("struct {} {{ {} }};", tuple_struct(ts), fields.join(" "))
}

/// Adds the tuple types `ty` uses to `out`, each once, a nested tuple before the tuple holding
/// it (the order their C++ structs are declared in).
pub fn tuples_used(ty: &Ty, out: &mut Vec<Vec<Ty>>) {
    if let Ty::Tuple(ts) = ty {
        for t in ts {
            tuples_used(t, out);
        }
        if !out.contains(ts) {
            out.push(ts.clone());
        }
    }
}

/// The common type of two operands of an arithmetic or comparison operator, as Rust has it:
/// the same type on both sides, a literal taking the other side's type. `None`: a mismatch.
pub fn unify(a: &Ty, b: &Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Opaque, _) | (_, Ty::Opaque) => Some(Ty::Opaque),
        (Ty::Never, t) | (t, Ty::Never) => Some(t.clone()),
        (Ty::Scalar(x), Ty::Scalar(y)) if x == y => Some(a.clone()),
        (Ty::Vector(x), Ty::Vector(y)) if x == y => Some(a.clone()),
        (Ty::Tuple(x), Ty::Tuple(y)) if x == y => Some(a.clone()),
        (Ty::Struct(x), Ty::Struct(y)) if x == y => Some(a.clone()),
        (Ty::Scalar(s), Ty::IntLit) | (Ty::IntLit, Ty::Scalar(s)) if s.is_int() => Some(Ty::Scalar(*s)),
        (Ty::Scalar(s), Ty::FloatLit) | (Ty::FloatLit, Ty::Scalar(s)) if s.is_float() => Some(Ty::Scalar(*s)),
        (Ty::IntLit, Ty::IntLit) => Some(Ty::IntLit),
        (Ty::FloatLit, Ty::FloatLit) => Some(Ty::FloatLit),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_take_the_other_side() {
        assert_eq!(unify(&Ty::Scalar(Scalar::F32), &Ty::FloatLit), Some(Ty::Scalar(Scalar::F32)));
        assert_eq!(unify(&Ty::IntLit, &Ty::Scalar(Scalar::Usize)), Some(Ty::Scalar(Scalar::Usize)));
        assert_eq!(unify(&Ty::Scalar(Scalar::F32), &Ty::IntLit), None);
        assert_eq!(unify(&Ty::Scalar(Scalar::F32), &Ty::Scalar(Scalar::F64)), None);
    }

    #[test]
    fn vector_names() {
        let v = Vector::from_name("Float4").unwrap();
        assert_eq!((v.elem, v.len, v.cpp()), (Scalar::F32, 4, "float4".to_string()));
        assert_eq!(
            Vector::from_name("ULongLong2").map(|v| (v.elem, v.cpp())),
            Some((Scalar::U64, "ulonglong2".into()))
        );
        assert_eq!(Vector::from_name("UChar3").unwrap().fields(), &["x", "y", "z"]);
        assert!(Vector::from_name("Double4").is_none());
        assert!(Vector::from_name("Float5").is_none());
        let h = Vector::from_name("Half2").unwrap();
        assert_eq!((h.elem, h.len, h.cpp(), h.make()), (Scalar::F16, 2, "__half2".into(), "__halves2half2".into()));
        let b = Vector::from_name("Bf162").unwrap();
        assert_eq!((b.elem, b.cpp(), b.make()), (Scalar::Bf16, "__nv_bfloat162".into(), "__halves2bfloat162".into()));
        assert_eq!((h.intrinsic("*"), b.intrinsic("-"), h.intrinsic("%")), (Some("__hmul2"), Some("__hsub2"), None));
        assert!(Vector::from_name("Half1").is_none() && Vector::from_name("Half4").is_none());
        assert_eq!(v.intrinsic("+"), None, "float4 has no operators");
    }

    #[test]
    fn nested_tuples_have_their_own_structs() {
        let inner = Ty::Tuple(vec![Ty::Scalar(Scalar::F32), Ty::Scalar(Scalar::U32)]);
        let h = Ty::Vector(Vector::from_name("Half2").unwrap());
        let outer = vec![inner.clone(), h];
        assert_eq!(tuple_struct(&outer), "__ce_tuple_T2_f32_u32_Half2");
        assert_eq!(tuple_decl(&outer), "struct __ce_tuple_T2_f32_u32_Half2 { __ce_tuple_f32_u32 _0; __half2 _1; };");
        // `((f32, u32), f64)` and `(f32, (u32, f64))` differ.
        let a = [inner.clone(), Ty::Scalar(Scalar::F64)];
        let b = [Ty::Scalar(Scalar::F32), Ty::Tuple(vec![Ty::Scalar(Scalar::U32), Ty::Scalar(Scalar::F64)])];
        assert_ne!(tuple_struct(&a), tuple_struct(&b));
        let mut order = Vec::new();
        tuples_used(&Ty::Tuple(outer.clone()), &mut order);
        tuples_used(&inner, &mut order);
        assert_eq!(order.len(), 2);
        assert_eq!(order[0], vec![Ty::Scalar(Scalar::F32), Ty::Scalar(Scalar::U32)], "the inner struct first");
        assert_eq!(Ty::Tuple(outer).to_string(), "((f32, u32), Half2)");
    }
}

//! Mapping CUDA parameter types to Rust types.
//!
//! Names are looked up in [`BUILTINS`] first. Other names (typedefs, `using`, `#define`s, user
//! structs) are resolved from what the compiler saw, through the probe in [`crate::oracle::probe`]; when
//! no compiler ran (NVRTC fallback builds), from the aliases and records found in the source.

use crate::lex::Token;
use crate::signature::{Param, Parsed};
pub use cuda_embed_source::ctypes::{builtin, toolkit, Builtin, RustPath, BUILTINS, TOOLKIT, VECTORS};

/// The Rust type of a value: a builtin, or a generic parameter standing for a template's type
/// parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RustType {
    /// A type from the tables.
    Builtin(Builtin),
    /// A generic parameter of a template kernel's launcher, named after the C++ template
    /// parameter (`T`).
    Generic(String),
}

impl RustType {
    /// The type's name as the docs show it (`f32`, `Half2`, `T`).
    pub fn describe(&self) -> &str {
        match self {
            RustType::Builtin(b) => b.rust.name(),
            RustType::Generic(g) => g,
        }
    }

    /// Its size in bytes, when known here (a generic parameter has none).
    pub fn size(&self) -> Option<u32> {
        match self {
            RustType::Builtin(b) => Some(b.size),
            RustType::Generic(_) => None,
        }
    }
}

/// The Rust side of one kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapped {
    /// A value of a known type.
    Value(RustType),
    /// A user struct/enum by value: Rust type of this name, checked against `size`/`align` when
    /// the compiler told them.
    User {
        /// Rust type name (as written in CUDA).
        name: String,
        /// Size/alignment from the compiler, when known.
        layout: Option<(u32, u32)>,
    },
    /// Device memory. `elem` is `None` for untyped memory (`void*`, opaque and user pointees).
    Pointer {
        /// Element type.
        elem: Option<RustType>,
        /// Whether the kernel may write through it (non-const pointee).
        mutable: bool,
    },
    /// A pointer to pointer: passed as a raw device address.
    RawPointer,
}

impl Mapped {
    /// The byte size the kernel's parameter must have, when known here.
    pub fn size(&self) -> Option<u32> {
        match self {
            Mapped::Value(t) => t.size(),
            Mapped::User { layout, .. } => layout.map(|l| l.0),
            Mapped::Pointer { .. } | Mapped::RawPointer => Some(8),
        }
    }

    /// Human description of the Rust type (for docs).
    pub fn describe(&self) -> String {
        match self {
            Mapped::Value(t) => t.describe().to_string(),
            Mapped::User { name, .. } => format!("{name} (your #[repr(C)] type)"),
            Mapped::Pointer { elem: Some(e), mutable: false } => format!("&impl DeviceBuffer<{}>", e.describe()),
            Mapped::Pointer { elem: Some(e), mutable: true } => format!("&mut impl DeviceBufferMut<{}>", e.describe()),
            Mapped::Pointer { elem: None, mutable: false } => "&impl DeviceBuffer<T> (any T)".into(),
            Mapped::Pointer { elem: None, mutable: true } => "&mut impl DeviceBufferMut<T> (any T)".into(),
            Mapped::RawPointer => "RawDevicePtr".into(),
        }
    }
}

pub use cuda_embed_source::typecode::{kind, Probed};

/// The builtin a probed value type is (scalars, `__half`/`bf16`/fp8, CUDA vector types, the
/// runtime's plain structs of [`TOOLKIT`]).
pub fn probed_builtin(p: &Probed) -> Option<Builtin> {
    from_probe_scalar(p)
}

fn from_probe_scalar(p: &Probed) -> Option<Builtin> {
    let name = match (p.kind, p.size) {
        (kind::BOOL, _) => "bool",
        (kind::SIGNED, 1) => "int8_t",
        (kind::SIGNED, 2) => "int16_t",
        (kind::SIGNED, 4) => "int32_t",
        (kind::SIGNED, 8) => "int64_t",
        (kind::UNSIGNED, 1) => "uint8_t",
        (kind::UNSIGNED, 2) => "uint16_t",
        (kind::UNSIGNED, 4) => "uint32_t",
        (kind::UNSIGNED, 8) => "uint64_t",
        (kind::FLOAT, _) => "float",
        (kind::DOUBLE, _) => "double",
        (kind::HALF, _) => "__half",
        (kind::BF16, _) => "__nv_bfloat16",
        (kind::FP8E4M3, _) => "__nv_fp8_e4m3",
        (kind::FP8E5M2, _) => "__nv_fp8_e5m2",
        (kind::HALF2, _) => "__half2",
        (kind::BF162, _) => "__nv_bfloat162",
        (kind::VECTOR, _) => return cuda_embed_source::ctypes::by_probe_id(p.vector),
        _ => return None,
    };
    builtin(name)
}

/// Whether a by-value parameter is a TMA descriptor (`CUtensorMap`), which the launcher takes as
/// `&TensorMap`/`&mut TensorMapMut`.
pub fn is_tensor_map(t: &RustType) -> bool {
    matches!(t, RustType::Builtin(b) if b.rust == RustPath::Crate("RawTensorMap"))
}

/// The list of supported types, for error messages.
pub const SUPPORTED: &str = "supported: C/C++ integer types and fixed-width typedefs, float, double, bool, \
__half, __nv_bfloat16, __half2, __nv_bfloat162, __nv_fp8_e4m3/e5m2, CUDA vector types (float4, int2, ...), \
 cuComplex/cuDoubleComplex, cudaTextureObject_t/cudaSurfaceObject_t, cudaGraphConditionalHandle, cudaExtent/cudaPitchedPtr/cudaPos, \
 `const __grid_constant__ CUtensorMap`, \
#[repr(C)] structs by value, and \
pointers to any of these, to void or to opaque types";

/// Maps one parameter. `probe` is what the compiler said about it, if it ran.
pub fn map(param: &Param, parsed: &Parsed, probe: Option<&Probed>) -> Result<Mapped, String> {
    if param.reference {
        return Err(format!(
            "parameter `{}` has reference type `{}`: kernels cannot take host references; pass by value or use a pointer",
            param.name, type_text(param)
        ));
    }
    let compact: String = param.text.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains("(*") || compact.contains("(&") || compact.contains("(^") {
        return Err(format!(
            "parameter `{}` (`{}`) is a function pointer: a host function cannot be passed to a kernel; \
             pass a value that selects the operation, or a template instance",
            param.name, param.text
        ));
    }
    // Resolve textual aliases first so `typedef float* fptr` adds its pointer level; the probe, when
    // present, has the last word on what the base type really is.
    let (base, depth, pointee_const) = resolve_alias(param, parsed);
    if builtin(&param.base).is_none() && param.base != "void" {
        if let Some(p) = probe {
            return map_probed(param, p);
        }
    }
    map_written(param, &base, depth, pointee_const, parsed)
}

fn map_written(
    param: &Param,
    base: &str,
    depth: usize,
    pointee_const: bool,
    parsed: &Parsed,
) -> Result<Mapped, String> {
    let known = builtin(base);
    match depth {
        0 => {
            if base == "void" {
                return Err(format!("parameter `{}` has type void", param.name));
            }
            if let Some(b) = known {
                return Ok(Mapped::Value(RustType::Builtin(b)));
            }
            if is_plain_name(base) {
                // A struct/class/enum (known or not): the user provides a Rust type of that name.
                let _ = parsed.records.contains(base);
                return Ok(Mapped::User { name: base.to_string(), layout: None });
            }
            // `ns::Params p`: the Rust type is named after the last component, as with the probe
            // (`map_probed`); before, only the probe path accepted a namespaced struct.
            if let Some(last) = qualified_last(base) {
                return Ok(Mapped::User { name: last.to_string(), layout: None });
            }
            // `Tensor<float, 1> t`: a class-template instance, named as `using` names it (the
            // alias's own name when the parameter is written with one).
            if let Some(name) = template_id_name(base) {
                let name = if is_plain_name(&param.base) { param.base.clone() } else { name };
                return Ok(Mapped::User { name, layout: None });
            }
            Err(format!("parameter `{}` has unsupported type `{}`; {SUPPORTED}", param.name, param.text))
        }
        // A declarator the parser could not read as `type *...` (a function pointer
        // `void (*f)(int)` leaves `(` in the base): not device memory, so not a pointer.
        _ if base.contains(['(', ')', '[', ']']) || base.is_empty() => {
            Err(format!("parameter `{}` has unsupported type `{}`; {SUPPORTED}", param.name, type_text(param)))
        }
        1 => Ok(Mapped::Pointer { elem: known.map(RustType::Builtin), mutable: !pointee_const }),
        _ => Ok(Mapped::RawPointer),
    }
}

fn map_probed(param: &Param, p: &Probed) -> Result<Mapped, String> {
    if p.depth >= 2 {
        return Ok(Mapped::RawPointer);
    }
    if p.depth == 1 && p.kind == kind::OTHER {
        return Err(format!(
            "parameter `{}` (`{}`) points to a function or member: a kernel cannot take it from Rust; {SUPPORTED}",
            param.name, param.text
        ));
    }
    if p.depth == 1 {
        return Ok(Mapped::Pointer { elem: from_probe_scalar(p).map(RustType::Builtin), mutable: !p.pointee_const });
    }
    match p.kind {
        kind::VOID => Err(format!("parameter `{}` has type void", param.name)),
        kind::OTHER => Err(format!(
            "parameter `{}` has type `{}`, which is not a value or pointer type a kernel can take from Rust; {SUPPORTED}",
            param.name, type_text(param)
        )),
        kind::RECORD | kind::ENUM => {
            let name = match template_id_name(&param.base) {
                Some(name) => name,
                None => param.base.rsplit("::").next().unwrap_or(&param.base).to_string(),
            };
            if !is_plain_name(&name) {
                return Err(format!("parameter `{}` has unsupported type `{}`; {SUPPORTED}", param.name, param.text));
            }
            // A typedef to a builtin (e.g. `typedef float4 vec`) is still that builtin.
            Ok(Mapped::User { name, layout: Some((p.size, p.align)) })
        }
        _ => from_probe_scalar(p)
            .map(|b| Mapped::Value(RustType::Builtin(b)))
            .ok_or_else(|| format!("parameter `{}` has unsupported type `{}`; {SUPPORTED}", param.name, param.text)),
    }
}

/// `a::b::Name` (every component a plain name) -> `Name`.
fn qualified_last(s: &str) -> Option<&str> {
    let s = s.strip_prefix("::").unwrap_or(s);
    (s.contains("::") && s.split("::").all(is_plain_name)).then(|| s.rsplit("::").next().unwrap_or(s))
}

/// The Rust name of a class-template instance written `base` (`Tensor<float,1>`,
/// `lib::Tensor<float, -1>`): the template's unqualified name and its arguments, each run of
/// characters that cannot be in a Rust identifier one `_` (`-` is `neg`): `Tensor_float_1`,
/// `Tensor_float_neg1`. `None` when `base` is not `name<...>`.
pub fn template_id_name(base: &str) -> Option<String> {
    let open = base.find('<')?;
    let inner = base.strip_suffix('>')?.get(open + 1..)?;
    let template = base[..open].trim();
    let template = template.strip_prefix("::").unwrap_or(template);
    if !template.split("::").all(is_plain_name) {
        return None;
    }
    let mut name = template.rsplit("::").next().unwrap_or(template).to_string();
    let mut gap = true;
    for c in inner.replace('-', "neg").chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            if gap {
                name.push('_');
            }
            name.push(c);
            gap = false;
        } else {
            gap = true;
        }
    }
    Some(name)
}

/// The parameter's text without its name (`float& r` -> `float&`).
fn type_text(param: &Param) -> String {
    match param.text.strip_suffix(param.name.as_str()) {
        Some(t) if !t.trim().is_empty() => t.trim_end().to_string(),
        _ => param.text.clone(),
    }
}

fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && !s.contains(' ')
}

/// Follows `typedef`/`using` aliases found in the source (no compiler needed).
fn resolve_alias(param: &Param, parsed: &Parsed) -> (String, usize, bool) {
    let (mut base, mut depth, mut pconst) = (param.base.clone(), param.pointer_depth, param.pointee_const);
    for _ in 0..16 {
        if builtin(&base).is_some() {
            break;
        }
        let Some(body) = parsed.aliases.get(&base) else { break };
        let words: Vec<&Token> = body.iter().filter(|t| !t.is("const") && !t.is("*") && !t.is("struct")).collect();
        let stars = body.iter().filter(|t| t.is("*")).count();
        if depth == 0 && stars > 0 {
            pconst = body.iter().take_while(|t| !t.is("*")).any(|t| t.is("const"));
        }
        depth += stars;
        let next = words.iter().map(|t| t.text.as_str()).collect::<Vec<_>>().join(" ");
        if next == base || next.is_empty() {
            break;
        }
        base = next;
    }
    (base, depth, pconst)
}

pub use cuda_embed_source::typecode::decode as decode_probe;

/// `std::size_t` -> `size_t`, `unsigned   int` -> `unsigned int`: a type as the tables spell it.
pub fn normalise(ty: &str) -> String {
    let words: Vec<&str> = ty.split_whitespace().collect();
    crate::signature::strip_std(&canonical_integer(&words).unwrap_or_else(|| words.join(" ")))
}

/// An integer type written with its keywords in any order (`int unsigned`, `long unsigned long`)
/// in the order the type tables use (`unsigned int`, `unsigned long long`); `None` when `words`
/// are not all integer keywords.
fn canonical_integer(words: &[&str]) -> Option<String> {
    const KEYWORDS: [&str; 6] = ["signed", "unsigned", "short", "long", "char", "int"];
    if words.len() < 2 || !words.iter().all(|w| KEYWORDS.contains(w)) {
        return None;
    }
    let count = |k: &str| words.iter().filter(|w| **w == k).count();
    let mut out: Vec<&str> = Vec::new();
    if count("unsigned") > 0 {
        out.push("unsigned");
    } else if count("signed") > 0 {
        out.push("signed");
    }
    out.extend(std::iter::repeat_n("short", count("short")));
    out.extend(std::iter::repeat_n("long", count("long")));
    out.extend(std::iter::repeat_n("char", count("char")));
    out.extend(std::iter::repeat_n("int", count("int")));
    Some(out.join(" "))
}

/// The Rust type of a non-type template parameter declared as `ty` (a const generic can only be
/// an integer or `bool`).
pub fn const_generic_type(ty: &str) -> Option<&'static str> {
    const INTEGRAL: &[&str] = &["bool", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "usize", "isize"];
    match builtin(ty)?.rust {
        RustPath::Primitive(p) if INTEGRAL.contains(&p) => Some(p),
        _ => None,
    }
}

#[cfg(test)]
mod normalise_tests {
    use super::{normalise, template_id_name};

    #[test]
    fn class_template_instances_get_a_rust_name() {
        assert_eq!(template_id_name("Tensor<float,1>").as_deref(), Some("Tensor_float_1"));
        assert_eq!(template_id_name("::lib::Tensor<unsigned int,-2>").as_deref(), Some("Tensor_unsigned_int_neg2"));
        assert_eq!(template_id_name("Pair<ns::A,Vec<int,4>>").as_deref(), Some("Pair_ns_A_Vec_int_4"));
        assert_eq!(template_id_name("Tensor"), None);
        assert_eq!(template_id_name("a<b>c"), None);
        assert_eq!(template_id_name("(x)<int>"), None);
    }

    #[test]
    fn integer_keywords_in_any_order() {
        assert_eq!(normalise("int unsigned"), "unsigned int");
        assert_eq!(normalise("long  unsigned long int"), "unsigned long long int");
        assert_eq!(normalise("short signed"), "signed short");
        assert_eq!(normalise("char unsigned"), "unsigned char");
        assert_eq!(normalise("long double"), "long double", "not an integer type: unchanged");
        assert_eq!(normalise("float"), "float");
    }
}

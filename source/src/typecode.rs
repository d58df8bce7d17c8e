//! The type codes of the compiler probe: the macro core appends C++ to a module's source that
//! encodes each asked-about type into a `u64` (`__device__` variables the compiler initialises);
//! the macro reads them from PTX at build time, the runtime from the loaded module at first load
//! when no compiler ran at build time. Both decode them here.
//!
//! Layout of a code: bits 0-7 the [`kind`], 8-15 the pointer depth, 16 whether the outermost
//! pointer's pointee is `const`, 20-35 the size of the value or innermost pointee, 36-43 its
//! alignment, 48-63 the vector type id (for [`kind::VECTOR`]).

/// What the compiler said about one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probed {
    /// Kind code ([`kind`]).
    pub kind: u8,
    /// Pointer depth.
    pub depth: u8,
    /// `const` pointee of the outermost pointer.
    pub pointee_const: bool,
    /// Size of the value or innermost pointee (0 when incomplete or void).
    pub size: u32,
    /// Its alignment.
    pub align: u32,
    /// Vector type id (index + 1 in the macro core's vector table) when kind is vector.
    pub vector: u16,
}

/// Probe kind codes; keep in step with the probe's C++ (macro core `probe.rs`).
pub mod kind {
    /// struct/class/union
    pub const RECORD: u8 = 0;
    /// bool
    pub const BOOL: u8 = 1;
    /// signed integer
    pub const SIGNED: u8 = 2;
    /// unsigned integer
    pub const UNSIGNED: u8 = 3;
    /// float
    pub const FLOAT: u8 = 4;
    /// double
    pub const DOUBLE: u8 = 5;
    /// __half
    pub const HALF: u8 = 6;
    /// __nv_bfloat16
    pub const BF16: u8 = 7;
    /// __nv_fp8_e4m3
    pub const FP8E4M3: u8 = 8;
    /// __nv_fp8_e5m2
    pub const FP8E5M2: u8 = 9;
    /// __half2
    pub const HALF2: u8 = 10;
    /// __nv_bfloat162
    pub const BF162: u8 = 11;
    /// void
    pub const VOID: u8 = 12;
    /// enum
    pub const ENUM: u8 = 13;
    /// CUDA vector type
    pub const VECTOR: u8 = 14;
    /// anything else (function pointers, member pointers, ...)
    pub const OTHER: u8 = 15;
}

/// Mask of the kind bits.
pub const KIND_MASK: u64 = 0xff;
/// Mask of the pointer depth bits.
pub const DEPTH_MASK: u64 = 0xff << 8;
/// Mask of the `const` pointee bit.
pub const CONST_MASK: u64 = 1 << 16;
/// Mask of the size bits.
pub const SIZE_MASK: u64 = 0xffff << 20;

/// The code with these fields (alignment and vector id 0): the inverse of [`decode`] for what
/// the masks above select.
pub fn encode(kind: u8, depth: u8, pointee_const: bool, size: u32) -> u64 {
    u64::from(kind) | (u64::from(depth) << 8) | (u64::from(pointee_const) << 16) | ((u64::from(size) & 0xffff) << 20)
}

/// Decodes a probe code.
///
/// ```
/// use cuda_embed_source::typecode::{decode, encode, kind};
/// let p = decode(encode(kind::DOUBLE, 1, true, 8));
/// assert_eq!((p.kind, p.depth, p.pointee_const, p.size), (kind::DOUBLE, 1, true, 8));
/// ```
pub fn decode(v: u64) -> Probed {
    Probed {
        kind: (v & 0xff) as u8,
        depth: ((v >> 8) & 0xff) as u8,
        pointee_const: (v >> 16) & 1 == 1,
        size: ((v >> 20) & 0xffff) as u32,
        align: ((v >> 36) & 0xff) as u32,
        vector: ((v >> 48) & 0xffff) as u16,
    }
}

/// A C++ spelling of the type a code describes, for messages: `const double*`, `int32 (signed,
/// 4 bytes)`, `a struct of 16 bytes`.
///
/// ```
/// use cuda_embed_source::typecode::{describe, encode, kind};
/// assert_eq!(describe(encode(kind::DOUBLE, 1, false, 8)), "double*");
/// assert_eq!(describe(encode(kind::FLOAT, 1, true, 4)), "const float*");
/// assert_eq!(describe(encode(kind::UNSIGNED, 0, false, 8)), "an unsigned 8-byte integer");
/// ```
pub fn describe(v: u64) -> String {
    let p = decode(v);
    let base = match p.kind {
        kind::BOOL => "bool".to_string(),
        kind::SIGNED => format!("a signed {}-byte integer", p.size),
        kind::UNSIGNED => format!("an unsigned {}-byte integer", p.size),
        kind::FLOAT => "float".into(),
        kind::DOUBLE => "double".into(),
        kind::HALF => "__half".into(),
        kind::BF16 => "__nv_bfloat16".into(),
        kind::FP8E4M3 => "__nv_fp8_e4m3".into(),
        kind::FP8E5M2 => "__nv_fp8_e5m2".into(),
        kind::HALF2 => "__half2".into(),
        kind::BF162 => "__nv_bfloat162".into(),
        kind::VOID => "void".into(),
        kind::ENUM => format!("an enum of {} bytes", p.size),
        kind::VECTOR => format!("a CUDA vector type of {} bytes", p.size),
        kind::RECORD => format!("a struct of {} bytes", p.size),
        _ => "a type a kernel cannot take from Rust".into(),
    };
    if p.depth == 0 {
        return base;
    }
    let base = match p.kind {
        kind::SIGNED | kind::UNSIGNED | kind::ENUM | kind::VECTOR | kind::RECORD | kind::OTHER => format!("({base})"),
        _ => base,
    };
    let c = if p.pointee_const { "const " } else { "" };
    format!("{c}{base}{}", "*".repeat(usize::from(p.depth)))
}

/// The macro whose definition leaves out the [`static_checks`] appended to a source (the compile
/// that reads the probe's answers instead defines it).
pub const PROBE_ANSWERS: &str = "CUDA_EMBED_PROBE_ANSWERS";

/// Where the [`static_checks`] appended to `source` start (`source[..at]` is the module's own
/// text), if it carries them.
pub fn static_checks_start(source: &str) -> Option<usize> {
    source.rfind(&guard()[..])
}

/// Whether `source` carries [`static_checks`] (a module whose one compile is its type check).
pub fn has_static_checks(source: &str) -> bool {
    static_checks_start(source).is_some()
}

/// The line that opens [`static_checks`].
fn guard() -> String {
    format!("\n#ifndef {PROBE_ANSWERS}\n")
}

/// `line` of the probe's header with each `static const u64 NAME = VALUE;` member turned into
/// `enum : u64 { NAME = VALUE };`: the same constant in every expression, but no storage. NVRTC
/// gives every `static const` member of the header's explicit specializations a `__device__`
/// variable in the cubin, and a module with variables allocates them at every load (0.4-0.7 ms on
/// an H100); the probe itself is only loaded to be read, so it keeps its form.
fn as_enumerators(line: &str) -> std::borrow::Cow<'_, str> {
    const MEMBER: &str = "static const u64 ";
    if !line.contains(MEMBER) {
        return line.into();
    }
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(at) = rest.find(MEMBER) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + MEMBER.len()..];
        match tail.split_once(';') {
            Some((decl, after)) => {
                out.push_str(&format!("enum : u64 {{ {decl} }};"));
                rest = after;
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.into()
}

/// The compile-time form of a first-load type check: `probe` (the probe C++ a module built
/// without a compiler carries, one `__device__ unsigned long long SYMBOL = EXPR;` line per
/// checked parameter) with each answer turned into a `static_assert` that its checked bits
/// (`mask`) are `value`, for the checks given as `(symbol, mask, value)`.
///
/// Appended to the module's source, it makes the one NVRTC compile of the module also the check:
/// a cubin exists only if every parameter is what its launcher was generated for, and the cubin
/// has nothing of the probe in it (no `__device__` variables to allocate at every load). The
/// whole text sits under `#ifndef` [`PROBE_ANSWERS`], so a compile of the source that defines
/// that macro (to read the answers themselves, and say what a parameter really is) can append
/// the probe instead.
///
/// `None` when a probe line has no check, or a check no probe line: the probe and the checks do
/// not belong together, and the caller checks the answers the slow way.
///
/// ```
/// use cuda_embed_source::typecode::static_checks;
/// let probe = "namespace p { template<class T> struct I { static const unsigned long long v = 7; }; }\n\
///              __device__ unsigned long long __cuda_embed_probe_k0p1 = p::I<float*>::v;\n";
/// let text = static_checks(probe, [("__cuda_embed_probe_k0p1", 0xff, 7)]).unwrap();
/// assert!(text.contains("static_assert((p::I<float*>::v & 0xffull) == 0x7ull"));
/// assert!(!text.contains("__device__"));
/// let module = format!("src{text}");
/// assert_eq!(cuda_embed_source::typecode::static_checks_start(&module), Some(3));
/// assert!(!cuda_embed_source::typecode::has_static_checks("src"));
/// // The header's constants become enumerators (no storage in the cubin).
/// let header = "template<class T> struct K { static const u64 v = 2; static const u64 c = 0; };\n";
/// let text = static_checks(header, []).unwrap();
/// assert!(text.contains("struct K { enum : u64 { v = 2 }; enum : u64 { c = 0 }; };"), "{text}");
/// assert!(static_checks(probe, []).is_none());
/// ```
pub fn static_checks<'a>(probe: &str, checks: impl IntoIterator<Item = (&'a str, u64, u64)>) -> Option<String> {
    const LEAD: &str = "__device__ unsigned long long ";
    let checks: Vec<(&str, u64, u64)> = checks.into_iter().collect();
    let mut used = vec![false; checks.len()];
    let mut out = String::with_capacity(probe.len() + 64);
    out.push_str(&guard());
    for line in probe.split_inclusive('\n') {
        let Some(rest) = line.strip_prefix(LEAD) else {
            out.push_str(&as_enumerators(line));
            continue;
        };
        let (symbol, expr) = rest.split_once(" = ")?;
        let expr = expr.trim_end().strip_suffix(';')?;
        let i = checks.iter().position(|c| c.0 == symbol)?;
        used[i] = true;
        let (_, mask, value) = checks[i];
        out.push_str(&format!(
            "static_assert(({expr} & {mask:#x}ull) == {value:#x}ull, \"cuda-embed first-load type check {symbol}\");\n"
        ));
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str("#endif\n");
    used.iter().all(|u| *u).then_some(out)
}

//! The first-load type check of modules built with no compiler at all.
//!
//! With neither nvcc nor libnvrtc at build time, the macro maps types from the source text, which
//! cannot see through `#if`, macros or every typedef. So the module carries the same type probe
//! the build-time compilers answer ([`crate::oracle::probe`]), appended to the source NVRTC compiles at
//! first use, and for each kernel parameter what its launcher was generated for, as a mask and a
//! value over the probe's type code ([`cuda_embed_source::typecode`]). The code generator appends
//! the checks to the source as `static_assert`s
//! ([`cuda_embed_source::typecode::static_checks`]), so NVRTC's one compile of the module is the
//! check; the runtime compiles the probe itself, and reads each answer from it, only to say what a
//! parameter that failed is.

use crate::front::ir::{Checked, TypedKernel};
use crate::front::types::{Builtin, Mapped, RustPath, RustType};
use crate::oracle::probe::{self, ProbeKey};
use cuda_embed_source::typecode::{encode, kind, CONST_MASK, DEPTH_MASK, KIND_MASK, SIZE_MASK};

/// One parameter to check at first load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Index of the kernel in the module spec (the checked kernels' order).
    pub kernel: usize,
    /// Index of the parameter.
    pub param: usize,
    /// The parameter's name.
    pub name: String,
    /// The parameter as written.
    pub cxx: String,
    /// The launcher's Rust type for it.
    pub rust: String,
    /// The `__device__` variable holding the probe's answer.
    pub symbol: String,
    /// Checked bits of the answer.
    pub mask: u64,
    /// Their expected value.
    pub value: u64,
}

/// The probe to append to the source (empty when nothing is checked) and the checks.
///
/// Every parameter of every kernel is checked, except those of overloaded kernels (whose type
/// `decltype` cannot name) and those whose Rust type does not pin the C++ one (raw pointers,
/// generic parameters).
pub fn plan(checked: &Checked) -> (String, Vec<Check>) {
    let mut probes = Vec::new();
    let mut checks = Vec::new();
    let overloaded = |t: &TypedKernel| checked.kernels.iter().filter(|o| o.unit.expr == t.unit.expr).count() > 1;
    for (ki, t) in checked.kernels.iter().enumerate() {
        if overloaded(t) || t.params.len() != t.unit.kernel.params.len() {
            continue;
        }
        for (pi, (m, p)) in t.params.iter().zip(&t.unit.kernel.params).enumerate() {
            let Some((mask, value)) = expect(m) else { continue };
            let key = ProbeKey::ParamType { kernel: ki, param: pi };
            checks.push(Check {
                kernel: ki,
                param: pi,
                name: p.name.clone(),
                cxx: p.text.clone(),
                rust: m.describe(),
                symbol: probe::variable(&key),
                mask,
                value,
            });
            probes.push(probe::param(key, &t.unit.expr, pi));
        }
    }
    if probes.is_empty() {
        return (String::new(), checks);
    }
    (format!("#line 1 \"cuda-embed-probe\"\n{}", probe::code(&probes)), checks)
}

/// The probe kind of a builtin's Rust type, where it has exactly one.
fn scalar_kind(b: &Builtin) -> Option<u8> {
    Some(match b.rust {
        RustPath::Primitive("bool") => kind::BOOL,
        RustPath::Primitive("i8" | "i16" | "i32" | "i64" | "isize") => kind::SIGNED,
        RustPath::Primitive("u8" | "u16" | "u32" | "u64" | "usize") => kind::UNSIGNED,
        RustPath::Primitive("f32") => kind::FLOAT,
        RustPath::Primitive("f64") => kind::DOUBLE,
        RustPath::Crate("f16") => kind::HALF,
        RustPath::Crate("bf16") => kind::BF16,
        RustPath::Crate("Half2") => kind::HALF2,
        RustPath::Crate("Bf162") => kind::BF162,
        RustPath::Crate("F8E4M3") => kind::FP8E4M3,
        RustPath::Crate("F8E5M2") => kind::FP8E5M2,
        _ => return None,
    })
}

/// `(mask, value)` of the type code a parameter mapped to `m` must have: pointer depth, `const`
/// pointee, and for builtins kind and size. Integers of one byte match either signedness (`char`
/// is unsigned on some hosts). Vector and library types are held to their size only.
pub fn expect(m: &Mapped) -> Option<(u64, u64)> {
    let builtin = |b: &Builtin, depth: u8, c: bool, cmask: u64| {
        let mut mask = DEPTH_MASK | SIZE_MASK | cmask;
        let mut k = kind::RECORD;
        if let Some(sk) = scalar_kind(b) {
            k = sk;
            mask |= if matches!(sk, kind::SIGNED | kind::UNSIGNED) && b.size == 1 { 0xfe } else { KIND_MASK };
            if sk == kind::UNSIGNED && b.size == 1 {
                k = kind::SIGNED;
            }
        }
        (mask, encode(k, depth, c, b.size) & mask)
    };
    match m {
        Mapped::Value(RustType::Builtin(b)) => Some(builtin(b, 0, false, 0)),
        Mapped::User { .. } => Some((DEPTH_MASK, 0)),
        Mapped::Pointer { elem: Some(RustType::Builtin(b)), mutable } => Some(builtin(b, 1, !mutable, CONST_MASK)),
        Mapped::Pointer { elem: None, mutable } => {
            Some((DEPTH_MASK | CONST_MASK, encode(kind::RECORD, 1, !mutable, 0) & (DEPTH_MASK | CONST_MASK)))
        }
        Mapped::Value(RustType::Generic(_)) | Mapped::Pointer { elem: Some(RustType::Generic(_)), .. } => None,
        Mapped::RawPointer => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::types::builtin;
    use cuda_embed_source::typecode::describe;

    fn holds(m: &Mapped, code: u64) -> bool {
        let (mask, value) = expect(m).unwrap();
        code & mask == value
    }

    #[test]
    fn expectations() {
        let f32p = Mapped::Pointer { elem: Some(RustType::Builtin(builtin("float").unwrap())), mutable: true };
        assert!(holds(&f32p, encode(kind::FLOAT, 1, false, 4) | (4 << 36)));
        for wrong in
            [encode(kind::DOUBLE, 1, false, 8), encode(kind::FLOAT, 1, true, 4), encode(kind::FLOAT, 2, false, 4)]
        {
            assert!(!holds(&f32p, wrong), "{}", describe(wrong));
        }
        let cvoid = Mapped::Pointer { elem: None, mutable: false };
        assert!(holds(&cvoid, encode(kind::VOID, 1, true, 0)) && holds(&cvoid, encode(kind::RECORD, 1, true, 24)));
        assert!(!holds(&cvoid, encode(kind::VOID, 1, false, 0)));
        let i8v = Mapped::Value(RustType::Builtin(builtin("char").unwrap()));
        assert!(holds(&i8v, encode(kind::SIGNED, 0, false, 1)) && holds(&i8v, encode(kind::UNSIGNED, 0, false, 1)));
        assert!(!holds(&i8v, encode(kind::BOOL, 0, false, 1)));
        let int = Mapped::Value(RustType::Builtin(builtin("int").unwrap()));
        assert!(holds(&int, encode(kind::SIGNED, 0, false, 4)) && !holds(&int, encode(kind::FLOAT, 0, false, 4)));
        let user = Mapped::User { name: "P".into(), layout: None };
        assert!(holds(&user, encode(kind::RECORD, 0, false, 12)) && !holds(&user, encode(kind::RECORD, 1, false, 12)));
        let f4 = Mapped::Value(RustType::Builtin(builtin("float4").unwrap()));
        assert!(holds(&f4, encode(kind::VECTOR, 0, false, 16)) && !holds(&f4, encode(kind::VECTOR, 0, false, 8)));
        assert_eq!(expect(&Mapped::RawPointer), None);
    }
}

//! Asking the compiler what a parameter type really is.
//!
//! For parameters whose type name is not a known CUDA/C++ spelling (`floatX`, `real_t`, `uint`
//! from a header, a `#define`d name, a user struct), C++ is appended to the source that encodes
//! each such parameter's type — taken from `decltype(kernel)`, so typedefs, `using` and macros
//! are resolved by the compiler itself — into a `__device__` integer. The integer's initial value
//! appears in the PTX, where [`read`] picks it up. See `types::kind` for the encoding.

use crate::front::types::{TOOLKIT, VECTORS};
use std::collections::HashMap;
use std::fmt::{Display, Write};

/// What a probe asks about, and the name its answer is filed under in the PTX.
///
/// Indices are positions in the module's IR: `kernel` in [`crate::front::ir::Module::units`] (ordinary
/// kernels, then one per template instance), `instance` in `instances`, `global` in the parsed
/// globals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKey {
    /// The type of parameter `param` of kernel `kernel`.
    ParamType {
        /// Kernel index.
        kernel: usize,
        /// Parameter index.
        param: usize,
    },
    /// The symbol of a template instance's kernel (taking its address also instantiates it).
    KernelSymbol(usize),
    /// The type given as template argument `arg` of instance `instance`.
    TypeArg {
        /// Instance index.
        instance: usize,
        /// Argument index.
        arg: usize,
    },
    /// The value of non-type template argument `arg` of instance `instance`.
    ValueArg {
        /// Instance index.
        instance: usize,
        /// Argument index.
        arg: usize,
    },
    /// The symbol of a global variable.
    GlobalSymbol(usize),
    /// The size in bytes of a global variable.
    GlobalBytes(usize),
    /// The element type of a global variable (arrays stripped).
    GlobalElem(usize),
    /// The offset of data member `member` of struct `st` (indices into the module's
    /// `structs::CudaStruct` list and its `members`).
    StructOffset {
        /// Struct index.
        st: usize,
        /// Member index.
        member: usize,
    },
    /// The size of data member `member` of struct `st`.
    StructSize {
        /// Struct index.
        st: usize,
        /// Member index.
        member: usize,
    },
    /// The type of data member `member` of struct `st` (array extents stripped), for the Rust
    /// twin generated when the user wrote none.
    StructMemberType {
        /// Struct index.
        st: usize,
        /// Member index.
        member: usize,
    },
}

impl ProbeKey {
    /// Whether `name` is how a [`ProbeKey::KernelSymbol`] is written.
    fn is_kernel_symbol(name: &str) -> bool {
        name.strip_prefix('i').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }
}

/// The identifier-safe name of a key in the probe's C++ and the PTX. Only this module writes and
/// reads it.
impl std::fmt::Display for ProbeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeKey::ParamType { kernel, param } => write!(f, "u{kernel}_{param}"),
            ProbeKey::KernelSymbol(k) => write!(f, "i{k}"),
            ProbeKey::TypeArg { instance, arg } => write!(f, "t{instance}_{arg}"),
            ProbeKey::ValueArg { instance, arg } => write!(f, "v{instance}_{arg}"),
            ProbeKey::GlobalSymbol(g) => write!(f, "g{g}"),
            ProbeKey::GlobalBytes(g) => write!(f, "gs{g}"),
            ProbeKey::GlobalElem(g) => write!(f, "ge{g}"),
            ProbeKey::StructOffset { st, member } => write!(f, "so{st}_{member}"),
            ProbeKey::StructSize { st, member } => write!(f, "ss{st}_{member}"),
            ProbeKey::StructMemberType { st, member } => write!(f, "sm{st}_{member}"),
        }
    }
}

/// One question for the compiler, its answer filed under `key`: a [`ProbeKey`] in the macro, any
/// identifier-safe name (the default, `String`) for tools and tests that probe on their own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe<K = String> {
    /// Encode a C++ type (see `types::kind`).
    Type {
        /// The key the answer is filed under.
        key: K,
        /// The C++ type.
        ty: String,
    },
    /// Evaluate an integral constant expression.
    Value {
        /// The key the answer is filed under.
        key: K,
        /// The C++ expression.
        expr: String,
    },
    /// Resolve the symbol of a kernel (or template instance) or a global variable: the PTX
    /// initialiser of a pointer to it names the symbol. Taking the address also instantiates a
    /// template kernel.
    Address {
        /// The key the answer is filed under.
        key: K,
        /// The C++ entity, e.g. `ns::axpy<float>`.
        expr: String,
    },
}

/// The probe for parameter `p` of the kernel named by the C++ expression `kernel`
/// (`::ns::k`, `axpy<float>`).
pub fn param<K>(key: K, kernel: &str, p: usize) -> Probe<K> {
    Probe::Type { key, ty: format!("cuda_embed_probe::Arg<{p}, decltype({kernel})>::t") }
}

/// An answer from the compiled PTX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A number (type code or constant value).
    Number(u64),
    /// A symbol name.
    Symbol(String),
}

const HEADER: &str = r#"
namespace cuda_embed_probe {
typedef unsigned long long u64;
template<class T> struct K { static const u64 v = __is_enum(T) ? 13 : (__is_class(T) || __is_union(T)) ? 0 : 15; };
#define CUDA_EMBED_K(T, k) template<> struct K<T> { static const u64 v = (k); };
CUDA_EMBED_K(bool, 1) CUDA_EMBED_K(char, ((char)-1 < 0) ? 2 : 3) CUDA_EMBED_K(signed char, 2)
CUDA_EMBED_K(unsigned char, 3) CUDA_EMBED_K(short, 2) CUDA_EMBED_K(unsigned short, 3) CUDA_EMBED_K(int, 2)
CUDA_EMBED_K(unsigned int, 3) CUDA_EMBED_K(long, 2) CUDA_EMBED_K(unsigned long, 3) CUDA_EMBED_K(long long, 2)
CUDA_EMBED_K(unsigned long long, 3) CUDA_EMBED_K(float, 4) CUDA_EMBED_K(double, 5) CUDA_EMBED_K(void, 12)
#if defined(__CUDA_FP16_H__)
CUDA_EMBED_K(__half, 6) CUDA_EMBED_K(__half2, 10)
#endif
#if defined(__CUDA_BF16_H__)
CUDA_EMBED_K(__nv_bfloat16, 7) CUDA_EMBED_K(__nv_bfloat162, 11)
#endif
#if defined(__CUDA_FP8_H__)
CUDA_EMBED_K(__nv_fp8_e4m3, 8) CUDA_EMBED_K(__nv_fp8_e5m2, 9)
#endif
@VECTORS@
template<class T> struct RC { typedef T t; static const u64 c = 0; };
template<class T> struct RC<const T> { typedef T t; static const u64 c = 1; };
template<class T> struct RC<volatile T> { typedef T t; static const u64 c = 0; };
template<class T> struct RC<const volatile T> { typedef T t; static const u64 c = 1; };
template<class T> struct P { typedef typename RC<T>::t base; static const u64 depth = 0; static const u64 c = 0; };
template<class T> struct P<T*> { typedef typename P<T>::base base; static const u64 depth = P<T>::depth + 1; static const u64 c = RC<T>::c; };
template<class T> struct P<T* const> : P<T*> {};
template<class T> struct P<T* volatile> : P<T*> {};
template<class T> struct P<T* const volatile> : P<T*> {};
template<class T, class = void> struct Sz { static const u64 s = 0; static const u64 a = 0; };
template<class T> struct Sz<T, decltype((void)sizeof(T))> { static const u64 s = sizeof(T); static const u64 a = __alignof__(T); };
template<unsigned I, class... A> struct Nth;
template<class H, class... R> struct Nth<0, H, R...> { typedef H t; };
template<unsigned I, class H, class... R> struct Nth<I, H, R...> { typedef typename Nth<I - 1, R...>::t t; };
template<unsigned I, class F> struct Arg;
template<unsigned I, class... A> struct Arg<I, void(A...)> { typedef typename Nth<I, A...>::t t; };
template<class T> struct RE { typedef T t; };
template<class T, unsigned long long N> struct RE<T[N]> { typedef typename RE<T>::t t; };
template<class T> struct Info {
  typedef typename P<T>::base b;
  static const u64 v = K<b>::v | (P<T>::depth << 8) | (P<T>::c << 16) | (Sz<b>::s << 20) | (Sz<b>::a << 36);
};
}
"#;

const PREFIX: &str = "__cuda_embed_probe_";

/// The `__device__` variable a probe's answer is filed in.
pub fn variable<K: Display + ?Sized>(key: &K) -> String {
    format!("{PREFIX}{key}")
}

/// C++ to append to the source, answering every probe.
pub fn code<K: Display>(probes: &[Probe<K>]) -> String {
    if probes.is_empty() {
        return String::new();
    }
    let mut vectors = String::new();
    for (id, (name, _)) in VECTORS.iter().enumerate() {
        let _ = write!(vectors, "CUDA_EMBED_K({name}, 14ull | ({}ull << 48)) ", id + 1);
    }
    // The runtime's plain structs, where the source sees `driver_types.h` (nvcc always; NVRTC
    // when the source includes it).
    let _ = write!(vectors, "\n#if defined(__DRIVER_TYPES_H__)\n");
    for (i, (name, _, _)) in TOOLKIT.iter().enumerate() {
        let _ = write!(vectors, "CUDA_EMBED_K({name}, 14ull | ({}ull << 48)) ", VECTORS.len() + i + 1);
    }
    vectors.push_str("\n#endif");
    let mut s = HEADER.replace("@VECTORS@", &vectors);
    for p in probes {
        let _ = match p {
            Probe::Type { key, ty } => {
                writeln!(s, "__device__ unsigned long long {PREFIX}{key} = cuda_embed_probe::Info<{ty}>::v;")
            }
            Probe::Value { key, expr } => {
                writeln!(s, "__device__ unsigned long long {PREFIX}{key} = (unsigned long long)({expr});")
            }
            Probe::Address { key, expr } => writeln!(s, "__device__ void* {PREFIX}{key} = (void*)&{expr};"),
        };
    }
    s.push_str("#undef CUDA_EMBED_K\n");
    s
}

/// For NVRTC, which cannot take a kernel's address in a `__device__` initialiser: removes the
/// [`ProbeKey::KernelSymbol`] probes from `source` (each line left blank, so line numbers hold)
/// and returns them as `(key, name expression)` pairs, to be resolved with
/// `nvrtcAddNameExpression`/`nvrtcGetLoweredName` (which instantiate templates just as taking
/// the address does).
pub fn take_kernel_addresses(source: &str) -> (String, Vec<(String, String)>) {
    let lead = format!("__device__ void* {PREFIX}");
    let mut out = Vec::new();
    let mut text = String::with_capacity(source.len());
    for line in source.split_inclusive('\n') {
        let probe = line.strip_prefix(lead.as_str()).and_then(|rest| {
            let (key, expr) = rest.split_once(" = (void*)&")?;
            let expr = expr.trim_end().strip_suffix(';')?;
            ProbeKey::is_kernel_symbol(key).then(|| (key.to_string(), format!("&{expr}")))
        });
        match probe {
            Some(p) => {
                out.push(p);
                text.push('\n');
            }
            None => text.push_str(line),
        }
    }
    (text, out)
}

/// Reads the answers (`.global ... __cuda_embed_probe_KEY = VALUE;` lines) from PTX.
pub fn read(ptx: &str) -> HashMap<String, Answer> {
    let mut out = HashMap::new();
    for line in ptx.lines() {
        let Some(at) = line.find(PREFIX) else { continue };
        let rest = line[at + PREFIX.len()..].trim_end().trim_end_matches(';');
        // A zero-initialised variable has no initialiser in PTX.
        let (key, value) = rest.split_once('=').unwrap_or((rest, "0"));
        let value = value.trim().trim_end_matches(';').trim();
        let answer = if let Ok(n) = value.parse::<u64>() {
            Answer::Number(n)
        } else {
            let sym = value.strip_prefix("generic(").and_then(|v| v.strip_suffix(')')).unwrap_or(value);
            Answer::Symbol(sym.trim().to_string())
        };
        out.insert(key.trim().to_string(), answer);
    }
    out
}

/// The number filed under `key`, if any.
pub fn number<K: Display + ?Sized>(answers: &HashMap<String, Answer>, key: &K) -> Option<u64> {
    match answers.get(&key.to_string()) {
        Some(Answer::Number(n)) => Some(*n),
        _ => None,
    }
}

/// The symbol filed under `key`, if any.
pub fn symbol<K: Display + ?Sized>(answers: &HashMap<String, Answer>, key: &K) -> Option<String> {
    match answers.get(&key.to_string()) {
        Some(Answer::Symbol(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Every answer in one compiled PTX, looked up by [`ProbeKey`].
#[derive(Debug, Clone, Default)]
pub struct Answers(HashMap<String, Answer>);

impl Answers {
    /// Reads the answers from PTX.
    pub fn from_ptx(ptx: &str) -> Answers {
        Answers(read(ptx))
    }

    /// Adds symbols answered outside the PTX (`(key as written in the probe, symbol)`).
    pub fn with_symbols(mut self, symbols: &[(String, String)]) -> Answers {
        for (k, s) in symbols {
            self.0.insert(k.clone(), Answer::Symbol(s.clone()));
        }
        self
    }

    /// The number filed under `key`.
    pub fn number(&self, key: ProbeKey) -> Option<u64> {
        number(&self.0, &key)
    }

    /// The symbol filed under `key`.
    pub fn symbol(&self, key: ProbeKey) -> Option<String> {
        symbol(&self.0, &key)
    }

    /// The type filed under `key`, decoded.
    pub fn probed(&self, key: ProbeKey) -> Option<crate::front::types::Probed> {
        self.number(key).map(crate::front::types::decode_probe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numbers_and_symbols() {
        let ptx = ".global .align 8 .u64 __cuda_embed_probe_k0_1 = 42;\n\
                   .global .align 8 .u64 __cuda_embed_probe_a0 = _Z4axpyIfEvT_PKS0_PS0_i;\n\
                   .global .align 8 .u64 __cuda_embed_probe_g1 = generic(_ZN2ns6coeffsE);\n\
                   .global .align 8 .u64 __cuda_embed_probe_v0_1;\n";
        let a = read(ptx);
        assert_eq!(number(&a, "k0_1"), Some(42));
        assert_eq!(symbol(&a, "a0").as_deref(), Some("_Z4axpyIfEvT_PKS0_PS0_i"));
        assert_eq!(symbol(&a, "g1").as_deref(), Some("_ZN2ns6coeffsE"));
        assert_eq!(number(&a, "a0"), None);
        assert_eq!(number(&a, "v0_1"), Some(0), "zero has no initialiser in PTX");
    }

    #[test]
    fn keys_are_identifiers() {
        let keys = [
            ProbeKey::ParamType { kernel: 1, param: 2 },
            ProbeKey::KernelSymbol(3),
            ProbeKey::TypeArg { instance: 0, arg: 1 },
            ProbeKey::ValueArg { instance: 0, arg: 1 },
            ProbeKey::GlobalSymbol(4),
            ProbeKey::GlobalBytes(4),
            ProbeKey::GlobalElem(4),
            ProbeKey::StructOffset { st: 2, member: 0 },
            ProbeKey::StructSize { st: 2, member: 1 },
            ProbeKey::StructMemberType { st: 2, member: 1 },
        ];
        let names: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["u1_2", "i3", "t0_1", "v0_1", "g4", "gs4", "ge4", "so2_0", "ss2_1", "sm2_1"]);
        let ptx = ".global .align 8 .u64 __cuda_embed_probe_gs4 = 20;\n";
        assert_eq!(Answers::from_ptx(ptx).number(ProbeKey::GlobalBytes(4)), Some(20));
        assert_eq!(Answers::from_ptx(ptx).number(ProbeKey::GlobalBytes(5)), None);
    }

    #[test]
    fn kernel_addresses_become_name_expressions() {
        let probes = [
            Probe::Address { key: ProbeKey::KernelSymbol(3), expr: "ns::axpy<float>".to_string() },
            Probe::Address { key: ProbeKey::GlobalSymbol(3), expr: "::coeffs".to_string() },
        ];
        let src = format!("int a;\n{}", code(&probes));
        let (text, taken) = take_kernel_addresses(&src);
        assert_eq!(taken, [("i3".to_string(), "&ns::axpy<float>".to_string())]);
        assert_eq!(text.lines().count(), src.lines().count(), "line numbers hold");
        assert!(text.contains("__cuda_embed_probe_g3 = (void*)&::coeffs;") && !text.contains("probe_i3"));
        let a = Answers::default().with_symbols(&taken);
        assert_eq!(a.symbol(ProbeKey::KernelSymbol(3)).as_deref(), Some("&ns::axpy<float>"));
    }
}

//! Asking the compiler what a parameter type really is.
//!
//! For parameters whose type name is not a known CUDA/C++ spelling (`floatX`, `real_t`, `uint`
//! from a header, a `#define`d name, a user struct), C++ is appended to the source that encodes
//! each such parameter's type — taken from `decltype(kernel)`, so typedefs, `using` and macros
//! are resolved by the compiler itself — into a `__device__` integer. The integer's initial value
//! appears in the PTX, where [`read_values`] picks it up. See `types::kind` for the encoding.

use crate::signature::Kernel;
use crate::types::VECTORS;
use std::collections::HashMap;
use std::fmt::Write;

/// The symbol holding the code of parameter `p` of kernel `k`.
pub fn symbol(k: usize, p: usize) -> String {
    format!("__cuda_embed_probe_{k}_{p}")
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
template<class T> struct Info {
  typedef typename P<T>::base b;
  static const u64 v = K<b>::v | (P<T>::depth << 8) | (P<T>::c << 16) | (Sz<b>::s << 20) | (Sz<b>::a << 36);
};
}
"#;

/// C++ to append to the source: one probe per listed (kernel index, parameter index).
pub fn code(kernels: &[Kernel], wanted: &[(usize, usize)]) -> String {
    if wanted.is_empty() {
        return String::new();
    }
    let mut vectors = String::new();
    for (id, (name, _)) in VECTORS.iter().enumerate() {
        let _ = write!(vectors, "CUDA_EMBED_K({name}, 14ull | ({}ull << 48)) ", id + 1);
    }
    let mut s = HEADER.replace("@VECTORS@", &vectors);
    for &(k, p) in wanted {
        let kernel = &kernels[k];
        let _ = writeln!(
            s,
            "__device__ unsigned long long {} = cuda_embed_probe::Info<cuda_embed_probe::Arg<{p}, decltype(::{})>::t>::v;",
            symbol(k, p),
            kernel.qualified_name()
        );
    }
    s.push_str("#undef CUDA_EMBED_K\n");
    s
}

/// Reads `.global ... __cuda_embed_probe_K_P = VALUE;` lines from PTX.
pub fn read_values(ptx: &str) -> HashMap<(usize, usize), u64> {
    let mut out = HashMap::new();
    for line in ptx.lines() {
        let Some(at) = line.find("__cuda_embed_probe_") else { continue };
        let rest = &line[at + "__cuda_embed_probe_".len()..];
        let Some((name, value)) = rest.split_once('=') else { continue };
        let mut ids = name.trim().split('_');
        let (Some(k), Some(p)) = (ids.next().and_then(|x| x.parse().ok()), ids.next().and_then(|x| x.parse().ok()))
        else {
            continue;
        };
        if let Ok(v) = value.trim().trim_end_matches(';').trim().parse::<u64>() {
            out.insert((k, p), v);
        }
    }
    out
}

//! The CUDA source of an elementwise kernel, one generator for `elementwise_kernel!` (build time)
//! and its run-time twin (NVRTC).
//!
//! For a kernel `NAME` with the parameter lists of [`crate::params`], the source holds:
//!
//! - the preamble;
//! - `NAME`: the elementwise kernel (a template over the placeholders, in first-use order), with
//!   parameters: one per declared parameter in order (arrays and raw arrays as pointers, scalars by
//!   value), then `long long` length of each raw array, then `long long n`, then `int vector`;
//! - `NAME_types`: a kernel never launched, taking every parameter's element type by value, so the
//!   compiler's answers about those types (sizes, struct layouts) reach the Rust side.
//!
//! The kernel is a grid-stride loop over 64-bit indices with two paths. When `vector` equals the
//! kernel's vector width `K` (16 bytes over the largest array element, all array element sizes
//! powers of two), each thread moves `K` consecutive elements of every array with one 16-byte (or
//! narrower) load or store. Any other `vector` runs the unrolled loop, correct for any alignment:
//! each block takes whole chunks of `blockDim * U` elements ([`UNROLL`]), each thread `U` of them
//! `blockDim` apart, so every load and store of a warp is one contiguous run, and a thread issues
//! all its loads before its first operation. A scalar loop over the rest (fewer than `K`, or than
//! one chunk, elements) follows either. The host passes `vector = K` only when every array
//! pointer is aligned to `K` elements ([`flat_mode`]), and sizes the grid by the elements per
//! thread it returns.
//!
//! In the operation, an array parameter names its element (inputs `const`, outputs writable, both
//! register copies: the operation holds no pointer into an array), a scalar its value, a raw array
//! a small view with `x[j]` and `x.size()`; `i` is the index and `n` the length. An output the
//! operation does not read before assigning it ([`output_is_read`]) is not loaded.

use crate::params::{Instance, ParamKind, ParamLists, Role};
use std::fmt::Write as _;

/// Where a snippet of user code was written, for `#line` directives.
#[derive(Clone, Debug, Default)]
pub struct Origin {
    /// The file as the compiler should print it (`src/main.rs`); no directive when `None`.
    pub file: Option<String>,
    /// 1-based line of the snippet's first character.
    pub line: usize,
}

/// What an elementwise kernel is made of.
#[derive(Clone, Debug, Default)]
pub struct Elementwise<'a> {
    /// The kernel's name (a C identifier).
    pub name: &'a str,
    /// Per-element code.
    pub operation: &'a str,
    /// Code before the kernel (helper functions, includes).
    pub preamble: &'a str,
    /// Generated typedefs of the placeholders, emitted just before the preamble
    /// ([`crate::typedefs::type_preamble`]; empty for none).
    pub type_preamble: &'a str,
    /// Code in the kernel before the loop (its declarations are visible in the loop).
    pub loop_prep: &'a str,
    /// Code in the kernel after the loop.
    pub after_loop: &'a str,
    /// Where each snippet was written: operation, preamble, loop_prep, after_loop.
    pub origins: [Origin; 4],
}

/// The prefix of the generator's own names in the kernels it writes (`_ce_p_x`, the raw pointer
/// behind array `x`; `_ce_n`, the length; ...). User code must not name them: see
/// [`reserved_use`].
pub const RESERVED_PREFIX: &str = "_ce_";

/// The first of the generator's own names (`_ce_*`, [`RESERVED_PREFIX`]) that the user's code
/// names, with the snippet it is in (`"operation"`, `"preamble"`, `"loop_prep"`, `"after_loop"`).
///
/// The snippets are read as the compiler reads them: comments and string literals do not count,
/// and the macros the preamble defines are expanded (also `##` pastes), so `#define P _ce_p_y`
/// followed by `P[i + 1]` is found. Through those names (the raw pointers behind the arrays, the
/// length, the loop variables) an operation could reach memory the safe launchers do not check;
/// with them refused, the operation sees only what the generated code hands it: each array's
/// element `i` (a value for an input, a reference for an output), the scalars and the `raw`
/// arrays with their length.
///
/// ```
/// use cuda_embed_source::elementwise::{reserved_use, Elementwise};
/// let e = |op| Elementwise { name: "k", operation: op, preamble: "", type_preamble: "", loop_prep: "", after_loop: "", origins: Default::default() };
/// assert_eq!(reserved_use(&e("y = x")), None);
/// assert_eq!(reserved_use(&e("_ce_p_y[i + 1] = x")), Some(("operation", "_ce_p_y".to_string())));
/// ```
pub fn reserved_use(e: &Elementwise<'_>) -> Option<(&'static str, String)> {
    let reserved = |tokens: &[crate::lex::Token]| {
        tokens.iter().find(|t| t.is_ident() && t.text.starts_with(RESERVED_PREFIX)).map(|t| t.text.clone())
    };
    let pre = crate::lex::lex(e.preamble);
    if let Some(name) = reserved(&pre.tokens) {
        return Some(("preamble", name));
    }
    for (what, text) in [("loop_prep", e.loop_prep), ("operation", e.operation), ("after_loop", e.after_loop)] {
        // After the preamble, so that its macros are expanded; only this snippet's tokens count.
        let all = crate::lex::lex(&format!("{}\n{text}", e.preamble));
        if let Some(name) = reserved(all.tokens.get(pre.tokens.len()..).unwrap_or_default()) {
            return Some((what, name));
        }
    }
    None
}

/// The CUDA built-in variables the generated kernels read.
const BUILTIN_VARIABLES: &[&str] = &["threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"];

/// Why a user macro named `name` with replacement `value` cannot be defined for a generated
/// kernel, or `None` when it can. The generated kernels' element types, sizes and indexing are
/// what the launchers check arguments against, as written; a macro that changes them makes the
/// compiled kernel differ from what is checked (`-Dfloat=double`: a 4-byte buffer read as 8-byte
/// elements). So a macro may not be named after a C++ keyword (`float`, `int`, `unsigned`, ...),
/// a CUDA type name (`int32_t`, `size_t`, `half`, `float4`, ...), a built-in variable
/// (`threadIdx`, ...) or a generator name (`_ce_*`), nor expand to a generator name
/// (`-DP=_ce_p_y`, then `P[i + 1]` in the operation).
///
/// This holds for every way to define one: `#define` in the preamble or an in-memory header,
/// `-D`/`--define-macro` options, `Program::define`, and the macros' `defines = [...]`.
///
/// ```
/// use cuda_embed_source::elementwise::define_problem;
/// assert_eq!(define_problem("BLOCK", "256"), None);
/// assert!(define_problem("float", "double").unwrap().contains("C++ keyword"));
/// assert!(define_problem("int32_t", "long").unwrap().contains("CUDA type"));
/// assert!(define_problem("P", "_ce_p_y").unwrap().contains("_ce_p_y"));
/// ```
pub fn define_problem(name: &str, value: &str) -> Option<String> {
    let what = if name.starts_with(RESERVED_PREFIX) {
        format!("a name of the generated kernel's own (`{RESERVED_PREFIX}*`)")
    } else if crate::cxx::is_keyword(name) {
        "a C++ keyword".to_string()
    } else if crate::ctypes::BUILTINS
        .iter()
        .chain(crate::ctypes::VECTORS)
        .any(|(n, _)| n.split_whitespace().any(|w| w == name))
        || crate::ctypes::toolkit(name).is_some()
    {
        "a CUDA type name".to_string()
    } else if BUILTIN_VARIABLES.contains(&name) {
        "a CUDA built-in variable".to_string()
    } else {
        let body = crate::lex::lex(value);
        let reserved = body.tokens.iter().find(|t| t.is_ident() && t.text.starts_with(RESERVED_PREFIX));
        return reserved.map(|t| {
            format!(
                "the macro `{name}` expands to `{}`: names starting with `{RESERVED_PREFIX}` are the generated \
                 kernel's own (the arrays' raw pointers, the length, the loop), which user code must not use",
                t.text
            )
        });
    };
    Some(format!(
        "the macro `{name}` redefines {what}: the generated kernel would no longer be the one its arguments are \
         checked against (its element types and indexing are read as written); choose another name"
    ))
}

/// The first problem ([`define_problem`]) with a macro that `code` defines (`#define`, object- or
/// function-like; the last definition of a name counts), or `None`.
///
/// ```
/// use cuda_embed_source::elementwise::redefinition_in;
/// assert_eq!(redefinition_in("#define SCALE 2.0f\n__device__ float f(float x) { return x; }"), None);
/// assert!(redefinition_in("#define float double").unwrap().contains("`float`"));
/// assert!(redefinition_in("#define AT(v) _ce_p_##v").unwrap().contains("_ce_p_"));
/// ```
pub fn redefinition_in(code: &str) -> Option<String> {
    let lexed = crate::lex::lex(code);
    let text = |tokens: &[crate::lex::Token]| tokens.iter().map(|t| t.text.as_str()).collect::<Vec<_>>().join(" ");
    let mut defined: Vec<(&String, String)> = lexed
        .defines
        .iter()
        .map(|(n, body)| (n, text(body)))
        .chain(lexed.macros.iter().map(|(n, m)| (n, text(&m.body))))
        .collect();
    defined.sort();
    defined.into_iter().find_map(|(name, value)| define_problem(name, &value))
}

/// The preamble as the compiler reads it before the generated code: each `-D` define (as a
/// `#define` line), then each in-memory header's text (as if the preamble included it first),
/// then the preamble. [`reserved_use`] and [`redefinition_in`] of this text see through defines
/// and headers too: a header or a define that makes `P` name `_ce_p_y` is found where `P` is used.
pub fn effective_preamble(defines: &[(String, String)], headers: &[&str], preamble: &str) -> String {
    let mut out = String::new();
    for (name, value) in defines {
        out.push_str(&format!("#define {name} {value}\n"));
    }
    for h in headers {
        out.push_str(h);
        out.push('\n');
    }
    out.push_str(preamble);
    out
}

/// The name of the never-launched kernel that carries the element types: `NAME_types`.
pub fn types_kernel(name: &str) -> String {
    format!("{name}_types")
}

/// The C++ name expression of an instance: `NAME<float, int>`, or `NAME` with no placeholders.
pub fn instance_expr(kernel: &str, inst: &Instance) -> String {
    if inst.bindings.is_empty() {
        kernel.to_string()
    } else {
        format!("{kernel}<{}>", inst.types().join(", "))
    }
}

/// The vector width for arrays of elements of these sizes (bytes): 16 bytes over the largest, when
/// every size is a power of two of at most 16 bytes; else 1 (no vector path). No arrays: 1.
///
/// ```
/// use cuda_embed_source::elementwise::vector_width;
/// assert_eq!(vector_width(&[4, 4, 4]), 4);
/// assert_eq!(vector_width(&[2, 4]), 4);
/// assert_eq!(vector_width(&[2]), 8);
/// assert_eq!(vector_width(&[12]), 1);
/// assert_eq!(vector_width(&[]), 1);
/// ```
pub const fn vector_width(sizes: &[usize]) -> usize {
    let mut max = 0;
    let mut k = 0;
    while k < sizes.len() {
        let s = sizes[k];
        if s == 0 || s > 16 || !s.is_power_of_two() {
            return 1;
        }
        if s > max {
            max = s;
        }
        k += 1;
    }
    match 16usize.checked_div(max) {
        Some(w) => w,
        None => 1,
    }
}

/// True when every `(address, element size)` is aligned for the vector path of width `width`.
#[inline]
pub fn aligned(width: usize, arrays: &[(u64, usize)]) -> bool {
    arrays.iter().all(|&(p, s)| p % (s * width) as u64 == 0)
}

/// A C/C++ token of the operation, as far as [`output_is_read`] needs: identifiers, and every
/// other character on its own except `==`, `->` and `::`.
fn lex(code: &str) -> Vec<&str> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let c = b[k];
        if c.is_ascii_whitespace() {
            k += 1;
        } else if c == b'/' && b.get(k + 1) == Some(&b'/') {
            while k < b.len() && b[k] != b'\n' {
                k += 1;
            }
        } else if c == b'/' && b.get(k + 1) == Some(&b'*') {
            k += 2;
            while k + 1 < b.len() && !(b[k] == b'*' && b[k + 1] == b'/') {
                k += 1;
            }
            k += 2;
        } else if c == b'"' || c == b'\'' {
            let q = c;
            k += 1;
            while k < b.len() && b[k] != q {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            k += 1;
            out.push("\"\"");
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let s = k;
            while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            out.push(&code[s..k]);
        } else {
            let two = code.get(k..k + 2);
            if matches!(two, Some("==" | "->" | "::" | "!=" | "<=" | ">=")) {
                out.push(&code[k..k + 2]);
                k += 2;
            } else {
                let len = code[k..].chars().next().map_or(1, char::len_utf8);
                out.push(&code[k..k + len]);
                k += len;
            }
        }
    }
    out
}

/// Whether the operation may read output `name` before assigning it (so its old value must be
/// loaded). It is write-only only when its first mention is a statement of its own at the top
/// level, `name = ...;`, whose right-hand side does not mention it, and the operation has no
/// `continue`, `break`, `return` or `goto` that could skip that statement. Anything else reads.
///
/// ```
/// use cuda_embed_source::elementwise::output_is_read;
/// assert!(!output_is_read("z = x + y", "z"));
/// assert!(!output_is_read("float t = x * 2; z = t; z += 1;", "z"));
/// assert!(output_is_read("y = a * x + y", "y"));
/// assert!(output_is_read("if (x > 0) z = x;", "z"));
/// assert!(output_is_read("z += x", "z"));
/// assert!(!output_is_read("z = v.y", "y"));
/// ```
pub fn output_is_read(operation: &str, name: &str) -> bool {
    let toks = lex(operation);
    if toks.iter().any(|t| matches!(*t, "continue" | "break" | "return" | "goto")) {
        return toks.contains(&name);
    }
    let mentions = |t: &[&str], k: usize| t[k] == name && (k == 0 || !matches!(t[k - 1], "." | "->" | "::"));
    let Some(first) = (0..toks.len()).find(|&k| mentions(&toks, k)) else {
        return false;
    };
    let mut depth = 0i32;
    for t in &toks[..first] {
        match *t {
            "(" | "{" | "[" => depth += 1,
            ")" | "}" | "]" => depth -= 1,
            _ => {}
        }
    }
    let starts_statement = first == 0 || matches!(toks[first - 1], ";" | "}");
    if depth != 0 || !starts_statement || toks.get(first + 1) != Some(&"=") {
        return true;
    }
    let end = (first + 2..toks.len()).find(|&k| toks[k] == ";").unwrap_or(toks.len());
    (first + 2..end).any(|k| mentions(&toks, k))
}

pub(crate) fn line(out: &mut String, origin: &Origin, code: &str, fallback: &str) {
    if let Some(f) = &origin.file {
        let _ = writeln!(out, "#line {} \"{}\"", origin.line, f.replace('\\', "/"));
    }
    out.push_str(code);
    out.push('\n');
    if origin.file.is_some() {
        let _ = writeln!(out, "#line 1 \"{fallback}\"");
    }
}

const SUPPORT: &str = r#"
template<int S> struct _ce_word { struct type { unsigned char b[S]; }; };
template<> struct _ce_word<1> { typedef unsigned char type; };
template<> struct _ce_word<2> { typedef unsigned short type; };
template<> struct _ce_word<4> { typedef unsigned int type; };
template<> struct _ce_word<8> { typedef uint2 type; };
template<> struct _ce_word<16> { typedef uint4 type; };
template<typename T, int K> union _ce_pack {
    typename _ce_word<sizeof(T) * K>::type w;
    T v[K];
    __device__ _ce_pack() {}
};
template<typename T> struct _ce_raw {
    T* p;
    long long len;
    __device__ T& operator[](long long j) const { return p[j]; }
    __device__ long long size() const { return len; }
};
__host__ __device__ constexpr bool _ce_p2(unsigned long long s) { return s != 0 && s <= 16 && (s & (s - 1)) == 0; }
__host__ __device__ constexpr unsigned long long _ce_max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
"#;

/// The CUDA source of the kernel `e.name` (and its `_types` companion) for these parameters.
pub fn source(e: &Elementwise<'_>, lists: &ParamLists) -> String {
    let placeholders = lists.placeholders();
    let template = if placeholders.is_empty() {
        String::new()
    } else {
        format!("template<{}> ", placeholders.iter().map(|p| format!("typename {p}")).collect::<Vec<_>>().join(", "))
    };
    let fallback = format!("elementwise_kernel {} (generated)", e.name);
    let mut s = String::new();
    // Generated lines are not the user's: only the snippets carry their Rust file and line.
    if e.origins.iter().any(|o| o.file.is_some()) {
        let _ = writeln!(s, "#line 1 \"{fallback}\"");
    }
    s.push_str(SUPPORT);
    s.push_str(e.type_preamble);
    if !e.preamble.trim().is_empty() {
        line(&mut s, &e.origins[1], e.preamble, &fallback);
    }
    // The kernel's parameters.
    let mut params = declared_params(lists);
    params.push("long long _ce_n".into());
    params.push("int _ce_vector".into());
    let arrays: Vec<_> = lists.all().filter(|p| p.kind == ParamKind::Array).collect();
    let width = if arrays.is_empty() {
        "1".to_string()
    } else {
        let ok = arrays.iter().map(|p| format!("_ce_p2(sizeof({}))", p.ty)).collect::<Vec<_>>().join(" && ");
        let max = arrays.iter().fold("0ull".to_string(), |acc, p| format!("_ce_max({acc}, sizeof({}))", p.ty));
        format!("(({ok}) ? (int)(16 / {max}) : 1)")
    };
    let _ = writeln!(s, "{template}__global__ void {}({}) {{", e.name, params.join(", "));
    s.push_str("    const long long n = _ce_n;\n");
    for p in lists.all() {
        let ty = p.ty.as_str();
        match p.kind {
            ParamKind::Scalar => {
                let _ = writeln!(s, "    const {ty} {0} = _ce_p_{0};\n    (void){0};", p.name);
            }
            ParamKind::Raw => {
                let c = if p.role == Role::Input { "const " } else { "" };
                let _ =
                    writeln!(s, "    const _ce_raw<{c}{ty}> {0} = {{_ce_p_{0}, _ce_len_{0}}};\n    (void){0};", p.name);
            }
            ParamKind::Array => {}
        }
    }
    s.push_str(
        "    const long long _ce_tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n    \
         const long long _ce_stride = (long long)gridDim.x * blockDim.x;\n",
    );
    if !e.loop_prep.trim().is_empty() {
        line(&mut s, &e.origins[2], e.loop_prep, &fallback);
    }
    let _ = writeln!(
        s,
        "    constexpr int _ce_K = {width};\n    constexpr int _ce_U = {UNROLL};\n    long long _ce_start = 0;"
    );
    // The vector loop.
    s.push_str("    if (_ce_K > 1 && _ce_vector == _ce_K) {\n        const long long _ce_groups = n / _ce_K;\n");
    s.push_str("        for (long long _ce_g = _ce_tid; _ce_g < _ce_groups; _ce_g += _ce_stride) {\n");
    for p in &arrays {
        let (ty, name) = (p.ty.as_str(), &p.name);
        let _ = writeln!(s, "            _ce_pack<{ty}, _ce_K> _ce_v_{name};");
        if p.role == Role::Input || output_is_read(e.operation, name) {
            let c = if p.role == Role::Input { "const " } else { "" };
            let _ = writeln!(
                s,
                "            _ce_v_{name}.w = reinterpret_cast<{c}typename _ce_word<sizeof({ty}) * _ce_K>::type*>(_ce_p_{name})[_ce_g];"
            );
        }
    }
    s.push_str("            #pragma unroll\n            for (int _ce_k = 0; _ce_k < _ce_K; ++_ce_k) {\n");
    s.push_str("                const long long i = _ce_g * _ce_K + _ce_k;\n                (void)i;\n");
    for p in &arrays {
        let (ty, name) = (p.ty.as_str(), &p.name);
        if p.role == Role::Input {
            let _ = writeln!(
                s,
                "                const {ty} {name} = _ce_v_{name}.v[_ce_k];\n                (void){name};"
            );
        } else {
            let _ = writeln!(s, "                {ty}& {name} = _ce_v_{name}.v[_ce_k];");
        }
    }
    s.push_str("                {\n");
    line(&mut s, &e.origins[0], e.operation, &fallback);
    s.push_str(";\n                }\n            }\n");
    for p in arrays.iter().filter(|p| p.role == Role::Output) {
        let (ty, name) = (p.ty.as_str(), &p.name);
        let _ = writeln!(
            s,
            "            reinterpret_cast<typename _ce_word<sizeof({ty}) * _ce_K>::type*>(_ce_p_{name})[_ce_g] = _ce_v_{name}.w;"
        );
    }
    s.push_str("        }\n        _ce_start = _ce_groups * _ce_K;\n    } else {\n");
    // The unrolled loop, for any alignment: each block takes whole chunks of `blockDim * U`
    // elements, each thread `U` of them `blockDim` apart (every load and store of a warp is one
    // contiguous run), all loads before the first operation. Each array is addressed from one
    // pointer per chunk and 32-bit offsets, so the kernel needs no more registers than the
    // vector loop alone (which would lower the occupancy of both paths).
    s.push_str(
        "        const unsigned _ce_bd = blockDim.x;\n        \
         const long long _ce_chunk = (long long)_ce_bd * _ce_U;\n        \
         const long long _ce_full = n / _ce_chunk;\n        \
         for (long long _ce_c = blockIdx.x; _ce_c < _ce_full; _ce_c += gridDim.x) {\n            \
         const long long _ce_b = _ce_c * _ce_chunk + threadIdx.x;\n",
    );
    for p in &arrays {
        let c = if p.role == Role::Input { "const " } else { "" };
        let (ty, name) = (p.ty.as_str(), &p.name);
        let _ = writeln!(
            s,
            "            {c}{ty}* __restrict__ _ce_q_{name} = _ce_p_{name} + _ce_b;\n            _ce_pack<{ty}, _ce_U> _ce_u_{name};"
        );
    }
    let loads: Vec<_> = arrays
        .iter()
        .filter(|p| p.role == Role::Input || output_is_read(e.operation, &p.name))
        .map(|p| format!("_ce_u_{0}.v[_ce_k] = _ce_q_{0}[_ce_k * _ce_bd];", p.name))
        .collect();
    if !loads.is_empty() {
        let _ = writeln!(
            s,
            "            #pragma unroll\n            for (int _ce_k = 0; _ce_k < _ce_U; ++_ce_k) {{\n                {}\n            }}",
            loads.join("\n                ")
        );
    }
    s.push_str("            #pragma unroll\n            for (int _ce_k = 0; _ce_k < _ce_U; ++_ce_k) {\n");
    s.push_str("                const long long i = _ce_b + _ce_k * _ce_bd;\n                (void)i;\n");
    for p in &arrays {
        let (ty, name) = (p.ty.as_str(), &p.name);
        if p.role == Role::Input {
            let _ = writeln!(
                s,
                "                const {ty} {name} = _ce_u_{name}.v[_ce_k];\n                (void){name};"
            );
        } else {
            let _ = writeln!(s, "                {ty}& {name} = _ce_u_{name}.v[_ce_k];");
        }
    }
    s.push_str("                {\n");
    line(&mut s, &e.origins[0], e.operation, &fallback);
    s.push_str(";\n                }\n");
    for p in arrays.iter().filter(|p| p.role == Role::Output) {
        let _ = writeln!(s, "                _ce_q_{0}[_ce_k * _ce_bd] = {0};", p.name);
    }
    s.push_str("            }\n        }\n        _ce_start = _ce_full * _ce_chunk;\n    }\n");
    // The scalar loop: the tail of either loop (fewer than K, or than one chunk, elements).
    s.push_str("    for (long long _ce_i = _ce_start + _ce_tid; _ce_i < n; _ce_i += _ce_stride) {\n");
    s.push_str("        const long long i = _ce_i;\n        (void)i;\n");
    for p in &arrays {
        let (ty, name) = (p.ty.as_str(), &p.name);
        if p.role == Role::Input {
            let _ = writeln!(s, "        const {ty} {name} = _ce_p_{name}[i];\n        (void){name};");
        } else if output_is_read(e.operation, name) {
            let _ = writeln!(s, "        {ty} {name} = _ce_p_{name}[i];");
        } else {
            let _ = writeln!(s, "        {ty} {name};");
        }
    }
    s.push_str("        {\n");
    line(&mut s, &e.origins[0], e.operation, &fallback);
    s.push_str(";\n        }\n");
    for p in arrays.iter().filter(|p| p.role == Role::Output) {
        let _ = writeln!(s, "        _ce_p_{0}[i] = {0};", p.name);
    }
    s.push_str("    }\n");
    if !e.after_loop.trim().is_empty() {
        line(&mut s, &e.origins[3], e.after_loop, &fallback);
    }
    s.push_str("}\n");
    // The types carrier.
    let types: Vec<String> = lists.all().enumerate().map(|(k, p)| format!("{} _ce_t{k}", p.ty)).collect();
    let _ = writeln!(s, "{template}__global__ void {}({}) {{}}", types_kernel(e.name), types.join(", "));
    // The strided kernel for N-D operands (after the carrier: its index follows both).
    s.push_str(&crate::ndarray::nd_kernel(e, lists, &template, &fallback));
    s
}

/// The elements each thread of the unrolled loop takes per chunk. Four keep every kernel tried
/// (f32, f64, f16, one-byte and struct elements, two and three arrays) at the registers of its
/// vector loop alone on sm_90, so neither path loses occupancy; 8 or 16 for small elements
/// did not (one-byte elements: 40 and 64 registers against 32).
pub const UNROLL: usize = 4;

/// How a flat launch runs, from the kernel's vector width ([`vector_width`]) and every array's
/// `(address, element size)`: the kernel's `vector` argument and the elements each thread takes per
/// step of its loop (for the grid). Every array aligned to `width` elements: the vector path
/// (`width`, `width`); else the unrolled loop, correct for any alignment (`1`, [`UNROLL`]).
///
/// ```
/// use cuda_embed_source::elementwise::flat_mode;
/// assert_eq!(flat_mode(4, &[(256, 4), (512, 4)]), (4, 4));
/// assert_eq!(flat_mode(4, &[(260, 4), (512, 4)]), (1, 4));
/// assert_eq!(flat_mode(16, &[(257, 1)]), (1, 4));
/// assert_eq!(flat_mode(1, &[(256, 12)]), (1, 4));
/// ```
#[inline]
pub fn flat_mode(width: usize, arrays: &[(u64, usize)]) -> (i32, usize) {
    if width > 1 && aligned(width, arrays) {
        (width as i32, width)
    } else {
        (1, UNROLL)
    }
}

/// The C++ parameters every generated elementwise kernel (flat and N-D) starts with: the declared
/// parameters (arrays as `__restrict__` pointers, `const` for inputs), then each raw array's
/// length.
pub(crate) fn declared_params(lists: &ParamLists) -> Vec<String> {
    let mut params = Vec::new();
    for p in lists.all() {
        let ty = p.ty.as_str();
        let c = if p.role == Role::Input { "const " } else { "" };
        params.push(match p.kind {
            ParamKind::Array | ParamKind::Raw => format!("{c}{ty}* __restrict__ _ce_p_{}", p.name),
            ParamKind::Scalar => format!("{ty} _ce_p_{}", p.name),
        });
    }
    for p in lists.all().filter(|p| p.kind == ParamKind::Raw) {
        params.push(format!("long long _ce_len_{}", p.name));
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads() {
        assert!(!output_is_read("z = x;", "z"));
        assert!(output_is_read("z = z * 2", "z"));
        assert!(output_is_read("{ z = x; }", "z"));
        assert!(output_is_read("if (x < 0) continue; z = x;", "z"));
        assert!(!output_is_read("if (x < 0) continue; w = x;", "z"));
        assert!(output_is_read("z.a = x", "z"));
        assert!(!output_is_read("// z\nw = x", "z"));
        assert!(!output_is_read("w = x", "z"));
        assert!(output_is_read("z == x", "z"));
        assert!(!output_is_read("int k = 2; for (int j = 0; j < k; ++j) w += j; z = w;", "z"));
    }

    #[test]
    fn the_generators_names_are_refused_in_every_snippet() {
        let e = |operation, preamble, loop_prep, after_loop| Elementwise {
            name: "k",
            operation,
            preamble,
            loop_prep,
            after_loop,
            ..Default::default()
        };
        assert_eq!(reserved_use(&e("y = x", "", "", "")), None);
        // In a comment or a string it is not a name.
        assert_eq!(reserved_use(&e("y = x; // _ce_p_y", "", "", "")), None);
        assert_eq!(reserved_use(&e("printf(\"_ce_n\"); y = x", "", "", "")), None);
        let found = |op, pre, prep, after| reserved_use(&e(op, pre, prep, after));
        assert_eq!(found("_ce_p_y[i + 1000] = x", "", "", ""), Some(("operation", "_ce_p_y".into())));
        assert_eq!(found("y = x", "", "long long m = _ce_n;", ""), Some(("loop_prep", "_ce_n".into())));
        assert_eq!(found("y = x", "", "", "_ce_p_y[0] = 0;"), Some(("after_loop", "_ce_p_y".into())));
        assert_eq!(found("y = x", "__device__ float* q = _ce_p_y;", "", ""), Some(("preamble", "_ce_p_y".into())));
        // Through a macro of the preamble, also one that pastes the name together.
        assert_eq!(found("P[i + 1] = x", "#define P _ce_p_y", "", ""), Some(("operation", "_ce_p_y".into())));
        assert_eq!(
            found("CAT(_ce, _p_y)[i + 1] = x", "#define CAT(a, b) a##b", "", ""),
            Some(("operation", "_ce_p_y".into()))
        );
    }

    #[test]
    fn generates_both_kernels() {
        let lists = ParamLists::parse("T x, scalar T a, raw float r", "T y").unwrap();
        let e = Elementwise {
            name: "saxpy",
            operation: "y = a * x + y",
            origins: [
                Origin { file: Some("src/x.rs".into()), line: 7 },
                Default::default(),
                Default::default(),
                Default::default(),
            ],
            ..Default::default()
        };
        let src = source(&e, &lists);
        assert!(src.contains("template<typename T> __global__ void saxpy(const T* __restrict__ _ce_p_x, T _ce_p_a, const float* __restrict__ _ce_p_r, T* __restrict__ _ce_p_y, long long _ce_len_r, long long _ce_n, int _ce_vector)"), "{src}");
        assert!(src.contains(
            "template<typename T> __global__ void saxpy_types(T _ce_t0, T _ce_t1, float _ce_t2, T _ce_t3) {}"
        ));
        assert!(src.contains("#line 7 \"src/x.rs\"\ny = a * x + y\n#line 1"));
        assert!(src.contains("_ce_v_y.w = reinterpret_cast"), "y is read: loaded");
        assert!(src.contains("(_ce_p2(sizeof(T)) && _ce_p2(sizeof(T)))"));
        // The unrolled loop of misaligned launches: U elements per thread, blockDim apart, every
        // load of a chunk before its first operation, the rest by the scalar loop.
        assert!(src.contains("constexpr int _ce_U = 4;"), "{src}");
        let unrolled = &src[src.find("const long long _ce_chunk").expect("unrolled loop")..];
        let (loads, first_op) =
            (unrolled.find("_ce_u_y.v[_ce_k] = _ce_q_y[_ce_k * _ce_bd];"), unrolled.find("y = a * x + y"));
        assert!(loads.is_some() && loads < first_op, "loads first: {unrolled}");
        assert!(unrolled.contains("_ce_u_x.v[_ce_k] = _ce_q_x[_ce_k * _ce_bd];"));
        assert!(unrolled.contains("_ce_start = _ce_full * _ce_chunk;"), "the rest by the scalar loop");
        let w = ParamLists::parse("float x", "double z").unwrap();
        let e = Elementwise { name: "k", operation: "z = x", ..Default::default() };
        let src = source(&e, &w);
        assert!(!src.contains("_ce_v_z.w = reinterpret_cast"), "z is write-only: not loaded");
        assert!(src.contains("        double z;\n"), "{src}");
        assert!(!src.contains("_ce_u_z.v[_ce_k] = _ce_q_z"), "z is write-only: not loaded on the unrolled path");
        assert!(src.contains("_ce_q_z[_ce_k * _ce_bd] = z;"));
        assert!(src.starts_with(SUPPORT) && src.contains("__global__ void k(const float*"));
        assert_eq!(instance_expr("k", &Instance::default()), "k");
    }
}

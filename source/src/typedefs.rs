//! CuPy's `type_preamble`: `typedef <CUDA type> <placeholder>;` before the user's preamble, so
//! that code outside the kernels (device functions, structs of the preamble) can name a
//! placeholder's type.
//!
//! One source holds every instance of a kernel (each a template instantiation), so a file-scope
//! typedef can only exist when the source is built for exactly one instance: the run-time twins
//! (`ElementwiseProgram::build` compiles one instance at a time), or a macro with one entry in
//! `types = [...]`. It is emitted only for placeholders the preamble mentions, so a preamble that
//! does not use them compiles exactly as before. Inside the kernels (operation, `map`,
//! `loop_prep`, ...) the placeholders are the template parameters and always usable.

use crate::lex::lex;
use std::fmt::Write as _;

/// The typedefs for the placeholders `bindings` (placeholder, CUDA type) of the one instance a
/// source is built for that `preamble` mentions as identifiers; empty with several instances
/// (`instances != 1`) or none mentioned.
///
/// A type outside the builtin, vector and toolkit tables that is a plain identifier is taken to
/// be a struct the preamble itself may define further down, and declared with an elaborated
/// `typedef struct P T;` (legal before its definition); headers for `__half`/`__nv_bfloat16`
/// are included first (they have include guards, so the preamble may include them again).
///
/// ```
/// use cuda_embed_source::typedefs::type_preamble;
/// let b = [("T".to_string(), "float".to_string())];
/// assert_eq!(type_preamble(&b, 1, "__device__ T twice(T x) { return x + x; }"), "typedef float T;\n");
/// assert_eq!(type_preamble(&b, 2, "__device__ T twice(T x) { return x + x; }"), "");
/// assert_eq!(type_preamble(&b, 1, "__device__ float one() { return 1; }"), "");
/// let p = [("T".to_string(), "Pair".to_string())];
/// assert_eq!(type_preamble(&p, 1, "struct Pair { T a; };"), "typedef struct Pair T;\n");
/// ```
pub fn type_preamble(bindings: &[(String, String)], instances: usize, preamble: &str) -> String {
    if instances != 1 || bindings.is_empty() || preamble.trim().is_empty() {
        return String::new();
    }
    let lexed = lex(preamble);
    let mentioned = |p: &str| lexed.tokens.iter().any(|t| t.is_ident() && t.is(p));
    let mut out = String::new();
    let used: Vec<&(String, String)> = bindings.iter().filter(|(p, _)| mentioned(p)).collect();
    if used.iter().any(|(_, t)| t.contains("half")) {
        out.push_str("#include <cuda_fp16.h>\n");
    }
    if used.iter().any(|(_, t)| t.contains("bfloat16")) {
        out.push_str("#include <cuda_bf16.h>\n");
    }
    for (p, t) in used {
        let t = t.trim();
        let known =
            crate::ctypes::builtin(t).is_some() || t.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        if known {
            let _ = writeln!(out, "typedef {t} {p};");
        } else {
            let _ = writeln!(out, "typedef struct {t} {p};");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elementwise::{source, Elementwise};
    use crate::params::ParamLists;
    use crate::reduction::{RedParam, ReductionSource, Snippet};

    fn b(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
    }

    #[test]
    fn only_mentioned_placeholders_and_known_spellings() {
        let two = b(&[("T", "unsigned int"), ("U", "__half")]);
        assert_eq!(type_preamble(&two, 1, "__device__ U half_of(U v);"), "#include <cuda_fp16.h>\ntypedef __half U;\n");
        assert_eq!(type_preamble(&two, 1, "// T only in a comment\n"), "");
        assert_eq!(
            type_preamble(&two, 1, "__device__ T f(T v, U w);"),
            "#include <cuda_fp16.h>\ntypedef unsigned int T;\ntypedef __half U;\n"
        );
        assert_eq!(type_preamble(&b(&[("T", "ns::P")]), 1, "T x;"), "typedef ns::P T;\n");
        assert_eq!(type_preamble(&b(&[("T", "float")]), 0, "T x;"), "");
    }

    /// The typedef comes after the generated support code and right before the user's preamble.
    #[test]
    fn placed_before_the_preamble_in_both_generators() {
        let lists = ParamLists::parse("T x", "T y").unwrap();
        let pre = "__device__ T twice(T v) { return v + v; }";
        let td = type_preamble(&b(&[("T", "double")]), 1, pre);
        let e = Elementwise {
            name: "k",
            operation: "y = twice(x)",
            preamble: pre,
            type_preamble: &td,
            ..Default::default()
        };
        let src = source(&e, &lists);
        let at = src.find("typedef double T;\n").expect("the typedef");
        assert!(src[at..].starts_with(&format!("typedef double T;\n{pre}")), "{src}");
        let param = |n: &str| RedParam { name: n.into(), ty: "T".into(), scalar: false };
        let mut r = ReductionSource {
            name: "r".into(),
            placeholders: vec!["T".into()],
            inputs: vec![param("x")],
            outputs: vec![param("y")],
            map: Snippet::new("twice(x)"),
            reduce: Snippet::new("a + b"),
            post_map: None,
            identity: Snippet::new("0"),
            reduce_type: None,
            preamble: Some(Snippet::new(pre)),
            instances: vec![vec!["double".into()]],
        };
        assert!(r.source().contains("typedef double T;\n"));
        r.instances.push(vec!["float".into()]);
        assert!(!r.source().contains("typedef double T;"), "several instances share one source: no typedef");
    }
}

//! A small C/C++ lexer: enough to find kernels and read their parameter lists.
//!
//! Comments are dropped, string and character literals kept whole, preprocessor lines set aside
//! (object-like `#define`s are remembered and expanded, since real code puts types and even
//! `__global__` behind macros), and every token keeps its 1-based source line.

use std::collections::HashMap;

/// Kind of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Identifier or keyword.
    Ident,
    /// Number literal.
    Number,
    /// String or character literal, quotes included.
    Literal,
    /// Punctuation; `::` is one token, everything else one character.
    Punct,
}

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: Kind,
    /// Its text.
    pub text: String,
    /// 1-based line in the source.
    pub line: usize,
}

impl Token {
    /// True for an identifier/keyword with this exact text.
    pub fn is(&self, text: &str) -> bool {
        self.text == text
    }
    /// True for an identifier or keyword.
    pub fn is_ident(&self) -> bool {
        self.kind == Kind::Ident
    }
}

/// The lexed source: tokens with macros expanded, and the object-like macros seen.
#[derive(Debug, Default)]
pub struct Lexed {
    /// Tokens in order.
    pub tokens: Vec<Token>,
    /// Object-like `#define NAME body` macros (last definition wins).
    pub defines: HashMap<String, Vec<Token>>,
    /// `#include` targets, as written (`<cuda_fp16.h>`, `"util.cuh"`).
    pub includes: Vec<String>,
    /// The 1-based line of each of [`Lexed::includes`], in the same order.
    pub include_lines: Vec<usize>,
    /// Function-like macros (last definition wins), expanded like object-like ones.
    pub macros: HashMap<String, crate::pp::FnMacro>,
    /// The open `#if` groups while lexing.
    pub(crate) cond: Vec<crate::pp::Cond>,
}

/// Lexes `src`, expanding macros and honouring `#if` (see [`crate::pp`]).
pub fn lex(src: &str) -> Lexed {
    lex_with(src, &[])
}

/// Lexes `src` as [`lex`] does, with `defines` (`(NAME, value)`, as `-DNAME=value` gives them;
/// `-DNAME` is `(NAME, "1")`) defined first.
pub fn lex_with(src: &str, defines: &[(String, String)]) -> Lexed {
    lex_after(src, defines, &[])
}

/// Lexes `src` as [`lex_with`] does, after the macro definitions of `headers` (the texts of the
/// headers it includes, in order; their tokens are dropped), so that `#ifdef FEATURE` sees a
/// `FEATURE` a header defines.
pub fn lex_after(src: &str, defines: &[(String, String)], headers: &[&str]) -> Lexed {
    let mut out = Lexed::default();
    for (name, value) in defines {
        out.defines.insert(name.clone(), tokens_of(value));
    }
    for h in headers {
        raw_tokens(h, &mut out, true);
        out.cond.clear();
    }
    out.includes.clear();
    out.include_lines.clear();
    let raw = raw_tokens(src, &mut out, true);
    out.tokens = expand_tokens(&raw, &out);
    out
}

/// The tokens of `text`, directives ignored, nothing expanded.
pub(crate) fn tokens_of(text: &str) -> Vec<Token> {
    raw_tokens(text, &mut Lexed::default(), false)
}

/// `tokens` with the macros of `lexed` expanded.
pub(crate) fn expand_tokens(tokens: &[Token], lexed: &Lexed) -> Vec<Token> {
    let mut budget = 1usize << 22;
    expand(tokens, lexed, 0, &mut budget)
}

fn expand(tokens: &[Token], lexed: &Lexed, depth: usize, budget: &mut usize) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        i += 1;
        if t.kind != Kind::Ident || depth >= 16 || *budget == 0 {
            out.push(t.clone());
            continue;
        }
        if let Some(body) = lexed.defines.get(&t.text) {
            *budget = budget.saturating_sub(body.len() + 1);
            let body: Vec<Token> = body.iter().map(|b| Token { line: t.line, ..b.clone() }).collect();
            out.extend(expand(&body, lexed, depth + 1, budget));
        } else if let Some((replaced, next)) = lexed.macros.get(&t.text).and_then(|m| crate::pp::call(m, tokens, i - 1))
        {
            *budget = budget.saturating_sub(replaced.len() + 1);
            out.extend(expand(&replaced, lexed, depth + 1, budget));
            i = next;
        } else {
            out.push(t.clone());
        }
    }
    out
}

fn raw_tokens(src: &str, out: &mut Lexed, directives: bool) -> Vec<Token> {
    let b = src.as_bytes();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0usize, 1usize);
    let mut at_line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            at_line_start = true;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        // A backslash-newline splice outside a directive (valid anywhere in C; seen in sources
        // pasted from non-raw Python strings) joins lines: it is not a token.
        if c == b'\\'
            && (b.get(i + 1) == Some(&b'\n') || (b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n')))
        {
            i += if b[i + 1] == b'\r' { 3 } else { 2 };
            line += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i = (i + 2).min(b.len());
            continue;
        }
        if c == b'#' && at_line_start && directives {
            // A preprocessor line, with backslash continuations and comments removed.
            let start_line = line;
            let mut text = String::new();
            while i < b.len() && b[i] != b'\n' {
                if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                    i += 2;
                    line += 1;
                    text.push(' ');
                    continue;
                }
                if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    break;
                }
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    i += 2;
                    while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                        if b[i] == b'\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                    i = (i + 2).min(b.len());
                    text.push(' ');
                    continue;
                }
                text.push(b[i] as char);
                i += 1;
            }
            directive(&text, start_line, out, &mut tokens);
            continue;
        }
        at_line_start = false;
        let start = i;
        let kind = if c == b'_' || c.is_ascii_alphabetic() {
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            Kind::Ident
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_' || b[i] == b'\'') {
                i += 1;
            }
            Kind::Number
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i = (i + 1).min(b.len());
            Kind::Literal
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            i += 2;
            Kind::Punct
        } else {
            // One UTF-8 character.
            i += 1;
            while i < b.len() && (b[i] & 0xC0) == 0x80 {
                i += 1;
            }
            Kind::Punct
        };
        if crate::pp::active(out) {
            tokens.push(Token { kind, text: String::from_utf8_lossy(&b[start..i]).into_owned(), line });
        }
    }
    tokens
}

fn directive(text: &str, line: usize, out: &mut Lexed, tokens: &mut Vec<Token>) {
    let body = text.trim_start_matches('#').trim_start();
    let name_len = body.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(body.len());
    if crate::pp::conditional(&body[..name_len], &body[name_len..], out, tokens) || !crate::pp::active(out) {
        return;
    }
    if let Some(rest) = body.strip_prefix("define") {
        if !rest.starts_with(|c: char| c.is_whitespace()) {
            return;
        }
        let rest = rest.trim_start();
        let name_end = rest.find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        if name.is_empty() || crate::pp::define_fn(name, after, line, out) {
            return;
        }
        let body: Vec<Token> = tokens_of(after).into_iter().map(|t| Token { line, ..t }).collect();
        out.macros.remove(name);
        out.defines.insert(name.to_string(), body);
    } else if let Some(rest) = body.strip_prefix("undef") {
        out.defines.remove(rest.trim());
        out.macros.remove(rest.trim());
    } else if let Some(rest) = body.strip_prefix("include") {
        let target = rest.trim();
        if !target.is_empty() {
            out.includes.push(target.to_string());
            out.include_lines.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<String> {
        lex(src).tokens.into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn drops_comments_and_keeps_lines() {
        let l = lex("a /* x\ny */ b // c\n  ::d 'e' \"f\\\"g\"");
        let got: Vec<(&str, usize)> = l.tokens.iter().map(|t| (t.text.as_str(), t.line)).collect();
        assert_eq!(got, [("a", 1), ("b", 2), ("::", 3), ("d", 3), ("'e'", 3), ("\"f\\\"g\"", 3)]);
    }

    #[test]
    fn expands_object_and_function_like_macros() {
        let src = "#define KERNEL extern \"C\" __global__\n#define F(x) x\n#define REAL \\\n float\nKERNEL void k(REAL a, F(b))";
        assert_eq!(texts(src), ["extern", "\"C\"", "__global__", "void", "k", "(", "float", "a", ",", "b", ")"]);
        // A name without `(` after it is no call.
        assert_eq!(texts("#define F(x) x\nF + F"), ["F", "+", "F"]);
    }

    #[test]
    fn kernels_made_by_function_like_macros() {
        let src = "#define FUSED(T, suffix) extern \"C\" __global__ void moe_##suffix(const T* x, T* y, int n) {}\n\
                   #define STR(x) #x\n#define V(...) f(__VA_ARGS__)\n\
                   FUSED(float, f32)\nFUSED(__half, f16)\nSTR(a b) V(1, 2)";
        let t = texts(src);
        let joined = t.join(" ");
        assert!(joined.contains("void moe_f32 ( const float * x , float * y , int n )"), "{joined}");
        assert!(joined.contains("void moe_f16 ( const __half * x , __half * y , int n )"), "{joined}");
        assert!(joined.ends_with("\"a b\" f ( 1 , 2 )"), "{joined}");
        let lines: Vec<usize> = lex(src).tokens.iter().filter(|t| t.text.starts_with("moe_")).map(|t| t.line).collect();
        assert_eq!(lines, [4, 5], "tokens keep the line of the call");
    }

    #[test]
    fn conditionals_pick_the_branch_the_compiler_will() {
        let src = "#ifdef USE_DOUBLE\ntypedef double real;\n#else\ntypedef float real;\n#endif\n";
        assert_eq!(texts(src), ["typedef", "float", "real", ";"]);
        let with = lex_with(src, &[("USE_DOUBLE".into(), "1".into())]);
        assert_eq!(with.tokens.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(), ["typedef", "double", "real", ";"]);
        let src = "#define N 4\n#if N > 2 && !defined(SMALL)\nbig\n#elif N == 1\none\n#else\nother\n#endif\n#if 0\n#define X 1\n#endif\nX";
        assert_eq!(texts(src), ["big", "X"], "a define in a skipped branch is not made");
        // What the compiler defines is not known here: every branch is read, as without `#if`.
        assert_eq!(texts("#if __CUDA_ARCH__ >= 800\na\n#else\nb\n#endif"), ["a", "b"]);
        assert_eq!(texts("#ifndef __CUDACC_RTC__\na\n#endif\nb"), ["a", "b"]);
        assert_eq!(texts("#if 1\n#if 0\na\n#endif\nb\n#endif\n#endif\nc"), ["b", "c"], "a stray #endif is harmless");
    }

    #[test]
    fn each_branch_of_an_undecided_if_keeps_the_declaration_head() {
        // `template <class T>` before the `#if` heads every alternative, as the compiler reads it.
        let src = "template <class T>\n#if __CUDA_ARCH__ >= 900\nA(T)\n#elif __X__\nB(T)\n#else\nC(T)\n#endif\nD";
        let want = "template < class T > A ( T ) template < class T > B ( T ) template < class T > C ( T ) D";
        assert_eq!(texts(src).join(" "), want);
        assert_eq!(texts("extern \"C\"\n#ifdef __X__\na\n#else\nb\n#endif").join(" "), "extern \"C\" a extern \"C\" b");
        // A decided `#if` reads one branch; other text before an undecided one is not repeated.
        assert_eq!(texts("template <class T>\n#if 0\na\n#else\nb\n#endif").join(" "), "template < class T > b");
        assert_eq!(texts("int x =\n#ifdef __X__\n1;\n#else\n2;\n#endif").join(" "), "int x = 1 ; 2 ;");
        // After a macro call that makes a whole declaration (expanded only later).
        let src = "#define I(T) template void f<T>(T);\nI(int) template <class T>\n#ifdef __X__\na\n#else\nb\n#endif";
        assert_eq!(
            texts(src).join(" "),
            "template void f < int > ( int ) ; template < class T > a template < class T > b"
        );
        assert_eq!(
            texts("x; template <int N>\n#if 0\na\n#elif __X__\nb\n#else\nc\n#endif").join(" "),
            "x ; template < int N > b template < int N > c"
        );
    }

    #[test]
    fn macro_bombs_end() {
        let mut src = String::from("#define A0(x) x x\n");
        for i in 1..40 {
            src.push_str(&format!("#define A{i}(x) A{}(x) A{}(x)\n", i - 1, i - 1));
        }
        src.push_str("A39(z)");
        let n = lex(&src).tokens.len();
        assert!(n > 0 && n < 1 << 24, "{n}");
        assert_eq!(texts("#define R(x) R(x)\nR(1)"), ["R", "(", "1", ")"]);
    }

    #[test]
    fn records_includes_and_undef() {
        let l = lex("#include <cuda_fp16.h>\n# include \"a.cuh\"\n#define A 1\n#undef A\nA");
        assert_eq!(l.includes, ["<cuda_fp16.h>", "\"a.cuh\""]);
        assert_eq!(l.include_lines, [1, 2]);
        assert_eq!(l.tokens[0].text, "A");
    }

    #[test]
    fn self_referential_macro_terminates() {
        assert_eq!(texts("#define A A\nA").len(), 1);
    }
}

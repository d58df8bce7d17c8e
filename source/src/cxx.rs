//! Small readers of C++ tokens and literals shared by the signature, struct and global readers:
//! integer literals, type words, bracket matching, top-level comma splitting.

use crate::lex::{Kind, Token};

/// The C++ keywords and alternative operator spellings (C++20): names a generated kernel (or
/// anything else the generators declare) cannot take.
const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
];

/// Whether `name` is a C++ keyword (or an alternative operator spelling such as `and`).
pub fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

/// Why `name` cannot name a generated CUDA kernel, or `None` when it can: it must be a C
/// identifier and not a C++ keyword (a Rust name such as `new`, `delete` or `float` is one).
///
/// ```
/// use cuda_embed_source::cxx::kernel_name_problem;
/// assert_eq!(kernel_name_problem("saxpy"), None);
/// assert!(kernel_name_problem("delete").unwrap().contains("C++ keyword"));
/// assert!(kernel_name_problem("my-sum").unwrap().contains("not a C identifier"));
/// ```
pub fn kernel_name_problem(name: &str) -> Option<String> {
    let ident = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Some(format!(
            "the name `{name}` is not a C identifier (letters, digits and `_`, not starting with a digit)"
        ));
    }
    if is_keyword(name) {
        return Some(format!(
            "the name `{name}` is a C++ keyword, and the generated CUDA kernel is named after it: choose another \
             name, e.g. `{name}_kernel`"
        ));
    }
    None
}

/// Parses a C integer literal (decimal, hex, octal, binary; `u`/`l` suffixes; `'` separators).
pub fn parse_int(s: &str) -> Option<u64> {
    let t = s.trim().replace('\'', "");
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

/// Joins type words: keywords with spaces, `a::b` paths without, and strips `std::`/`::`/
/// `cuda::std::` from the standard fixed-width names.
pub fn normalise_base(words: &[&Token]) -> String {
    let mut s = String::new();
    for (n, w) in words.iter().enumerate() {
        let glue =
            n > 0 && (w.is("::") || words[n - 1].is("::") || w.kind == Kind::Punct || words[n - 1].kind == Kind::Punct);
        if n > 0 && !glue {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    strip_std(&s)
}

/// `std::size_t` -> `size_t`, `::cuda::std::uint32_t` -> `uint32_t`: the standard namespaces
/// (and a leading `::`) dropped from a name that is otherwise unqualified.
pub fn strip_std(s: &str) -> String {
    for prefix in ["::cuda::std::", "cuda::std::", "::std::", "std::", "::"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            if !rest.contains("::") {
                return rest.to_string();
            }
        }
    }
    s.to_string()
}

/// Index of the bracket closing the one at `open` (`None` when `open` is not an opening bracket
/// or it is never closed).
pub fn matching(t: &[Token], open: usize) -> Option<usize> {
    let (o, c) = match t.get(open)?.text.as_str() {
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        "{" => ("{", "}"),
        "<" => ("<", ">"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (k, x) in t.iter().enumerate().skip(open) {
        if x.is(o) {
            depth += 1;
        } else if x.is(c) {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// Splits on commas not nested in brackets (angle brackets included, for template arguments).
pub fn split_top(t: &[Token]) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let (mut depth, mut angle, mut start) = (0i32, 0i32, 0usize);
    for (k, x) in t.iter().enumerate() {
        match x.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "<" => angle += 1,
            ">" if angle > 0 => angle -= 1,
            "," if depth == 0 && angle == 0 => {
                out.push(&t[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(&t[start..]);
    out
}

/// Joins tokens back into readable text.
pub fn join(t: &[Token]) -> String {
    let mut s = String::new();
    for (n, x) in t.iter().enumerate() {
        let prev = n.checked_sub(1).map(|p| &t[p]);
        let tight = x.is(",")
            || x.is(")")
            || x.is("]")
            || x.is("::")
            || x.is("*")
            || x.is("&")
            || prev.is_some_and(|p| p.is("(") || p.is("[") || p.is("::") || p.is("*") && x.kind == Kind::Punct);
        if n > 0 && !tight {
            s.push(' ');
        }
        s.push_str(&x.text);
    }
    s
}

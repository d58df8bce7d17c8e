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
}

/// Lexes `src`, expanding object-like macros.
pub fn lex(src: &str) -> Lexed {
    let mut out = Lexed::default();
    let raw = raw_tokens(src, &mut out);
    out.tokens = expand(&raw, &out.defines, 0);
    out
}

fn expand(tokens: &[Token], defines: &HashMap<String, Vec<Token>>, depth: usize) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len());
    for t in tokens {
        match defines.get(&t.text) {
            Some(body) if t.kind == Kind::Ident && depth < 16 => {
                let body: Vec<Token> = body.iter().map(|b| Token { line: t.line, ..b.clone() }).collect();
                out.extend(expand(&body, defines, depth + 1));
            }
            _ => out.push(t.clone()),
        }
    }
    out
}

fn raw_tokens(src: &str, out: &mut Lexed) -> Vec<Token> {
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
        if c == b'#' && at_line_start {
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
            directive(&text, start_line, out);
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
        tokens.push(Token { kind, text: String::from_utf8_lossy(&b[start..i]).into_owned(), line });
    }
    tokens
}

fn directive(text: &str, line: usize, out: &mut Lexed) {
    let body = text.trim_start_matches('#').trim_start();
    if let Some(rest) = body.strip_prefix("define") {
        if !rest.starts_with(|c: char| c.is_whitespace()) {
            return;
        }
        let rest = rest.trim_start();
        let name_end = rest.find(|c: char| !(c == '_' || c.is_ascii_alphanumeric())).unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        if name.is_empty() || after.starts_with('(') {
            return; // function-like macros are left alone
        }
        let mut scratch = Lexed::default();
        let body: Vec<Token> = raw_tokens(after, &mut scratch).into_iter().map(|t| Token { line, ..t }).collect();
        out.defines.insert(name.to_string(), body);
    } else if let Some(rest) = body.strip_prefix("undef") {
        out.defines.remove(rest.trim());
    } else if let Some(rest) = body.strip_prefix("include") {
        let target = rest.trim();
        if !target.is_empty() {
            out.includes.push(target.to_string());
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
    fn expands_object_like_macros_only() {
        let src = "#define KERNEL extern \"C\" __global__\n#define F(x) x\n#define REAL \\\n float\nKERNEL void k(REAL a, F(b))";
        assert_eq!(
            texts(src),
            ["extern", "\"C\"", "__global__", "void", "k", "(", "float", "a", ",", "F", "(", "b", ")", ")"]
        );
    }

    #[test]
    fn records_includes_and_undef() {
        let l = lex("#include <cuda_fp16.h>\n# include \"a.cuh\"\n#define A 1\n#undef A\nA");
        assert_eq!(l.includes, ["<cuda_fp16.h>", "\"a.cuh\""]);
        assert_eq!(l.tokens[0].text, "A");
    }

    #[test]
    fn self_referential_macro_terminates() {
        assert_eq!(texts("#define A A\nA").len(), 1);
    }
}

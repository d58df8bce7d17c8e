//! C++ parameter declarations, read the same way by the `cuda_kernel!` macro (each kernel's
//! parameter list) and by the runtime (`ProgramModule::kernel_with_signature`): the base type
//! words, pointer depth, `const` pointee and name of each parameter.

use crate::cxx::{join, matching, normalise_base, split_top};
use crate::lex::{lex, Token};

/// One parameter as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Name (or `argN` when unnamed).
    pub name: String,
    /// The base type words, normalised: `unsigned int`, `float`, `std::size_t` -> `size_t`.
    pub base: String,
    /// Number of `*` (array parameters count as one).
    pub pointer_depth: usize,
    /// `const` on the pointee of the outermost pointer (`const float*`, `float const*`).
    pub pointee_const: bool,
    /// The parameter's text, for messages.
    pub text: String,
    /// A `&` reference (not passable to a kernel from the host).
    pub reference: bool,
}

const QUALIFIERS: &[&str] = &[
    "__restrict__",
    "__restrict",
    "restrict",
    "__grid_constant__",
    "register",
    "volatile",
    "struct",
    "class",
    "union",
    "enum",
    "typename",
    "__device__",
    "__shared__",
    "__constant__",
    "__managed__",
];

/// Keywords that are part of a type, never a parameter name.
const TYPE_WORDS: &[&str] = &[
    "void", "bool", "char", "short", "int", "long", "signed", "unsigned", "float", "double", "const", "__int128",
    "wchar_t", "char16_t", "char32_t",
];

/// Reads one parameter declaration (`const float* __restrict__ x`), `index` naming it `argN`
/// when it has no name.
pub fn read_param(piece: &[Token], index: usize) -> Param {
    let text = join(piece);
    // Drop a default value.
    let cut = piece.iter().position(|x| x.is("=")).unwrap_or(piece.len());
    let mut toks: Vec<&Token> = Vec::new();
    let mut k = 0;
    let mut array = false;
    while k < cut {
        let x = &piece[k];
        if (x.is("__align__") || x.is("alignas") || x.is("__attribute__"))
            && piece.get(k + 1).is_some_and(|n| n.is("("))
        {
            k = matching(piece, k + 1).map_or(cut, |c| c + 1);
            continue;
        }
        if x.is("[") && piece.get(k + 1).is_some_and(|n| n.is("[")) {
            // `[[maybe_unused]] int n`: a C++11 attribute, not an array declarator.
            let mut depth = 0usize;
            while k < cut {
                depth = if piece[k].is("[") {
                    depth + 1
                } else if piece[k].is("]") {
                    depth - 1
                } else {
                    depth
                };
                k += 1;
                if depth == 0 {
                    break;
                }
            }
            continue;
        }
        if x.is("[") {
            array = true;
            k = piece[k..].iter().position(|y| y.is("]")).map_or(cut, |p| k + p + 1);
            continue;
        }
        if QUALIFIERS.contains(&x.text.as_str()) {
            k += 1;
            continue;
        }
        toks.push(x);
        k += 1;
    }
    // The name is a trailing identifier that is not itself part of the type.
    let has_type_before = |n: usize| toks[..n].iter().any(|x| x.is_ident() && !x.is("const"));
    let name = match toks.last() {
        Some(last)
            if last.is_ident()
                && !TYPE_WORDS.contains(&last.text.as_str())
                && has_type_before(toks.len() - 1)
                && !toks.get(toks.len().wrapping_sub(2)).is_some_and(|p| p.is("::")) =>
        {
            let n = last.text.clone();
            toks.pop();
            n
        }
        _ => format!("arg{index}"),
    };
    let reference = toks.iter().any(|x| x.is("&") || x.is("&&"));
    let first_star = toks.iter().position(|x| x.is("*"));
    let pointer_depth = toks.iter().filter(|x| x.is("*")).count() + usize::from(array);
    let before_star = &toks[..first_star.unwrap_or(toks.len())];
    let pointee_const = pointer_depth > 0
        && (before_star.iter().any(|x| x.is("const"))
            || (array && first_star.is_none() && toks.iter().any(|x| x.is("const"))));
    let words: Vec<&Token> =
        before_star.iter().copied().filter(|x| !x.is("const") && !x.is("&") && !x.is("&&")).collect();
    Param { name, base: normalise_base(&words), pointer_depth, pointee_const, text, reference }
}

/// Reads a whole parameter list (`const float* x, float* y, float alpha`; an empty list or
/// `void` is no parameter), through the same lexer as kernel sources (so `//` comments and
/// `#define`s in it behave as there).
///
/// ```
/// let p = cuda_embed_source::cparams::parse_list("const float* x, float* y, float alpha");
/// assert_eq!((p[0].base.as_str(), p[0].pointer_depth, p[0].pointee_const), ("float", 1, true));
/// assert_eq!((p[2].name.as_str(), p[2].pointer_depth), ("alpha", 0));
/// ```
pub fn parse_list(text: &str) -> Vec<Param> {
    let lexed = lex(text);
    let tokens: &[Token] = &lexed.tokens;
    if tokens.is_empty() || (tokens.len() == 1 && tokens[0].is("void")) {
        return Vec::new();
    }
    split_top(tokens).into_iter().enumerate().map(|(i, piece)| read_param(piece, i)).collect()
}

//! The preprocessing the lexer does: function-like macros (with `#` and `##`, variadic ones
//! too) and `#if`/`#ifdef`/`#ifndef`/`#elif`/`#else`/`#endif`, so that kernels made by macros
//! (`#define KERNEL(suffix) extern "C" __global__ void k_##suffix(...)`) are seen, and a
//! `#ifdef USE_DOUBLE` picks the branch the compiler will (with the user's `-D` defines).
//!
//! A condition is decided only when everything in it is known: `defined(X)` and identifiers of
//! the source and the user's defines, numbers and C operators. A condition naming what the
//! compiler or a header defines (an identifier starting with `__`, e.g. `__CUDA_ARCH__`), or that
//! cannot be read, is undecided: every branch of that `#if` is read, as if there were no `#if`
//! (the compiler, when one runs, still has the last word on what exists); a declaration head
//! just before it (`template <class T>`, `extern "C"`) is read again before each further branch,
//! so each alternative definition is the declaration the compiler would see. Expansion depth and
//! sizes are bounded, so no input makes it hang.

use crate::lex::{Kind, Lexed, Token};

/// A function-like macro.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FnMacro {
    /// Parameter names (without `...`).
    pub params: Vec<String>,
    /// Whether the last parameter is `...` (`__VA_ARGS__`).
    pub variadic: bool,
    /// The replacement list.
    pub body: Vec<Token>,
}

/// One open `#if` group.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cond {
    /// Whether the enclosing groups are read.
    outer: bool,
    /// Whether the current branch is read.
    active: bool,
    /// Whether a branch was already taken (`Some(true)`), none yet (`Some(false)`), or the group
    /// is undecided (`None`: every branch is read).
    taken: Option<bool>,
    /// The tokens before the `#if` that head the declaration it splits (`template <class T>`,
    /// `extern "C"`), as a range of the raw tokens: an undecided group reads each further branch
    /// after a copy of them, as the compiler reads whichever branch it takes.
    head: (usize, usize),
}

/// The longest declaration head repeated in each branch of an undecided `#if` (in tokens).
const MAX_HEAD: usize = 256;

/// The declaration head just before an `#if` at the end of `tokens`: the tokens since the last
/// `;`, `{` or `}`, from the first `template` or `extern` (empty when there is none, and when
/// longer than [`MAX_HEAD`], so that no input makes the copies grow without bound).
fn head_of(tokens: &[Token]) -> (usize, usize) {
    // Only the last MAX_HEAD tokens are looked at: an `#if` costs no more in a long source.
    let window = tokens.len().saturating_sub(MAX_HEAD + 1);
    let boundary = tokens[window..].iter().rposition(|t| t.text == ";" || t.text == "{" || t.text == "}");
    let start = match boundary {
        Some(at) => window + at + 1,
        None if window == 0 => 0,
        None => return (0, 0),
    };
    // The head begins at the first `template` or `extern` outside parentheses: what comes before
    // it may be a macro call not yet expanded (`INSTANTIATE(int) template <class T>`).
    let mut depth = 0usize;
    for (at, t) in tokens.iter().enumerate().skip(start) {
        match t.text.as_str() {
            "(" => depth += 1,
            ")" => depth = depth.saturating_sub(1),
            "template" | "extern" if depth == 0 => return (at, tokens.len()),
            _ => {}
        }
    }
    (0, 0)
}

/// Starts a further branch of an undecided group: its declaration head again (see [`Cond::head`]).
fn repeat_head(cond: Option<&Cond>, tokens: &mut Vec<Token>) {
    if let Some(c) = cond.filter(|c| c.outer && c.taken.is_none()) {
        let (from, to) = c.head;
        let head: Vec<Token> = tokens.get(from..to).unwrap_or_default().to_vec();
        tokens.extend(head);
    }
}

/// Whether tokens at this point are read.
pub(crate) fn active(out: &Lexed) -> bool {
    out.cond.last().is_none_or(|c| c.active)
}

/// Handles a conditional directive (`name` is `if`, `ifdef`, ...; `rest` its text) after the raw
/// `tokens` read so far. Returns false when `name` is not one.
pub(crate) fn conditional(name: &str, rest: &str, out: &mut Lexed, tokens: &mut Vec<Token>) -> bool {
    let outer = active(out);
    match name {
        "if" | "ifdef" | "ifndef" => {
            let decided = match name {
                "if" => eval(rest, out),
                "ifdef" => is_defined(rest.trim(), out),
                _ => is_defined(rest.trim(), out).map(|d| !d),
            };
            let head = if outer { head_of(tokens) } else { (0, 0) };
            let cond = match decided {
                Some(v) => Cond { outer, active: outer && v, taken: Some(v), head },
                None => Cond { outer, active: outer, taken: None, head },
            };
            out.cond.push(cond);
        }
        "elif" | "elifdef" | "elifndef" => match out.cond.last().map(|c| c.taken) {
            Some(Some(true)) => {
                if let Some(c) = out.cond.last_mut() {
                    c.active = false;
                }
            }
            Some(Some(false)) => {
                let v = match name {
                    "elif" => eval(rest, out),
                    "elifdef" => is_defined(rest.trim(), out),
                    _ => is_defined(rest.trim(), out).map(|d| !d),
                };
                if let Some(c) = out.cond.last_mut() {
                    c.active = c.outer && v.unwrap_or(true);
                    c.taken = v;
                }
            }
            // An undecided group reads every branch; a stray `#elif` changes nothing.
            _ => repeat_head(out.cond.last(), tokens),
        },
        "else" => {
            repeat_head(out.cond.last(), tokens);
            if let Some(c) = out.cond.last_mut() {
                c.active = c.outer && c.taken != Some(true);
            }
        }
        "endif" => {
            out.cond.pop();
        }
        _ => return false,
    }
    true
}

/// Whether `name` is defined: `None` when it cannot be known here (a name the compiler or a
/// header defines).
fn is_defined(name: &str, out: &Lexed) -> Option<bool> {
    if out.defines.contains_key(name) || out.macros.contains_key(name) {
        Some(true)
    } else if name.starts_with("__") || name.is_empty() {
        None
    } else {
        Some(false)
    }
}

/// Reads a `#define` after the name: a function-like macro when `(` follows the name at once.
/// Returns false when it is object-like.
pub(crate) fn define_fn(name: &str, after: &str, line: usize, out: &mut Lexed) -> bool {
    let Some(rest) = after.strip_prefix('(') else { return false };
    let Some(close) = rest.find(')') else { return true };
    let mut params = Vec::new();
    let mut variadic = false;
    for p in rest[..close].split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if p == "..." {
            variadic = true;
        } else if let Some(named) = p.strip_suffix("...") {
            // GNU named variadic parameter: `args...`.
            params.push(named.trim().to_string());
            variadic = true;
        } else {
            params.push(p.to_string());
        }
    }
    let body: Vec<Token> = crate::lex::tokens_of(&rest[close + 1..]).into_iter().map(|t| Token { line, ..t }).collect();
    out.defines.remove(name);
    out.macros.insert(name.to_string(), FnMacro { params, variadic, body });
    true
}

/// The upper bound on tokens one expansion may produce, so that a macro bomb ends.
const MAX_TOKENS: usize = 1 << 20;

/// Expands function-like macro `m` called at `tokens[at]` (its name; `(` must follow).
/// Returns the replacement (not yet rescanned) and the index after the call's `)`, or `None`
/// when this is no call.
pub(crate) fn call(m: &FnMacro, tokens: &[Token], at: usize) -> Option<(Vec<Token>, usize)> {
    if !tokens.get(at + 1)?.is("(") {
        return None;
    }
    let line = tokens[at].line;
    let mut args: Vec<Vec<Token>> = vec![Vec::new()];
    let mut depth = 0usize;
    let mut i = at + 2;
    loop {
        let t = tokens.get(i)?;
        i += 1;
        if t.is("(") {
            depth += 1;
        } else if t.is(")") {
            if depth == 0 {
                break;
            }
            depth -= 1;
        } else if t.is(",") && depth == 0 && (args.len() <= m.params.len() || !m.variadic) {
            args.push(Vec::new());
            continue;
        }
        if let Some(last) = args.last_mut() {
            last.push(t.clone());
        }
    }
    if m.params.is_empty() && !m.variadic && args.len() == 1 && args[0].is_empty() {
        args.clear();
    }
    let arg = |name: &str| -> Option<&[Token]> {
        if let Some(k) = m.params.iter().position(|p| p == name) {
            return Some(args.get(k).map_or(&[][..], Vec::as_slice));
        }
        (m.variadic && name == "__VA_ARGS__").then(|| args.get(m.params.len()).map_or(&[][..], Vec::as_slice))
    };
    let mut out: Vec<Token> = Vec::new();
    let body = &m.body;
    let mut k = 0;
    while k < body.len() {
        let t = &body[k];
        // `#param`: the argument as a string literal.
        if t.is("#") && body.get(k + 1).is_some_and(|n| arg(&n.text).is_some()) {
            let text: Vec<&str> = arg(&body[k + 1].text).unwrap_or_default().iter().map(|a| a.text.as_str()).collect();
            out.push(Token { kind: Kind::Literal, text: format!("\"{}\"", text.join(" ").replace('"', "\\\"")), line });
            k += 2;
            continue;
        }
        // `a ## b`: paste the last token before with the first after.
        if t.is("#") && body.get(k + 1).is_some_and(|n| n.is("#")) {
            let next = body.get(k + 2);
            let right: Vec<Token> = match next {
                Some(n) => arg(&n.text).map_or_else(|| vec![n.clone()], <[Token]>::to_vec),
                None => Vec::new(),
            };
            let mut right = right.into_iter();
            match (out.pop(), right.next()) {
                (Some(l), Some(r)) => out.push(paste(&l, &r, line)),
                (Some(l), None) => out.push(l),
                (None, Some(r)) => out.push(r),
                (None, None) => {}
            }
            out.extend(right);
            k += 3;
            continue;
        }
        match arg(&t.text) {
            // An argument next to `##` is pasted as written; others are used as written too and
            // expanded when the result is rescanned.
            Some(a) => out.extend(a.iter().map(|x| Token { line, ..x.clone() })),
            None => out.push(Token { line, ..t.clone() }),
        }
        if out.len() > MAX_TOKENS {
            return None;
        }
        k += 1;
    }
    Some((out, i))
}

/// `l ## r` as one token (an identifier when the result is one).
fn paste(l: &Token, r: &Token, line: usize) -> Token {
    let text = format!("{}{}", l.text, r.text);
    let ident = text.starts_with(|c: char| c == '_' || c.is_ascii_alphabetic())
        && text.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    let kind = if ident { Kind::Ident } else { l.kind };
    Token { kind, text, line }
}

/// Evaluates a `#if` expression: `None` when undecided.
fn eval(expr: &str, out: &Lexed) -> Option<bool> {
    let raw = crate::lex::tokens_of(expr);
    // `defined X` / `defined(X)` first, then macros, then the rest of the identifiers.
    let mut t: Vec<Token> = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        if raw[i].is("defined") {
            let (name, skip) =
                if raw.get(i + 1).is_some_and(|x| x.is("(")) { (raw.get(i + 2)?, 4) } else { (raw.get(i + 1)?, 2) };
            let d = is_defined(&name.text, out)?;
            t.push(Token { kind: Kind::Number, text: u8::from(d).to_string(), line: 0 });
            i += skip;
            continue;
        }
        t.push(raw[i].clone());
        i += 1;
    }
    let t = crate::lex::expand_tokens(&t, out);
    let mut p = Parser { t: &t, i: 0 };
    let v = p.ternary()?;
    (p.i == t.len()).then_some(v != 0)
}

/// A small recursive-descent reader of C preprocessor expressions over `i64`.
struct Parser<'a> {
    t: &'a [Token],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.t.get(self.i).map(|t| t.text.as_str())
    }

    /// The next operator, joining two-character ones the lexer splits (`&&`, `==`, `<=`, `<<`).
    fn op(&self) -> Option<String> {
        let a = self.peek()?;
        let b = self.t.get(self.i + 1).map_or("", |t| t.text.as_str());
        let two = format!("{a}{b}");
        if ["&&", "||", "==", "!=", "<=", ">=", "<<", ">>"].contains(&two.as_str()) {
            Some(two)
        } else {
            Some(a.to_string())
        }
    }

    fn eat(&mut self, op: &str) {
        self.i += if op.len() == 2 && op != "::" { 2 } else { 1 };
    }

    fn ternary(&mut self) -> Option<i64> {
        let c = self.binary(0)?;
        if self.peek() == Some("?") {
            self.i += 1;
            let a = self.ternary()?;
            (self.peek() == Some(":")).then_some(())?;
            self.i += 1;
            let b = self.ternary()?;
            return Some(if c != 0 { a } else { b });
        }
        Some(c)
    }

    fn binary(&mut self, level: usize) -> Option<i64> {
        const LEVELS: &[&[&str]] = &[
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<", ">", "<=", ">="],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        let Some(ops) = LEVELS.get(level) else { return self.unary() };
        let mut v = self.binary(level + 1)?;
        while let Some(op) = self.op().filter(|o| ops.contains(&o.as_str())) {
            self.eat(&op);
            let r = self.binary(level + 1)?;
            v = match op.as_str() {
                "||" => i64::from(v != 0 || r != 0),
                "&&" => i64::from(v != 0 && r != 0),
                "|" => v | r,
                "^" => v ^ r,
                "&" => v & r,
                "==" => i64::from(v == r),
                "!=" => i64::from(v != r),
                "<" => i64::from(v < r),
                ">" => i64::from(v > r),
                "<=" => i64::from(v <= r),
                ">=" => i64::from(v >= r),
                "<<" => v.checked_shl(u32::try_from(r).ok()?)?,
                ">>" => v.checked_shr(u32::try_from(r).ok()?)?,
                "+" => v.checked_add(r)?,
                "-" => v.checked_sub(r)?,
                "*" => v.checked_mul(r)?,
                "/" => v.checked_div(r)?,
                _ => v.checked_rem(r)?,
            };
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<i64> {
        let t = self.t.get(self.i)?;
        self.i += 1;
        match t.text.as_str() {
            "!" => Some(i64::from(self.unary()? == 0)),
            "-" => self.unary()?.checked_neg(),
            "+" => self.unary(),
            "~" => Some(!self.unary()?),
            "(" => {
                let v = self.ternary()?;
                (self.peek() == Some(")")).then_some(())?;
                self.i += 1;
                Some(v)
            }
            _ if t.kind == Kind::Number => crate::cxx::parse_int(&t.text).and_then(|n| i64::try_from(n).ok()),
            "true" => Some(1),
            "false" => Some(0),
            // An identifier left after expansion: 0 in C, unless the compiler or a header
            // would define it.
            _ if t.kind == Kind::Ident && !t.text.starts_with("__") => Some(0),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lex::lex_with;

    /// Seeded soup of preprocessor lines, macro calls and brackets: lexing never panics and
    /// ends quickly whatever the nesting, arity or pasting.
    #[test]
    fn never_panics_on_generated_input() {
        const PIECES: &[&str] = &[
            "#define F(a, b) a ## b\n",
            "#define G(...) F(__VA_ARGS__)\n",
            "#define H(x) #x G(x, x)\n",
            "#define E() \n",
            "#define X F(\n",
            "#if ",
            "#ifdef A\n",
            "#ifndef __B__\n",
            "#elif ",
            "#else\n",
            "#endif\n",
            "#undef F\n",
            "defined(A)",
            "defined A",
            "1",
            "0",
            "(",
            ")",
            "&&",
            "||",
            "!",
            "<<",
            "64",
            "/",
            "0\n",
            "%",
            "?",
            ":",
            "-",
            "F(",
            "G(",
            "H(",
            "E()",
            ",",
            "x",
            "\n",
            "##",
            "#",
            "\"s\"",
            "__global__ void k(",
            "int*",
            "float",
            "{",
            "}",
            ";",
            "\\\n",
            "/*",
            "*/",
            "//",
            "'",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            let mut src = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (seed % 60) as usize;
            for _ in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                src.push_str(PIECES[(seed % PIECES.len() as u64) as usize]);
                src.push(' ');
            }
            // Must return (a hang stalls the test); macros/core/tests/robustness.rs has the watchdog.
            let _ = lex_with(&src, &[("A".into(), "1".into())]);
        }
    }
}

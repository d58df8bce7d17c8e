//! The parameter lists of generated kernels (elementwise and reduction kernels): the one parser of
//! `"T x, raw T y, scalar float a"` lists and of the placeholder instances `"T=float, U=int"`, used
//! by the macros at build time and by the run-time twins, so both read the same syntax.
//!
//! # Syntax
//!
//! A list is comma-separated declarations, each `[raw | scalar] [const] TYPE NAME`:
//!
//! - no keyword: an **array**, one element per index `i` (the parameter names that element);
//! - `scalar`: one value for every index (passed by value; inputs only);
//! - `raw`: the whole array, indexed by the user with `i` (the current index) and `n` (the length).
//!
//! `TYPE` is a CUDA type (`float`, `unsigned int`, `long long`, `__half`, `float4`, `int64_t`,
//! `my_struct`, `ns::Pair`, `struct Particle`) or a **placeholder**: a single identifier starting
//! with an upper-case letter (`T`, `U`, `Tin`). A user struct whose name starts with an upper-case
//! letter is written `struct Name` (or qualified, `::Name`) so that it is not read as a placeholder.
//! Pointers, references and templates are not parameter types (`raw T x` is the whole-array form).
//! The names `i` and `n` are reserved, as are names starting with `_ce_` (the generator's own).
//!
//! Inputs are read-only (`is_const`); outputs are written and may also be read.
//!
//! An instance list names a CUDA type for each placeholder, `"T=float, U=int"`, or, when the lists
//! use exactly one placeholder, just the type: `"float"`.
//!
//! Every error carries the byte range, in the string it came from, of the text it is about.
//!
//! ```
//! use cuda_embed_source::params::{ParamKind, ParamLists};
//! let lists = ParamLists::parse("T x, scalar T a", "T y").unwrap();
//! assert_eq!(lists.inputs[1].kind, ParamKind::Scalar);
//! assert_eq!(lists.placeholders(), ["T"]);
//! let inst = lists.instances(&["float", "T=double"]).unwrap();
//! assert_eq!(inst[1].get("T"), Some("double"));
//! assert_eq!(inst[0].resolve(&lists.outputs[0].ty), "float");
//! ```

use std::fmt;
use std::ops::Range;

/// How a parameter is passed and indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// One element per index: the generated loop names element `i` by the parameter's name.
    Array,
    /// One value for all indices, passed by value (`scalar T a`).
    Scalar,
    /// The whole array (`raw T y`): the user code indexes it (`y[i]`, `y[n - 1 - i]`).
    Raw,
}

/// Which list a parameter was declared in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The `inputs` list: read-only.
    Input,
    /// The `outputs` list: written, may be read.
    Output,
}

/// A parameter's element type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// A CUDA type, whitespace normalised (`"unsigned int"`, `"struct Particle"`, `"ns::Pair"`).
    Concrete(String),
    /// A type placeholder (`"T"`), bound by an [`Instance`].
    Placeholder(String),
}

impl ParamType {
    /// The type as written (normalised): the CUDA type or the placeholder's name.
    pub fn as_str(&self) -> &str {
        match self {
            ParamType::Concrete(s) | ParamType::Placeholder(s) => s,
        }
    }

    /// The placeholder's name, if this is one.
    pub fn placeholder(&self) -> Option<&str> {
        match self {
            ParamType::Placeholder(s) => Some(s),
            ParamType::Concrete(_) => None,
        }
    }
}

impl fmt::Display for ParamType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One declared parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name (a C identifier).
    pub name: String,
    /// Its element type.
    pub ty: ParamType,
    /// Array, scalar or raw.
    pub kind: ParamKind,
    /// Which list it was declared in.
    pub role: Role,
    /// Read-only: true for every input, false for every output.
    pub is_const: bool,
    /// Byte range of the whole declaration in its list's string.
    pub span: Range<usize>,
    /// Byte range of the type.
    pub ty_span: Range<usize>,
    /// Byte range of the name.
    pub name_span: Range<usize>,
}

/// A mistake in a parameter or instance list: a message and the byte range it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// What is wrong and what to write instead (lower-case, quoting the syntax).
    pub message: String,
    /// Byte range in the string that was parsed (empty at the end for "missing" errors).
    pub span: Range<usize>,
}

impl ParamError {
    fn new(span: Range<usize>, message: impl Into<String>) -> ParamError {
        ParamError { message: message.into(), span }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParamError {}

/// Which string of a [`ParamLists::parse`] or [`ParamLists::instances`] call an error is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The inputs string.
    Inputs,
    /// The outputs string.
    Outputs,
    /// The instance string at this index of the `types` list.
    Instance(usize),
    /// The `types` list as a whole (e.g. missing while placeholders are used).
    Types,
}

/// A [`ParamError`] and the string it is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListError {
    /// Which string.
    pub source: Source,
    /// The error, with a byte range in that string.
    pub error: ParamError,
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.error.message)
    }
}

impl std::error::Error for ListError {}

/// A lexical token of a declaration: an identifier (with `::` joined in) or one other character.
#[derive(Debug)]
struct Tok<'a> {
    text: &'a str,
    span: Range<usize>,
    ident: bool,
}

fn tokens(text: &str, base: usize) -> Vec<Tok<'_>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let c = b[k];
        if c.is_ascii_whitespace() {
            k += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || (c == b':' && b.get(k + 1) == Some(&b':')) {
            let start = k;
            while k < b.len() {
                if b[k].is_ascii_alphanumeric() || b[k] == b'_' {
                    k += 1;
                } else if b[k] == b':' && b.get(k + 1) == Some(&b':') {
                    k += 2;
                } else {
                    break;
                }
            }
            out.push(Tok { text: &text[start..k], span: base + start..base + k, ident: true });
        } else {
            let len = text[k..].chars().next().map_or(1, char::len_utf8);
            out.push(Tok { text: &text[k..k + len], span: base + k..base + k + len, ident: false });
            k += len;
        }
    }
    out
}

/// Splits `text` at commas into trimmed pieces with their byte ranges; empty pieces are kept.
fn split_commas(text: &str) -> Vec<(&str, Range<usize>)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (k, c) in text.char_indices().chain(std::iter::once((text.len(), ','))) {
        if c == ',' {
            let piece = &text[start..k];
            let lead = piece.len() - piece.trim_start().len();
            let trimmed = piece.trim();
            out.push((trimmed, start + lead..start + lead + trimmed.len()));
            start = k + 1;
        }
    }
    out
}

fn is_c_ident(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// True for names that read as placeholders: one identifier starting with an upper-case letter.
pub fn is_placeholder_name(s: &str) -> bool {
    is_c_ident(s) && s.starts_with(|c: char| c.is_ascii_uppercase())
}

const KEYWORDS: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "int",
    "long",
    "raw",
    "register",
    "return",
    "scalar",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "class",
    "template",
    "typename",
    "this",
    "new",
    "delete",
    "true",
    "false",
    "namespace",
    "using",
    "operator",
];

/// Parses one parameter list (`inputs` or `outputs`). An empty or all-blank string is no
/// parameters. Checks each declaration on its own and duplicate names within the list.
pub fn parse_params(text: &str, role: Role) -> Result<Vec<Param>, ParamError> {
    let mut params: Vec<Param> = Vec::new();
    if text.trim().is_empty() {
        return Ok(params);
    }
    for (piece, range) in split_commas(text) {
        if piece.is_empty() {
            return Err(ParamError::new(range, "empty parameter declaration: remove the extra `,`"));
        }
        let p = parse_decl(piece, range, role)?;
        if params.iter().any(|q| q.name == p.name) {
            return Err(ParamError::new(p.name_span, format!("parameter `{}` is declared twice in this list", p.name)));
        }
        params.push(p);
    }
    Ok(params)
}

fn parse_decl(piece: &str, range: Range<usize>, role: Role) -> Result<Param, ParamError> {
    let toks = tokens(piece, range.start);
    if let Some(t) = toks.iter().find(|t| !t.ident) {
        let msg = match t.text {
            "*" | "&" => format!(
                "`{}` in a parameter type: declare the element type, and `raw T x` for access to the whole array",
                t.text
            ),
            "<" | ">" => "template types are not parameter types: use a placeholder (`T x`) with `types = [...]`, or a typedef in the preamble".into(),
            _ => format!("unexpected `{}` in parameter declaration `{piece}`: write `[raw | scalar] TYPE NAME`", t.text),
        };
        return Err(ParamError::new(t.span.clone(), msg));
    }
    let mut k = 0;
    let mut kind = ParamKind::Array;
    if let Some(t) = toks.first().filter(|t| t.text == "raw" || t.text == "scalar") {
        kind = if t.text == "raw" { ParamKind::Raw } else { ParamKind::Scalar };
        k = 1;
    }
    let mut explicit_const = None;
    while let Some(t) = toks.get(k).filter(|t| t.text == "const") {
        explicit_const = Some(t.span.clone());
        k += 1;
    }
    if toks.len() < k + 2 {
        return Err(ParamError::new(
            range,
            format!("parameter declaration `{piece}` needs a type and a name: write `[raw | scalar] TYPE NAME`"),
        ));
    }
    let name_tok = &toks[toks.len() - 1];
    let ty_toks = &toks[k..toks.len() - 1];
    if let Some(t) = ty_toks.iter().find(|t| t.text == "raw" || t.text == "scalar") {
        return Err(ParamError::new(
            t.span.clone(),
            format!("`{}` must come first in the declaration: `{} TYPE NAME`", t.text, t.text),
        ));
    }
    let name = name_tok.text.to_string();
    if !is_c_ident(&name) || KEYWORDS.contains(&name.as_str()) {
        return Err(ParamError::new(
            name_tok.span.clone(),
            format!("`{name}` is not a valid parameter name: declarations are `[raw | scalar] TYPE NAME`"),
        ));
    }
    if name == "i" || name == "n" || name.starts_with("_ce_") {
        return Err(ParamError::new(
            name_tok.span.clone(),
            format!("`{name}` is reserved (`i` is the index, `n` the length, `_ce_*` the generator's names): rename the parameter"),
        ));
    }
    let ty_span = ty_toks[0].span.start..ty_toks[ty_toks.len() - 1].span.end;
    let words: Vec<&str> = ty_toks.iter().map(|t| t.text).collect();
    check_type_words(ty_toks)?;
    let ty = if words.len() == 1 && is_placeholder_name(words[0]) {
        ParamType::Placeholder(words[0].to_string())
    } else {
        ParamType::Concrete(words.join(" "))
    };
    if role == Role::Output {
        if let Some(span) = explicit_const {
            return Err(ParamError::new(span, format!("output `{name}` cannot be `const`: declare it in the inputs")));
        }
        if kind == ParamKind::Scalar {
            return Err(ParamError::new(
                range,
                format!("output `{name}` cannot be a scalar: outputs are arrays (`T {name}`) or `raw T {name}`"),
            ));
        }
    }
    Ok(Param {
        name,
        ty,
        kind,
        role,
        is_const: role == Role::Input,
        span: range,
        ty_span,
        name_span: name_tok.span.clone(),
    })
}

/// A type of several words is C's builtin words (`unsigned long long`) or an elaborated name
/// (`struct Particle`); anything else means a word too many (`T x x`, `float a b`).
fn check_type_words(words: &[Tok<'_>]) -> Result<(), ParamError> {
    const BUILTIN: &[&str] = &["unsigned", "signed", "short", "long", "int", "char", "double", "float", "bool"];
    const TAGS: &[&str] = &["struct", "class", "union", "enum"];
    if words.len() < 2 {
        return Ok(());
    }
    for (k, w) in words.iter().enumerate() {
        let tagged = k > 0 && TAGS.contains(&words[k - 1].text);
        let tag = TAGS.contains(&w.text) && k + 1 < words.len();
        if !(BUILTIN.contains(&w.text) || tagged || tag) {
            let msg = if is_placeholder_name(w.text) && k == 0 {
                format!(
                    "unexpected `{}` after placeholder `{}`: declarations are `[raw | scalar] TYPE NAME`",
                    words[1].text, w.text
                )
            } else {
                format!("unexpected `{}` in the type: declarations are `[raw | scalar] TYPE NAME`", w.text)
            };
            let span = if k == 0 { words[1].span.clone() } else { w.span.clone() };
            return Err(ParamError::new(span, msg));
        }
    }
    Ok(())
}

/// The inputs and outputs of one generated kernel, parsed and checked together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLists {
    /// The inputs, in order.
    pub inputs: Vec<Param>,
    /// The outputs, in order.
    pub outputs: Vec<Param>,
}

impl ParamLists {
    /// Parses both lists and checks them together: a name declared in both is an error (an output
    /// that is also read is declared once, in `outputs`), and at least one array or raw parameter
    /// must give the length unless the caller allows none (see [`ParamLists::has_array`]).
    pub fn parse(inputs: &str, outputs: &str) -> Result<ParamLists, ListError> {
        let inputs = parse_params(inputs, Role::Input).map_err(|error| ListError { source: Source::Inputs, error })?;
        let outputs =
            parse_params(outputs, Role::Output).map_err(|error| ListError { source: Source::Outputs, error })?;
        for o in &outputs {
            if inputs.iter().any(|p| p.name == o.name) {
                return Err(ListError {
                    source: Source::Outputs,
                    error: ParamError::new(
                        o.name_span.clone(),
                        format!(
                            "`{}` is both an input and an output: declare it once, in `outputs` (outputs can also be read)",
                            o.name
                        ),
                    ),
                });
            }
        }
        Ok(ParamLists { inputs, outputs })
    }

    /// Every parameter: the inputs, then the outputs (the generated kernel's parameter order).
    pub fn all(&self) -> impl Iterator<Item = &Param> {
        self.inputs.iter().chain(&self.outputs)
    }

    /// True when some parameter is an array or raw (and so gives a length).
    pub fn has_array(&self) -> bool {
        self.all().any(|p| p.kind != ParamKind::Scalar)
    }

    /// True when some parameter is `raw` (user code decides which elements are accessed).
    pub fn has_raw(&self) -> bool {
        self.all().any(|p| p.kind == ParamKind::Raw)
    }

    /// The placeholders used, each once, in order of first use.
    pub fn placeholders(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.all() {
            if let Some(t) = p.ty.placeholder() {
                if !out.iter().any(|o| o == t) {
                    out.push(t.to_string());
                }
            }
        }
        out
    }

    /// Parses the `types` list against these parameters: one [`Instance`] per string, each binding
    /// every placeholder. Errors: placeholders used but no instances, instances given but no
    /// placeholders, an instance naming an unknown placeholder or missing one, the shorthand with
    /// several placeholders, and the same instance twice.
    pub fn instances<S: AsRef<str>>(&self, types: &[S]) -> Result<Vec<Instance>, ListError> {
        let placeholders = self.placeholders();
        if placeholders.is_empty() {
            if types.is_empty() {
                return Ok(vec![Instance::default()]);
            }
            let error = ParamError::new(
                0..types[0].as_ref().len(),
                "`types` is given but no parameter uses a placeholder (`T x`): remove `types` or use a placeholder",
            );
            return Err(ListError { source: Source::Instance(0), error });
        }
        if types.is_empty() {
            let error = ParamError::new(
                0..0,
                format!(
                    "placeholder{} {} ha{} no instances to build: list the CUDA types, e.g. `types = [{}]`",
                    if placeholders.len() > 1 { "s" } else { "" },
                    placeholders.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", "),
                    if placeholders.len() > 1 { "ve" } else { "s" },
                    if placeholders.len() > 1 {
                        let one =
                            |t: &str| placeholders.iter().map(|p| format!("{p}={t}")).collect::<Vec<_>>().join(", ");
                        format!("\"{}\", \"{}\"", one("float"), one("double"))
                    } else {
                        "\"float\", \"double\"".to_string()
                    },
                ),
            );
            return Err(ListError { source: Source::Types, error });
        }
        let mut out: Vec<Instance> = Vec::new();
        for (idx, text) in types.iter().enumerate() {
            let text = text.as_ref();
            let err = |error| ListError { source: Source::Instance(idx), error };
            let inst = parse_instance(text, &placeholders).map_err(err)?;
            if out.contains(&inst) {
                return Err(err(ParamError::new(0..text.len(), format!("instance `{inst}` is listed twice"))));
            }
            out.push(inst);
        }
        Ok(out)
    }
}

mod instance;
pub use instance::{parse_instance, Instance};

#[cfg(test)]
mod tests;

//! Finding `__global__` functions and reading their parameter lists: what `cuda_kernel!` reads a
//! source with, and the runtime reads a run-time `Program`'s source with (to check its kernels'
//! arguments by type).

use crate::cparams::read_param;
pub use crate::cparams::Param;
pub use crate::cxx::{join, parse_int, strip_std};
use crate::cxx::{matching, normalise_base, split_top};
use crate::lex::{lex_after, Kind, Lexed, Token};
use std::collections::{HashMap, HashSet};

/// A kernel found in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// Unqualified name.
    pub name: String,
    /// Enclosing namespaces, outermost first.
    pub namespaces: Vec<String>,
    /// `extern "C"` linkage (symbol = name) versus C++ linkage (mangled symbol).
    pub extern_c: bool,
    /// `__launch_bounds__(max_threads, ...)` arguments as written.
    pub launch_bounds: Vec<String>,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// 1-based line of the `__global__` keyword in the CUDA source.
    pub line: usize,
    /// The parameter list as written (whitespace-normalised), for docs and messages.
    pub signature: String,
    /// `template<...>` parameters; `None` for an ordinary kernel.
    pub template: Option<Vec<TemplateParam>>,
    /// True when this is the definition (the body follows), false for a declaration.
    pub defined: bool,
    /// The user header the kernel was read from, as messages cite it (`kernels/common.cuh`);
    /// `None` for the source itself.
    pub file: Option<String>,
}

/// One parameter of a kernel template: `class T`, `int BLOCK = 256`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateParam {
    /// The parameter's name (`T`, `BLOCK`).
    pub name: String,
    /// What kind of argument it takes.
    pub kind: TemplateKind,
    /// The default argument as written, if any.
    pub default: Option<String>,
}

/// The kinds of template parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateKind {
    /// `typename T` / `class T`.
    Type,
    /// A non-type parameter of the given (normalised) type, e.g. `int`, `unsigned int`, `bool`.
    Value(String),
    /// Something a Rust generic cannot express (parameter packs, template template parameters);
    /// carries the text.
    Unsupported(String),
}

impl Kernel {
    /// `ns::name`, or `name` at global scope.
    pub fn qualified_name(&self) -> String {
        qualify(&self.namespaces, &self.name)
    }
}

/// Why the source cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError(pub String);

/// Everything read from one source text.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Non-template kernels, in source order, one per name.
    pub kernels: Vec<Kernel>,
    /// Template kernels (launchable through the macro's `instances = [...]` list), one per name.
    pub templates: Vec<Kernel>,
    /// Names of non-template kernels declared more than once with different parameter lists
    /// (C++ overloads).
    pub overloaded: Vec<String>,
    /// Names of template kernels declared more than once with different parameter lists: not in
    /// [`Parsed::templates`], as no instance list can name one of them (a library's overloaded
    /// templates are no error until one is asked for).
    pub overloaded_templates: Vec<String>,
    /// Type aliases found textually: `typedef float real;`, `using real = float;`.
    pub aliases: HashMap<String, Vec<Token>>,
    /// Struct/class/union/enum names defined in the source.
    pub records: HashSet<String>,
    /// Includes as written.
    pub includes: Vec<String>,
    /// Where each of [`Parsed::includes`] sits (the same order): the namespaces and linkage
    /// block enclosing it, which the header's declarations live in.
    pub include_sites: Vec<IncludeSite>,
    /// `__constant__`, `__device__` and `__managed__` variables at namespace scope.
    pub globals: Vec<GlobalVar>,
    /// The explicit instantiations of template kernels (`template __global__ void k<float,
    /// 128>(float*, int);`, and `template __global__ void k(float*);` whose arguments are
    /// deduced from the parameter list), in source order.
    pub instantiations: Vec<Instantiation>,
}

/// An explicit instantiation of a template kernel: `template __global__ void ns::k<float>(float*);`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instantiation {
    /// The enclosing namespaces of the instantiation, outermost first.
    pub namespaces: Vec<String>,
    /// The instance as written after `void`: `k<float>`, `ns::k<float, 128>`; `k` or `k<>` when
    /// the template arguments are deduced from the parameter list (or the trailing ones are:
    /// `k<float>` of a template of two parameters).
    pub text: String,
    /// The parameter list as written (`float*, int`), read as a kernel's: what the template
    /// arguments not written out are deduced from.
    pub params: Vec<Param>,
    /// 1-based line of the `__global__` keyword.
    pub line: usize,
    /// The user header the instantiation was read from, as messages cite it (`kernels/t.cuh`);
    /// `None` for the source itself.
    pub file: Option<String>,
}

impl Instantiation {
    /// The instance qualified by its enclosing namespaces: `ns::k<float>` (`ns::k` when the
    /// arguments are deduced).
    pub fn qualified(&self) -> String {
        qualify(&self.namespaces, &self.text)
    }
}

/// A `__constant__` / `__device__` / `__managed__` variable at namespace scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalVar {
    /// Unqualified name.
    pub name: String,
    /// Enclosing namespaces, outermost first.
    pub namespaces: Vec<String>,
    /// `__constant__`, `__device__` or `__managed__`.
    pub space: String,
    /// The element type: base words and pointer depth (`float`, `float*` -> depth 1).
    pub elem: Param,
    /// Array extents as written (`[16][4]` -> `["16", "4"]`); empty for a scalar.
    pub dims: Vec<String>,
    /// 1-based line in the CUDA source.
    pub line: usize,
    /// The user header the variable was read from, as messages cite it; `None` for the source.
    pub file: Option<String>,
}

/// Where an `#include` sits in the text that includes it: what encloses the header's
/// declarations. `namespace ops { #include "k.cuh" }` puts the kernels of `k.cuh` in `ops`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncludeSite {
    /// The include as written (`"k.cuh"`, `<lib/k.cuh>`).
    pub include: String,
    /// The named namespaces enclosing it, outermost first (including those the text itself was
    /// read in, see [`parse_in`]).
    pub namespaces: Vec<String>,
    /// The innermost linkage block enclosing it: `Some(true)` inside `extern "C" { }`,
    /// `Some(false)` inside `extern "C++" { }`.
    pub linkage: Option<bool>,
    /// Inside a function body, class or initialiser: nothing the header declares is at
    /// namespace scope.
    pub nested: bool,
}

impl GlobalVar {
    /// `ns::name`, or `name` at global scope.
    pub fn qualified_name(&self) -> String {
        qualify(&self.namespaces, &self.name)
    }

    /// The number of elements when every extent is an integer literal.
    pub fn literal_len(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |acc, d| acc.checked_mul(parse_int(d)?))
    }
}

/// `ns::name`, or `name` without namespaces.
fn qualify(namespaces: &[String], name: &str) -> String {
    let mut s = String::new();
    for n in namespaces {
        s.push_str(n);
        s.push_str("::");
    }
    s.push_str(name);
    s
}

/// The named namespaces enclosing the current position, outermost first (`a::b` split).
fn namespaces_of(scopes: &[Scope]) -> Vec<String> {
    scopes
        .iter()
        .filter_map(|s| match s {
            Scope::Namespace(n) if !n.is_empty() => Some(n.split("::").map(str::to_string)),
            _ => None,
        })
        .flatten()
        .collect()
}

#[derive(Debug)]
enum Scope {
    Namespace(String),
    ExternC,
    /// `extern "C++" { ... }`: C++ linkage again (kernels inside are not skipped).
    ExternCxx,
    Other,
}

/// Parses a CUDA source text.
pub fn parse(src: &str) -> Result<Parsed, SourceError> {
    parse_with(src, &[], &[])
}

/// Parses a CUDA source text as the compiler preprocesses it with `defines` (`(NAME, value)`
/// from the `-D` options): function-like macros expanded, `#if` branches picked where that can be
/// decided (see `cuda_embed_source::pp`).
///
/// `headers` are the texts of the user headers the source includes: their macros are defined
/// first.
pub fn parse_with(src: &str, defines: &[(String, String)], headers: &[&str]) -> Result<Parsed, SourceError> {
    parse_in(src, defines, headers, &IncludeSite::default())
}

/// Parses a header's text as [`parse_with`] does, as the compiler reads it at `site` (the
/// `#include` in the text that includes it): its kernels, globals and include sites are in the
/// site's namespaces and linkage block.
pub fn parse_in(
    src: &str,
    defines: &[(String, String)],
    headers: &[&str],
    site: &IncludeSite,
) -> Result<Parsed, SourceError> {
    let lexed: Lexed = lex_after(src, defines, headers);
    let t = &lexed.tokens;
    let mut parsed = Parsed { includes: lexed.includes.clone(), ..Parsed::default() };
    let mut scopes: Vec<Scope> = site.namespaces.iter().map(|n| Scope::Namespace(n.clone())).collect();
    match site.linkage {
        Some(true) => scopes.push(Scope::ExternC),
        Some(false) => scopes.push(Scope::ExternCxx),
        None => {}
    }
    if site.nested {
        scopes.push(Scope::Other);
    }
    // The include sites, recorded at the first token after each `#include` line.
    let mut sites = lexed.includes.iter().zip(&lexed.include_lines).peekable();
    let mut site_here = |scopes: &[Scope], line: usize, parsed: &mut Parsed| {
        while let Some((include, _)) = sites.next_if(|(_, at)| **at < line) {
            parsed.include_sites.push(include_site(include, scopes));
        }
    };
    let mut stmt_start = 0usize; // index of the first token of the current statement
    let mut seen: HashMap<String, Vec<ParamShape>> = HashMap::new(); // name -> parameter types
    let mut i = 0;
    while i < t.len() {
        let tok = &t[i];
        site_here(&scopes, tok.line, &mut parsed);
        match tok.text.as_str() {
            "{" => {
                let prefix = &t[stmt_start..i];
                let scope = if let Some(name) = namespace_name(prefix) {
                    Scope::Namespace(name)
                } else if prefix.len() == 1 && prefix[0].is("namespace") {
                    Scope::Namespace(String::new()) // anonymous namespace
                } else if prefix.len() == 2 && prefix[0].is("extern") && prefix[1].text == "\"C\"" {
                    Scope::ExternC
                } else if prefix.len() == 2 && prefix[0].is("extern") && prefix[1].text == "\"C++\"" {
                    Scope::ExternCxx
                } else {
                    record_type(prefix, &mut parsed);
                    Scope::Other
                };
                scopes.push(scope);
                stmt_start = i + 1;
            }
            "}" => {
                scopes.pop();
                stmt_start = i + 1;
            }
            ";" => {
                if scopes.iter().all(|s| !matches!(s, Scope::Other)) {
                    record_alias(&t[stmt_start..i], &mut parsed);
                    record_global(&t[stmt_start..i], &scopes, &mut parsed);
                }
                stmt_start = i + 1;
            }
            "__global__" if scopes.iter().all(|s| !matches!(s, Scope::Other)) => {
                let prefix = &t[stmt_start..i];
                // `template<...>` introduces a template; `template<>` (a specialisation) and a bare
                // `template` (an explicit instantiation) add no new kernel.
                let template_at = prefix.iter().position(|p| p.is("template"));
                let template = match template_at {
                    Some(at) if prefix.get(at + 1).is_some_and(|x| x.is("<")) => {
                        let close = matching(prefix, at + 1).unwrap_or(prefix.len());
                        Some(template_params(&prefix[at + 2..close.min(prefix.len())]))
                    }
                    _ => None,
                };
                let skip = template_at.is_some() && template.as_ref().is_none_or(|p| p.is_empty());
                // The innermost linkage block decides; `extern "C"` on the declaration itself wins.
                let block_c = scopes.iter().rev().find_map(|s| match s {
                    Scope::ExternC => Some(true),
                    Scope::ExternCxx => Some(false),
                    _ => None,
                });
                let extern_c =
                    block_c == Some(true) || prefix.windows(2).any(|w| w[0].is("extern") && w[1].text == "\"C\"");
                let (mut kernel, next) = read_kernel(t, i, extern_c, &scopes)?;
                if skip {
                    let bare = template_at.is_some_and(|at| !prefix.get(at + 1).is_some_and(|x| x.is("<")));
                    if bare && !prefix.iter().any(|x| x.is("extern")) {
                        if let Some(text) = instance_text(&t[i..next.min(t.len())], &kernel.name) {
                            parsed.instantiations.push(Instantiation {
                                namespaces: namespaces_of(&scopes),
                                text,
                                params: std::mem::take(&mut kernel.params),
                                line: tok.line,
                                file: None,
                            });
                        }
                    }
                } else if let Some(params) = template {
                    kernel.template = Some(params);
                    let key = kernel.qualified_name();
                    match parsed.templates.iter_mut().find(|k| k.qualified_name() == key) {
                        None => parsed.templates.push(kernel),
                        Some(k) if shape(k) == shape(&kernel) => {
                            if t.get(next.saturating_sub(1)).is_some_and(|x| x.is("{")) {
                                *k = kernel;
                            }
                        }
                        Some(_) => {
                            if !parsed.overloaded_templates.contains(&key) {
                                parsed.overloaded_templates.push(key);
                            }
                        }
                    }
                } else {
                    let key = kernel.qualified_name();
                    match seen.get(&key) {
                        None => {
                            seen.insert(key, shape(&kernel));
                            parsed.kernels.push(kernel);
                        }
                        Some(sig) if *sig == shape(&kernel) => {
                            // A declaration and its definition: keep the definition's names.
                            if let Some(k) = parsed.kernels.iter_mut().find(|k| k.qualified_name() == key) {
                                if t.get(next.saturating_sub(1)).is_some_and(|x| x.is("{")) {
                                    *k = kernel;
                                }
                            }
                        }
                        Some(_) => {
                            if !parsed.overloaded.contains(&key) {
                                parsed.overloaded.push(key);
                            }
                        }
                    }
                }
                // Continue at the body's `{` (pushed as a function scope) or the `;`.
                i = next.saturating_sub(1).max(i + 1);
                stmt_start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    site_here(&scopes, usize::MAX, &mut parsed);
    parsed.kernels.retain(|k| !parsed.overloaded.contains(&k.qualified_name()));
    parsed.templates.retain(|k| !parsed.overloaded_templates.contains(&k.qualified_name()));
    Ok(parsed)
}

/// `ns::k<float, 128>` from the tokens of `__global__ void ns::k<float, 128>(float*, int);`
/// (`name` the kernel's name as [`read_kernel`] found it): the name with its template arguments;
/// `ns::k` (or `ns::k<>`) when they are deduced from the parameter list (`__global__ void
/// ns::k(float*, int);`). `None` when the name is not found.
fn instance_text(t: &[Token], name: &str) -> Option<String> {
    let (at, args) = t.iter().enumerate().find_map(|(n, x)| {
        if !x.is(name) || !x.is_ident() {
            return None;
        }
        match t.get(n + 1) {
            Some(p) if p.is("(") => Some((n, String::new())),
            Some(p) if p.is("<") => {
                let close = matching(t, n + 1).filter(|c| t.get(c + 1).is_some_and(|x| x.is("(")))?;
                Some((n, format!("<{}>", compact(&t[n + 2..close]))))
            }
            _ => None,
        }
    })?;
    let mut start = at;
    while start >= 2 && t[start - 1].is("::") && t[start - 2].is_ident() {
        start -= 2;
    }
    Some(format!("{}{args}", join(&t[start..=at])))
}

/// Template arguments as one writes them: a space only between two words and after a comma
/// (`Vec<int, 2>`, `unsigned char`), so that they compare equal to an `instances` entry.
fn compact(t: &[Token]) -> String {
    let mut s = String::new();
    for (n, x) in t.iter().enumerate() {
        let prev = n.checked_sub(1).map(|p| &t[p]);
        if prev.is_some_and(|p| p.is(",") || (p.kind != Kind::Punct && x.kind != Kind::Punct)) {
            s.push(' ');
        }
        s.push_str(&x.text);
    }
    s
}

/// The [`IncludeSite`] of `include` under `scopes`.
fn include_site(include: &str, scopes: &[Scope]) -> IncludeSite {
    IncludeSite {
        include: include.to_string(),
        namespaces: namespaces_of(scopes),
        linkage: scopes.iter().rev().find_map(|s| match s {
            Scope::ExternC => Some(true),
            Scope::ExternCxx => Some(false),
            _ => None,
        }),
        nested: scopes.iter().any(|s| matches!(s, Scope::Other)),
    }
}

/// Reads the inside of `template< ... >`.
fn template_params(t: &[Token]) -> Vec<TemplateParam> {
    if t.is_empty() {
        return Vec::new();
    }
    split_top(t)
        .into_iter()
        .map(|piece| {
            let text = join(piece);
            let cut = piece.iter().position(|x| x.is("=")).unwrap_or(piece.len());
            let default = (cut < piece.len()).then(|| join(&piece[cut + 1..]));
            let decl = &piece[..cut];
            let name = decl.last().filter(|x| x.is_ident()).map(|x| x.text.clone()).unwrap_or_default();
            let kind = if decl.iter().any(|x| x.is(".") || x.is("template")) || name.is_empty() {
                TemplateKind::Unsupported(text)
            } else if decl.len() == 2 && (decl[0].is("typename") || decl[0].is("class")) {
                TemplateKind::Type
            } else {
                let words: Vec<&Token> = decl[..decl.len() - 1].iter().filter(|x| !x.is("const")).collect();
                TemplateKind::Value(normalise_base(&words))
            };
            TemplateParam { name, kind, default }
        })
        .collect()
}

/// `namespace a {` -> `a`; C++17 nested `namespace a::b::c {` -> `a::b::c` (split into its parts
/// for `Kernel::namespaces`). `None` when the statement does not end in a named namespace head.
fn namespace_name(prefix: &[Token]) -> Option<String> {
    let kw = prefix.iter().rposition(|x| x.is("namespace"))?;
    let path = &prefix[kw + 1..];
    let well_formed =
        !path.is_empty() && path.iter().enumerate().all(|(k, x)| if k % 2 == 0 { x.is_ident() } else { x.is("::") });
    (well_formed && path.len() % 2 == 1).then(|| join(path))
}

/// A parameter's type without its name: (base, pointer depth, const pointee, reference).
type ParamShape = (String, usize, bool, bool);

/// Parameter names do not matter when matching a declaration with its definition, so compare the
/// parsed types. (Comparing word counts of the text took `k(float*, int)` followed by
/// `k(float* x, int n) {..}` for an overload and dropped the kernel.)
fn shape(k: &Kernel) -> Vec<ParamShape> {
    k.params.iter().map(|p| (p.base.clone(), p.pointer_depth, p.pointee_const, p.reference)).collect()
}

fn record_type(prefix: &[Token], parsed: &mut Parsed) {
    // `struct Name {`, `typedef struct Name {`, `struct __align__(8) Name {`, `class Name : Base {`
    for (k, p) in prefix.iter().enumerate() {
        if ["struct", "class", "union", "enum"].contains(&p.text.as_str()) {
            let name = prefix[k + 1..]
                .iter()
                .take_while(|x| !x.is(":"))
                .filter(|x| x.is_ident() && !x.text.starts_with("__") && !x.is("alignas") && !x.is("class"))
                .last();
            if let Some(n) = name {
                parsed.records.insert(n.text.clone());
            }
            return;
        }
    }
}

/// `__constant__ float c[16];`, `static __device__ int n = 0;`, `__device__ float a[4], b;`.
fn record_global(stmt: &[Token], scopes: &[Scope], parsed: &mut Parsed) {
    const SPACES: &[&str] = &["__constant__", "__device__", "__managed__"];
    let Some(space) = stmt.iter().find(|x| SPACES.contains(&x.text.as_str())) else { return };
    // Templates, extern declarations and functions are not variables to hand out.
    // `constexpr` ones are compile-time constants that may not exist in the module at all.
    if stmt
        .iter()
        .any(|x| x.is("template") || x.is("extern") || x.is("__global__") || x.is("typedef") || x.is("constexpr"))
    {
        return;
    }
    let cut = stmt.len();
    let mut toks: Vec<Token> = Vec::new();
    let mut k = 0;
    while k < cut {
        let x = &stmt[k];
        if (x.is("__align__") || x.is("alignas") || x.is("__attribute__")) && stmt.get(k + 1).is_some_and(|n| n.is("("))
        {
            k = matching(stmt, k + 1).map_or(cut, |c| c + 1);
            continue;
        }
        const DROP: &[&str] = &["static", "inline", "__device__", "__constant__", "__managed__", "__shared__"];
        if !DROP.contains(&x.text.as_str()) {
            toks.push(x.clone());
        }
        k += 1;
    }
    let namespaces = namespaces_of(scopes);
    let mut base: Vec<Token> = Vec::new();
    for (n, piece) in split_top(&toks).into_iter().enumerate() {
        // Each declarator up to its initialiser; a `(` before that is a function declaration.
        let piece = &piece[..piece.iter().position(|x| x.is("=") || x.is("{")).unwrap_or(piece.len())];
        if piece.iter().any(|x| x.is("(")) {
            return;
        }
        let bracket = piece.iter().position(|x| x.is("[")).unwrap_or(piece.len());
        let Some(name_at) = bracket.checked_sub(1).filter(|&a| piece[a].is_ident()) else { return };
        if n == 0 {
            base = piece[..name_at].iter().filter(|x| !x.is("*")).cloned().collect();
        }
        let stars = piece[..name_at].iter().filter(|x| x.is("*")).count();
        let mut decl: Vec<Token> = base.clone();
        let star = Token { kind: Kind::Punct, text: "*".into(), line: piece[name_at].line };
        decl.extend(std::iter::repeat_n(star, stars));
        decl.push(piece[name_at].clone());
        let elem = read_param(&decl, 0);
        let mut dims = Vec::new();
        let mut j = bracket;
        while j < piece.len() && piece[j].is("[") {
            let Some(close) = matching(piece, j) else { return };
            dims.push(join(&piece[j + 1..close]));
            j = close + 1;
        }
        parsed.globals.push(GlobalVar {
            name: piece[name_at].text.clone(),
            namespaces: namespaces.clone(),
            space: space.text.clone(),
            elem,
            dims,
            line: piece[name_at].line,
            file: None,
        });
    }
}

fn record_alias(stmt: &[Token], parsed: &mut Parsed) {
    if stmt.first().is_some_and(|f| f.is("typedef")) && stmt.len() >= 3 {
        let name = &stmt[stmt.len() - 1];
        if !name.is_ident() {
            return;
        }
        let body = &stmt[1..stmt.len() - 1];
        if body.iter().any(|x| x.is("}")) {
            // typedef struct { ... } Name;
            parsed.records.insert(name.text.clone());
        } else if !body.iter().any(|x| x.is("(") || x.is("[")) {
            parsed.aliases.insert(name.text.clone(), body.to_vec());
        }
    } else if stmt.first().is_some_and(|f| f.is("using")) && stmt.len() >= 4 && stmt[2].is("=") && stmt[1].is_ident() {
        parsed.aliases.insert(stmt[1].text.clone(), stmt[3..].to_vec());
    }
}

/// Reads one kernel starting at the `__global__` token `g`; returns it and the index just past
/// its body's opening brace or its terminating semicolon.
fn read_kernel(t: &[Token], g: usize, extern_c: bool, scopes: &[Scope]) -> Result<(Kernel, usize), SourceError> {
    let line = t[g].line;
    let mut i = g + 1;
    let mut launch_bounds = Vec::new();
    let mut name: Option<String> = None;
    while i < t.len() {
        let tok = &t[i];
        if tok.is("(") {
            break;
        }
        // `template __global__ void k<float>(float*);` (explicit instantiation/specialization):
        // the name is followed by template arguments. Without this the whole source failed with
        // "cannot find the name".
        if tok.is_ident() && t.get(i + 1).is_some_and(|n| n.is("<")) {
            if let Some(close) = matching(t, i + 1).filter(|c| t.get(c + 1).is_some_and(|n| n.is("("))) {
                name = Some(tok.text.clone());
                i = close + 1;
                break;
            }
        }
        // `__global__ void (name)(params)`: a parenthesised declarator name (valid C++).
        if tok.is("void")
            && t.get(i + 1).is_some_and(|n| n.is("("))
            && t.get(i + 2).is_some_and(|n| n.is_ident())
            && t.get(i + 3).is_some_and(|n| n.is(")"))
            && t.get(i + 4).is_some_and(|n| n.is("("))
        {
            name = Some(t[i + 2].text.clone());
            i += 4;
            break;
        }
        if tok.is_ident() && t.get(i + 1).is_some_and(|n| n.is("(")) {
            let attr =
                ["__launch_bounds__", "__maxnreg__", "__cluster_dims__", "alignas", "__attribute__", "__declspec"];
            if attr.contains(&tok.text.as_str()) {
                let close = matching(t, i + 1).ok_or_else(|| {
                    SourceError(format!("unbalanced parentheses after `{}` on line {}", tok.text, tok.line))
                })?;
                if tok.is("__launch_bounds__") {
                    launch_bounds = split_top(&t[i + 2..close]).iter().map(|a| join(a)).collect();
                }
                i = close + 1;
                continue;
            }
            name = Some(tok.text.clone());
            i += 1;
            break;
        }
        if tok.is(";") || tok.is("{") {
            break;
        }
        i += 1;
    }
    let name =
        name.ok_or_else(|| SourceError(format!("line {line}: cannot find the name of the `__global__` function")))?;
    if !t.get(i).is_some_and(|x| x.is("(")) {
        return Err(SourceError(format!("line {line}: expected `(` after kernel name `{name}`")));
    }
    let close = matching(t, i)
        .ok_or_else(|| SourceError(format!("line {line}: unbalanced parentheses in the parameters of `{name}`")))?;
    let inner = &t[i + 1..close];
    let mut params = Vec::new();
    let pieces = split_top(inner);
    let is_void = pieces.len() == 1 && pieces[0].len() == 1 && pieces[0][0].is("void");
    if !is_void {
        for (n, piece) in pieces.iter().enumerate() {
            if piece.is_empty() {
                if pieces.len() == 1 {
                    break;
                }
                return Err(SourceError(format!("line {line}: empty parameter {n} in `{name}`")));
            }
            params.push(read_param(piece, n));
        }
    }
    // Skip trailing qualifiers to the body or the semicolon.
    let mut j = close + 1;
    while j < t.len() && !t[j].is("{") && !t[j].is(";") {
        j += 1;
    }
    let namespaces = namespaces_of(scopes);
    let signature = pieces.iter().map(|p| join(p)).collect::<Vec<_>>().join(", ");
    let defined = t.get(j).is_some_and(|x| x.is("{"));
    let kernel = Kernel {
        name,
        namespaces,
        extern_c,
        launch_bounds,
        params,
        line,
        signature,
        template: None,
        defined,
        file: None,
    };
    Ok((kernel, j + 1))
}

#[cfg(test)]
mod tests;

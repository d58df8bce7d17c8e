//! The data members of the C++ structs in a kernel source, in declaration order, and the probe
//! expressions that ask the compiler where each one lies: the CUDA half of the field-order check
//! for structs passed by value (the Rust half is `DeviceSafe::LAYOUT`, set by
//! `#[derive(DeviceSafe)]`).
//!
//! Only the member *names* are read here; offsets and sizes come from the compiler
//! (`offsetof(NAME, m)`, `sizeof(((NAME*)0)->m)`), like every other type fact the macro uses.
//! A struct this reader cannot describe exactly (bit-fields, anonymous unions, base classes,
//! function-pointer or reference members) has `members: None`: "cannot check", never a guess.
//!
//! # How the macro uses it
//!
//! The field check sits next to the size/alignment assertion the macro emits for a
//! `Mapped::User { name, layout }` parameter, and only runs when nvcc answers at build time
//! (NVRTC at run time has no probe, so no field check there, as for size and alignment):
//!
//! 1. `oracle.rs` (`consult`): [`structs`] of the source and of each user header it includes; a
//!    by-value kernel parameter or a global whose type name [`lookup`] finds (C++ lookup from the
//!    kernel's or global's namespace) among them, with `Some(members)`, gets one
//!    `Probe::Value` per [`layout_exprs`] expression, keyed `ProbeKey::StructOffset { st, member }`
//!    / `ProbeKey::StructSize { st, member }` (`so{st}_{member}` / `ss{st}_{member}` in the PTX;
//!    `st` indexes the struct list, which `Compiled::structs` keeps). These questions are the
//!    last tier: if they do not compile, the module is compiled again without them (the
//!    parameter type probes kept), then with only the essential probes; a struct the probes
//!    cannot describe simply gets no field check.
//! 2. `check.rs`: `Compiled::fields` reads the answers back with [`read_layout`] into
//!    `(member, offset, size)` triples, kept per parameter in `TypedKernel::fields` and per
//!    global in `Global::fields` (`ir::Fields`); `None` means no field check.
//! 3. `gen/kernel.rs` (by-value parameters; per instance for a template's `T p` given a struct)
//!    and `gen/mod.rs` (globals) emit [`layout_check`]:
//!    `const _: () = ::cuda_embed::__private::check_layout::<super::super::P>("P", &[("a", 0, 4), ...]);`.
//!    `check_layout` (runtime `types.rs`) does nothing for a hand-written `unsafe impl DeviceSafe`
//!    (no `LAYOUT`), and otherwise fails the build with e.g. "field `n` of `Params` is at offset 0
//!    in Rust but at 4 in the CUDA struct: declare the fields in the CUDA order".
//!
//! A struct defined only in a header the reader was not given, reached through a typedef or a
//! `using`, or one it cannot describe, has no field check; size and alignment are still checked.

use crate::cxx::matching;
use crate::lex::Token;
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

/// A struct (or class) defined at namespace scope in the CUDA source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaStruct {
    /// Its name: the tag (`struct P {..}`) or the typedef name (`typedef struct {..} P;`). A
    /// `typedef struct P_ {..} P;` is listed under both names.
    pub name: String,
    /// Enclosing namespaces, outermost first.
    pub namespaces: Vec<String>,
    /// Data members in declaration order (non-static, one entry per declarator), or `None` when
    /// the layout cannot be checked member by member (bit-fields, anonymous structs/unions, base
    /// classes, unions, declarators this reader does not understand).
    pub members: Option<Vec<String>>,
    /// 1-based source line of the `struct` keyword.
    pub line: usize,
}

impl CudaStruct {
    /// `ns::P`, or `P` at global scope.
    pub fn qualified_name(&self) -> String {
        self.namespaces.iter().chain(std::iter::once(&self.name)).cloned().collect::<Vec<_>>().join("::")
    }
}

/// Every struct, class and union defined at namespace scope in `source`, in source order.
/// Templates and types nested in functions or other types are not listed.
pub fn structs(source: &str) -> Vec<CudaStruct> {
    structs_with(source, &[])
}

/// [`structs`] of the source as preprocessed with `defines` (`(NAME, value)` from `-D`).
pub fn structs_with(source: &str, defines: &[(String, String)]) -> Vec<CudaStruct> {
    records(source, defines, false)
}

/// The class templates (`template <class T, int N> struct Tensor { T* data; long size[N]; };`)
/// defined at namespace scope in `source`, as [`structs_with`] lists structs: each under the
/// template's name, its members those of the primary template. A template that is specialised
/// anywhere in the source (`template <> struct Tensor<float, 1> {..}`) is not listed: the members
/// of an instance may then not be these.
pub fn class_templates(source: &str, defines: &[(String, String)]) -> Vec<CudaStruct> {
    records(source, defines, true)
}

/// The struct an instance of a class template written `base` (`Tensor<float,1>`, a parameter's
/// [`Param::base`](crate::signature::Param)) in namespace `scope` is, when C++ lookup finds the
/// template among `templates` ([`class_templates`]): named `base`'s last component, in the
/// template's namespaces, with the template's members; [`lookup`] then finds it under `base`.
pub fn instance(templates: &[CudaStruct], scope: &[String], base: &str) -> Option<CudaStruct> {
    let open = base.find('<')?;
    base.ends_with('>').then_some(())?;
    let st = &templates[lookup(templates, scope, &base[..open])?];
    let last = base[..open].rsplit("::").next().unwrap_or(&base[..open]);
    Some(CudaStruct { name: format!("{last}{}", &base[open..]), ..st.clone() })
}

fn records(source: &str, defines: &[(String, String)], templates: bool) -> Vec<CudaStruct> {
    let t = crate::lex::lex_with(source, defines).tokens;
    let mut specialised: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut namespaces: Vec<Option<String>> = Vec::new(); // None: extern "C" block
    let mut stmt = 0usize;
    let mut i = 0usize;
    while i < t.len() {
        match t[i].text.as_str() {
            ";" => stmt = i + 1,
            "}" => {
                namespaces.pop();
                stmt = i + 1;
            }
            "{" => {
                let prefix = &t[stmt..i];
                if let Some(ns) = namespace_head(prefix) {
                    namespaces.push(Some(ns));
                    stmt = i + 1;
                } else if prefix.len() == 2 && prefix[0].is("extern") && prefix[1].text.starts_with('"') {
                    namespaces.push(None);
                    stmt = i + 1;
                } else {
                    let close = matching(&t, i).unwrap_or(t.len() - 1);
                    let (prefix, template) = match prefix {
                        [tk, open, ..] if tk.is("template") && open.is("<") => {
                            let end = matching(prefix, 1).unwrap_or(prefix.len() - 1);
                            (&prefix[end + 1..], true)
                        }
                        _ => (prefix, false),
                    };
                    if template {
                        if let Some(name) = specialisation(prefix) {
                            specialised.push(name);
                        }
                    }
                    if let Some(head) = record_head(prefix).filter(|_| template == templates) {
                        let end = (close + 1..t.len()).find(|&k| t[k].is(";")).unwrap_or(t.len());
                        let members = if head.keyword == "union" || head.has_bases {
                            None
                        } else {
                            data_members(t.get(i + 1..close).unwrap_or_default(), head.keyword != "class")
                        };
                        let ns: Vec<String> = namespaces.iter().flatten().filter(|n| !n.is_empty()).cloned().collect();
                        let mut names: Vec<String> = head.tag.into_iter().collect();
                        if head.typedef {
                            // `typedef struct [Tag] {..} Name, *PName;`: plain identifiers only.
                            for piece in split_top(&t[close + 1..end]) {
                                if let [name] = piece {
                                    if name.is_ident() && !names.contains(&name.text) {
                                        names.push(name.text.clone());
                                    }
                                }
                            }
                        }
                        for name in names {
                            out.push(CudaStruct {
                                name,
                                namespaces: ns.clone(),
                                members: members.clone(),
                                line: head.line,
                            });
                        }
                    }
                    // Skip the body (a struct's, a function's, an initialiser's) as a whole; a
                    // function body ends its statement.
                    i = close + 1;
                    stmt = i;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out.retain(|s| !specialised.contains(&s.name));
    out
}

/// `struct Tensor<float, 1>` (after a `template <...>` head): the name of the specialised
/// template.
fn specialisation(prefix: &[Token]) -> Option<String> {
    let k = prefix.iter().position(|x| ["struct", "class", "union"].contains(&x.text.as_str()))?;
    let open = prefix.iter().skip(k).position(|x| x.is("<"))? + k;
    prefix[k + 1..open].iter().rev().find(|x| x.is_ident()).map(|x| x.text.clone())
}

/// The data members of the struct named `name` (`P` or `ns::P`) in `source`, in declaration
/// order; `None` when there is no such struct at namespace scope, when an unqualified name is
/// defined in several namespaces, or when its layout cannot be checked member by member.
pub fn member_names(source: &str, name: &str) -> Option<Vec<String>> {
    let all = structs(source);
    let name = name.trim_start_matches("::");
    if let Some(s) = all.iter().find(|s| s.qualified_name() == name) {
        return s.members.clone();
    }
    let mut same = all.iter().filter(|s| s.name == name);
    match (same.next(), same.next()) {
        (Some(s), None) => s.members.clone(),
        _ => None,
    }
}

/// The struct a type name written in namespace `scope` (outermost first) refers to, as C++ name
/// lookup finds it among `all`: `P` inside `a::b` is `a::b::P`, else `a::P`, else `::P`; a name
/// written `::P` is only looked up at global scope. `None` when no listed struct is found that
/// way (a typedef, a `using`, a type from an unread header): such a type gets no field check.
pub fn lookup(all: &[CudaStruct], scope: &[String], name: &str) -> Option<usize> {
    let (name, scope) = match name.strip_prefix("::") {
        Some(global) => (global, &[][..]),
        None => (name, scope),
    };
    for depth in (0..=scope.len()).rev() {
        let wanted: Vec<&str> = scope[..depth].iter().map(String::as_str).chain(std::iter::once(name)).collect();
        let wanted = wanted.join("::");
        let mut found = all.iter().enumerate().filter(|(_, s)| s.qualified_name() == wanted);
        match (found.next(), found.next()) {
            (None, _) => continue,
            (Some((i, _)), None) => return Some(i),
            // Two definitions of one name (under different `#if` branches): cannot tell which.
            (Some(_), Some(_)) => return None,
        }
    }
    None
}

/// The compile-time questions for one struct, per member in order: the C++ integral constant
/// expressions `(offset of m, sizeof(((NAME*)0)->m))`, for `probe::Probe::Value`. The offset is
/// written out as `(char*)&((NAME*)0)->m - (char*)0`, which nvcc and NVRTC both fold (NVRTC has
/// neither `offsetof` nor `__builtin_offsetof` without the C library headers).
/// `cxx_name` is the struct as C++ names it ([`CudaStruct::qualified_name`]); it is looked up from
/// the global scope.
pub fn layout_exprs(cxx_name: &str, members: &[String]) -> Vec<(String, String)> {
    let ty = format!("::{}", cxx_name.trim_start_matches("::"));
    members
        .iter()
        .map(|m| (format!("(char*)&(({ty}*)0)->{m} - (char*)0"), format!("sizeof((({ty}*)0)->{m})")))
        .collect()
}

/// The answers to [`layout_exprs`] as `(member, offset, size)` triples in declaration order;
/// `None` when any is missing. `answer(i)` gives member `i`'s `(offset, size)` from the probe
/// answers.
pub fn read_layout(
    members: &[String],
    answer: impl Fn(usize) -> Option<(u64, u64)>,
) -> Option<Vec<(String, u64, u64)>> {
    members.iter().enumerate().map(|(i, m)| answer(i).map(|(offset, size)| (m.clone(), offset, size))).collect()
}

/// The generated assertion comparing the Rust type `ty`'s `DeviceSafe::LAYOUT` with the CUDA
/// struct's `fields` (from [`read_layout`]); `rust_name` names the type in the error message.
pub fn layout_check(ty: TokenStream, rust_name: &str, fields: &[(String, u64, u64)], span: Span) -> TokenStream {
    let rows = fields.iter().map(|(name, offset, size)| {
        let (offset, size) = (*offset as usize, *size as usize);
        quote!((#name, #offset, #size))
    });
    quote_spanned! {span=>
        const _: () = ::cuda_embed::__private::check_layout::<#ty>(#rust_name, &[#(#rows),*]);
    }
}

/// The head of a struct definition: `struct P`, `typedef struct __align__(16) P`, `class P : B`.
struct RecordHead {
    keyword: String,
    tag: Option<String>,
    typedef: bool,
    has_bases: bool,
    line: usize,
}

fn record_head(prefix: &[Token]) -> Option<RecordHead> {
    let k = prefix.iter().position(|x| ["struct", "class", "union"].contains(&x.text.as_str()))?;
    // Before the keyword only `typedef` (and attributes); the caller took a `template <...>` head
    // off (a template is probed through its instances, see `instance`).
    if prefix[..k].iter().any(|x| !(x.is("typedef") || x.is("__device__") || x.is("__host__"))) {
        return None;
    }
    let mut tag = None;
    let mut has_bases = false;
    let mut j = k + 1;
    while j < prefix.len() {
        let x = &prefix[j];
        if is_attribute(x) && prefix.get(j + 1).is_some_and(|n| n.is("(")) {
            j = matching(prefix, j + 1)? + 1;
            continue;
        }
        if x.is(":") {
            has_bases = true;
            break;
        }
        if !x.is_ident() || tag.is_some() && !x.is("final") {
            return None; // `struct P make()`: a function returning a struct, or something else
        }
        if !x.is("final") {
            tag = Some(x.text.clone());
        }
        j += 1;
    }
    Some(RecordHead {
        keyword: prefix[k].text.clone(),
        tag,
        typedef: prefix[..k].iter().any(|x| x.is("typedef")),
        has_bases,
        line: prefix[k].line,
    })
}

fn is_attribute(x: &Token) -> bool {
    ["__align__", "alignas", "__attribute__", "__declspec", "__builtin_align__"].contains(&x.text.as_str())
}

/// `namespace a {` / `namespace a::b {` / `inline namespace v1 {` -> the name (empty when
/// anonymous).
fn namespace_head(prefix: &[Token]) -> Option<String> {
    let kw = prefix.iter().position(|x| x.is("namespace"))?;
    if prefix[..kw].iter().any(|x| !x.is("inline")) {
        return None;
    }
    let path = &prefix[kw + 1..];
    let ok = path.iter().enumerate().all(|(n, x)| if n % 2 == 0 { x.is_ident() } else { x.is("::") });
    ((ok && path.len() % 2 == 1) || path.is_empty()).then(|| path.iter().map(|x| x.text.as_str()).collect())
}

/// The data members declared in a struct body (the tokens between its braces), or `None` when
/// one of them makes a member-by-member check impossible. A non-public data member is one:
/// `offsetof` cannot name it from outside, and a probe that does not compile costs the other
/// probes too. `public` is the default access (`struct`, not `class`).
fn data_members(body: &[Token], mut public: bool) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let start = i;
        // Access labels.
        if ["public", "private", "protected"].contains(&body[i].text.as_str())
            && body.get(i + 1).is_some_and(|x| x.is(":"))
        {
            public = body[i].is("public");
            i += 2;
            continue;
        }
        // One member declaration: up to `;` at depth 0, or a function body / nested type body.
        let mut nested: Option<(bool, usize)> = None; // (anonymous, index after its `}`)
        let mut function = false;
        while i < body.len() && !body[i].is(";") {
            let x = &body[i];
            if x.is("(") && body.get(i + 1).is_some_and(|n| n.is("*") || n.is("&") || n.is("^")) {
                return None; // `int (*fn)(int);`: a declarator in parentheses
            }
            if x.is("(") && nested.is_none() && is_function_head(&body[start..i]) {
                function = true;
                i = skip_function(body, i);
                break;
            }
            if x.is("{") {
                let close = matching(body, i)?;
                let head = &body[start..i];
                if nested.is_none()
                    && head.iter().any(|h| ["struct", "union", "class", "enum"].contains(&h.text.as_str()))
                {
                    let anonymous =
                        head.last().is_some_and(|h| ["struct", "union", "class"].contains(&h.text.as_str()));
                    nested = Some((anonymous, close + 1));
                }
                i = close + 1;
                continue;
            }
            if x.is("(") || x.is("[") {
                i = matching(body, i)? + 1;
                continue;
            }
            i += 1;
        }
        let stmt = &body[start..i.min(body.len())];
        i += 1; // the `;`
        if function || stmt.is_empty() {
            continue;
        }
        const NOT_DATA: &[&str] = &["static", "typedef", "using", "friend", "static_assert", "template"];
        if stmt.iter().any(|x| NOT_DATA.contains(&x.text.as_str())) {
            continue;
        }
        if !public {
            return None;
        }
        let declarators = match nested {
            // `struct Inner {..} inner, other;` declares members; `enum E {..};` does not; an
            // anonymous struct/union puts its members in this struct (overlapping for a union).
            Some((anonymous, after)) => {
                let rest = &body[after..start + stmt.len()];
                if rest.is_empty() {
                    if anonymous {
                        return None;
                    }
                    continue;
                }
                // The type is the nested one: each piece is a bare declarator.
                for piece in split_top(rest) {
                    out.push(declarator_name(piece, true)?);
                }
                continue;
            }
            None => split_top(stmt),
        };
        for (n, piece) in declarators.into_iter().enumerate() {
            out.push(declarator_name(piece, n > 0)?);
        }
    }
    Some(out)
}

/// The member name in one declarator: `float x`, `*p`, `v[4]`, `x = 1.0f`, `y{2}`. `None` for a
/// bit-field, a reference, a function pointer or anything unexpected. `bare` is true when `piece`
/// holds no type (the second and later declarators of a statement).
fn declarator_name(piece: &[Token], bare: bool) -> Option<String> {
    let mut toks: Vec<&Token> = Vec::new();
    let mut j = 0;
    while j < piece.len() {
        let x = &piece[j];
        if x.is("=") || x.is("{") {
            break; // the initialiser
        }
        if is_attribute(x) && piece.get(j + 1).is_some_and(|n| n.is("(")) {
            j = matching(piece, j + 1)? + 1;
            continue;
        }
        if x.is("[") {
            break; // array bounds follow the name
        }
        if x.is(":") || x.is("&") || x.is("(") {
            return None; // bit-field, reference, function pointer / parenthesised declarator
        }
        toks.push(x);
        j += 1;
    }
    let name = toks.last().filter(|x| x.is_ident())?;
    let typed = toks.iter().filter(|x| x.is_ident()).count() >= 2;
    (bare || typed).then(|| name.text.clone())
}

/// True when `head` (a member declaration up to a `(`) names a function: `void f`, `P`,
/// `operator+`, `~P`, `__device__ float get`. A declaration with `=` before the `(` is an
/// initialised data member.
fn is_function_head(head: &[Token]) -> bool {
    if head.iter().any(|x| x.is("operator")) {
        return true;
    }
    if head.iter().any(|x| x.is("=") || x.is("[")) {
        return false;
    }
    head.last().is_some_and(|last| last.is_ident() && !is_attribute(last))
}

/// From the `(` of a member function's parameter list to just past its `;` or body (constructor
/// initialiser lists, `= default`, qualifiers and trailing return types included), leaving `i` on
/// the `;` when there is one.
fn skip_function(body: &[Token], open: usize) -> usize {
    let Some(close) = matching(body, open) else { return body.len() };
    let mut i = close + 1;
    while i < body.len() {
        let x = &body[i];
        if x.is(";") {
            return i;
        }
        if x.is("(") || x.is("[") {
            i = matching(body, i).map_or(body.len(), |c| c + 1);
            continue;
        }
        if x.is("{") {
            let after = matching(body, i).map_or(body.len(), |c| c + 1);
            // `: a{1}, b(2) {..}`: a braced initialiser follows a name; the body does not.
            let init = body[i - 1].is_ident() && body.get(after).is_some_and(|n| n.is(",") || n.is("{"));
            if init {
                i = after;
                continue;
            }
            // The body; an optional `;` after it belongs to this declaration.
            return if body.get(after).is_some_and(|n| n.is(";")) { after } else { after.saturating_sub(1) };
        }
        i += 1;
    }
    i
}

/// Splits on commas outside brackets and template argument lists.
fn split_top(t: &[Token]) -> Vec<&[Token]> {
    let mut out = Vec::new();
    let (mut depth, mut angle, mut start) = (0i32, 0i32, 0usize);
    for (k, x) in t.iter().enumerate() {
        match x.text.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "<" if depth == 0 => angle += 1,
            ">" if depth == 0 && angle > 0 => angle -= 1,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names(src: &str, name: &str) -> Option<Vec<String>> {
        member_names(src, name)
    }

    fn v(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn plain_struct_arrays_and_several_declarators() {
        let src = "struct Params { float scale; int n; double d[3][2]; float x, y, *z; unsigned long long w = 4; };";
        assert_eq!(names(src, "Params"), v(&["scale", "n", "d", "x", "y", "z", "w"]));
    }

    #[test]
    fn typedef_struct_both_names_and_attributes() {
        let src = "typedef struct __align__(16) Tag_ { float a; } Vec1, *PVec1;\n\
                   typedef struct { int i; float f{1.0f}; } Anon;\n\
                   struct alignas(8) final_check final { char c; };";
        assert_eq!(names(src, "Tag_"), v(&["a"]));
        assert_eq!(names(src, "Vec1"), v(&["a"]));
        assert_eq!(names(src, "PVec1"), None, "a pointer typedef is not the struct");
        assert_eq!(names(src, "Anon"), v(&["i", "f"]));
        assert_eq!(names(src, "final_check"), v(&["c"]));
    }

    #[test]
    fn skips_static_members_functions_nested_types_and_labels() {
        let src = r#"
            struct P {
                static const int K = 4;
                static __device__ float scale_of(int);
                enum Mode { A, B };
                struct Inner { int q; };
                typedef float real;
                using index = int;
              public:
                __host__ __device__ P() : a(0), b{1} {}
                __device__ float get() const { return a * b; }
                __device__ float twice() const;
                P& operator=(const P&) = default;
                float a;
              public:
                int b;
                Inner in, more[2];
                struct Named { float u; } named;
                Mode mode;
                __align__(8) float aligned;
            };
        "#;
        assert_eq!(names(src, "P"), v(&["a", "b", "in", "more", "named", "mode", "aligned"]));
    }

    #[test]
    fn cannot_check_bit_fields_unions_bases_and_odd_declarators() {
        assert_eq!(names("struct B { unsigned a : 3; unsigned b : 5; };", "B"), None);
        assert_eq!(names("struct U { union { float f; int i; }; int n; };", "U"), None);
        assert_eq!(names("union V { float f; int i; };", "V"), None);
        assert_eq!(names("struct Base { int a; }; struct D : Base { int b; };", "D"), None);
        assert_eq!(names("struct F { int (*fn)(int); };", "F"), None);
        assert_eq!(names("struct R { const float& r; };", "R"), None);
        assert_eq!(names("struct S { int a; private: int b; };", "S"), None);
        assert_eq!(names("class C { int a; };", "C"), None);
        assert_eq!(names("class C { public: int a; void f() {} };", "C"), v(&["a"]));
        // Structs with checkable members next to them are unaffected.
        let s = structs("struct Base { int a; }; struct D : Base { int b; };");
        assert_eq!(s[0].members, v(&["a"]));
    }

    #[test]
    fn namespace_scope_only_and_qualified_names() {
        let src = r#"
            namespace ns { struct P { float a; }; namespace inner { struct P { int b; int c; }; } }
            extern "C" { struct Q { char q; }; }
            template <typename T> struct T1 { T t; };
            __device__ void f() { struct Local { int l; }; }
            struct Outer { struct Nested { int n; } nested; };
            struct P make_p();
        "#;
        let all = structs(src);
        let found: Vec<String> = all.iter().map(|s| s.qualified_name()).collect();
        assert_eq!(found, ["ns::P", "ns::inner::P", "Q", "Outer"]);
        assert_eq!(names(src, "ns::inner::P"), v(&["b", "c"]));
        assert_eq!(names(src, "::ns::P"), v(&["a"]));
        assert_eq!(names(src, "P"), None, "ambiguous");
        assert_eq!(names(src, "Q"), v(&["q"]));
        assert_eq!(names(src, "T1"), None);
        assert_eq!(names(src, "Local"), None);
        assert_eq!(names(src, "Outer"), v(&["nested"]));
        assert_eq!(all[0].line, 2);
    }

    #[test]
    fn class_templates_and_their_instances() {
        let src = "template <typename T, int N> struct Tensor { T* data; long size[N]; };\n\
                   namespace lib { template <class T> class Box { public: T v; }; struct Plain { int p; }; }\n\
                   template <class T> struct Spec { T a; }; template <> struct Spec<float> { double b; };\n\
                   template <class T> struct Part { T a; }; template <class T> struct Part<T*> { int b; };";
        let all = class_templates(src, &[]);
        let found: Vec<(String, Option<Vec<String>>)> =
            all.iter().map(|s| (s.qualified_name(), s.members.clone())).collect();
        assert_eq!(
            found,
            [("Tensor".into(), v(&["data", "size"])), ("lib::Box".into(), v(&["v"]))],
            "specialised ones left out"
        );
        assert_eq!(structs(src).iter().map(|s| s.qualified_name()).collect::<Vec<_>>(), ["lib::Plain"]);
        let ns = ["lib".to_string()];
        let t = instance(&all, &[], "Tensor<float,1>").unwrap();
        assert_eq!((t.qualified_name(), lookup(&[t], &[], "Tensor<float,1>")), ("Tensor<float,1>".into(), Some(0)));
        let b = instance(&all, &ns, "Box<int>").unwrap();
        assert_eq!(
            (b.qualified_name(), lookup(std::slice::from_ref(&b), &ns, "Box<int>")),
            ("lib::Box<int>".into(), Some(0))
        );
        assert_eq!(lookup(&[b], &[], "lib::Box<int>"), Some(0));
        assert_eq!(instance(&all, &[], "Box<int>"), None, "not visible from the global scope");
        assert_eq!(instance(&all, &[], "Tensor"), None);
    }

    #[test]
    fn lookup_follows_cxx_scopes() {
        let all = structs("struct P { int a; }; namespace ns { struct P { float b; }; struct Q { int c; }; }");
        let ns = ["ns".to_string()];
        let at = |scope: &[String], name: &str| lookup(&all, scope, name).map(|i| all[i].qualified_name());
        assert_eq!(at(&[], "P").as_deref(), Some("P"));
        assert_eq!(at(&ns, "P").as_deref(), Some("ns::P"), "the innermost scope first");
        assert_eq!(at(&ns, "::P").as_deref(), Some("P"));
        assert_eq!(at(&[], "Q"), None, "not visible from the global scope");
        assert_eq!(at(&ns, "Q").as_deref(), Some("ns::Q"));
        assert_eq!(at(&[], "ns::Q").as_deref(), Some("ns::Q"));
        let twice = structs("#if __A__\nstruct P { int a; };\n#else\nstruct P { float a; };\n#endif\n");
        assert_eq!(lookup(&twice, &[], "P"), None, "two definitions: cannot tell which");
        let src = "#if A\nstruct P { int a; };\n#else\nstruct P { float b; };\n#endif\n";
        assert_eq!(structs(src)[0].members.as_deref(), Some(&["b".to_string()][..]), "the branch the compiler takes");
        let with_a = structs_with(src, &[("A".into(), "1".into())]);
        assert_eq!(with_a[0].members.as_deref(), Some(&["a".to_string()][..]));
    }

    #[test]
    fn macros_and_comments() {
        let src = "#define REAL float\n#define N 4\nstruct M { REAL a[N]; /* b */ REAL c; // d\n };";
        assert_eq!(names(src, "M"), v(&["a", "c"]));
    }

    #[test]
    fn probes_read_back_and_check_tokens() {
        let members: Vec<String> = vec!["scale".into(), "n".into()];
        let exprs = layout_exprs("ns::P", &members);
        assert_eq!(
            exprs,
            [
                ("(char*)&((::ns::P*)0)->scale - (char*)0".to_string(), "sizeof(((::ns::P*)0)->scale)".to_string()),
                ("(char*)&((::ns::P*)0)->n - (char*)0".to_string(), "sizeof(((::ns::P*)0)->n)".to_string()),
            ]
        );
        let answers = [(0u64, 4u64), (4, 4)];
        let fields = read_layout(&members, |i| answers.get(i).copied()).unwrap();
        assert_eq!(fields, [("scale".to_string(), 0, 4), ("n".to_string(), 4, 4)]);
        assert_eq!(read_layout(&members, |i| (i == 0).then_some((0, 4))), None);
        let tokens = layout_check(quote!(super::super::P), "P", &fields, Span::call_site()).to_string();
        let want = "const _ : () = :: cuda_embed :: __private :: check_layout :: < super :: super :: P > \
                    (\"P\" , & [(\"scale\" , 0usize , 4usize) , (\"n\" , 4usize , 4usize)]) ;";
        assert_eq!(tokens, want);
    }
}

//! The kernel body, typed and written as CUDA C++: one walk over syn's tree that checks each
//! construct against the supported subset (an error at its span otherwise), gives it a type
//! ([`Ty`]) and writes its C++ with `#line` directives pointing at the Rust lines.
//!
//! Rust semantics kept in C++: signed `+ - *` wrap (computed in the unsigned type of the same
//! width, as Rust's release builds do), shift amounts are masked to the width, narrow integer
//! results are cast back to their type, range ends are evaluated once, and a float literal takes
//! the type it meets (`x * 2.0` stays `f32`). A literal bound by `let` without a type takes the
//! type of the first typed operand it meets (the walk runs again with what it learned).

use super::syntax::{scalar_type, value_type, vector_type, KernelFn};
use super::types::{tuples_used, unify, Elem, Scalar, Ty};
use std::collections::HashMap;
use std::fmt::Write as _;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Lit, Stmt, UnOp};

mod calls;
mod expr;
mod lit;

use lit::*;
pub use lit::{cpp_ident, is_device_fn};

type Result<T> = syn::Result<T>;

/// How a function is translated and what its body may call.
#[derive(Clone)]
pub struct Settings {
    /// Index checks on.
    pub bounds_checks: bool,
    /// `cpp = "..."` or `include = ...` was given: unknown functions are C++ ones.
    pub cpp_functions: bool,
    /// The `#[device]` functions of the same `#[cuda_embed::kernels]` module.
    pub device_fns: Vec<DeviceSig>,
    /// `Some(return type)` for a device function (`Ty::Unit` for none), `None` for a kernel.
    pub returns: Option<Ty>,
    /// The `__device__` slot the bounds check records into: `__ce_oob_NAME` in a kernel, the
    /// `__ce_slot` parameter in a device function.
    pub slot: String,
}

/// A `#[device]` function's signature, for the calls to it.
#[derive(Clone)]
pub struct DeviceSig {
    /// Its name.
    pub name: String,
    /// Its parameter types.
    pub params: Vec<Ty>,
    /// Its return type (`Ty::Unit` for none).
    pub ret: Ty,
}

/// The translated body.
pub struct Body {
    /// The C++ statements (inside the kernel's braces).
    pub code: String,
    /// The tuple types the body builds or binds (their structs are declared before it), a
    /// nested one before the tuple holding it.
    pub tuples: Vec<Vec<Ty>>,
}

/// A value: its C++ text, its type, and the local it reads (for literal-typed locals).
struct Val {
    code: String,
    ty: Ty,
    var: Option<usize>,
}

impl Val {
    fn new(code: impl Into<String>, ty: Ty) -> Val {
        Val { code: code.into(), ty, var: None }
    }
}

/// What a tuple pattern is bound to: an expression of the source, or a value already computed
/// (a field of a held tuple) and the span its errors point at.
enum Source<'e> {
    Expr(&'e Expr),
    Value(Val, proc_macro2::Span),
}

/// A name of a tuple pattern: bound, after every value is computed, to its temporary.
struct Leaf {
    pat: syn::Pat,
    ty: Option<syn::Type>,
    temp: String,
    span: proc_macro2::Span,
}

/// `ty` without the parentheses around it.
fn strip_paren_type(ty: &syn::Type) -> &syn::Type {
    match ty {
        syn::Type::Paren(p) => strip_paren_type(&p.elem),
        t => t,
    }
}

#[derive(Clone)]
struct Var {
    cpp: String,
    ty: Ty,
    mutable: bool,
    id: usize,
}

const DEVICE_HELP: &str = "supported from `cuda_embed::device`: `thread_idx()`, `block_idx()`, `block_dim()`, \
    `grid_dim()` (with `.x`, `.y`, `.z`), `sync_threads()`, `sync_warp()`, `thread_fence()`, `shared::<T, N>()`, \
    `atomic_add`/`atomic_sub`/`atomic_min`/`atomic_max`/`atomic_exch`/`atomic_and`/`atomic_or`/`atomic_xor`(&mut x[i], v), \
    `atomic_cas(&mut x[i], old, new)`, `shfl_sync`/`shfl_up_sync`/`shfl_down_sync`/`shfl_xor_sync(mask, v, lane)`, \
    `ballot_sync`/`all_sync`/`any_sync(mask, predicate)`, and `printf!(\"format\", args)`; CUDA vector types \
    are built with `Float4::new(x, y, z, w)` (and `Int2::new`, `Double2::new`, ...)";

const SYNTAX_HELP: &str = "a kernel body supports `let`/`let mut`, arithmetic, bitwise, comparison and logical \
    operators, `as` casts, `if`/`else`, `match` on integers, `while`, `loop`, `for` over integer ranges (with `.step_by(n)`, `.rev()`), \
    `break`/`continue`/`return`, blocks, indexing of slices and shared arrays, float and integer methods, and the \
    functions of `cuda_embed::device`";

/// Translates `f`'s body. Runs the walk until the types of literal-bound locals settle.
pub fn body(f: &KernelFn, file: &str, settings: &Settings) -> Result<Body> {
    let mut hints: HashMap<usize, Scalar> = HashMap::new();
    for _ in 0..6 {
        let mut e = Emitter::new(f, file, settings.clone(), hints.clone());
        e.function_body(&f.body)?;
        let before = hints.len();
        for (k, v) in e.learned {
            hints.entry(k).or_insert(v);
        }
        if hints.len() == before {
            return Ok(Body { code: e.out, tuples: e.tuples });
        }
    }
    let mut e = Emitter::new(f, file, settings.clone(), hints);
    e.function_body(&f.body)?;
    Ok(Body { code: e.out, tuples: e.tuples })
}

struct Emitter<'a> {
    file: &'a str,
    settings: Settings,
    scopes: Vec<Vec<(String, Var)>>,
    /// Types learned for literal-bound locals in the previous walk, by declaration order.
    hints: HashMap<usize, Scalar>,
    learned: HashMap<usize, Scalar>,
    next_var: usize,
    next_tmp: usize,
    out: String,
    indent: usize,
    line: usize,
    /// A bounds-checked index was written since the last statement boundary.
    indexed: bool,
    /// The tuple types used (see [`Body::tuples`]).
    tuples: Vec<Vec<Ty>>,
    /// The element types a tuple value here should have (a typed `let (a, b): (f32, u32)`, a
    /// device function's result), for its literals.
    tuple_want: Option<Vec<Ty>>,
    loops: usize,
}

fn err<T>(span: impl Spanned, msg: impl std::fmt::Display) -> Result<T> {
    Err(syn::Error::new(span.span(), msg))
}

impl<'a> Emitter<'a> {
    fn new(f: &KernelFn, file: &'a str, settings: Settings, hints: HashMap<usize, Scalar>) -> Emitter<'a> {
        let mut e = Emitter {
            file,
            settings,
            scopes: vec![Vec::new()],
            hints,
            learned: HashMap::new(),
            next_var: 0,
            next_tmp: 0,
            out: String::new(),
            indent: 1,
            line: 0,
            indexed: false,
            tuples: Vec::new(),
            tuple_want: None,
            loops: 0,
        };
        for p in &f.params {
            let name = p.name.to_string();
            let var = Var { cpp: cpp_ident(&name), ty: p.ty.clone(), mutable: false, id: usize::MAX };
            e.scopes[0].push((name, var));
        }
        e
    }

    fn line_of(&mut self, span: proc_macro2::Span) {
        let line = span.start().line;
        if line != 0 && line != self.line {
            self.line = line;
            let _ = writeln!(self.out, "#line {line} \"{}\"", self.file.replace('\\', "/"));
        }
    }

    fn push(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn lookup(&self, name: &str) -> Option<&Var> {
        self.scopes.iter().rev().find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v))
    }

    fn declare(&mut self, name: &str, ty: Ty, mutable: bool) -> Var {
        let id = self.next_var;
        self.next_var += 1;
        // Shadowing is legal in Rust and not in one C++ scope: each binding gets its own name.
        let cpp = if self.lookup(name).is_some() { format!("{}__s{id}", cpp_ident(name)) } else { cpp_ident(name) };
        tuples_used(&ty, &mut self.tuples);
        let var = Var { cpp, ty, mutable, id };
        if let Some(s) = self.scopes.last_mut() {
            s.push((name.to_string(), var.clone()));
        }
        var
    }

    fn tmp(&mut self) -> String {
        self.next_tmp += 1;
        format!("__ce_t{}", self.next_tmp)
    }

    /// A literal-typed local met a typed operand: remember its type for the next walk.
    fn learn(&mut self, v: &Val, ty: &Ty) {
        if let (Some(id), true, Some(s)) = (v.var, v.ty.is_literal(), ty.scalar().filter(|_| !ty.is_literal())) {
            self.learned.entry(id).or_insert(s);
        }
    }

    fn bounds_boundary(&mut self) {
        if self.indexed && self.settings.bounds_checks {
            let text = format!("if (__ce_bad) {}", self.early_return());
            self.push(&text);
        }
        self.indexed = false;
    }

    // ---- statements -------------------------------------------------------------------------

    /// `return;` in a kernel, `return T();` in a device function returning `T`.
    fn early_return(&self) -> String {
        match &self.settings.returns {
            Some(t) if *t != Ty::Unit => format!("return {}();", t.cpp()),
            _ => "return;".to_string(),
        }
    }

    fn function_body(&mut self, block: &syn::Block) -> Result<()> {
        match self.settings.returns.clone() {
            None => {
                if self.settings.bounds_checks {
                    self.push("bool __ce_bad = false;");
                }
                self.stmts(&block.stmts, None).map(drop)
            }
            Some(Ty::Unit) => self.stmts(&block.stmts, None).map(drop),
            Some(t) => {
                let tail = self.stmts(&block.stmts, Some(("return", t.scalar())))?;
                match tail {
                    Some(got) if unify(&got, &t).is_some() => Ok(()),
                    Some(got) => err(
                        block.brace_token.span.join(),
                        format!("mismatched types: the function returns `{t}`, found `{got}`"),
                    ),
                    None if ends_in_return(block) => Ok(()),
                    None => err(
                        block.brace_token.span.join(),
                        format!("the function returns `{t}`: end it with a value or `return`"),
                    ),
                }
            }
        }
    }

    /// Statements; with `target`, the tail expression is assigned to it.
    fn stmts(&mut self, stmts: &[Stmt], target: Option<(&str, Option<Scalar>)>) -> Result<Option<Ty>> {
        let mut tail_ty = None;
        for (i, s) in stmts.iter().enumerate() {
            let last = i + 1 == stmts.len();
            match s {
                Stmt::Local(l) => self.local(l)?,
                Stmt::Expr(e, semi) => {
                    if let (true, None, Some((t, want))) = (last, semi, target) {
                        self.line_of(e.span());
                        let v = match (&self.settings.returns, t) {
                            (Some(Ty::Tuple(ts)), "return") => self.expr_with_tuple(e, Some(&ts.clone()))?,
                            _ => self.expr(e, want)?,
                        };
                        if v.ty != Ty::Never {
                            let text = if t == "return" {
                                format!("return {};", v.code)
                            } else {
                                format!("{t} = {};", v.code)
                            };
                            self.push(&text);
                        } else {
                            let text = format!("{};", v.code);
                            self.push(&text);
                        }
                        self.bounds_boundary();
                        tail_ty = Some(v.ty);
                    } else {
                        self.expr_stmt(e)?;
                    }
                }
                Stmt::Macro(m) => {
                    self.line_of(m.span());
                    let v = self.macro_call(&m.mac)?;
                    let text = format!("{};", v.code);
                    self.push(&text);
                    self.bounds_boundary();
                }
                Stmt::Item(item) => {
                    return err(item, "items (functions, structs, `use`, ...) cannot be declared inside a kernel: declare them outside");
                }
            }
        }
        Ok(tail_ty)
    }

    /// `e`, where a tuple value takes the element types `want` (for its literals).
    fn expr_with_tuple(&mut self, e: &Expr, want: Option<&[Ty]>) -> Result<Val> {
        let saved = std::mem::replace(&mut self.tuple_want, want.map(<[Ty]>::to_vec));
        let r = self.expr(e, None);
        self.tuple_want = saved;
        r
    }

    /// `e` where a value of type `want` is expected: a literal takes it, a tuple value its
    /// element types.
    fn expr_as(&mut self, e: &Expr, want: &Ty) -> Result<Val> {
        match want {
            Ty::Tuple(ts) => self.expr_with_tuple(e, Some(ts)),
            t => self.expr(e, t.scalar()),
        }
    }

    fn block(&mut self, b: &syn::Block, target: Option<(&str, Option<Scalar>)>) -> Result<Option<Ty>> {
        self.scopes.push(Vec::new());
        let r = self.stmts(&b.stmts, target);
        self.scopes.pop();
        r
    }

    fn braced(&mut self, b: &syn::Block, target: Option<(&str, Option<Scalar>)>) -> Result<Option<Ty>> {
        self.indent += 1;
        let r = self.block(b, target);
        self.indent -= 1;
        r
    }

    /// `let (a, mut b) = (x, y);`, `let ((a, b), c): ((f32, u32), f64) = f(x);`: the values are
    /// computed first, then each name is bound as by its own `let`.
    fn tuple_local(&mut self, l: &syn::Local, pat: &syn::PatTuple, types: Option<&syn::Type>) -> Result<()> {
        let Some(init) = &l.init else {
            return err(l, "a tuple `let` needs a value: `let (a, b) = (x, y);`");
        };
        if let Some((_, diverge)) = &init.diverge {
            return err(diverge, "`let ... else` is not supported in a kernel");
        }
        let mut leaves = Vec::new();
        self.destructure(pat, types, Source::Expr(&init.expr), &mut leaves)?;
        for leaf in leaves {
            let (p, id) = (&leaf.pat, syn::Ident::new(&leaf.temp, leaf.span));
            let stmt: Stmt = match &leaf.ty {
                Some(t) => syn::parse_quote_spanned!(leaf.span=> let #p: #t = #id;),
                None => syn::parse_quote_spanned!(leaf.span=> let #p = #id;),
            };
            match stmt {
                Stmt::Local(local) => self.local(&local)?,
                other => return err(other, "expected a `let`"),
            }
        }
        Ok(())
    }

    /// The names of the tuple pattern `pat` (typed `types`) bound to `src`: each element's value
    /// into a temporary, its name into `leaves`. A tuple expression is taken apart element by
    /// element (no struct is built); another tuple value is held once and read by field.
    fn destructure(
        &mut self,
        pat: &syn::PatTuple,
        types: Option<&syn::Type>,
        src: Source<'_>,
        leaves: &mut Vec<Leaf>,
    ) -> Result<()> {
        let want = match types.map(value_type).transpose()?.flatten() {
            Some(Ty::Tuple(ts)) => Some(ts),
            Some(t) => return err(types, format!("a tuple pattern has a tuple type, found `{t}`")),
            None if types.is_some() => {
                return err(types, "a tuple pattern's type is a tuple of scalars, CUDA vector types and tuples")
            }
            None => None,
        };
        let n = pat.elems.len();
        if want.as_ref().is_some_and(|w| w.len() != n) {
            return err(types, format!("the tuple pattern has {n} elements, its type {}", want.map_or(0, |w| w.len())));
        }
        let elem_types: Vec<Option<&syn::Type>> = match types.map(strip_paren_type) {
            Some(syn::Type::Tuple(t)) => t.elems.iter().map(Some).collect(),
            _ => vec![None; n],
        };
        if let Source::Expr(Expr::Tuple(values)) = src {
            if values.elems.len() != n {
                return err(
                    values,
                    format!("mismatched types: the pattern has {n} elements, the tuple {}", values.elems.len()),
                );
            }
            for ((p, t), e) in pat.elems.iter().zip(elem_types).zip(&values.elems) {
                self.element(p, t, Source::Expr(e), leaves)?;
            }
            return Ok(());
        }
        let (v, span) = match src {
            Source::Expr(e) => (self.expr_with_tuple(e, want.as_deref())?, e.span()),
            Source::Value(v, span) => (v, span),
        };
        let Ty::Tuple(ts) = &v.ty else {
            return err(
                span,
                format!(
                    "a tuple pattern is bound to a tuple (`let (a, b) = (x, y);` or a device function returning one), found `{}`",
                    v.ty
                ),
            );
        };
        if ts.len() != n {
            let p = quote::quote!(#pat).to_string().replace(" ,", ",");
            return err(span, format!("mismatched types: the pattern `{p}` has {n} elements, the value is `{}`", v.ty));
        }
        if let Some(w) = want.filter(|w| w != ts) {
            return err(span, format!("mismatched types: expected `{}`, found `{}`", Ty::Tuple(w), v.ty));
        }
        let holder = self.tmp();
        let text = format!("{} {holder} = {};", v.ty.cpp(), v.code);
        self.push(&text);
        for (k, ((p, t), ty)) in pat.elems.iter().zip(elem_types).zip(ts.clone()).enumerate() {
            self.element(p, t, Source::Value(Val::new(format!("{holder}._{k}"), ty), span), leaves)?;
        }
        Ok(())
    }

    /// One element of a tuple pattern: a nested tuple pattern, `_`, or a name (bound later).
    fn element(&mut self, p: &syn::Pat, ty: Option<&syn::Type>, src: Source<'_>, leaves: &mut Vec<Leaf>) -> Result<()> {
        match p {
            syn::Pat::Tuple(t) => return self.destructure(t, ty, src, leaves),
            syn::Pat::Paren(inner) => return self.element(&inner.pat, ty, src, leaves),
            _ => {}
        }
        let computed = matches!(src, Source::Expr(_));
        let want = match ty {
            Some(t) => Some(value_type(t)?.ok_or_else(|| {
                syn::Error::new_spanned(
                    t,
                    "a tuple holds scalars, CUDA vector types (`Float4`, `Half2`, ...) and tuples",
                )
            })?),
            None => None,
        };
        let (v, span) = match src {
            Source::Expr(e) => match &want {
                Some(w) => (self.expr_as(e, w)?, e.span()),
                None => (self.expr(e, None)?, e.span()),
            },
            Source::Value(v, span) => (v, span),
        };
        let vty = match (&want, &v.ty) {
            (Some(w), t) if unify(w, t).is_some() => w.clone(),
            (Some(w), t) => return err(span, format!("mismatched types: expected `{w}`, found `{t}`")),
            // A literal keeps its literal type: the name bound to it takes the type it meets.
            (None, t @ (Ty::IntLit | Ty::FloatLit)) => t.clone(),
            (None, t) => t.tuple_element().ok_or_else(|| {
                syn::Error::new(span, format!("a tuple holds scalars, CUDA vector types and tuples, found `{t}`"))
            })?,
        };
        if let syn::Pat::Wild(_) = p {
            // Computed for its effects, bound to nothing.
            if computed {
                let text = format!("(void)({});", v.code);
                self.push(&text);
            }
            return Ok(());
        }
        let name = self.tmp().replace("__ce_t", "__ce_tuple");
        let var = self.declare(&name, vty.clone(), false);
        let text = format!("{} {} = {};", vty.cpp(), var.cpp, v.code);
        self.push(&text);
        leaves.push(Leaf { pat: p.clone(), ty: ty.cloned(), temp: name, span });
        Ok(())
    }

    fn local(&mut self, l: &syn::Local) -> Result<()> {
        self.line_of(l.span());
        if let syn::Pat::Tuple(t) = &l.pat {
            return self.tuple_local(l, t, None);
        }
        if let syn::Pat::Type(pt) = &l.pat {
            if let syn::Pat::Tuple(t) = &*pt.pat {
                return self.tuple_local(l, t, Some(&pt.ty));
            }
        }
        let (ident, mutable, annotated) = match &l.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => (&p.ident, p.mutability.is_some(), None),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    let Some(ty) = value_type(&t.ty)? else {
                        return err(
                            &t.ty,
                            "a local's type is a scalar (`f32`, `u32`, `usize`, `bool`, ...), a CUDA vector type (`Float4`, `Half2`, ...) or a tuple of these; shared arrays come from `shared::<T, N>()`",
                        );
                    };
                    (&p.ident, p.mutability.is_some(), Some(ty))
                }
                other => return err(other, "a `let` binds one name, e.g. `let x: f32 = ...`"),
            },
            other => return err(other, "a `let` binds one name, e.g. `let mut acc = 0.0f32`"),
        };
        let name = ident.to_string();
        let Some(init) = &l.init else {
            let Some(t) = annotated else {
                return err(l, "a `let` without a value needs a type: `let x: f32;`");
            };
            let var = self.declare(&name, t.clone(), mutable);
            let text = format!("{} {};", t.cpp(), var.cpp);
            self.push(&text);
            return Ok(());
        };
        if let Some((_, diverge)) = &init.diverge {
            return err(diverge, "`let ... else` is not supported in a kernel");
        }
        // `let tile = shared::<f32, 256>();`
        if let Some((elem, len)) = shared_decl(&init.expr)? {
            if annotated.is_some() {
                return err(l, "a shared array takes its type from `shared::<T, N>()`: drop the annotation");
            }
            let var = self.declare(&name, Ty::Shared { elem, len }, true);
            let text = format!("__shared__ {} {}[{len}];", elem.cpp(), var.cpp);
            self.push(&text);
            return Ok(());
        }
        if let Expr::Reference(r) = &*init.expr {
            return err(
                r,
                "a reference to a local is not supported: use the value itself (kernels copy scalars), or index the slice where it is needed",
            );
        }
        let id_next = self.next_var;
        let want = match &annotated {
            Some(t) => t.scalar(),
            None => self.hints.get(&id_next).copied(),
        };
        let v = match &annotated {
            Some(t @ Ty::Tuple(_)) => self.expr_as(&init.expr, t)?,
            _ => self.expr(&init.expr, want)?,
        };
        let ty = match (&annotated, &v.ty) {
            (Some(a), t) => {
                if unify(a, t).is_none() {
                    return err(&init.expr, format!("mismatched types: expected `{a}`, found `{t}`"));
                }
                a.clone()
            }
            (None, Ty::Slice { .. } | Ty::Shared { .. }) => {
                return err(&init.expr, "a slice cannot be bound to a new name: index the parameter itself");
            }
            (None, Ty::Unit | Ty::Never) => return err(&init.expr, "this expression has no value to bind"),
            (None, Ty::Dim3) => Ty::Dim3,
            (None, Ty::Struct(n)) => Ty::Struct(n.clone()),
            (None, Ty::Vector(v)) => Ty::Vector(*v),
            (None, Ty::Tuple(ts)) => Ty::Tuple(ts.clone()),
            (None, t) => match (t.is_literal(), want) {
                (true, Some(s)) => Ty::Scalar(s),
                _ => t.clone(),
            },
        };
        if let Some(s) = ty.scalar() {
            if annotated.is_some() || ty.is_literal() {
                self.learn(&v, &Ty::Scalar(s));
            }
        }
        let var = self.declare(&name, ty.clone(), mutable);
        let decl = match &ty {
            Ty::Dim3 => "dim3".to_string(),
            t => t.cpp(),
        };
        let text = format!("{decl} {} = {};", var.cpp, v.code);
        self.push(&text);
        self.bounds_boundary();
        Ok(())
    }

    fn expr_stmt(&mut self, e: &Expr) -> Result<()> {
        self.line_of(e.span());
        match e {
            Expr::If(i) => self.if_stmt(i),
            Expr::While(w) => self.while_loop(w),
            Expr::Loop(l) => {
                if let Some(label) = &l.label {
                    return err(label, "loop labels are not supported: use a flag and `break`");
                }
                self.push("for (;;) {");
                self.loop_body(&l.body)?;
                self.push("}");
                Ok(())
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Match(m) => self.match_arms(m, None).map(drop),
            Expr::Block(b) => {
                self.push("{");
                self.braced(&b.block, None)?;
                self.push("}");
                Ok(())
            }
            _ => {
                let v = self.expr(e, None)?;
                if !v.code.is_empty() {
                    let text = format!("{};", v.code);
                    self.push(&text);
                }
                self.bounds_boundary();
                Ok(())
            }
        }
    }

    fn loop_body(&mut self, b: &syn::Block) -> Result<()> {
        self.loops += 1;
        let r = self.braced(b, None);
        self.loops -= 1;
        r.map(drop)
    }

    fn condition(&mut self, c: &Expr) -> Result<String> {
        let before = self.out.len();
        let v = self.expr(c, Some(Scalar::Bool))?;
        if self.out.len() != before {
            return err(c, "this condition needs statements of its own: compute it into a `let` first");
        }
        if v.ty != Ty::Scalar(Scalar::Bool) && v.ty != Ty::Opaque {
            return err(c, format!("mismatched types: a condition is a `bool`, found `{}`", v.ty));
        }
        Ok(v.code)
    }

    fn if_stmt(&mut self, i: &syn::ExprIf) -> Result<()> {
        let c = self.condition(&i.cond)?;
        let text = format!("if ({c}) {{");
        self.push(&text);
        self.indexed_guard();
        self.braced(&i.then_branch, None)?;
        let mut els = &i.else_branch;
        while let Some((_, e)) = els {
            match &**e {
                Expr::If(inner) => {
                    let c = self.condition(&inner.cond)?;
                    let text = format!("}} else if ({c}) {{");
                    self.push(&text);
                    self.indexed_guard();
                    self.braced(&inner.then_branch, None)?;
                    els = &inner.else_branch;
                }
                Expr::Block(b) => {
                    self.push("} else {");
                    self.braced(&b.block, None)?;
                    els = &None;
                }
                other => return err(other, "expected a block after `else`"),
            }
        }
        self.push("}");
        Ok(())
    }

    /// After a condition that indexed: stop before the body acts on a bad value.
    fn indexed_guard(&mut self) {
        if self.indexed && self.settings.bounds_checks {
            self.indent += 1;
            let text = format!("if (__ce_bad) {}", self.early_return());
            self.push(&text);
            self.indent -= 1;
        }
        self.indexed = false;
    }

    fn while_loop(&mut self, w: &syn::ExprWhile) -> Result<()> {
        if let Some(label) = &w.label {
            return err(label, "loop labels are not supported: use a flag and `break`");
        }
        if let Expr::Let(l) = &*w.cond {
            return err(l, "`while let` is not supported in a kernel: use `while` with a condition");
        }
        let c = self.condition(&w.cond)?;
        let text = format!("while ({c}) {{");
        self.push(&text);
        self.indexed_guard();
        self.loop_body(&w.body)?;
        self.push("}");
        Ok(())
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<()> {
        if let Some(label) = &f.label {
            return err(label, "loop labels are not supported: use a flag and `break`");
        }
        let (name, mutable) = match &*f.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                (p.ident.to_string(), p.mutability.is_some())
            }
            syn::Pat::Wild(_) => ("_".to_string(), false),
            other => return err(other, "a `for` loop binds one name: `for i in 0..n`"),
        };
        // `(a..b)`, `(a..b).step_by(s)`, `(a..b).rev()`.
        let mut range = &*f.expr;
        let mut step: Option<&Expr> = None;
        let mut rev = false;
        loop {
            match range {
                Expr::MethodCall(m) if m.method == "step_by" && m.args.len() == 1 && step.is_none() && !rev => {
                    step = m.args.first();
                    range = &m.receiver;
                }
                Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() && step.is_none() && !rev => {
                    rev = true;
                    range = &m.receiver;
                }
                Expr::Paren(p) => range = &p.expr,
                _ => break,
            }
        }
        let Expr::Range(r) = range else {
            return err(
                &f.expr,
                "a `for` loop runs over an integer range: `for i in a..b`, `a..=b`, `(a..b).step_by(s)` or `(a..b).rev()`",
            );
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return err(r, "a `for` range needs both ends: `a..b`");
        };
        let id_next = self.next_var;
        let hint = self.hints.get(&id_next).copied();
        let mut a = self.expr(start, hint)?;
        let mut b = self.expr(end, hint)?;
        let mut ty = unify(&a.ty, &b.ty)
            .filter(|t| t.scalar().is_some_and(Scalar::is_int) || *t == Ty::Opaque)
            .ok_or_else(|| {
                syn::Error::new(
                    r.span(),
                    format!("a `for` range is over integers of one type, found `{}` and `{}`", a.ty, b.ty),
                )
            })?;
        if ty.is_literal() {
            if let Some(h) = hint {
                ty = Ty::Scalar(h);
            }
        }
        if let Some(s) = ty.scalar().filter(|_| !ty.is_literal()) {
            if a.ty.is_literal() {
                a = self.expr(start, Some(s))?;
            }
            if b.ty.is_literal() {
                b = self.expr(end, Some(s))?;
            }
            self.learn(&a, &ty);
            self.learn(&b, &ty);
        }
        let step_code = match step {
            Some(s) => {
                let v = self.expr(s, Some(Scalar::Usize))?;
                if unify(&v.ty, &Ty::Scalar(Scalar::Usize)).is_none() {
                    return err(s, format!("`step_by` takes a `usize`, found `{}`", v.ty));
                }
                Some(v.code)
            }
            None => None,
        };
        let cty = ty.cpp();
        let closed = matches!(r.limits, syn::RangeLimits::Closed(_));
        self.scopes.push(Vec::new());
        let var = self.declare(&name, ty.clone(), mutable);
        let end_name = self.tmp();
        let (i, e) = (&var.cpp, &end_name);
        let head = match (rev, closed, &step_code) {
            (false, false, None) => format!("for ({cty} {i} = {}, {e} = {}; {i} < {e}; ++{i}) {{", a.code, b.code),
            (false, true, None) => {
                format!("for ({cty} {i} = {}, {e} = {}; {i} <= {e}; ++{i}) {{ /* a..=b */", a.code, b.code)
            }
            (false, false, Some(s)) => {
                format!("for ({cty} {i} = {}, {e} = {}; {i} < {e}; {i} += ({cty})({s})) {{", a.code, b.code)
            }
            (false, true, Some(s)) => {
                format!("for ({cty} {i} = {}, {e} = {}; {i} <= {e}; {i} += ({cty})({s})) {{", a.code, b.code)
            }
            (true, false, None) => format!("for ({cty} {e} = {}, {i} = {}; {i}-- > {e};) {{", a.code, b.code),
            (true, true, None) => {
                format!("for ({cty} {e} = {}, {i} = ({})+1; {i}-- > {e};) {{", a.code, b.code)
            }
            (true, _, Some(_)) => unreachable!("rev after step_by is refused above"),
        };
        self.push(&head);
        self.indexed_guard();
        let r = self.loop_body(&f.body);
        self.scopes.pop();
        r?;
        self.push("}");
        Ok(())
    }
}

//! The kernel body, typed and written as CUDA C++: one walk over syn's tree that checks each
//! construct against the supported subset (an error at its span otherwise), gives it a type
//! ([`Ty`]) and writes its C++ with `#line` directives pointing at the Rust lines.
//!
//! Rust semantics kept in C++: signed `+ - *` wrap (computed in the unsigned type of the same
//! width, as Rust's release builds do), shift amounts are masked to the width, narrow integer
//! results are cast back to their type, range ends are evaluated once, and a float literal takes
//! the type it meets (`x * 2.0` stays `f32`). A literal bound by `let` without a type takes the
//! type of the first typed operand it meets (the walk runs again with what it learned).

use super::syntax::{scalar_type, KernelFn};
use super::types::{unify, Scalar, Ty};
use std::collections::HashMap;
use std::fmt::Write as _;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Lit, Stmt, UnOp};

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
    `ballot_sync`/`all_sync`/`any_sync(mask, predicate)`, and `printf!(\"format\", args)`";

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
            return Ok(Body { code: e.out });
        }
    }
    let mut e = Emitter::new(f, file, settings.clone(), hints);
    e.function_body(&f.body)?;
    Ok(Body { code: e.out })
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
                        let v = self.expr(e, want)?;
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

    /// `let (a, mut b) = (x, y);` (optionally `: (f32, u32)`): the values are computed first,
    /// then each name is bound as by its own `let`.
    fn tuple_local(&mut self, l: &syn::Local, pat: &syn::PatTuple, types: Option<&syn::TypeTuple>) -> Result<()> {
        let Some(init) = &l.init else {
            return err(l, "a tuple `let` needs a value: `let (a, b) = (x, y);`");
        };
        let Expr::Tuple(values) = &*init.expr else {
            return err(&init.expr, "a tuple pattern is bound to a tuple of values: `let (a, b) = (x, y);`");
        };
        if values.elems.len() != pat.elems.len() || types.is_some_and(|t| t.elems.len() != pat.elems.len()) {
            return err(pat, "the tuple pattern, its type and its value have different lengths");
        }
        let mut temps = Vec::new();
        for (k, e) in values.elems.iter().enumerate() {
            let want = types.and_then(|t| t.elems.iter().nth(k)).and_then(scalar_type);
            let v = self.expr(e, want)?;
            let ty = match (want, &v.ty) {
                (Some(s), _) => Ty::Scalar(s),
                (None, t @ (Ty::Scalar(_) | Ty::IntLit | Ty::FloatLit)) => t.clone(),
                (None, t) => return err(e, format!("a tuple holds scalars, found `{t}`")),
            };
            let name = self.tmp().replace("__ce_t", "__ce_tuple");
            let var = self.declare(&name, ty.clone(), false);
            let text = format!("{} {} = {};", ty.cpp(), var.cpp, v.code);
            self.push(&text);
            temps.push((name, e.span()));
        }
        for (k, (p, (name, span))) in pat.elems.iter().zip(temps).enumerate() {
            let id = syn::Ident::new(&name, span);
            let stmt: Stmt = match types.and_then(|t| t.elems.iter().nth(k)) {
                Some(t) => syn::parse_quote_spanned!(span=> let #p: #t = #id;),
                None => syn::parse_quote_spanned!(span=> let #p = #id;),
            };
            match stmt {
                Stmt::Local(local) => self.local(&local)?,
                other => return err(other, "expected a `let`"),
            }
        }
        Ok(())
    }

    fn local(&mut self, l: &syn::Local) -> Result<()> {
        self.line_of(l.span());
        if let syn::Pat::Tuple(t) = &l.pat {
            return self.tuple_local(l, t, None);
        }
        if let syn::Pat::Type(pt) = &l.pat {
            if let (syn::Pat::Tuple(t), syn::Type::Tuple(tt)) = (&*pt.pat, &*pt.ty) {
                return self.tuple_local(l, t, Some(tt));
            }
        }
        let (ident, mutable, annotated) = match &l.pat {
            syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => (&p.ident, p.mutability.is_some(), None),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    let s = scalar_type(&t.ty).ok_or_else(|| {
                        syn::Error::new_spanned(
                            &t.ty,
                            "a local's type is a scalar (`f32`, `u32`, `usize`, `bool`, ...); shared arrays come from `shared::<T, N>()`",
                        )
                    })?;
                    (&p.ident, p.mutability.is_some(), Some(s))
                }
                other => return err(other, "a `let` binds one name, e.g. `let x: f32 = ...`"),
            },
            other => return err(other, "a `let` binds one name, e.g. `let mut acc = 0.0f32`"),
        };
        let name = ident.to_string();
        let Some(init) = &l.init else {
            let Some(s) = annotated else {
                return err(l, "a `let` without a value needs a type: `let x: f32;`");
            };
            let var = self.declare(&name, Ty::Scalar(s), mutable);
            let text = format!("{} {};", s.cpp(), var.cpp);
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
        let want = annotated.or_else(|| self.hints.get(&id_next).copied());
        let v = self.expr(&init.expr, want)?;
        let ty = match (annotated, &v.ty) {
            (Some(s), t) => {
                if unify(&Ty::Scalar(s), t).is_none() {
                    return err(&init.expr, format!("mismatched types: expected `{}`, found `{t}`", s.rust()));
                }
                Ty::Scalar(s)
            }
            (None, Ty::Slice { .. } | Ty::Shared { .. }) => {
                return err(&init.expr, "a slice cannot be bound to a new name: index the parameter itself");
            }
            (None, Ty::Unit | Ty::Never) => return err(&init.expr, "this expression has no value to bind"),
            (None, Ty::Dim3) => Ty::Dim3,
            (None, Ty::Struct(n)) => Ty::Struct(n.clone()),
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

    // ---- expressions ------------------------------------------------------------------------

    /// `want`: the type the context expects (for literals).
    fn expr(&mut self, e: &Expr, want: Option<Scalar>) -> Result<Val> {
        match e {
            Expr::Lit(l) => literal(&l.lit, want),
            Expr::Paren(p) => {
                let v = self.expr(&p.expr, want)?;
                Ok(Val { code: format!("({})", v.code), ..v })
            }
            Expr::Group(g) => self.expr(&g.expr, want),
            Expr::Path(p) => self.path(p),
            Expr::Binary(b) => self.binary(b, want),
            Expr::Unary(u) => self.unary(u, want),
            Expr::Assign(a) => self.assign(&a.left, None, &a.right),
            Expr::Cast(c) => {
                let to = scalar_type(&c.ty).ok_or_else(|| {
                    syn::Error::new_spanned(&c.ty, "`as` converts to a scalar type (`f32`, `i32`, `usize`, ...)")
                })?;
                let v = self.expr(&c.expr, None)?;
                match &v.ty {
                    Ty::Scalar(_) | Ty::IntLit | Ty::FloatLit | Ty::Opaque => {}
                    t => return err(&c.expr, format!("cannot cast `{t}` to `{}`", to.rust())),
                }
                if to == Scalar::Bool && v.ty != Ty::Scalar(Scalar::Bool) {
                    return err(c, "only `bool` can be cast to `bool`: compare instead (`x != 0`)");
                }
                Ok(Val::new(format!("(({})({}))", to.cpp(), v.code), Ty::Scalar(to)))
            }
            Expr::Index(i) => self.index(i),
            Expr::Field(f) => {
                let v = self.expr(&f.base, None)?;
                let member = match &f.member {
                    syn::Member::Named(n) => n.to_string(),
                    syn::Member::Unnamed(u) => u.index.to_string(),
                };
                match (&v.ty, member.as_str()) {
                    (Ty::Dim3, "x" | "y" | "z") => Ok(Val::new(format!("{}.{member}", v.code), Ty::Scalar(Scalar::U32))),
                    (Ty::Struct(_) | Ty::Opaque, _) => Ok(Val::new(format!("{}.{member}", v.code), Ty::Opaque)),
                    (t, _) => err(&f.member, format!("no field `{member}` on `{t}`: only `.x`, `.y`, `.z` of `thread_idx()` and friends")),
                }
            }
            Expr::MethodCall(m) => self.method(m, want),
            Expr::Call(c) => self.call(c, want),
            Expr::Macro(m) => self.macro_call(&m.mac),
            Expr::If(i) => self.if_expr(i, want),
            Expr::Block(b) => {
                if let Some(l) = &b.label {
                    return err(l, "block labels are not supported");
                }
                self.hoisted(want, |this, t| {
                    this.push("{");
                    let ty = this.braced(&b.block, Some(t))?;
                    this.push("}");
                    Ok(vec![(ty, &b.block as &dyn Spanned)])
                })
            }
            Expr::Break(b) => {
                if b.expr.is_some() {
                    return err(b, "`break` with a value is not supported: assign to a `let mut` before `break`");
                }
                if let Some(l) = &b.label {
                    return err(l, "loop labels are not supported");
                }
                if self.loops == 0 {
                    return err(b, "`break` outside of a loop");
                }
                Ok(Val::new("break", Ty::Never))
            }
            Expr::Continue(c) => {
                if let Some(l) = &c.label {
                    return err(l, "loop labels are not supported");
                }
                if self.loops == 0 {
                    return err(c, "`continue` outside of a loop");
                }
                Ok(Val::new("continue", Ty::Never))
            }
            Expr::Return(r) => match (&r.expr, self.settings.returns.clone()) {
                (Some(v), None) => err(v, "a kernel returns nothing: write results into a `&mut [T]` parameter"),
                (Some(v), Some(t)) => {
                    let val = self.expr(v, t.scalar())?;
                    if unify(&val.ty, &t).is_none() {
                        return err(v, format!("mismatched types: the function returns `{t}`, found `{}`", val.ty));
                    }
                    Ok(Val::new(format!("return {}", val.code), Ty::Never))
                }
                (None, Some(t)) if t != Ty::Unit => err(r, format!("the function returns `{t}`: `return value`")),
                (None, _) => Ok(Val::new("return", Ty::Never)),
            },
            Expr::While(_) | Expr::Loop(_) | Expr::ForLoop(_) => {
                self.expr_stmt(e)?;
                Ok(Val::new("", Ty::Unit))
            }
            Expr::Closure(c) => err(
                c,
                "closures are not supported in a kernel: write the code inline, or call a CUDA C++ `__device__` function given with `cpp = \"...\"` or `include = \"...\"`",
            ),
            Expr::Reference(r) => err(
                r,
                "a reference to a local is not supported: use the value itself; `&mut x[i]` is only an argument of the atomics",
            ),
            Expr::Tuple(t) => err(t, "a tuple is only supported in `let (a, b) = (x, y);` and `(a, b) = (x, y);`"),
            Expr::Array(a) => err(a, "array literals are not supported: use `shared::<T, N>()` for an array in shared memory"),
            Expr::Repeat(a) => err(a, "array literals are not supported: use `shared::<T, N>()` for an array in shared memory"),
            Expr::Struct(s) => err(s, "struct literals are not supported in a kernel"),
            Expr::Match(m) => self.hoisted(want, |this, t| this.match_arms(m, Some(t))),
            Expr::Range(r) => err(r, "a range is only supported as the iterator of a `for` loop"),
            Expr::Let(l) => err(l, "`if let` is not supported in a kernel: use a condition"),
            Expr::Async(_) | Expr::Await(_) | Expr::Yield(_) | Expr::TryBlock(_) | Expr::Try(_) | Expr::Unsafe(_) => {
                err(e, format!("this expression is not supported in a kernel; {SYNTAX_HELP}"))
            }
            _ => err(e, format!("this expression is not supported in a kernel; {SYNTAX_HELP}")),
        }
    }

    /// An expression that needs statements of its own (a block, an `if` with statements): they
    /// are written before the current statement, into a temporary the value is read from.
    fn hoisted<'s>(
        &mut self,
        want: Option<Scalar>,
        emit: impl FnOnce(&mut Self, (&str, Option<Scalar>)) -> Result<Vec<(Option<Ty>, &'s dyn Spanned)>>,
    ) -> Result<Val> {
        let t = self.tmp();
        let saved = std::mem::take(&mut self.out);
        let r = emit(self, (&t, want));
        let body = std::mem::replace(&mut self.out, saved);
        let tails = r?;
        let mut ty = Ty::Never;
        for (tail, span) in &tails {
            let tail = tail.clone().unwrap_or(Ty::Unit);
            ty = unify(&ty, &tail).ok_or_else(|| {
                syn::Error::new(span.span(), format!("`if` and `else` have incompatible types: `{ty}` and `{tail}`"))
            })?;
        }
        if ty == Ty::Unit || ty == Ty::Never {
            self.out.push_str(&body.replace(&format!("{t} = ;"), ""));
            return Ok(Val::new("", ty));
        }
        let decl = match (&ty, want) {
            (t, Some(s)) if t.is_literal() => s.cpp().to_string(),
            (Ty::Dim3, _) => "dim3".to_string(),
            (Ty::Opaque, _) => {
                return err(
                    tails[0].1.span(),
                    "the value of a C++ call cannot come out of a block: bind it with a typed `let` first",
                )
            }
            (t, _) => t.cpp(),
        };
        let text = format!("{decl} {t};");
        self.push(&text);
        self.out.push_str(&body);
        Ok(Val::new(t, ty))
    }

    fn if_expr(&mut self, i: &syn::ExprIf, want: Option<Scalar>) -> Result<Val> {
        let Some((_, els)) = &i.else_branch else {
            self.if_stmt(i)?;
            return Ok(Val::new("", Ty::Unit));
        };
        // `if c { a } else { b }` with plain expressions: a conditional expression.
        let simple = |b: &syn::Block| matches!(b.stmts.as_slice(), [Stmt::Expr(e, None)] if is_pure(e));
        if let (true, Expr::Block(eb)) = (simple(&i.then_branch), &**els) {
            if simple(&eb.block) {
                let before = self.out.len();
                let c = self.expr(&i.cond, Some(Scalar::Bool))?;
                let (Stmt::Expr(x, None), Stmt::Expr(y, None)) = (&i.then_branch.stmts[0], &eb.block.stmts[0]) else {
                    unreachable!("checked by `simple`")
                };
                let (mut a, mut b) = (self.expr(x, want)?, self.expr(y, want)?);
                let ty = unify(&a.ty, &b.ty).ok_or_else(|| {
                    syn::Error::new(
                        i.span(),
                        format!("`if` and `else` have incompatible types: `{}` and `{}`", a.ty, b.ty),
                    )
                })?;
                if let Some(s) = ty.scalar().filter(|_| !ty.is_literal()) {
                    if a.ty.is_literal() {
                        a = self.expr(x, Some(s))?;
                    }
                    if b.ty.is_literal() {
                        b = self.expr(y, Some(s))?;
                    }
                }
                if self.out.len() == before {
                    if c.ty != Ty::Scalar(Scalar::Bool) && c.ty != Ty::Opaque {
                        return err(&i.cond, format!("mismatched types: a condition is a `bool`, found `{}`", c.ty));
                    }
                    return Ok(Val::new(format!("({} ? {} : {})", c.code, a.code, b.code), ty));
                }
                self.out.truncate(before);
            }
        }
        self.hoisted(want, |this, t| {
            let mut tails: Vec<(Option<Ty>, &dyn Spanned)> = Vec::new();
            let c = this.condition(&i.cond)?;
            let text = format!("if ({c}) {{");
            this.push(&text);
            tails.push((this.braced(&i.then_branch, Some(t))?, &i.then_branch));
            let mut els = &i.else_branch;
            while let Some((_, e)) = els {
                match &**e {
                    Expr::If(inner) => {
                        let Some(_) = &inner.else_branch else {
                            return err(inner, "an `if` used as a value needs an `else`");
                        };
                        let c = this.condition(&inner.cond)?;
                        let text = format!("}} else if ({c}) {{");
                        this.push(&text);
                        tails.push((this.braced(&inner.then_branch, Some(t))?, &inner.then_branch));
                        els = &inner.else_branch;
                    }
                    Expr::Block(b) => {
                        this.push("} else {");
                        tails.push((this.braced(&b.block, Some(t))?, &b.block));
                        els = &None;
                    }
                    other => return err(other, "expected a block after `else`"),
                }
            }
            this.push("}");
            Ok(tails)
        })
    }

    /// `match` on an integer or `bool`: literal, `|` and range patterns, `_` last, no guards;
    /// an `if`/`else if` chain over a temporary holding the value. With `target`, each arm's
    /// value is assigned to it.
    fn match_arms<'m>(
        &mut self,
        m: &'m syn::ExprMatch,
        target: Option<(&str, Option<Scalar>)>,
    ) -> Result<Vec<(Option<Ty>, &'m dyn Spanned)>> {
        let v = self.expr(&m.expr, None)?;
        let s = match v.ty.scalar() {
            Some(s) if s.is_int() || s == Scalar::Bool => s,
            _ => return err(&m.expr, format!("`match` is supported on integers and `bool`, found `{}`", v.ty)),
        };
        let s = if v.ty.is_literal() { Scalar::I32 } else { s };
        let tmp = self.tmp();
        let text = format!("{} {tmp} = {};", s.cpp(), v.code);
        self.push(&text);
        let mut tails: Vec<(Option<Ty>, &dyn Spanned)> = Vec::new();
        let n = m.arms.len();
        for (k, arm) in m.arms.iter().enumerate() {
            if let Some((_, g)) = &arm.guard {
                return err(g, "`match` guards are not supported: use `if` inside the arm");
            }
            let last = k + 1 == n;
            let cond = self.pattern(&arm.pat, &tmp, s)?;
            let head = match (k, cond, last) {
                (_, None, false) => return err(&arm.pat, "`_` must be the last arm"),
                (0, None, true) => "{".to_string(),
                (_, None, true) => "} else {".to_string(),
                (0, Some(c), _) => format!("if ({c}) {{"),
                (_, Some(c), _) => format!("}} else if ({c}) {{"),
            };
            if last && !matches!(arm.pat, syn::Pat::Wild(_)) && s != Scalar::Bool {
                return err(&arm.pat, "the last arm of a `match` in a kernel is `_ => ...`");
            }
            self.push(&head);
            let tail = match &*arm.body {
                Expr::Block(b) if b.label.is_none() => self.braced(&b.block, target)?,
                body => {
                    self.indent += 1;
                    self.scopes.push(Vec::new());
                    let stmt = Stmt::Expr(body.clone(), None);
                    let r = self.stmts(std::slice::from_ref(&stmt), target);
                    self.scopes.pop();
                    self.indent -= 1;
                    r?
                }
            };
            tails.push((tail, &*arm.body));
        }
        if n > 0 {
            self.push("}");
        }
        Ok(tails)
    }

    /// The condition a `match` pattern tests on `tmp` (`None`: `_`).
    fn pattern(&mut self, p: &syn::Pat, tmp: &str, s: Scalar) -> Result<Option<String>> {
        let lit = |this: &mut Self, e: &Expr| -> Result<String> {
            let v = this.expr(e, Some(s))?;
            if unify(&v.ty, &Ty::Scalar(s)).is_none() {
                return err(e, format!("mismatched types: expected `{}`, found `{}`", s.rust(), v.ty));
            }
            Ok(v.code)
        };
        Ok(Some(match p {
            syn::Pat::Wild(_) => return Ok(None),
            syn::Pat::Lit(l) => format!("({tmp} == {})", lit(self, &Expr::Lit(l.clone()))?),
            syn::Pat::Or(o) => {
                let mut parts = Vec::new();
                for c in &o.cases {
                    match self.pattern(c, tmp, s)? {
                        Some(x) => parts.push(x),
                        None => return Ok(None),
                    }
                }
                format!("({})", parts.join(" || "))
            }
            syn::Pat::Range(r) => {
                let mut parts = Vec::new();
                if let Some(a) = &r.start {
                    parts.push(format!("{tmp} >= {}", lit(self, a)?));
                }
                if let Some(b) = &r.end {
                    let op = if matches!(r.limits, syn::RangeLimits::Closed(_)) { "<=" } else { "<" };
                    parts.push(format!("{tmp} {op} {}", lit(self, b)?));
                }
                format!("({})", parts.join(" && "))
            }
            syn::Pat::Paren(p) => return self.pattern(&p.pat, tmp, s),
            other => {
                return err(other, "a `match` pattern in a kernel is a literal, `a | b`, a range `a..=b` or `_`");
            }
        }))
    }

    fn path(&mut self, p: &syn::ExprPath) -> Result<Val> {
        if let Some(id) = p.path.get_ident() {
            let name = id.to_string();
            return match self.lookup(&name) {
                Some(v) => {
                    Ok(Val { code: v.cpp.clone(), ty: v.ty.clone(), var: Some(v.id).filter(|_| v.ty.is_literal()) })
                }
                None => {
                    err(id, format!("cannot find `{name}` in this kernel: kernels see their parameters and locals"))
                }
            };
        }
        // `f32::MAX`, `u32::MAX`, `core::f32::consts::PI`.
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let n = segs.len();
        if n >= 2 {
            let (ty, name) = (segs[n - 2].as_str(), segs[n - 1].as_str());
            let consts = n >= 3 && segs[n - 2] == "consts";
            let ty = if consts { segs[n - 3].as_str() } else { ty };
            if let Some(s) = Scalar::from_name(ty) {
                if let Some(code) = constant(s, name) {
                    return Ok(Val::new(code, Ty::Scalar(s)));
                }
            }
        }
        err(p, "this path is not supported in a kernel: use a parameter, a local, or a constant like `f32::MAX`")
    }

    fn binary(&mut self, b: &syn::ExprBinary, want: Option<Scalar>) -> Result<Val> {
        use BinOp::*;
        let op = b.op;
        if let Some(arith) = compound(&op) {
            return self.assign(&b.left, Some(arith), &b.right);
        }
        match op {
            And(_) | Or(_) => {
                let (l, r) = (self.expr(&b.left, Some(Scalar::Bool))?, self.expr(&b.right, Some(Scalar::Bool))?);
                for (v, e) in [(&l, &b.left), (&r, &b.right)] {
                    if v.ty != Ty::Scalar(Scalar::Bool) && v.ty != Ty::Opaque {
                        return err(e, format!("mismatched types: `&&` and `||` take `bool`, found `{}`", v.ty));
                    }
                }
                let o = if matches!(op, And(_)) { "&&" } else { "||" };
                Ok(Val::new(format!("({} {o} {})", l.code, r.code), Ty::Scalar(Scalar::Bool)))
            }
            Shl(_) | Shr(_) => {
                let l = self.expr(&b.left, want)?;
                let r = self.expr(&b.right, None)?;
                let (Some(ls), Some(rs)) = (l.ty.scalar(), r.ty.scalar()) else {
                    return self.opaque_binary(&l, &r, op);
                };
                if !ls.is_int() || !rs.is_int() {
                    return err(b, format!("shifts take integers, found `{}` and `{}`", l.ty, r.ty));
                }
                if l.ty.is_literal() {
                    return Ok(Val::new(format!("({} {} {})", l.code, binop(&op), r.code), l.ty));
                }
                let mask = ls.bits() - 1;
                let code = if matches!(op, Shl(_)) && ls.is_signed_int() {
                    format!("(({})(({})({}) << (({}) & {mask})))", ls.cpp(), ls.unsigned_cpp(), l.code, r.code)
                } else {
                    narrow(ls, format!("({} {} (({}) & {mask}))", l.code, binop(&op), r.code))
                };
                Ok(Val::new(code, l.ty))
            }
            _ => {
                let (l, r) = self.operands(&b.left, &b.right, want, b)?;
                let ty = unify(&l.ty, &r.ty).ok_or_else(|| {
                    syn::Error::new(
                        b.span(),
                        format!("mismatched types: `{}` {} `{}` (convert one side with `as`)", l.ty, binop(&op), r.ty),
                    )
                })?;
                if ty == Ty::Opaque {
                    return self.opaque_binary(&l, &r, op);
                }
                let Some(s) = ty.scalar() else {
                    return err(b, format!("`{}` cannot be used with `{}`", ty, binop(&op)));
                };
                match op {
                    Eq(_) | Ne(_) | Lt(_) | Le(_) | Gt(_) | Ge(_) => {
                        Ok(Val::new(format!("({} {} {})", l.code, binop(&op), r.code), Ty::Scalar(Scalar::Bool)))
                    }
                    BitAnd(_) | BitOr(_) | BitXor(_) => {
                        if s.is_float() {
                            return err(b, format!("bitwise operators take integers or `bool`, found `{ty}`"));
                        }
                        Ok(Val::new(narrow(s, format!("({} {} {})", l.code, binop(&op), r.code)), ty))
                    }
                    Add(_) | Sub(_) | Mul(_) | Div(_) | Rem(_) => {
                        if s == Scalar::Bool {
                            return err(b, format!("`bool` cannot be used with `{}`", binop(&op)));
                        }
                        if s.is_float() && matches!(op, Rem(_)) {
                            let f = if s == Scalar::F32 { "fmodf" } else { "fmod" };
                            return Ok(Val::new(format!("{f}({}, {})", l.code, r.code), ty));
                        }
                        Ok(Val::new(arith(s, &ty, &op, &l.code, &r.code), ty))
                    }
                    _ => err(b, format!("the operator `{}` is not supported", binop(&op))),
                }
            }
        }
    }

    fn opaque_binary(&mut self, l: &Val, r: &Val, op: BinOp) -> Result<Val> {
        Ok(Val::new(format!("({} {} {})", l.code, binop(&op), r.code), Ty::Opaque))
    }

    /// Both operands, a literal re-read with the other side's type.
    fn operands(&mut self, le: &Expr, re: &Expr, want: Option<Scalar>, _at: &dyn Spanned) -> Result<(Val, Val)> {
        let mut l = self.expr(le, want)?;
        let mut r = self.expr(re, want)?;
        if l.ty.is_literal() && !r.ty.is_literal() {
            if let Some(s) = r.ty.scalar() {
                self.learn(&l, &r.ty);
                if l.var.is_none() {
                    l = self.expr(le, Some(s))?;
                }
            }
        } else if r.ty.is_literal() && !l.ty.is_literal() {
            if let Some(s) = l.ty.scalar() {
                self.learn(&r, &l.ty);
                if r.var.is_none() {
                    r = self.expr(re, Some(s))?;
                }
            }
        }
        Ok((l, r))
    }

    fn unary(&mut self, u: &syn::ExprUnary, want: Option<Scalar>) -> Result<Val> {
        match u.op {
            UnOp::Neg(_) => {
                let v = self.expr(&u.expr, want)?;
                match v.ty.scalar() {
                    Some(s) if s.is_float() || v.ty.is_literal() => Ok(Val::new(format!("(-{})", v.code), v.ty)),
                    Some(s) if s.is_signed_int() => Ok(Val::new(
                        format!("(({})(({})0 - ({})({})))", s.cpp(), s.unsigned_cpp(), s.unsigned_cpp(), v.code),
                        v.ty,
                    )),
                    None if v.ty == Ty::Opaque => Ok(Val::new(format!("(-{})", v.code), v.ty)),
                    _ => err(u, format!("cannot negate `{}`", v.ty)),
                }
            }
            UnOp::Not(_) => {
                let v = self.expr(&u.expr, want)?;
                match v.ty.scalar() {
                    Some(Scalar::Bool) => Ok(Val::new(format!("(!{})", v.code), v.ty)),
                    Some(s) if s.is_int() => Ok(Val::new(narrow(s, format!("(~{})", v.code)), v.ty)),
                    None if v.ty == Ty::Opaque => Ok(Val::new(format!("(!{})", v.code), v.ty)),
                    _ => err(u, format!("cannot apply `!` to `{}`", v.ty)),
                }
            }
            UnOp::Deref(_) => {
                err(u, "dereferencing is not supported: kernels have no references besides slice parameters")
            }
            _ => err(u, "this operator is not supported"),
        }
    }

    /// `(a, b) = (x, y);`: the values first, then the assignments (so `(a, b) = (b, a)` swaps).
    fn tuple_assign(&mut self, left: &syn::ExprTuple, right: &Expr) -> Result<Val> {
        let Expr::Tuple(values) = right else {
            return err(right, "a tuple is assigned a tuple of values: `(a, b) = (x, y);`");
        };
        if values.elems.len() != left.elems.len() {
            return err(left, "the two tuples have different lengths");
        }
        let mut temps = Vec::new();
        for (target, e) in left.elems.iter().zip(&values.elems) {
            let place = self.place(target)?;
            let v = self.expr(e, place.ty.scalar())?;
            if unify(&place.ty, &v.ty).is_none() {
                return err(e, format!("mismatched types: expected `{}`, found `{}`", place.ty, v.ty));
            }
            let t = self.tmp();
            let text = format!("{} {t} = {};", place.ty.cpp(), v.code);
            self.push(&text);
            temps.push((place.code, t));
        }
        let code: Vec<String> = temps.iter().map(|(p, t)| format!("{p} = {t}")).collect();
        Ok(Val::new(code.join(", "), Ty::Unit))
    }

    fn assign(&mut self, left: &Expr, op: Option<BinOp>, right: &Expr) -> Result<Val> {
        if let (Expr::Tuple(t), None) = (left, op) {
            return self.tuple_assign(t, right);
        }
        let target = self.place(left)?;
        let want = target.ty.scalar();
        let mut r = self.expr(right, want)?;
        if r.ty.is_literal() {
            if let Some(s) = want.filter(|_| !target.ty.is_literal()) {
                r = self.expr(right, Some(s))?;
            }
        }
        self.learn(&target, &r.ty);
        let ty = unify(&target.ty, &r.ty).ok_or_else(|| {
            syn::Error::new(right.span(), format!("mismatched types: expected `{}`, found `{}`", target.ty, r.ty))
        })?;
        let code = match (op, ty.scalar()) {
            (None, _) => format!("{} = {}", target.code, r.code),
            (Some(op), Some(s)) => {
                let o = binop(&op);
                let plain = s.is_float() && !matches!(op, BinOp::Rem(_))
                    || matches!(s, Scalar::U32 | Scalar::U64 | Scalar::Usize)
                        && !matches!(op, BinOp::Shl(_) | BinOp::Shr(_))
                    || ty.is_literal();
                if plain {
                    format!("{} {o}= {}", target.code, r.code)
                } else if s == Scalar::Bool && matches!(op, BinOp::BitAnd(_) | BinOp::BitOr(_) | BinOp::BitXor(_)) {
                    format!("{0} = (bool)({0} {o} {1})", target.code, r.code)
                } else if matches!(op, BinOp::Shl(_) | BinOp::Shr(_)) {
                    let mask = s.bits() - 1;
                    if matches!(op, BinOp::Shl(_)) && s.is_signed_int() {
                        format!(
                            "{0} = ({1})(({2})({0}) << (({3}) & {mask}))",
                            target.code,
                            s.cpp(),
                            s.unsigned_cpp(),
                            r.code
                        )
                    } else {
                        format!(
                            "{0} = {1}",
                            target.code,
                            narrow(s, format!("({} {o} (({}) & {mask}))", target.code, r.code))
                        )
                    }
                } else if s.is_float() {
                    let f = if s == Scalar::F32 { "fmodf" } else { "fmod" };
                    format!("{0} = {f}({0}, {1})", target.code, r.code)
                } else {
                    format!("{} = {}", target.code, arith(s, &ty, &op, &target.code, &r.code))
                }
            }
            (Some(op), None) => format!("{} {}= {}", target.code, binop(&op), r.code),
        };
        Ok(Val::new(code, Ty::Unit))
    }

    /// An assignable place: a `let mut` local or an element of a `&mut [T]` or shared array.
    fn place(&mut self, e: &Expr) -> Result<Val> {
        match e {
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let v = self.path(p)?;
                let name = p.path.get_ident().map(ToString::to_string).unwrap_or_default();
                match self.lookup(&name) {
                    Some(var) if var.mutable => Ok(v),
                    Some(var) if var.id == usize::MAX => err(
                        p,
                        format!("cannot assign to the parameter `{name}`: bind a `let mut {name} = {name};` copy"),
                    ),
                    _ => err(
                        p,
                        format!("cannot assign twice to immutable variable `{name}`: declare it `let mut {name}`"),
                    ),
                }
            }
            Expr::Index(i) => {
                let base = self.index_base(&i.expr)?;
                if let Ty::Slice { elem, mutable: false } = base.ty {
                    let name = expr_text(&i.expr);
                    return err(
                        &i.expr,
                        format!(
                            "cannot assign to `{name}[..]`: `{name}` is a `&[{0}]`, which is read-only; declare the parameter `&mut [{0}]` to write it",
                            elem.rust()
                        ),
                    );
                }
                self.index(i)
            }
            Expr::Paren(p) => self.place(&p.expr),
            Expr::Field(f) => err(f, "fields of `thread_idx()` and friends are read-only"),
            other => err(
                other,
                "this cannot be assigned to: assign to a `let mut` local or an element `y[i]` of a `&mut [T]`",
            ),
        }
    }

    fn index_base(&mut self, e: &Expr) -> Result<Val> {
        let base = self.expr(e, None)?;
        match base.ty {
            Ty::Slice { .. } | Ty::Shared { .. } => Ok(base),
            Ty::Opaque => err(e, "a C++ value cannot be indexed in Rust syntax: index it in C++"),
            ref t => {
                err(e, format!("cannot index `{t}`: only slices (`&[T]`, `&mut [T]`) and shared arrays are indexed"))
            }
        }
    }

    fn index(&mut self, i: &syn::ExprIndex) -> Result<Val> {
        let base = self.index_base(&i.expr)?;
        if let Expr::Range(r) = &*i.index {
            return err(r, "sub-slices are not supported: index single elements, `x[i]`");
        }
        let idx = self.expr(&i.index, Some(Scalar::Usize))?;
        self.learn(&idx, &Ty::Scalar(Scalar::Usize));
        if unify(&idx.ty, &Ty::Scalar(Scalar::Usize)) != Some(Ty::Scalar(Scalar::Usize)) && idx.ty != Ty::Opaque {
            return err(&i.index, format!("a slice is indexed by `usize`, found `{}`: write `(...) as usize`", idx.ty));
        }
        let (elem, len) = match &base.ty {
            Ty::Slice { elem, .. } => (*elem, format!("{}__len", base.code)),
            Ty::Shared { elem, len } => (*elem, format!("{len}ull")),
            _ => unreachable!("index_base returns slices and shared arrays"),
        };
        if !self.settings.bounds_checks {
            return Ok(Val::new(format!("{}[{}]", base.code, idx.code), Ty::Scalar(elem)));
        }
        self.indexed = true;
        let line = i.bracket_token.span.open().start().line;
        Ok(Val::new(
            format!("__ce_at({}, {len}, {}, __ce_bad, {line}u, {})", base.code, idx.code, self.settings.slot),
            Ty::Scalar(elem),
        ))
    }

    fn method(&mut self, m: &syn::ExprMethodCall, want: Option<Scalar>) -> Result<Val> {
        let name = m.method.to_string();
        if m.turbofish.is_some() {
            return err(&m.method, "method calls with generic arguments are not supported");
        }
        let recv = self.expr(&m.receiver, want.filter(|s| s.is_float() || s.is_int()))?;
        match (&recv.ty, name.as_str(), m.args.len()) {
            (Ty::Slice { .. }, "len", 0) => {
                return Ok(Val::new(format!("{}__len", recv.code), Ty::Scalar(Scalar::Usize)));
            }
            (Ty::Shared { len, .. }, "len", 0) => {
                return Ok(Val::new(format!("((size_t){len}ull)"), Ty::Scalar(Scalar::Usize)))
            }
            (Ty::Opaque, ..) => {
                let args = self.args(&m.args, None)?;
                return Ok(Val::new(format!("{}.{name}({})", recv.code, args.join(", ")), Ty::Opaque));
            }
            _ => {}
        }
        let Some(s) = recv.ty.scalar() else {
            return err(&m.method, format!("no method `{name}` on `{}`; slices have `.len()`", recv.ty));
        };
        // A float literal receiver (`2.0.sqrt()`): the context's float type, else f64.
        let s = if recv.ty == Ty::FloatLit { want.filter(|w| w.is_float()).unwrap_or(Scalar::F64) } else { s };
        let recv = if recv.ty.is_literal() { self.expr(&m.receiver, Some(s))? } else { recv };
        if s.is_half() {
            return self.half_method(m, s, recv);
        }
        let ty = Ty::Scalar(s);
        if s.is_float() {
            let f32s = s == Scalar::F32;
            let fname = |base: &str| if f32s { format!("{base}f") } else { base.to_string() };
            let unary = match name.as_str() {
                "sqrt" | "exp" | "exp2" | "log2" | "log10" | "sin" | "cos" | "tan" | "asin" | "acos" | "atan"
                | "sinh" | "cosh" | "tanh" | "asinh" | "acosh" | "atanh" | "floor" | "ceil" | "round" | "trunc"
                | "cbrt" => Some(fname(&name)),
                "ln" => Some(fname("log")),
                "ln_1p" => Some(fname("log1p")),
                "exp_m1" => Some(fname("expm1")),
                "abs" => Some(fname("fabs")),
                _ => None,
            };
            if let Some(f) = unary {
                self.arity(m, 0)?;
                return Ok(Val::new(format!("{f}({})", recv.code), ty));
            }
            let binary = match name.as_str() {
                "powf" => Some(fname("pow")),
                "max" => Some(fname("fmax")),
                "min" => Some(fname("fmin")),
                "atan2" => Some(fname("atan2")),
                "hypot" => Some(fname("hypot")),
                "copysign" => Some(fname("copysign")),
                _ => None,
            };
            if let Some(f) = binary {
                self.arity(m, 1)?;
                let a = self.typed_arg(&m.args[0], s)?;
                return Ok(Val::new(format!("{f}({}, {a})", recv.code), ty));
            }
            match name.as_str() {
                "mul_add" => {
                    self.arity(m, 2)?;
                    let (a, b) = (self.typed_arg(&m.args[0], s)?, self.typed_arg(&m.args[1], s)?);
                    return Ok(Val::new(format!("{}({}, {a}, {b})", fname("fma"), recv.code), ty));
                }
                "powi" => {
                    self.arity(m, 1)?;
                    let a = self.typed_arg(&m.args[0], Scalar::I32)?;
                    return Ok(Val::new(format!("{}({}, ({})({a}))", fname("pow"), recv.code, s.cpp()), ty));
                }
                "recip" => {
                    self.arity(m, 0)?;
                    let one = if f32s { "1.0f" } else { "1.0" };
                    return Ok(Val::new(format!("({one} / {})", recv.code), ty));
                }
                "is_nan" | "is_finite" | "is_infinite" => {
                    self.arity(m, 0)?;
                    let f = match name.as_str() {
                        "is_nan" => "isnan",
                        "is_finite" => "isfinite",
                        _ => "isinf",
                    };
                    return Ok(Val::new(format!("((bool){f}({}))", recv.code), Ty::Scalar(Scalar::Bool)));
                }
                "clamp" => {
                    self.arity(m, 2)?;
                    let (a, b) = (self.typed_arg(&m.args[0], s)?, self.typed_arg(&m.args[1], s)?);
                    return Ok(Val::new(format!("{}({}({}, {a}), {b})", fname("fmin"), fname("fmax"), recv.code), ty));
                }
                _ => {}
            }
            return err(
                &m.method,
                format!(
                    "the method `{name}` is not supported on `{}`; supported: sqrt, exp, exp2, ln, ln_1p, exp_m1, log2, log10, \
                     powf, powi, mul_add, max, min, clamp, abs, recip, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, \
                     asinh, acosh, atanh, floor, ceil, round, trunc, cbrt, hypot, copysign, is_nan, is_finite, is_infinite",
                    s.rust()
                ),
            );
        }
        if s.is_int() {
            let u = s.unsigned_cpp();
            match (name.as_str(), m.args.len()) {
                ("min" | "max", 1) => {
                    let a = self.typed_arg(&m.args[0], s)?;
                    let t = s.cpp();
                    return Ok(Val::new(format!("__ce_{name}<{t}>({}, {a})", recv.code), ty));
                }
                ("wrapping_add" | "wrapping_sub" | "wrapping_mul", 1) => {
                    let a = self.typed_arg(&m.args[0], s)?;
                    let op = match name.as_str() {
                        "wrapping_add" => "+",
                        "wrapping_sub" => "-",
                        _ => "*",
                    };
                    return Ok(Val::new(format!("(({})(({u})({}) {op} ({u})({a})))", s.cpp(), recv.code), ty));
                }
                ("abs", 0) if s.is_signed_int() => {
                    return Ok(Val::new(
                        format!("(({0})(({1} < 0) ? ({2})0 - ({2})({1}) : ({2})({1})))", s.cpp(), recv.code, u),
                        ty,
                    ));
                }
                ("count_ones", 0) => {
                    let f = if s.bits() == 64 { "__popcll" } else { "__popc" };
                    return Ok(Val::new(format!("((unsigned int){f}(({u})({})))", recv.code), Ty::Scalar(Scalar::U32)));
                }
                ("leading_zeros", 0) => {
                    let code = match s.bits() {
                        64 => format!("((unsigned int)__clzll((long long)({})))", recv.code),
                        b => format!("((unsigned int)__clz((int)(unsigned int)({u})({})) - {})", recv.code, 32 - b),
                    };
                    return Ok(Val::new(code, Ty::Scalar(Scalar::U32)));
                }
                _ => {}
            }
            return err(
                &m.method,
                format!(
                    "the method `{name}` is not supported on `{}`; supported: min, max, abs, wrapping_add, wrapping_sub, wrapping_mul, count_ones, leading_zeros",
                    s.rust()
                ),
            );
        }
        err(&m.method, format!("no method `{name}` on `{}`", recv.ty))
    }

    /// A float method of `f16`/`bf16`: computed in `f32` (the receiver and the arguments
    /// converted), the result converted back (`is_nan` and friends stay `bool`).
    fn half_method(&mut self, m: &syn::ExprMethodCall, s: Scalar, recv: Val) -> Result<Val> {
        let (to_f, from_f) = s.half_conversions();
        // The call on `f32` stand-ins for the receiver and each argument, translated as an `f32`
        // method, then the stand-ins replaced by the converted operands.
        let mut call = m.clone();
        let mut operands = vec![format!("{to_f}({})", recv.code)];
        for a in m.args.iter() {
            let code = self.typed_arg(a, s)?;
            operands.push(format!("{to_f}({code})"));
        }
        self.scopes.push(Vec::new());
        let mut names = Vec::new();
        for k in 0..operands.len() {
            let name = format!("__ce_half{k}");
            let var = self.declare(&name, Ty::Scalar(Scalar::F32), false);
            names.push(var.cpp);
            let id = syn::Ident::new(&name, m.method.span());
            let e: Expr = syn::parse_quote!(#id);
            if k == 0 {
                *call.receiver = e;
            } else if let Some(slot) = call.args.iter_mut().nth(k - 1) {
                *slot = e;
            }
        }
        let r = self.method(&call, Some(Scalar::F32));
        self.scopes.pop();
        let v = r?;
        let mut code = v.code;
        for (name, operand) in names.iter().zip(&operands) {
            code = replace_word(&code, name, operand);
        }
        Ok(match v.ty {
            Ty::Scalar(Scalar::F32) => Val::new(format!("{from_f}({code})"), Ty::Scalar(s)),
            t => Val::new(code, t),
        })
    }

    fn arity(&self, m: &syn::ExprMethodCall, n: usize) -> Result<()> {
        if m.args.len() != n {
            return err(&m.method, format!("`{}` takes {n} argument(s), found {}", m.method, m.args.len()));
        }
        Ok(())
    }

    /// An argument of type `s` (a literal takes it).
    fn typed_arg(&mut self, e: &Expr, s: Scalar) -> Result<String> {
        let v = self.expr(e, Some(s))?;
        self.learn(&v, &Ty::Scalar(s));
        if unify(&v.ty, &Ty::Scalar(s)).is_none() {
            return err(e, format!("mismatched types: expected `{}`, found `{}`", s.rust(), v.ty));
        }
        Ok(v.code)
    }

    fn args(
        &mut self,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
        want: Option<Scalar>,
    ) -> Result<Vec<String>> {
        args.iter().map(|a| self.expr(a, want).map(|v| v.code)).collect()
    }

    fn call(&mut self, c: &syn::ExprCall, want: Option<Scalar>) -> Result<Val> {
        let Expr::Path(p) = &*c.func else {
            return err(&c.func, "only named functions can be called in a kernel");
        };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let last = segs.last().cloned().unwrap_or_default();
        let prefix_ok = match segs.len() {
            1 => true,
            2 => segs[0] == "device",
            3 => segs[0] == "cuda_embed" && segs[1] == "device",
            _ => false,
        };
        if segs.len() == 1 {
            if let Some(sig) = self.settings.device_fns.iter().find(|d| d.name == last).cloned() {
                return self.device_call(c, &sig);
            }
        }
        let device = prefix_ok && is_device_fn(&last);
        if !device {
            if p.path.segments.len() == 1 && self.settings.cpp_functions && self.lookup(&last).is_none() {
                let args = self.args(&c.args, None)?;
                return Ok(Val::new(format!("{last}({})", args.join(", ")), Ty::Opaque));
            }
            if last == "shared" {
                return err(
                    c,
                    "`shared::<T, N>()` declares a shared array: use it as `let tile = shared::<f32, 256>();`",
                );
            }
            let extra = if self.settings.cpp_functions {
                String::new()
            } else {
                "; to call a CUDA C++ `__device__` function, give its source with `cpp = \"...\"` or its header with `include = \"...\"`".into()
            };
            return err(
                &c.func,
                format!("the function `{}` is not supported in a kernel: {DEVICE_HELP}{extra}", expr_text(&c.func)),
            );
        }
        let n = c.args.len();
        let want_args = |k: usize| -> Result<()> {
            if n != k {
                return err(c, format!("`{last}` takes {k} argument(s), found {n}"));
            }
            Ok(())
        };
        let dim = |v: &str| Ok(Val::new(v, Ty::Dim3));
        match last.as_str() {
            "thread_idx" => want_args(0).and_then(|_| dim("threadIdx")),
            "block_idx" => want_args(0).and_then(|_| dim("blockIdx")),
            "block_dim" => want_args(0).and_then(|_| dim("blockDim")),
            "grid_dim" => want_args(0).and_then(|_| dim("gridDim")),
            "sync_threads" => want_args(0).map(|_| Val::new("__syncthreads()", Ty::Unit)),
            "sync_warp" => want_args(0).map(|_| Val::new("__syncwarp()", Ty::Unit)),
            "thread_fence" => want_args(0).map(|_| Val::new("__threadfence()", Ty::Unit)),
            "shfl_sync" | "shfl_up_sync" | "shfl_down_sync" | "shfl_xor_sync" => {
                want_args(3)?;
                let mask = self.typed_arg(&c.args[0], Scalar::U32)?;
                let v = self.expr(&c.args[1], want)?;
                let Some(s) = v.ty.scalar().filter(|s| *s != Scalar::Bool) else {
                    return err(&c.args[1], format!("warp shuffles move numbers, found `{}`", v.ty));
                };
                let v = if v.ty.is_literal() { self.expr(&c.args[1], Some(s))? } else { v };
                let lane_ty = if last == "shfl_sync" { Scalar::I32 } else { Scalar::U32 };
                let lane = self.typed_arg(&c.args[2], lane_ty)?;
                Ok(Val::new(format!("__{last}({mask}, {}, {lane})", v.code), v.ty))
            }
            "ballot_sync" | "all_sync" | "any_sync" => {
                want_args(2)?;
                let mask = self.typed_arg(&c.args[0], Scalar::U32)?;
                let pred = self.typed_arg(&c.args[1], Scalar::Bool)?;
                if last == "ballot_sync" {
                    Ok(Val::new(format!("__ballot_sync({mask}, {pred})"), Ty::Scalar(Scalar::U32)))
                } else {
                    Ok(Val::new(format!("(__{last}({mask}, {pred}) != 0)"), Ty::Scalar(Scalar::Bool)))
                }
            }
            a if a.starts_with("atomic_") => self.atomic(c, a),
            _ => err(c, format!("`{last}` is not supported here; {DEVICE_HELP}")),
        }
    }

    /// A call to a `#[device]` function of the same module (slices pass pointer and length; with
    /// bounds checks, the failure flag and the caller's slot too).
    fn device_call(&mut self, c: &syn::ExprCall, sig: &DeviceSig) -> Result<Val> {
        if c.args.len() != sig.params.len() {
            return err(c, format!("`{}` takes {} argument(s), found {}", sig.name, sig.params.len(), c.args.len()));
        }
        let mut args = Vec::new();
        for (a, p) in c.args.iter().zip(&sig.params) {
            match p {
                Ty::Slice { elem, mutable } => {
                    let v = self.expr(a, None)?;
                    match &v.ty {
                        Ty::Slice { elem: e, mutable: m } if e == elem && (*m || !mutable) => {
                            args.push(format!("{0}, {0}__len", v.code));
                        }
                        t => return err(a, format!("mismatched types: expected `{p}`, found `{t}`")),
                    }
                }
                _ => {
                    let s = p.scalar().unwrap_or(Scalar::I32);
                    args.push(self.typed_arg(a, s)?);
                }
            }
        }
        if self.settings.bounds_checks {
            args.push("__ce_bad".into());
            args.push(self.settings.slot.clone());
            self.indexed = true;
        }
        Ok(Val::new(format!("{}({})", sig.name, args.join(", ")), sig.ret.clone()))
    }

    fn atomic(&mut self, c: &syn::ExprCall, name: &str) -> Result<Val> {
        let k = if name == "atomic_cas" { 3 } else { 2 };
        if c.args.len() != k {
            return err(c, format!("`{name}` takes {k} arguments: `{name}(&mut x[i], ...)`"));
        }
        let Expr::Reference(r) = &c.args[0] else {
            return err(&c.args[0], format!("the first argument of `{name}` is an element: `&mut x[i]`"));
        };
        if r.mutability.is_none() {
            return err(r, format!("the first argument of `{name}` is written: `&mut x[i]`"));
        }
        let place = self.place(&r.expr)?;
        let Some(s) = place.ty.scalar() else {
            return err(&r.expr, "atomics work on elements of slices and shared arrays");
        };
        let f = match name {
            "atomic_add" => "atomicAdd",
            "atomic_sub" => "atomicSub",
            "atomic_min" => "atomicMin",
            "atomic_max" => "atomicMax",
            "atomic_exch" => "atomicExch",
            "atomic_and" => "atomicAnd",
            "atomic_or" => "atomicOr",
            "atomic_xor" => "atomicXor",
            "atomic_cas" => "atomicCAS",
            _ => return err(c, format!("unknown atomic `{name}`; {DEVICE_HELP}")),
        };
        let mut args = vec![format!("&({})", place.code)];
        for a in c.args.iter().skip(1) {
            args.push(self.typed_arg(a, s)?);
        }
        Ok(Val::new(format!("{f}({})", args.join(", ")), Ty::Scalar(s)))
    }

    fn macro_call(&mut self, m: &syn::Macro) -> Result<Val> {
        let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        if name != "printf" {
            return err(
                &m.path,
                format!("the macro `{name}!` is not supported in a kernel: only `printf!(\"format\", args...)`"),
            );
        }
        let args = m.parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)?;
        let mut it = args.iter();
        let Some(Expr::Lit(syn::ExprLit { lit: Lit::Str(fmt), .. })) = it.next() else {
            return err(m, "`printf!` takes a format string literal first: `printf!(\"i = %d\\n\", i)`");
        };
        let mut parts = vec![cpp_string(&fmt.value())];
        for a in it {
            let v = self.expr(a, None)?;
            parts.push(match v.ty {
                Ty::Scalar(_) | Ty::IntLit | Ty::FloatLit | Ty::Opaque => v.code,
                t => return err(a, format!("`printf!` prints numbers, found `{t}`")),
            });
        }
        Ok(Val::new(format!("printf({})", parts.join(", ")), Ty::Unit))
    }
}

/// Whether `name` is a function of `cuda_embed::device`.
pub fn is_device_fn(name: &str) -> bool {
    matches!(
        name,
        "thread_idx"
            | "block_idx"
            | "block_dim"
            | "grid_dim"
            | "sync_threads"
            | "sync_warp"
            | "thread_fence"
            | "shfl_sync"
            | "shfl_up_sync"
            | "shfl_down_sync"
            | "shfl_xor_sync"
            | "ballot_sync"
            | "all_sync"
            | "any_sync"
            | "shared"
    ) || name.starts_with("atomic_")
}

/// `shared::<T, N>()`: its element type and length.
fn shared_decl(e: &Expr) -> Result<Option<(Scalar, u64)>> {
    let Expr::Call(c) = e else { return Ok(None) };
    let Expr::Path(p) = &*c.func else { return Ok(None) };
    let Some(last) = p.path.segments.last() else { return Ok(None) };
    if last.ident != "shared" {
        return Ok(None);
    }
    let usage =
        "a shared array is `shared::<T, N>()`, T a scalar type and N a literal length, e.g. `shared::<f32, 256>()`";
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return err(last, usage);
    };
    let args: Vec<_> = a.args.iter().collect();
    let (Some(syn::GenericArgument::Type(t)), Some(n), 2, true) =
        (args.first(), args.get(1), args.len(), c.args.is_empty())
    else {
        return err(a, usage);
    };
    let elem = scalar_type(t).ok_or_else(|| syn::Error::new_spanned(t, usage))?;
    let len = match n {
        syn::GenericArgument::Const(Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. })) => i.base10_parse::<u64>()?,
        syn::GenericArgument::Const(Expr::Block(b)) => const_eval(&b.block)?,
        syn::GenericArgument::Type(syn::Type::Path(_)) | syn::GenericArgument::Const(_) => return err(n, usage),
        other => return err(other, usage),
    };
    if len == 0 {
        return err(n, "a shared array needs at least one element");
    }
    Ok(Some((elem, len)))
}

/// `{ 32 * 33 }`: a constant length from integer literals and `+ - *`.
fn const_eval(b: &syn::Block) -> Result<u64> {
    fn eval(e: &Expr) -> Result<u64> {
        match e {
            Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse(),
            Expr::Paren(p) => eval(&p.expr),
            Expr::Binary(b) => {
                let (l, r) = (eval(&b.left)?, eval(&b.right)?);
                let v = match b.op {
                    BinOp::Add(_) => l.checked_add(r),
                    BinOp::Sub(_) => l.checked_sub(r),
                    BinOp::Mul(_) => l.checked_mul(r),
                    _ => None,
                };
                v.ok_or_else(|| {
                    syn::Error::new_spanned(b, "a shared array length is integer literals with `+`, `-`, `*`")
                })
            }
            other => err(other, "a shared array length is integer literals with `+`, `-`, `*`"),
        }
    }
    match b.stmts.as_slice() {
        [Stmt::Expr(e, None)] => eval(e),
        _ => err(b.brace_token.span.join(), "a shared array length is one constant expression, e.g. `{ 32 * 33 }`"),
    }
}

/// A C++ identifier for a Rust one (raw identifiers lose their `r#`; C++ keywords get a suffix).
pub fn cpp_ident(name: &str) -> String {
    let name = name.trim_start_matches("r#");
    const CPP_KEYWORDS: &[&str] = &[
        "auto",
        "case",
        "char",
        "class",
        "const",
        "default",
        "delete",
        "double",
        "float",
        "friend",
        "goto",
        "int",
        "long",
        "new",
        "namespace",
        "operator",
        "private",
        "protected",
        "public",
        "register",
        "short",
        "signed",
        "sizeof",
        "switch",
        "template",
        "this",
        "throw",
        "typedef",
        "typename",
        "union",
        "unsigned",
        "virtual",
        "void",
        "volatile",
        "inline",
        "explicit",
        "delete",
        "signed",
        "bool",
        "catch",
        "try",
        "export",
        "extern",
        "threadIdx",
        "blockIdx",
        "blockDim",
        "gridDim",
        "warpSize",
        "printf",
        "min",
        "max",
    ];
    if CPP_KEYWORDS.contains(&name) {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn cpp_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\x{b:02x}\"\"");
                }
            }
        }
    }
    out.push('"');
    out
}

fn literal(l: &Lit, want: Option<Scalar>) -> Result<Val> {
    match l {
        Lit::Bool(b) => Ok(Val::new(if b.value { "true" } else { "false" }, Ty::Scalar(Scalar::Bool))),
        Lit::Int(i) => {
            let suffix = i.suffix();
            let ty = if suffix.is_empty() {
                match want {
                    Some(s) if s.is_int() => Some(s),
                    Some(s) if s.is_float() => None,
                    _ => None,
                }
            } else {
                Some(
                    Scalar::from_name(suffix)
                        .ok_or_else(|| syn::Error::new_spanned(i, format!("unknown suffix `{suffix}`")))?,
                )
            };
            let digits = i.base10_digits();
            match ty {
                Some(s) if s.is_float() => Ok(Val::new(float_text(digits, s), Ty::Scalar(s))),
                Some(s) => Ok(Val::new(int_text(digits, s), Ty::Scalar(s))),
                None => Ok(Val::new(digits.to_string(), Ty::IntLit)),
            }
        }
        Lit::Float(f) => {
            let suffix = f.suffix();
            let s = if suffix.is_empty() {
                want.filter(|s| s.is_float())
            } else {
                Some(
                    Scalar::from_name(suffix)
                        .filter(|s| s.is_float())
                        .ok_or_else(|| syn::Error::new_spanned(f, format!("unknown float suffix `{suffix}`")))?,
                )
            };
            let digits = f.base10_digits();
            match s {
                Some(s) => Ok(Val::new(float_text(digits, s), Ty::Scalar(s))),
                None => Ok(Val::new(float_text(digits, Scalar::F64), Ty::FloatLit)),
            }
        }
        Lit::Str(s) => err(s, "strings are not supported in a kernel (except as the format of `printf!`)"),
        other => err(other, "this literal is not supported in a kernel"),
    }
}

fn float_text(digits: &str, s: Scalar) -> String {
    let mut t = digits.to_string();
    if !t.contains(['.', 'e', 'E']) {
        t.push_str(".0");
    }
    if s == Scalar::F32 || s.is_half() {
        t.push('f');
    }
    if s.is_half() {
        return format!("{}({t})", s.half_conversions().1);
    }
    t
}

/// `text` with every whole-word occurrence of the identifier `word` replaced.
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(word) {
        let before = rest[..i].chars().last();
        let after = rest[i + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..i]);
        out.push_str(if ident(before) || ident(after) { word } else { with });
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

fn int_text(digits: &str, s: Scalar) -> String {
    match s {
        Scalar::U64 | Scalar::Usize => format!("{digits}ull"),
        Scalar::I64 | Scalar::Isize => format!("{digits}ll"),
        Scalar::U32 => format!("{digits}u"),
        Scalar::I32 => digits.to_string(),
        _ => format!("(({}){digits})", s.cpp()),
    }
}

/// `f32::MAX` and friends.
fn constant(s: Scalar, name: &str) -> Option<String> {
    if s.is_half() {
        return None;
    }
    let f32s = s == Scalar::F32;
    let float = |bits32: &str, bits64: &str| {
        Some(if f32s { format!("__int_as_float({bits32})") } else { format!("__longlong_as_double({bits64}ll)") })
    };
    if s.is_float() {
        return match name {
            "MAX" => float("0x7f7fffff", "0x7fefffffffffffff"),
            "MIN" => float("(int)0xff7fffff", "(long long)0xffefffffffffffffull"),
            "MIN_POSITIVE" => float("0x00800000", "0x0010000000000000"),
            "EPSILON" => float("0x34000000", "0x3cb0000000000000"),
            "INFINITY" => float("0x7f800000", "0x7ff0000000000000"),
            "NEG_INFINITY" => float("(int)0xff800000", "(long long)0xfff0000000000000ull"),
            "NAN" => float("0x7fc00000", "0x7ff8000000000000"),
            "PI" => Some(float_text("3.14159265358979323846", s)),
            "E" => Some(float_text("2.71828182845904523536", s)),
            "TAU" => Some(float_text("6.28318530717958647692", s)),
            "SQRT_2" => Some(float_text("1.41421356237309504880", s)),
            "LN_2" => Some(float_text("0.693147180559945309417", s)),
            _ => None,
        };
    }
    if s == Scalar::Bool {
        return None;
    }
    let bits = s.bits();
    let (min, max): (i128, i128) =
        if s.is_signed_int() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
    let v = match name {
        "MAX" => max,
        "MIN" => min,
        "BITS" => return Some(format!("{bits}u")),
        _ => return None,
    };
    Some(match s {
        Scalar::I64 | Scalar::Isize if v < 0 => format!("(-{}ll - 1)", -(v + 1)),
        Scalar::I32 if v < 0 => format!("(-{} - 1)", -(v + 1)),
        _ if v < 0 => format!("(({})({v}))", s.cpp()),
        _ => int_text(&v.to_string(), s),
    })
}

fn compound(op: &BinOp) -> Option<BinOp> {
    use BinOp::*;
    Some(match op {
        AddAssign(t) => Add(syn::Token![+](t.spans[0])),
        SubAssign(t) => Sub(syn::Token![-](t.spans[0])),
        MulAssign(t) => Mul(syn::Token![*](t.spans[0])),
        DivAssign(t) => Div(syn::Token![/](t.spans[0])),
        RemAssign(t) => Rem(syn::Token![%](t.spans[0])),
        BitAndAssign(t) => BitAnd(syn::Token![&](t.spans[0])),
        BitOrAssign(t) => BitOr(syn::Token![|](t.spans[0])),
        BitXorAssign(t) => BitXor(syn::Token![^](t.spans[0])),
        ShlAssign(t) => Shl(syn::Token![<<](t.spans[0])),
        ShrAssign(t) => Shr(syn::Token![>>](t.spans[0])),
        _ => return None,
    })
}

fn binop(op: &BinOp) -> &'static str {
    use BinOp::*;
    match op {
        Add(_) => "+",
        Sub(_) => "-",
        Mul(_) => "*",
        Div(_) => "/",
        Rem(_) => "%",
        And(_) => "&&",
        Or(_) => "||",
        BitXor(_) => "^",
        BitAnd(_) => "&",
        BitOr(_) => "|",
        Shl(_) => "<<",
        Shr(_) => ">>",
        Eq(_) => "==",
        Lt(_) => "<",
        Le(_) => "<=",
        Ne(_) => "!=",
        Ge(_) => ">=",
        Gt(_) => ">",
        _ => "?",
    }
}

/// An integer result of a type narrower than `int` (which C++ promotes), cast back.
fn narrow(s: Scalar, code: String) -> String {
    if s.bits() < 32 || s == Scalar::Bool {
        format!("(({})({code}))", s.cpp())
    } else {
        code
    }
}

/// `l op r` with Rust's release semantics: wrapping signed `+ - *`.
fn arith(s: Scalar, ty: &Ty, op: &BinOp, l: &str, r: &str) -> String {
    let o = binop(op);
    if s.is_signed_int() && !ty.is_literal() && matches!(op, BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_)) {
        let u = s.unsigned_cpp();
        return format!("(({})(({u})({l}) {o} ({u})({r})))", s.cpp());
    }
    narrow(s, format!("({l} {o} {r})"))
}

/// Plain expressions, safe to evaluate in either arm of a `?:`.
fn is_pure(e: &Expr) -> bool {
    !matches!(
        e,
        Expr::Block(_)
            | Expr::If(_)
            | Expr::Loop(_)
            | Expr::While(_)
            | Expr::ForLoop(_)
            | Expr::Return(_)
            | Expr::Break(_)
            | Expr::Continue(_)
    )
}

/// Whether the block's last statement is a `return`.
fn ends_in_return(b: &syn::Block) -> bool {
    matches!(b.stmts.last(), Some(Stmt::Expr(Expr::Return(_), _)))
}

fn expr_text(e: &Expr) -> String {
    quote::quote!(#e).to_string().replace(' ', "")
}

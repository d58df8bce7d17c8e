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

mod binding;
mod calls;
mod expr;
mod flow;
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
}

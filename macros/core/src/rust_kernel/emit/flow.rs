//! Control flow: `if`/`else` and `match` as statements and as values, `while`, `for` over
//! ranges, `loop`, and the conditions they test (a condition that indexed guards the body).

use super::*;

impl Emitter<'_> {
    pub(super) fn loop_body(&mut self, b: &syn::Block) -> Result<()> {
        self.loops += 1;
        let r = self.braced(b, None);
        self.loops -= 1;
        r.map(drop)
    }

    pub(super) fn condition(&mut self, c: &Expr) -> Result<String> {
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

    pub(super) fn if_stmt(&mut self, i: &syn::ExprIf) -> Result<()> {
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
    pub(super) fn indexed_guard(&mut self) {
        if self.indexed && self.settings.bounds_checks {
            self.indent += 1;
            let text = format!("if (__ce_bad) {}", self.early_return());
            self.push(&text);
            self.indent -= 1;
        }
        self.indexed = false;
    }

    pub(super) fn while_loop(&mut self, w: &syn::ExprWhile) -> Result<()> {
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

    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) -> Result<()> {
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

    /// An expression that needs statements of its own (a block, an `if` with statements): they
    /// are written before the current statement, into a temporary the value is read from.
    pub(super) fn hoisted<'s>(
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

    pub(super) fn if_expr(&mut self, i: &syn::ExprIf, want: Option<Scalar>) -> Result<Val> {
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
    pub(super) fn match_arms<'m>(
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
    pub(super) fn pattern(&mut self, p: &syn::Pat, tmp: &str, s: Scalar) -> Result<Option<String>> {
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
}

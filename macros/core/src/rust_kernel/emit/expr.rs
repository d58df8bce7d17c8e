//! Expressions: operators, assignments, places and indexing (control flow as values is in `flow`,
//! tuples in `binding`).

use super::*;

impl Emitter<'_> {
    /// `want`: the type the context expects (for literals).
    pub(super) fn expr(&mut self, e: &Expr, want: Option<Scalar>) -> Result<Val> {
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
                    (Ty::Vector(vt), m) if vt.fields().contains(&m) => {
                        Ok(Val::new(format!("{}.{member}", v.code), Ty::Scalar(vt.elem)))
                    }
                    (Ty::Vector(vt), _) => err(
                        &f.member,
                        format!("no field `{member}` on `{}`: its fields are `.{}`", vt.rust, vt.fields().join("`, `.")),
                    ),
                    (Ty::Tuple(ts), m) if m.parse::<usize>().is_ok_and(|k| k < ts.len()) => {
                        let k: usize = m.parse().unwrap_or(0);
                        Ok(Val::new(format!("{}._{k}", v.code), ts[k].clone()))
                    }
                    (Ty::Struct(_) | Ty::Opaque, _) => Ok(Val::new(format!("{}.{member}", v.code), Ty::Opaque)),
                    (Ty::Tuple(ts), _) => err(
                        &f.member,
                        format!("no field `{member}` on `{}`: its fields are `.0` to `.{}`", v.ty, ts.len() - 1),
                    ),
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
                    let val = match &t {
                        Ty::Tuple(ts) => self.expr_with_tuple(v, Some(&ts.clone()))?,
                        _ => self.expr(v, t.scalar())?,
                    };
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
            Expr::Tuple(t) => self.tuple_value(t),
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

    pub(super) fn path(&mut self, p: &syn::ExprPath) -> Result<Val> {
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

    pub(super) fn binary(&mut self, b: &syn::ExprBinary, want: Option<Scalar>) -> Result<Val> {
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
                if let Some(Ty::Vector(v)) = [&l.ty, &r.ty].into_iter().find(|t| matches!(t, Ty::Vector(_))).cloned() {
                    let v = &v;
                    return match (v.intrinsic(binop(&op)), l.ty == r.ty) {
                        (Some(f), true) => Ok(Val::new(format!("{f}({}, {})", l.code, r.code), Ty::Vector(*v))),
                        (Some(_), false) => err(
                            b,
                            format!(
                                "mismatched types: `{}` {} `{}`: both sides are `{}` (for a scalar `s`, write `{}::new(s, s)`)",
                                l.ty,
                                binop(&op),
                                r.ty,
                                v.rust,
                                v.rust
                            ),
                        ),
                        (None, _) => err(b, vector_operator(v, &op)),
                    };
                }
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

    pub(super) fn opaque_binary(&mut self, l: &Val, r: &Val, op: BinOp) -> Result<Val> {
        Ok(Val::new(format!("({} {} {})", l.code, binop(&op), r.code), Ty::Opaque))
    }

    /// Both operands, a literal re-read with the other side's type.
    pub(super) fn operands(
        &mut self,
        le: &Expr,
        re: &Expr,
        want: Option<Scalar>,
        _at: &dyn Spanned,
    ) -> Result<(Val, Val)> {
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

    pub(super) fn unary(&mut self, u: &syn::ExprUnary, want: Option<Scalar>) -> Result<Val> {
        match u.op {
            UnOp::Neg(_) => {
                let v = self.expr(&u.expr, want)?;
                if let Ty::Vector(vt) = &v.ty {
                    if vt.has_arithmetic() {
                        return Ok(Val::new(format!("__hneg2({})", v.code), v.ty));
                    }
                }
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

    pub(super) fn assign(&mut self, left: &Expr, op: Option<BinOp>, right: &Expr) -> Result<Val> {
        if let (Expr::Tuple(t), None) = (left, op) {
            return self.tuple_assign(t, right);
        }
        let target = self.place(left)?;
        let want = target.ty.scalar();
        let mut r = self.expr_as(right, &target.ty)?;
        if r.ty.is_literal() {
            if let Some(s) = want.filter(|_| !target.ty.is_literal()) {
                r = self.expr(right, Some(s))?;
            }
        }
        self.learn(&target, &r.ty);
        let ty = unify(&target.ty, &r.ty).ok_or_else(|| {
            syn::Error::new(right.span(), format!("mismatched types: expected `{}`, found `{}`", target.ty, r.ty))
        })?;
        if let (Some(op), Ty::Vector(v)) = (op, &ty) {
            return match v.intrinsic(binop(&op)) {
                Some(f) => Ok(Val::new(format!("{0} = {f}({0}, {1})", target.code, r.code), Ty::Unit)),
                None => err(right, vector_operator(v, &op)),
            };
        }
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
    pub(super) fn place(&mut self, e: &Expr) -> Result<Val> {
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
            Expr::Field(f) => {
                // A component of a vector place: `v.x = ...` (`let mut v`), `y[i].x = ...`.
                let base = match &*f.base {
                    Expr::Path(_) | Expr::Index(_) | Expr::Paren(_) | Expr::Field(_) => self.place(&f.base)?,
                    _ => return err(f, "fields of `thread_idx()` and friends are read-only"),
                };
                match (&base.ty, &f.member) {
                    (Ty::Vector(v), syn::Member::Named(m)) if v.fields().contains(&m.to_string().as_str()) => {
                        Ok(Val::new(format!("{}.{m}", base.code), Ty::Scalar(v.elem)))
                    }
                    // An element of a `let mut` tuple: `t.0 = ...`, `t.0.1 = ...`.
                    (Ty::Tuple(ts), syn::Member::Unnamed(i)) if (i.index as usize) < ts.len() => {
                        Ok(Val::new(format!("{}._{}", base.code, i.index), ts[i.index as usize].clone()))
                    }
                    (t, _) => {
                        err(&f.member, format!("no assignable field `{}` on `{t}`", expr_text(&Expr::Field(f.clone()))))
                    }
                }
            }
            other => err(
                other,
                "this cannot be assigned to: assign to a `let mut` local or an element `y[i]` of a `&mut [T]`",
            ),
        }
    }

    pub(super) fn index_base(&mut self, e: &Expr) -> Result<Val> {
        let base = self.expr(e, None)?;
        match base.ty {
            Ty::Slice { .. } | Ty::Shared { .. } => Ok(base),
            Ty::Opaque => err(e, "a C++ value cannot be indexed in Rust syntax: index it in C++"),
            ref t => {
                err(e, format!("cannot index `{t}`: only slices (`&[T]`, `&mut [T]`) and shared arrays are indexed"))
            }
        }
    }

    pub(super) fn index(&mut self, i: &syn::ExprIndex) -> Result<Val> {
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
            Ty::Slice { elem, .. } => (elem.ty(), format!("{}__len", base.code)),
            Ty::Shared { elem, len } => (elem.ty(), format!("{len}ull")),
            _ => unreachable!("index_base returns slices and shared arrays"),
        };
        if !self.settings.bounds_checks {
            return Ok(Val::new(format!("{}[{}]", base.code, idx.code), elem));
        }
        self.indexed = true;
        let line = i.bracket_token.span.open().start().line;
        Ok(Val::new(
            format!("__ce_at({}, {len}, {}, __ce_bad, {line}u, {})", base.code, idx.code, self.settings.slot),
            elem,
        ))
    }
}

/// The error for an operator on a CUDA vector type (CUDA C++ defines none but `+ - * /` on
/// `Half2`/`Bf162`).
fn vector_operator(v: &super::super::types::Vector, op: &BinOp) -> String {
    if v.has_arithmetic() {
        return format!(
            "`{}` has no `{}` operator: kernels give it `+`, `-`, `*`, `/` and unary `-` (CUDA's `__hadd2`, `__hsub2`, `__hmul2`, `__h2div`, `__hneg2`); compare or combine its fields `.x`, `.y` for the rest",
            v.rust,
            binop(op)
        );
    }
    format!(
        "`{}` has no `{}` operator (CUDA C++ defines none on vector types): compute each component, e.g. `{}::new(a.x {1} b.x, ...)`",
        v.rust,
        binop(op),
        v.rust
    )
}

//! Bindings: `let` with its patterns (tuples destructured element by element), tuple values
//! and tuple assignment.

use super::*;

impl Emitter<'_> {
    /// `let (a, mut b) = (x, y);`, `let ((a, b), c): ((f32, u32), f64) = f(x);`: the values are
    /// computed first, then each name is bound as by its own `let`.
    pub(super) fn tuple_local(&mut self, l: &syn::Local, pat: &syn::PatTuple, types: Option<&syn::Type>) -> Result<()> {
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
    pub(super) fn destructure(
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
    pub(super) fn element(
        &mut self,
        p: &syn::Pat,
        ty: Option<&syn::Type>,
        src: Source<'_>,
        leaves: &mut Vec<Leaf>,
    ) -> Result<()> {
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

    pub(super) fn local(&mut self, l: &syn::Local) -> Result<()> {
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

    /// A tuple as a value: the C++ struct of its types, built in place (`__ce_tuple_f32_u32{a, b}`);
    /// its elements are scalars, vectors or tuples.
    pub(super) fn tuple_value(&mut self, t: &syn::ExprTuple) -> Result<Val> {
        if t.elems.len() < 2 {
            return err(t, "a tuple value has two or more elements: `(a, b)`");
        }
        let outer = self.tuple_want.take();
        let want = outer.clone().filter(|w| w.len() == t.elems.len());
        let mut tys = Vec::new();
        let mut codes = Vec::new();
        for (k, e) in t.elems.iter().enumerate() {
            let w = want.as_ref().map(|w| w[k].clone());
            // A nested tuple value takes its own element types.
            self.tuple_want = match &w {
                Some(Ty::Tuple(inner)) => Some(inner.clone()),
                _ => None,
            };
            let mut v = self.expr(e, w.as_ref().and_then(Ty::scalar))?;
            let ty = match (w, &v.ty) {
                (Some(w), ty) if unify(&w, ty).is_some() => w,
                (Some(w), ty) => return err(e, format!("mismatched types: expected `{w}`, found `{ty}`")),
                (None, ty) => ty.tuple_element().ok_or_else(|| {
                    syn::Error::new(
                        e.span(),
                        format!("a tuple holds scalars, CUDA vector types and tuples, found `{ty}`"),
                    )
                })?,
            };
            if v.ty.is_literal() {
                v = self.expr(e, ty.scalar())?;
            }
            tys.push(ty);
            codes.push(v.code);
        }
        self.tuple_want = outer;
        let ty = Ty::Tuple(tys);
        super::super::types::tuples_used(&ty, &mut self.tuples);
        let Ty::Tuple(tys) = &ty else { unreachable!("built above") };
        Ok(Val::new(format!("{}{{{}}}", super::super::types::tuple_struct(tys), codes.join(", ")), ty))
    }

    /// `(a, b) = (x, y);`, `((a, b), c) = ((x, y), z);`: the values first, then the assignments
    /// (so `(a, b) = (b, a)` swaps).
    pub(super) fn tuple_assign(&mut self, left: &syn::ExprTuple, right: &Expr) -> Result<Val> {
        let mut temps = Vec::new();
        self.tuple_assign_values(left, right, &mut temps)?;
        let code: Vec<String> = temps.iter().map(|(p, t)| format!("{p} = {t}")).collect();
        Ok(Val::new(code.join(", "), Ty::Unit))
    }

    /// Each place of `left` and the temporary its value of `right` is computed into.
    fn tuple_assign_values(
        &mut self,
        left: &syn::ExprTuple,
        right: &Expr,
        temps: &mut Vec<(String, String)>,
    ) -> Result<()> {
        let Expr::Tuple(values) = right else {
            return err(right, "a tuple is assigned a tuple of values: `(a, b) = (x, y);`");
        };
        if values.elems.len() != left.elems.len() {
            return err(left, "the two tuples have different lengths");
        }
        for (target, e) in left.elems.iter().zip(&values.elems) {
            if let Expr::Tuple(inner) = target {
                self.tuple_assign_values(inner, e, temps)?;
                continue;
            }
            if let Expr::Infer(_) = target {
                // `_`: the value is computed, for its effects, and dropped.
                let v = self.expr(e, None)?;
                let text = format!("(void)({});", v.code);
                self.push(&text);
                continue;
            }
            let place = self.place(target)?;
            let v = self.expr_as(e, &place.ty)?;
            if unify(&place.ty, &v.ty).is_none() {
                return err(e, format!("mismatched types: expected `{}`, found `{}`", place.ty, v.ty));
            }
            let t = self.tmp();
            let text = format!("{} {t} = {};", place.ty.cpp(), v.code);
            self.push(&text);
            temps.push((place.code, t));
        }
        Ok(())
    }
}

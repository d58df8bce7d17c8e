//! Method and function calls: float and integer methods, `cuda_embed::device`, `#[device]`
//! functions, atomics, `printf!`.

use super::*;

impl Emitter<'_> {
    pub(super) fn method(&mut self, m: &syn::ExprMethodCall, want: Option<Scalar>) -> Result<Val> {
        let name = m.method.to_string();
        if m.turbofish.is_some() {
            return err(&m.method, "method calls with generic arguments are not supported");
        }
        let recv = self.expr(&m.receiver, want.filter(|s| s.is_float() || s.is_int()))?;
        if let Ty::Vector(v) = &recv.ty {
            return err(
                &m.method,
                format!(
                    "no method `{name}` on `{}`: read its fields (`.{}`) and build a new one with `{}::new(...)`",
                    v.rust,
                    v.fields().join("`, `."),
                    v.rust
                ),
            );
        }
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
    pub(super) fn half_method(&mut self, m: &syn::ExprMethodCall, s: Scalar, recv: Val) -> Result<Val> {
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

    pub(super) fn arity(&self, m: &syn::ExprMethodCall, n: usize) -> Result<()> {
        if m.args.len() != n {
            return err(&m.method, format!("`{}` takes {n} argument(s), found {}", m.method, m.args.len()));
        }
        Ok(())
    }

    /// An argument of type `s` (a literal takes it).
    pub(super) fn typed_arg(&mut self, e: &Expr, s: Scalar) -> Result<String> {
        let v = self.expr(e, Some(s))?;
        self.learn(&v, &Ty::Scalar(s));
        if unify(&v.ty, &Ty::Scalar(s)).is_none() {
            return err(e, format!("mismatched types: expected `{}`, found `{}`", s.rust(), v.ty));
        }
        Ok(v.code)
    }

    pub(super) fn args(
        &mut self,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
        want: Option<Scalar>,
    ) -> Result<Vec<String>> {
        args.iter().map(|a| self.expr(a, want).map(|v| v.code)).collect()
    }

    pub(super) fn call(&mut self, c: &syn::ExprCall, want: Option<Scalar>) -> Result<Val> {
        let Expr::Path(p) = &*c.func else {
            return err(&c.func, "only named functions can be called in a kernel");
        };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let last = segs.last().cloned().unwrap_or_default();
        // `Float4::new(x, y, z, w)` (also `cuda_embed::Float4::new`): C++ `make_float4`.
        if let [.., ty, new] = segs.as_slice() {
            let prefix_ok = segs.len() == 2 || (segs.len() == 3 && segs[0] == "cuda_embed");
            let vty = syn::Type::Path(syn::TypePath {
                qself: None,
                path: syn::Path::from(syn::Ident::new(ty, p.path.segments[segs.len() - 2].ident.span())),
            });
            if let (true, Some(v)) = (prefix_ok, vector_type(&vty)?) {
                if new != "new" {
                    return err(
                        &c.func,
                        format!("a `{}` is built with `{}::new({})`", v.rust, v.rust, v.fields().join(", ")),
                    );
                }
                if c.args.len() != v.fields().len() {
                    return err(
                        c,
                        format!(
                            "`{}::new` takes {} arguments ({}), found {}",
                            v.rust,
                            v.len,
                            v.fields().join(", "),
                            c.args.len()
                        ),
                    );
                }
                let mut parts = Vec::new();
                for a in &c.args {
                    parts.push(self.typed_arg(a, v.elem)?);
                }
                return Ok(Val::new(format!("{}({})", v.make(), parts.join(", ")), Ty::Vector(v)));
            }
        }
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
    pub(super) fn device_call(&mut self, c: &syn::ExprCall, sig: &DeviceSig) -> Result<Val> {
        if c.args.len() != sig.params.len() {
            return err(c, format!("`{}` takes {} argument(s), found {}", sig.name, sig.params.len(), c.args.len()));
        }
        let mut args = Vec::new();
        // The slices passed, with whether the callee may write each: one slice passed twice where
        // either is `&mut` is what Rust's borrow rules refuse (`f(y, y)` with `y: &mut [T]`).
        let mut slices: Vec<(String, bool)> = Vec::new();
        for (a, p) in c.args.iter().zip(&sig.params) {
            match p {
                Ty::Slice { elem, mutable } => {
                    let v = self.expr(a, None)?;
                    match &v.ty {
                        Ty::Slice { elem: e, mutable: m } if e == elem && (*m || !mutable) => {
                            if let Some((_, other)) = slices.iter().find(|(code, _)| *code == v.code) {
                                if *mutable || *other {
                                    return err(
                                        a,
                                        format!(
                                            "`{}` is passed to `{}` twice, and `{}` may write it: a `&mut` slice \
                                             cannot be passed together with another borrow of the same slice; pass \
                                             separate slices",
                                            v.code, sig.name, sig.name
                                        ),
                                    );
                                }
                            }
                            slices.push((v.code.clone(), *mutable));
                            args.push(format!("{0}, {0}__len", v.code));
                        }
                        t => return err(a, format!("mismatched types: expected `{p}`, found `{t}`")),
                    }
                }
                Ty::Vector(_) | Ty::Struct(_) => {
                    let v = self.expr(a, None)?;
                    if unify(&v.ty, p).is_none() {
                        return err(a, format!("mismatched types: expected `{p}`, found `{}`", v.ty));
                    }
                    args.push(v.code);
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

    pub(super) fn atomic(&mut self, c: &syn::ExprCall, name: &str) -> Result<Val> {
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

    pub(super) fn macro_call(&mut self, m: &syn::Macro) -> Result<Val> {
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

//! Literals, constants, C++ spellings of operators and names.

use super::*;

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
pub(super) fn shared_decl(e: &Expr) -> Result<Option<(Elem, u64)>> {
    let Expr::Call(c) = e else { return Ok(None) };
    let Expr::Path(p) = &*c.func else { return Ok(None) };
    let Some(last) = p.path.segments.last() else { return Ok(None) };
    if last.ident != "shared" {
        return Ok(None);
    }
    let usage =
        "a shared array is `shared::<T, N>()`, T a scalar or CUDA vector type and N a literal length, e.g. `shared::<f32, 256>()`";
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return err(last, usage);
    };
    let args: Vec<_> = a.args.iter().collect();
    let (Some(syn::GenericArgument::Type(t)), Some(n), 2, true) =
        (args.first(), args.get(1), args.len(), c.args.is_empty())
    else {
        return err(a, usage);
    };
    let elem = match (scalar_type(t), vector_type(t)?) {
        (Some(s), _) => Elem::Scalar(s),
        (None, Some(v)) => Elem::Vector(v),
        _ => return err(t, usage),
    };
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
pub(super) fn const_eval(b: &syn::Block) -> Result<u64> {
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

pub(super) fn cpp_string(s: &str) -> String {
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

pub(super) fn literal(l: &Lit, want: Option<Scalar>) -> Result<Val> {
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

pub(super) fn float_text(digits: &str, s: Scalar) -> String {
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
pub(super) fn replace_word(text: &str, word: &str, with: &str) -> String {
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

pub(super) fn int_text(digits: &str, s: Scalar) -> String {
    match s {
        Scalar::U64 | Scalar::Usize => format!("{digits}ull"),
        Scalar::I64 | Scalar::Isize => format!("{digits}ll"),
        Scalar::U32 => format!("{digits}u"),
        Scalar::I32 => digits.to_string(),
        _ => format!("(({}){digits})", s.cpp()),
    }
}

/// `f32::MAX` and friends.
pub(super) fn constant(s: Scalar, name: &str) -> Option<String> {
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

pub(super) fn compound(op: &BinOp) -> Option<BinOp> {
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

pub(super) fn binop(op: &BinOp) -> &'static str {
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
pub(super) fn narrow(s: Scalar, code: String) -> String {
    if s.bits() < 32 || s == Scalar::Bool {
        format!("(({})({code}))", s.cpp())
    } else {
        code
    }
}

/// `l op r` with Rust's release semantics: wrapping signed `+ - *`.
pub(super) fn arith(s: Scalar, ty: &Ty, op: &BinOp, l: &str, r: &str) -> String {
    let o = binop(op);
    if s.is_signed_int() && !ty.is_literal() && matches!(op, BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_)) {
        let u = s.unsigned_cpp();
        return format!("(({})(({u})({l}) {o} ({u})({r})))", s.cpp());
    }
    narrow(s, format!("({l} {o} {r})"))
}

/// Plain expressions, safe to evaluate in either arm of a `?:`.
pub(super) fn is_pure(e: &Expr) -> bool {
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
pub(super) fn ends_in_return(b: &syn::Block) -> bool {
    matches!(b.stmts.last(), Some(Stmt::Expr(Expr::Return(_), _)))
}

pub(super) fn expr_text(e: &Expr) -> String {
    quote::quote!(#e).to_string().replace(' ', "")
}

//! The launch formulas of a tuned kernel (`grid = "cdiv(n, BLOCK * ITEMS)"`): the macro checks
//! every name at build time and embeds the formula as a short postfix program of [`Op`]s, which
//! [`eval`] runs at launch time over the kernel's integer arguments and the variant's template
//! values, in `i64` with every step checked (overflow, division by zero, a negative result).

/// One step of a postfix formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Pushes a constant.
    Const(i64),
    /// Pushes the kernel argument with this index in the tuned launcher's scalar list.
    Scalar(u16),
    /// Pushes the variant's value of the tune parameter with this index.
    Param(u16),
    /// Pops b, a; pushes a + b.
    Add,
    /// Pops b, a; pushes a - b.
    Sub,
    /// Pops b, a; pushes a * b.
    Mul,
    /// Pops b, a; pushes a / b (truncating).
    Div,
    /// Pops b, a; pushes a % b.
    Rem,
    /// Pops b, a; pushes the smaller.
    Min,
    /// Pops b, a; pushes the larger.
    Max,
    /// Pops b, a; pushes a / b rounded up (`cdiv(n, BLOCK)`).
    CeilDiv,
}

/// The deepest stack a formula may need (the macro refuses deeper ones).
pub const MAX_DEPTH: usize = 16;

/// Runs `ops` over `scalars` (kernel arguments) and `params` (the variant's template values).
/// `None` when a step overflows, divides by zero or the program is malformed.
pub fn eval(ops: &[Op], scalars: &[i64], params: &[i64]) -> Option<i64> {
    let mut stack = [0i64; MAX_DEPTH];
    let mut len = 0usize;
    for op in ops {
        let v = match *op {
            Op::Const(c) => c,
            Op::Scalar(i) => *scalars.get(i as usize)?,
            Op::Param(i) => *params.get(i as usize)?,
            binary => {
                if len < 2 {
                    return None;
                }
                let (a, b) = (stack[len - 2], stack[len - 1]);
                len -= 2;
                match binary {
                    Op::Add => step::add(a, b)?,
                    Op::Sub => step::sub(a, b)?,
                    Op::Mul => step::mul(a, b)?,
                    Op::Div => step::div(a, b)?,
                    Op::Rem => step::rem(a, b)?,
                    Op::Min => step::min(a, b)?,
                    Op::Max => step::max(a, b)?,
                    Op::CeilDiv => step::cdiv(a, b)?,
                    Op::Const(_) | Op::Scalar(_) | Op::Param(_) => return None,
                }
            }
        };
        *stack.get_mut(len)? = v;
        len += 1;
    }
    (len == 1).then_some(stack[0])
}

/// Converts a kernel argument to the formulas' `i64`; implemented for every integer type and
/// `bool`. Generated tuned launchers call it on the arguments their formulas and key name.
pub trait Scalar: Copy {
    /// The value, or `None` when it does not fit an `i64` (a `u64` above `i64::MAX`).
    fn to_i64(self) -> Option<i64>;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            #[inline(always)]
            fn to_i64(self) -> Option<i64> {
                i64::try_from(self).ok()
            }
        }
    )*};
}
scalar!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl Scalar for bool {
    #[inline(always)]
    fn to_i64(self) -> Option<i64> {
        Some(self as i64)
    }
}

/// A tuned launcher's argument `name` of `kernel` as an `i64` for the formulas and the key, or
/// the error saying it does not fit.
#[inline(always)]
pub fn scalar<S: Scalar + std::fmt::Debug>(v: S, kernel: &'static str, name: &'static str) -> crate::Result<i64> {
    match v.to_i64() {
        Some(x) => Ok(x),
        None => Err(too_large(kernel, name, format!("{v:?}"))),
    }
}

#[cold]
fn too_large(kernel: &str, name: &str, v: String) -> crate::Error {
    crate::Error::Tune {
        what: format!("kernel `{kernel}`"),
        cause: format!("argument `{name}` = {v} does not fit the launch formulas' i64"),
        fix: None,
    }
}

/// The steps of a formula as functions, for the launchers that compile their formulas to Rust
/// (the fast path; [`eval`] stays the reference and reports errors): the same checked
/// arithmetic, step for step.
pub mod step {
    /// `a + b`.
    #[inline(always)]
    pub fn add(a: i64, b: i64) -> Option<i64> {
        a.checked_add(b)
    }
    /// `a - b`.
    #[inline(always)]
    pub fn sub(a: i64, b: i64) -> Option<i64> {
        a.checked_sub(b)
    }
    /// `a * b`.
    #[inline(always)]
    pub fn mul(a: i64, b: i64) -> Option<i64> {
        a.checked_mul(b)
    }
    /// `a / b`, truncating.
    #[inline(always)]
    pub fn div(a: i64, b: i64) -> Option<i64> {
        a.checked_div(b)
    }
    /// `a % b`.
    #[inline(always)]
    pub fn rem(a: i64, b: i64) -> Option<i64> {
        a.checked_rem(b)
    }
    /// The smaller.
    #[inline(always)]
    pub fn min(a: i64, b: i64) -> Option<i64> {
        Some(a.min(b))
    }
    /// The larger.
    #[inline(always)]
    pub fn max(a: i64, b: i64) -> Option<i64> {
        Some(a.max(b))
    }
    /// `a / b` rounded up.
    #[inline(always)]
    pub fn cdiv(a: i64, b: i64) -> Option<i64> {
        let q = a.checked_div(b)?;
        if a.checked_rem(b)? != 0 && ((a < 0) == (b < 0)) {
            q.checked_add(1)
        } else {
            Some(q)
        }
    }
    /// A dimension: the value when it fits a `u32`.
    #[inline(always)]
    pub fn dim(v: i64) -> Option<u32> {
        u32::try_from(v).ok()
    }
}

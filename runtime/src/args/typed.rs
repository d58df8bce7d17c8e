//! Arguments that carry their CUDA element type and length: what a run-time kernel built from
//! typed parameter lists ([`ReductionProgram`](crate::ReductionProgram)) checks before a launch,
//! where [`Arg`] carries only a byte size.

use crate::args::buffer::{DeviceBuffer, DeviceBufferMut};
use crate::args::dynamic::Arg;
use crate::types::{bf16, f16, DeviceSafe};

/// A Rust type with its CUDA spellings: the element type of a [`TypedArg`].
///
/// # Safety
/// The type must have the size, alignment and bit layout of the CUDA type named by every entry
/// of [`CudaType::NAMES`]: a kernel whose parameter has that type reads and writes it as one.
///
/// ```
/// use cuda_embed_runtime::{CudaType, DeviceSafe};
///
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct ValIdx { v: f32, i: i64 }
/// // SAFETY: repr(C), the fields of `struct ValIdx { float v; long long i; }`.
/// unsafe impl DeviceSafe for ValIdx {}
/// // SAFETY: as above.
/// unsafe impl CudaType for ValIdx { const NAMES: &'static [&'static str] = &["ValIdx"]; }
/// assert_eq!(<f32 as CudaType>::NAMES[0], "float");
/// ```
pub unsafe trait CudaType: DeviceSafe {
    /// The CUDA spellings of the type, the usual one first (`["unsigned int", "unsigned",
    /// "uint32_t"]`); a struct is named without `struct `, and with its namespaces when it is
    /// declared in one (`"geo::Point"`). A parameter list may then write it `geo::Point` or, where
    /// the preamble makes the short name refer to it, `Point`; `other::Point` does not match.
    const NAMES: &'static [&'static str];
}

macro_rules! cuda_types {
    ($($t:ty => [$($n:literal),+]),* $(,)?) => { $(
        // SAFETY: a scalar with the same layout on host and device under each of these names.
        unsafe impl CudaType for $t { const NAMES: &'static [&'static str] = &[$($n),+]; }
    )* };
}
cuda_types!(
    f32 => ["float"],
    f64 => ["double"],
    i8 => ["signed char", "int8_t", "char"],
    u8 => ["unsigned char", "uint8_t"],
    i16 => ["short", "short int", "signed short", "int16_t"],
    u16 => ["unsigned short", "unsigned short int", "uint16_t"],
    i32 => ["int", "signed int", "signed", "int32_t"],
    u32 => ["unsigned int", "unsigned", "uint32_t"],
    i64 => ["long long", "long long int", "signed long long", "int64_t", "long", "long int"],
    u64 => ["unsigned long long", "unsigned long long int", "uint64_t", "unsigned long", "size_t"],
    usize => ["size_t", "unsigned long", "unsigned long long", "uint64_t"],
    isize => ["ptrdiff_t", "long", "long long", "int64_t"],
    bool => ["bool"],
    f16 => ["__half", "half"],
    bf16 => ["__nv_bfloat16", "nv_bfloat16"],
);

/// Whether `cuda` (a normalised CUDA type as written in a parameter list or instance) names one
/// of `names`, the spellings of a Rust type ([`CudaType::NAMES`]). `struct X` and `::X` are `X`.
/// A qualified name must match as qualified: `a::T` is not `b::T`, and not a type that says it
/// is `T` (of the global namespace). A shorter spelling of a qualified name matches it: `T`, as
/// a parameter list may write it where the preamble makes `T` name `a::T`, matches `a::T`, and
/// `b::T` matches `a::b::T`.
pub(crate) fn type_matches(cuda: &str, names: &[&str]) -> bool {
    let written = segments(cuda);
    names.iter().any(|n| {
        let declared = segments(n);
        !written.is_empty() && declared.ends_with(&written)
    })
}

/// The `::`-separated parts of a type name, without `struct `/`class `, a leading `::` or spaces.
fn segments(name: &str) -> Vec<&str> {
    let mut bare = name.trim();
    for prefix in ["struct ", "class ", "union "] {
        bare = bare.strip_prefix(prefix).unwrap_or(bare).trim();
    }
    bare.trim_start_matches("::").split("::").map(str::trim).collect()
}

/// What a [`TypedArg`] passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypedArgKind {
    /// A buffer the kernel reads.
    Input,
    /// A buffer the kernel writes.
    Output,
    /// A value passed by value.
    Scalar,
}

/// One argument of a run-time kernel built from typed parameter lists: a device buffer (read or
/// written) or a scalar, with its CUDA element type and, for a buffer, its length in elements.
///
/// ```no_run
/// use cuda_embed_runtime::TypedArg;
/// let ctx = cuda_embed_runtime::context(0)?;
/// let stream = ctx.default_stream();
/// let x = stream.clone_htod(&[1.0f32, 2.0])?;
/// let mut y = stream.alloc_zeros::<f32>(1)?;
/// let s = 2.0f32;
/// let args = [TypedArg::slice(&x), TypedArg::scalar(&s), TypedArg::slice_mut(&mut y)];
/// assert_eq!(args[0].len(), Some(2));
/// assert_eq!(args[1].cuda_type(), "float");
/// # Ok::<(), cuda_embed_runtime::Error>(())
/// ```
#[derive(Debug)]
pub struct TypedArg<'a> {
    pub(crate) arg: Arg<'a>,
    pub(crate) names: &'static [&'static str],
    pub(crate) elem_size: usize,
    pub(crate) len: Option<usize>,
    pub(crate) kind: TypedArgKind,
}

impl<'a> TypedArg<'a> {
    /// A buffer the kernel reads: `&CudaSlice<T>`, `&CudaView<T>`.
    pub fn slice<T: CudaType, S: DeviceBuffer<T>>(buffer: &'a S) -> Self {
        let len = buffer.len();
        TypedArg {
            arg: Arg::slice(buffer),
            names: T::NAMES,
            elem_size: std::mem::size_of::<T>(),
            len: Some(len),
            kind: TypedArgKind::Input,
        }
    }

    /// A buffer the kernel writes: `&mut CudaSlice<T>`, `&mut CudaViewMut<T>`.
    pub fn slice_mut<T: CudaType, S: DeviceBufferMut<T>>(buffer: &'a mut S) -> Self {
        let len = buffer.len();
        TypedArg {
            arg: Arg::slice_mut(buffer),
            names: T::NAMES,
            elem_size: std::mem::size_of::<T>(),
            len: Some(len),
            kind: TypedArgKind::Output,
        }
    }

    /// An N-D view the kernel reads, for [`Reduction::launch_axes`](crate::Reduction::launch_axes)
    /// (the other launchers refuse it).
    pub fn view<T: CudaType>(view: &'a crate::NdView<'_, T>) -> Self {
        TypedArg {
            arg: Arg::view(view),
            names: T::NAMES,
            elem_size: std::mem::size_of::<T>(),
            len: Some(view.len()),
            kind: TypedArgKind::Input,
        }
    }

    /// An N-D view the kernel writes, for [`Reduction::launch_axes`](crate::Reduction::launch_axes).
    pub fn view_mut<T: CudaType>(view: &'a mut crate::NdViewMut<'_, T>) -> Self {
        let len = view.len();
        TypedArg {
            arg: Arg::view_mut(view),
            names: T::NAMES,
            elem_size: std::mem::size_of::<T>(),
            len: Some(len),
            kind: TypedArgKind::Output,
        }
    }

    /// A value passed by value (a `scalar` parameter).
    pub fn scalar<T: CudaType>(value: &'a T) -> Self {
        TypedArg {
            arg: Arg::value(value),
            names: T::NAMES,
            elem_size: std::mem::size_of::<T>(),
            len: None,
            kind: TypedArgKind::Scalar,
        }
    }

    /// The usual CUDA spelling of the element type (`float`).
    pub fn cuda_type(&self) -> &'static str {
        self.names.first().copied().unwrap_or("?")
    }

    /// The length in elements of a buffer; `None` for a scalar.
    pub fn len(&self) -> Option<usize> {
        self.len
    }

    /// Whether this is a buffer of no elements.
    pub fn is_empty(&self) -> bool {
        self.len == Some(0)
    }

    /// Whether the argument is read, written or passed by value.
    pub fn kind(&self) -> TypedArgKind {
        self.kind
    }

    /// The untyped argument, borrowed for one launch.
    pub(crate) fn as_arg(&mut self) -> Arg<'_> {
        self.arg.reborrow()
    }

    /// The untyped argument with a view passed as its whole buffer (the strided kernels take
    /// the view's offset and strides separately).
    pub(crate) fn as_buffer_arg(&mut self) -> Arg<'_> {
        let mut arg = self.arg.reborrow();
        arg.layout = None;
        arg
    }

    /// A buffer argument's elements `offset .. offset + len` as a flat buffer of that length (a
    /// scalar as itself); an error, never expected from a plan, when they leave the buffer.
    pub(crate) fn region(&mut self, offset: usize, len: usize) -> crate::Result<TypedArg<'_>> {
        let (names, elem_size, kind) = (self.names, self.elem_size, self.kind);
        if kind == TypedArgKind::Scalar {
            return Ok(TypedArg { arg: self.arg.reborrow(), names, elem_size, len: None, kind });
        }
        let arg = self.arg.region(offset, len).ok_or_else(|| crate::Error::Shape {
            op: "reduction over axes".into(),
            detail: format!("internal error: elements {offset}..{} lie outside their buffer", offset + len),
        })?;
        Ok(TypedArg { arg, names, elem_size, len: Some(len), kind })
    }
}

#[cfg(test)]
mod tests {
    use super::type_matches;

    #[test]
    fn qualified_names_match_only_their_own_namespace() {
        // Builtins and unqualified structs, with `struct ` and a leading `::`.
        assert!(type_matches("float", <f32 as super::CudaType>::NAMES));
        assert!(type_matches("struct ValIdx", &["ValIdx"]));
        assert!(type_matches("::ValIdx", &["ValIdx"]));
        // `a::T` is not `b::T`, nor a type that says it is the global `T`.
        assert!(!type_matches("b::T", &["a::T"]));
        assert!(!type_matches("a::T", &["T"]));
        assert!(!type_matches("struct b::T", &["a::T"]));
        // The same qualified name, however written; a shorter spelling of the declared name.
        assert!(type_matches("a::T", &["a::T"]));
        assert!(type_matches("::a::T", &["a::T"]));
        assert!(type_matches("struct a :: T", &["a::T"]));
        assert!(type_matches("T", &["a::T"]));
        assert!(type_matches("b::T", &["a::b::T"]));
        assert!(!type_matches("c::T", &["a::b::T"]));
        assert!(!type_matches("", &["T"]));
    }
}

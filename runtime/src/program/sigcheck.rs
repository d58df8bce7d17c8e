//! Run-time kernels checked by type: [`ProgramModule::kernel_with_signature`] reads a C parameter
//! list with the macro's own reader ([`cuda_embed_source::params`]) and type table
//! ([`cuda_embed_source::ctypes`]), and every launch compares each [`Arg`] with it before the
//! driver is called: buffer or value, the element type a pointer points to, whether the kernel
//! writes through it (a `T*` needs [`Arg::slice_mut`]), and the type of a value.
//!
//! Names the table does not know (typedefs, structs) are checked for their kind (buffer or
//! value) and mutability only; pointers to pointers not at all (they are raw addresses).
//!
//! [`ProgramModule::kernel_with_signature`]: crate::ProgramModule::kernel_with_signature

use crate::args::dynamic::{Arg, ArgKind, Elem};
use crate::error::{Error, Result};
use crate::{ProgramKernel, ProgramModule};
use cuda_embed_source::cparams::{parse_list, Param};
use cuda_embed_source::ctypes::{builtin, RustPath};

impl ProgramModule {
    /// The kernel named `name` (as for [`kernel`](ProgramModule::kernel)), taken with its C
    /// parameter list, as MXNet's `get_kernel(name, signature)` does: every launch then also
    /// checks each argument against it before the driver is called — a value or a buffer, the
    /// element type a pointer points to, that a buffer the kernel may write (a pointer to
    /// non-`const`) is passed with [`Arg::slice_mut`], and a value's type — and a mismatch is an
    /// [`Error::Signature`] naming the parameter.
    ///
    /// The signature is read by the same reader as `cuda_kernel!` reads kernels with, and types
    /// are mapped by the same table (`float` is `f32`, `size_t` is `usize` or `u64`, `__half` is
    /// [`f16`](crate::f16), `float4` is [`Float4`](crate::Float4), ...). Names the table does not
    /// know (typedefs, structs) are checked for being a value or a buffer, and for mutability,
    /// only. A signature that cannot be a kernel's (a reference parameter), or whose parameter
    /// count or sizes differ from the compiled kernel's (CUDA 12.4+ drivers report them), is an
    /// error here.
    ///
    /// ```no_run
    /// use cuda_embed_runtime::{Arg, Program};
    /// let ctx = cuda_embed_runtime::context(0)?;
    /// let module = Program::new(r#"extern "C" __global__ void axpy(const float* x, float* y, float a) {
    ///     y[threadIdx.x] += a * x[threadIdx.x]; }"#).load(&ctx)?;
    /// let axpy = module.kernel_with_signature("axpy", "const float* x, float* y, float alpha")?;
    /// let stream = ctx.default_stream();
    /// let x = stream.clone_htod(&[1.0f32; 32])?;
    /// let y = stream.alloc_zeros::<f32>(32)?;
    /// let a = 2.0f32;
    /// let cfg = cuda_embed_runtime::LaunchConfig::for_num_elems(32);
    /// // `y` passed shared: the kernel writes it. An Error, nothing launched.
    /// let err = unsafe { axpy.launch(&stream, cfg, &mut [Arg::slice(&x), Arg::slice(&y), Arg::value(&a)]) };
    /// assert!(err.unwrap_err().to_string().contains("parameter `y`"));
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn kernel_with_signature(&self, name: &str, signature: &str) -> Result<ProgramKernel> {
        let mut k = self.kernel(name)?;
        let wrong = |detail: String| Error::Signature {
            kernel: name.to_string(),
            origin: format!("program `{}`", self.name()),
            detail: format!("signature `{signature}`: {detail}"),
        };
        let sig = parse(signature).map_err(wrong)?;
        if let Some(params) = &k.params {
            if params.len() != sig.len() {
                return Err(wrong(format!(
                    "it has {} parameter(s) but the compiled kernel takes {}",
                    sig.len(),
                    params.len()
                )));
            }
            for (e, (_, size)) in sig.iter().zip(params.iter()) {
                if let Some(want) = e.size {
                    if want != *size {
                        return Err(wrong(format!(
                            "parameter `{}` (`{}`) is {want} bytes but the compiled kernel's is {size}",
                            e.name, e.text
                        )));
                    }
                }
            }
        }
        k.signature = Some(sig.into_boxed_slice());
        Ok(k)
    }
}

impl ProgramModule {
    /// The kernel named `name` (an `extern "C"` kernel's name, or a C++ kernel's qualified name,
    /// `ns::k`), checked by type as with
    /// [`kernel_with_signature`](ProgramModule::kernel_with_signature), with the signature read
    /// from the program's own source by the `cuda_kernel!` reader (the program's `-D` options and
    /// in-memory headers applied, function-like macros expanded). A template instance's signature
    /// cannot be read this way: give it to `kernel_with_signature`.
    ///
    /// ```no_run
    /// use cuda_embed_runtime::{Arg, Program};
    /// let ctx = cuda_embed_runtime::context(0)?;
    /// let module = Program::new(r#"extern "C" __global__ void fill(float* y, float v) { y[threadIdx.x] = v; }"#).load(&ctx)?;
    /// let fill = module.kernel_checked("fill")?; // checked against `float* y, float v`
    /// # Ok::<(), cuda_embed_runtime::Error>(())
    /// ```
    pub fn kernel_checked(&self, name: &str) -> Result<ProgramKernel> {
        let m = &self.inner;
        let headers: Vec<&str> = m.headers.iter().map(String::as_str).collect();
        let defines = cuda_embed_source::options::defines(&m.options);
        let wrong = |detail: String| Error::Signature {
            kernel: name.to_string(),
            origin: format!("program `{}`", self.name()),
            detail,
        };
        let parsed = cuda_embed_source::signature::parse_with(&m.source, &defines, &headers)
            .map_err(|e| wrong(format!("the program's source cannot be read for its signature: {}", e.0)))?;
        let found: Vec<_> = parsed.kernels.iter().filter(|k| k.qualified_name() == name || k.name == name).collect();
        match found[..] {
            [k] => self.kernel_with_signature(name, &k.signature),
            [] if parsed.templates.iter().any(|t| name.starts_with(&format!("{}<", t.qualified_name()))) => Err(wrong(
                "the signature of a template instance is not read from the source: take it with \
                           `kernel_with_signature(name, \"...\")`"
                    .into(),
            )),
            [] => self.kernel(name).and_then(|_| {
                Err(wrong(
                    "no declaration of it was found in the program's source (made by a macro the reader \
                           does not expand?): take it with `kernel_with_signature(name, \"...\")`"
                        .into(),
                ))
            }),
            _ => Err(wrong(
                "the source declares it more than once (overloads): take it with `kernel_with_signature`".into(),
            )),
        }
    }
}

/// What one parameter of a signature accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expected {
    /// The parameter's name.
    pub(crate) name: String,
    /// Its declaration as written.
    pub(crate) text: String,
    pub(crate) kind: ParamKind,
    /// Its byte size, when the signature says (pointers, known value types).
    pub(crate) size: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParamKind {
    /// A value; `Some(rust type)` when the table knows the C++ type.
    Value(Option<&'static str>),
    /// A pointer to device memory: its element's Rust type when known, and whether the kernel
    /// may write through it.
    Buffer { elem: Option<&'static str>, writes: bool },
    /// A pointer to pointers: a raw device address, not checked.
    Raw,
}

/// Reads `signature` (`const float* x, float* y, float alpha`). References and `void` values
/// cannot be kernel parameters.
pub(crate) fn parse(signature: &str) -> Result<Vec<Expected>, String> {
    parse_list(signature).into_iter().map(expected).collect()
}

fn expected(p: Param) -> Result<Expected, String> {
    if p.reference {
        return Err(format!(
            "parameter `{}` (`{}`) is a reference: a kernel cannot take one from the host",
            p.name, p.text
        ));
    }
    let known = builtin(&p.base);
    let rust = known.map(|b| match b.rust {
        RustPath::Primitive(n) | RustPath::Crate(n) => n,
    });
    let kind = match p.pointer_depth {
        0 if p.base == "void" || p.base.is_empty() => {
            return Err(format!("parameter `{}` (`{}`) has no type a kernel can take", p.name, p.text))
        }
        0 => ParamKind::Value(rust),
        1 => ParamKind::Buffer { elem: rust, writes: !p.pointee_const },
        _ => ParamKind::Raw,
    };
    let size = match kind {
        ParamKind::Value(_) => known.map(|b| b.size as usize),
        ParamKind::Buffer { .. } | ParamKind::Raw => Some(8),
    };
    Ok(Expected { name: p.name, text: p.text, kind, size })
}

/// The Rust type name of `type_name` for messages and comparison: primitives as they are, the
/// runtime's own CUDA types by their name in this crate (`f16`, `Float4`), anything else as
/// `std::any::type_name` spells it.
fn short(type_name: &'static str) -> &'static str {
    if RUNTIME_TYPES.iter().any(|(_, full)| *full == type_name) {
        type_name.rsplit("::").next().unwrap_or(type_name)
    } else {
        type_name
    }
}

/// Whether a value or element of Rust type `given` (its `type_name`) is what the table's `want`
/// names. `usize`/`u64` and `isize`/`i64` are the same C type on LP64.
fn same(want: &str, given: &'static str) -> bool {
    let alias = |t: &str| match t {
        "usize" => "u64".to_string(),
        "isize" => "i64".to_string(),
        other => other.to_string(),
    };
    alias(want) == alias(short(given))
}

/// How the caller passes each kind of argument, for the fixes the messages suggest.
pub(crate) struct Ctors {
    value: &'static str,
    read: &'static str,
    write: &'static str,
}

/// The arguments of a launch ([`Arg`]).
pub(crate) const LAUNCH: Ctors = Ctors { value: "Arg::value", read: "Arg::slice", write: "Arg::slice_mut" };
/// The arguments of a graph node ([`GraphArg`](crate::graph::GraphArg)).
pub(crate) const NODE: Ctors = Ctors { value: "GraphArg::value", read: "GraphArg::read", write: "GraphArg::write" };

/// Why the arguments do not fit the signature (the first mismatch), naming the parameter.
pub(crate) fn check(sig: &[Expected], args: &[Arg<'_>]) -> Result<(), String> {
    let given: Vec<(bool, Elem)> = args.iter().map(|a| (matches!(a.kind, ArgKind::Buffer { .. }), a.elem)).collect();
    check_given(sig, &given, &LAUNCH)
}

/// [`check`] of arguments given as (whether it is a buffer, what it holds), passed the way
/// `ctors` names.
pub(crate) fn check_given(sig: &[Expected], given: &[(bool, Elem)], ctors: &Ctors) -> Result<(), String> {
    if sig.len() != given.len() {
        return Err(format!(
            "the signature has {} parameter(s) ({}) but {} argument(s) were given",
            sig.len(),
            sig.iter().map(|e| e.text.as_str()).collect::<Vec<_>>().join(", "),
            given.len()
        ));
    }
    for (e, &(buffer, elem)) in sig.iter().zip(given) {
        let at = format!("parameter `{}` (`{}`)", e.name, e.text);
        match &e.kind {
            ParamKind::Raw => {}
            ParamKind::Value(want) => {
                if buffer {
                    return Err(format!("{at} is a value but a buffer was given: pass it with `{}`", ctors.value));
                }
                if let Some(want) = want {
                    if !same(want, elem.rust) {
                        return Err(format!("{at} takes `{want}` but the argument is `{}`", short(elem.rust)));
                    }
                }
            }
            ParamKind::Buffer { elem: want_elem, writes } => {
                if !buffer {
                    return Err(format!(
                        "{at} is a pointer but a value of `{}` was given: pass a device buffer with `{}`",
                        short(elem.rust),
                        if *writes { ctors.write } else { ctors.read }
                    ));
                }
                if *writes && !elem.writable {
                    return Err(format!(
                        "the kernel may write through {at} but the buffer is passed read-only (`{}`): pass it \
                         with `{}`, or declare the parameter `const`",
                        ctors.read, ctors.write
                    ));
                }
                if let Some(want) = want_elem {
                    if !same(want, elem.rust) {
                        return Err(format!(
                            "{at} points to `{want}` elements but the buffer holds `{}`",
                            short(elem.rust)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

macro_rules! runtime_types {
    ($($t:ident),* $(,)?) => {
        /// The runtime's CUDA types by the name the type table gives them, with their
        /// `type_name`.
        static RUNTIME_TYPES: std::sync::LazyLock<Vec<(&'static str, &'static str)>> = std::sync::LazyLock::new(|| {
            vec![$((stringify!($t), std::any::type_name::<crate::$t>())),*]
        });
    };
}

runtime_types!(
    f16,
    bf16,
    Bf162,
    Half2,
    F8E4M3,
    F8E5M2,
    Complex32,
    Complex64,
    TextureObject,
    SurfaceObject,
    ConditionalHandle,
    RawTensorMap,
    Char1,
    Char2,
    Char3,
    Char4,
    UChar1,
    UChar2,
    UChar3,
    UChar4,
    Short1,
    Short2,
    Short3,
    Short4,
    UShort1,
    UShort2,
    UShort3,
    UShort4,
    Int1,
    Int2,
    Int3,
    Int4,
    UInt1,
    UInt2,
    UInt3,
    UInt4,
    Long1,
    Long2,
    Long3,
    Long4,
    ULong1,
    ULong2,
    ULong3,
    ULong4,
    LongLong1,
    LongLong2,
    LongLong3,
    LongLong4,
    ULongLong1,
    ULongLong2,
    ULongLong3,
    ULongLong4,
    Float1,
    Float2,
    Float3,
    Float4,
    Double1,
    Double2,
    Double3,
    Double4,
    CudaExtent,
    CudaPitchedPtr,
    CudaPos,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{f16, Float4};

    /// Stand-ins for device buffers: anything `DevicePtr`/`DevicePtrMut` is not needed to check.
    fn check_with(sig: &str, args: &[Arg<'_>]) -> Result<(), String> {
        check(&parse(sig).unwrap(), args)
    }

    #[test]
    fn reads_signatures() {
        let s = parse("const float* __restrict__ x, float* y, float alpha, size_t n, void** raw, Params p").unwrap();
        let kinds: Vec<&ParamKind> = s.iter().map(|e| &e.kind).collect();
        assert_eq!(
            kinds,
            [
                &ParamKind::Buffer { elem: Some("f32"), writes: false },
                &ParamKind::Buffer { elem: Some("f32"), writes: true },
                &ParamKind::Value(Some("f32")),
                &ParamKind::Value(Some("usize")),
                &ParamKind::Raw,
                &ParamKind::Value(None),
            ]
        );
        assert_eq!(s[1].name, "y");
        assert!(parse("float& r").unwrap_err().contains("reference"));
        assert!(parse("").unwrap().is_empty() && parse("void").unwrap().is_empty());
    }

    #[test]
    fn each_mismatch_kind_names_the_parameter() {
        let sig = "const float* x, float* y, float alpha, int n";
        let (alpha, n) = (2.0f32, 4i32);
        let (alpha64, n64) = (2.0f64, 4u64);
        let (i, f) = (Arg::test_buffer::<i32>(false), Arg::test_buffer::<f32>(false));
        let ok = [Arg::test_buffer::<f32>(false), Arg::test_buffer::<f32>(true), Arg::value(&alpha), Arg::value(&n)];
        assert_eq!(check_with(sig, &ok), Ok(()));
        let cases: Vec<(Vec<Arg<'_>>, &str)> = vec![
            (
                vec![i, Arg::test_buffer::<f32>(true), Arg::value(&alpha), Arg::value(&n)],
                "parameter `x` (`const float* x`) points to `f32` elements but the buffer holds `i32`",
            ),
            (
                vec![Arg::test_buffer::<f32>(false), f, Arg::value(&alpha), Arg::value(&n)],
                "the kernel may write through parameter `y` (`float* y`) but the buffer is passed read-only (`Arg::slice`)",
            ),
            (
                vec![
                    Arg::test_buffer::<f32>(false),
                    Arg::test_buffer::<f32>(true),
                    Arg::value(&alpha64),
                    Arg::value(&n),
                ],
                "parameter `alpha` (`float alpha`) takes `f32` but the argument is `f64`",
            ),
            (
                vec![
                    Arg::test_buffer::<f32>(false),
                    Arg::test_buffer::<f32>(true),
                    Arg::value(&alpha),
                    Arg::value(&n64),
                ],
                "parameter `n` (`int n`) takes `i32` but the argument is `u64`",
            ),
            (
                vec![Arg::value(&alpha), Arg::test_buffer::<f32>(true), Arg::value(&alpha), Arg::value(&n)],
                "parameter `x` (`const float* x`) is a pointer but a value of `f32` was given",
            ),
            (
                vec![
                    Arg::test_buffer::<f32>(false),
                    Arg::test_buffer::<f32>(true),
                    Arg::test_buffer::<f32>(false),
                    Arg::value(&n),
                ],
                "parameter `alpha` (`float alpha`) is a value but a buffer was given",
            ),
            (vec![Arg::value(&n)], "the signature has 4 parameter(s)"),
        ];
        for (args, want) in cases {
            let e = check_with(sig, &args).unwrap_err();
            assert!(e.contains(want), "{e}\n  should contain: {want}");
        }
    }

    #[test]
    fn signatures_read_from_a_program_source() {
        let src =
            "#define K(T, s) extern \"C\" __global__ void fill_##s(T* y, T v, int n) {}\nK(float, f32)\nK(double, f64)";
        let parsed = cuda_embed_source::signature::parse_with(src, &[], &[]).unwrap();
        let k = parsed.kernels.iter().find(|k| k.name == "fill_f64").unwrap();
        let sig = parse(&k.signature).unwrap();
        let (v, n) = (1.0f32, 3i32);
        let e = check(&sig, &[Arg::test_buffer::<f64>(true), Arg::value(&v), Arg::value(&n)]).unwrap_err();
        assert!(e.contains("parameter `v` (`double v`) takes `f64` but the argument is `f32`"), "{e}");
    }

    #[test]
    fn library_types_and_aliases() {
        let (h, v, len) = (f16::from_f32(1.0), Float4 { x: 0.0, y: 0.0, z: 0.0, w: 0.0 }, 3usize);
        assert_eq!(
            check_with(
                "__half h, float4 v, unsigned long long len",
                &[Arg::value(&h), Arg::value(&v), Arg::value(&len)]
            ),
            Ok(())
        );
        let e = check_with("__half h", &[Arg::value(&0u16)]).unwrap_err();
        assert!(e.contains("takes `f16` but the argument is `u16`"), "{e}");
        // A typedef the table does not know: kind and mutability only.
        assert_eq!(check_with("real* x, real a", &[Arg::test_buffer::<f64>(true), Arg::value(&1.0f64)]), Ok(()));
        let e = check_with("real* x", &[Arg::test_buffer::<f64>(false)]).unwrap_err();
        assert!(e.contains("passed read-only"), "{e}");
    }
}

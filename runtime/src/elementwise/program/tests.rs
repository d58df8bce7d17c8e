//! CPU tests of [`ElementwiseProgram`](super::ElementwiseProgram): definitions, the argument
//! checks (against stand-in buffers that are never dereferenced) and the generated source
//! through NVRTC when the library is available.

use super::*;
use cudarc::driver::{DevicePtr, DevicePtrMut, DeviceSlice, SyncOnDrop};
use std::marker::PhantomData;

/// A buffer of `len` elements that only answers its length: the checks never take its pointer.
struct Fake<T>(usize, PhantomData<T>);

impl<T> DeviceSlice<T> for Fake<T> {
    fn len(&self) -> usize {
        self.0
    }
    fn stream(&self) -> &Arc<CudaStream> {
        unreachable!("the argument checks never ask for the stream")
    }
}
impl<T> DevicePtr<T> for Fake<T> {
    fn device_ptr<'a>(&'a self, _: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        unreachable!("the argument checks never take the pointer")
    }
}
impl<T> DevicePtrMut<T> for Fake<T> {
    fn device_ptr_mut<'a>(&'a mut self, _: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        unreachable!("the argument checks never take the pointer")
    }
}

// SAFETY: test arguments are only checked, never launched (`device_ptr` is unreachable).
unsafe impl<T> crate::DeviceBuffer<T> for Fake<T> {}
// SAFETY: as above.
unsafe impl<T> crate::DeviceBufferMut<T> for Fake<T> {}

fn fake<T>(len: usize) -> Fake<T> {
    Fake(len, PhantomData)
}

/// The checks of one instance, as `build` sets them up (sizes from the table).
fn sig(inputs: &str, outputs: &str, types: &str) -> Sig {
    let p = ElementwiseProgram::new("k", inputs, outputs, "/* op */ ;").unwrap();
    let inst = p.instance(types).unwrap();
    let params: Vec<ParamInfo> = p
        .lists
        .all()
        .map(|q| {
            let cuda = inst.resolve(&q.ty).to_string();
            let rust = rust_type(&cuda);
            ParamInfo {
                name: q.name.clone(),
                kind: q.kind,
                role: q.role,
                size: rust.map(|r| r.1),
                rust: rust.map(|r| r.0),
                cuda,
            }
        })
        .collect();
    Sig { kernel: "k".into(), origin: origin_of("k"), params, width: 4 }
}

fn message(e: Error) -> String {
    e.to_string()
}

#[test]
fn definitions() {
    let e = ElementwiseProgram::new("k", "T x", "T x", "x = 1").unwrap_err();
    assert!(matches!(e, Error::Definition { .. }), "{e:?}");
    assert!(message(e).contains("both an input and an output"));
    let e = ElementwiseProgram::new("k", "float x", "scalar float y", "y = x").unwrap_err();
    assert!(message(e).contains("cannot be a scalar"));
    let e = ElementwiseProgram::new("k", "float x", "float y", "  ").unwrap_err();
    assert!(message(e).contains("operation is empty"));
    let e = ElementwiseProgram::new("1k", "float x", "float y", "y = x").unwrap_err();
    assert!(message(e).contains("not a C identifier"));
    let e = ElementwiseProgram::new("delete", "float x", "float y", "y = x").unwrap_err();
    assert!(message(e).contains("is a C++ keyword"));
    let e = ElementwiseProgram::new("k", "float x", "", "y = x").unwrap_err();
    assert!(message(e).contains("at least one output"));
    let p = ElementwiseProgram::new("k", "T x, scalar U a", "T y", "y = x * a").unwrap();
    assert_eq!(p.placeholders(), ["T", "U"]);
    let e = p.program("float").unwrap_err();
    assert!(message(e).contains("elementwise program `k`"));
    let e = p.program("T=float, V=int").unwrap_err();
    assert!(message(e).contains("`V`"), "names the unknown placeholder");
    let q = ElementwiseProgram::new("k", "float x", "float y", "y = x").unwrap();
    assert!(q.program("").is_ok());
    assert!(message(q.program("float").unwrap_err()).contains("no parameter uses a placeholder"));
}

#[test]
fn argument_kinds_and_types() {
    let s = sig("T x, scalar T a", "T y", "float");
    let (x, mut y, a) = (fake::<f32>(10), fake::<f32>(10), 2.0f32);
    assert_eq!(s.check(None, &[Arg::slice(&x), Arg::value(&a), Arg::slice_mut(&mut y)]).unwrap(), 10);
    // Wrong element type of an input.
    let xd = fake::<f64>(10);
    let e = s.check(None, &[Arg::slice(&xd), Arg::value(&a), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(matches!(&e, Error::Argument { parameter, .. } if parameter == "x"), "{e:?}");
    assert!(message(e).contains("CUDA type is `float`, so its elements must be `f32`, but `f64`"));
    // Wrong scalar type.
    let ad = 2.0f64;
    let e = s.check(None, &[Arg::slice(&x), Arg::value(&ad), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(matches!(&e, Error::Argument { parameter, .. } if parameter == "a"), "{e:?}");
    // An output passed read-only.
    let y2 = fake::<f32>(10);
    let e = s.check(None, &[Arg::slice(&x), Arg::value(&a), Arg::slice(&y2)]).unwrap_err();
    assert!(matches!(&e, Error::Argument { parameter, .. } if parameter == "y"), "{e:?}");
    assert!(message(e).contains("output array: pass `Arg::slice_mut"));
    // A value for an array, a buffer for a scalar.
    let e = s.check(None, &[Arg::value(&a), Arg::value(&a), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(message(e).contains("argument `x`: is an input array"));
    let e = s.check(None, &[Arg::slice(&x), Arg::slice(&x), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(message(e).contains("argument `a`: is a scalar"));
    // Count.
    let e = s.check(None, &[Arg::slice(&x)]).unwrap_err();
    assert!(message(e).contains("1 arguments given for 3 parameters"));
}

#[test]
fn lengths() {
    let s = sig("T x, U w", "T y", "T=double, U=int");
    let (x, w, mut y) = (fake::<f64>(5), fake::<i32>(6), fake::<f64>(5));
    let e = s.check(None, &[Arg::slice(&x), Arg::slice(&w), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(matches!(e, Error::Length { .. }));
    let m = message(e);
    assert!(m.contains("`x` has 5, `w` has 6, `y` has 5"), "{m}");
    let w = fake::<i32>(5);
    assert_eq!(s.check(None, &[Arg::slice(&x), Arg::slice(&w), Arg::slice_mut(&mut y)]).unwrap(), 5);
    let e = s.check(Some(4), &[Arg::slice(&x), Arg::slice(&w), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(message(e).contains("must have the 4 elements asked for"));
    // No arrays: n must be given; raw arrays are not length-checked.
    let r = sig("scalar long long base", "raw long long out", "");
    let (base, mut out) = (1i64, fake::<i64>(3));
    let e = r.check(None, &[Arg::value(&base), Arg::slice_mut(&mut out)]).unwrap_err();
    assert!(message(e).contains("use `launch_n`"));
    assert_eq!(r.check(Some(3), &[Arg::value(&base), Arg::slice_mut(&mut out)]).unwrap(), 3);
    assert!(message(r.refuse_raw().unwrap_err()).contains("argument `out`: is `raw`"));
    // A type outside the table is checked by size.
    let mut st = sig("float x", "struct P p", "");
    st.params[1].size = Some(8);
    let (x, mut p8, mut p4) = (fake::<f32>(2), fake::<[f32; 2]>(2), fake::<f32>(2));
    assert!(st.check(None, &[Arg::slice(&x), Arg::slice_mut(&mut p8)]).is_ok());
    let e = st.check(None, &[Arg::slice(&x), Arg::slice_mut(&mut p4)]).unwrap_err();
    assert!(message(e).contains("must be a 8-byte type"));
}

/// The generated kernel's own names (the raw pointers behind the arrays, the length) are not
/// reachable from a safe program's code: naming them, directly or through a preamble macro, is
/// an `Error::Definition` naming the snippet and the name.
#[test]
fn the_generated_kernels_names_are_refused() {
    let e = ElementwiseProgram::new("k", "float x", "float y", "_ce_p_y[i + 1000000] = x").unwrap_err();
    let m = message(e);
    assert!(m.contains("the operation names `_ce_p_y`") && m.contains("`_ce_`"), "{m}");
    let p =
        ElementwiseProgram::new("k", "float x", "float y", "P[i + 1000000] = x").unwrap().preamble("#define P _ce_p_y");
    let m = message(p.program("").unwrap_err());
    assert!(m.contains("the operation names `_ce_p_y`"), "{m}");
    let p =
        ElementwiseProgram::new("k", "float x", "float y", "y = x").unwrap().loop_prep("const long long m = _ce_n;");
    assert!(message(p.program("").unwrap_err()).contains("the loop_prep names `_ce_n`"));
    // In a comment it names nothing.
    assert!(ElementwiseProgram::new("k", "float x", "float y", "y = x; // not _ce_p_y").unwrap().program("").is_ok());
}

/// The defines (`define`, `-D`/`--define-macro` options), the in-memory headers and the
/// preamble's own macros are code before the generated kernel too: they may not redefine a name
/// its types rest on (`define("float", "double")` compiled a kernel reading 8-byte elements from
/// buffers checked as 4-byte ones) nor reach the generated names through a macro.
#[test]
fn defines_and_headers_cannot_redefine_or_reach_the_generated_names() {
    let base = || ElementwiseProgram::new("k", "float x", "float y", "y = x").unwrap();
    let refused = |p: ElementwiseProgram, what: &str| {
        let m = message(p.program("").unwrap_err());
        assert!(m.contains(what), "{what}: {m}");
    };
    refused(base().define("float", "double"), "the define of `float`: the macro `float` redefines a C++ keyword");
    refused(base().option("-Dint32_t=long"), "the define of `int32_t`");
    refused(base().option("--define-macro=unsigned=long"), "the define of `unsigned`");
    refused(base().option("-D").option("threadIdx=blockIdx"), "a CUDA built-in variable");
    refused(base().define("_ce_n", 1), "the define of `_ce_n`");
    refused(base().header("t.cuh", "#define double float"), "the header `t.cuh`: the macro `double`");
    refused(base().preamble("#define float double"), "the preamble: the macro `float`");
    // A define or a header that makes a name expand to a generated one.
    let reach = || ElementwiseProgram::new("k", "float x", "float y", "P[i + 1000000] = x").unwrap();
    refused(reach().define("P", "_ce_p_y"), "the macro `P` expands to `_ce_p_y`");
    refused(reach().header("p.cuh", "#define P _ce_p_y").preamble("#include \"p.cuh\""), "_ce_p_y");
    // Pasted in a header's function-like macro, used in the operation.
    let pasted = ElementwiseProgram::new("k", "float x", "float y", "AT(y)[i + 1000000] = x")
        .unwrap()
        .header("at.cuh", "#define CAT(a, b) a##b\n#define AT(v) CAT(_c, e_p_##v)");
    refused(pasted, "names `_ce_p_y`");
    // Ordinary defines and headers are fine.
    let ok = base()
        .define("SCALE", "2.0f")
        .option("-DFAST")
        .header("s.cuh", "#define TWICE(v) (2 * (v))\n__device__ float half_of(float v) { return v / 2; }")
        .preamble("#include \"s.cuh\"");
    assert!(ok.program("").is_ok());
}

/// Without the driver's parameter sizes (drivers before CUDA 12.4) a parameter whose type has no
/// fixed Rust twin cannot be checked: building it is an error naming the parameter and the
/// driver, never a kernel whose launches skip the check.
#[test]
fn unknown_types_without_parameter_info_are_refused() {
    let p = ElementwiseProgram::new("k", "float x", "struct P p", "/* op */ ;").unwrap();
    let inst = p.instance("").unwrap();
    let e = p.param_table(&inst, None, "k", 12020).unwrap_err();
    let m = message(e);
    assert!(m.contains("parameter `p`") && m.contains("`struct P`") && m.contains("CUDA 12.2"), "{m}");
    assert!(m.contains("12.4"), "{m}");
    // With the compiled sizes the struct is checked by size; types of the table need no sizes.
    let table = p.param_table(&inst, Some(&[(0, 4), (8, 8)]), "k", 12040).unwrap();
    assert_eq!((table[1].size, table[1].rust), (Some(8), None));
    let q = ElementwiseProgram::new("k", "T x", "T y", "y = x").unwrap();
    let table = q.param_table(&q.instance("double").unwrap(), None, "k", 12020).unwrap();
    assert_eq!(table[0].size, Some(8));
}

/// The generated source of several shapes compiles with NVRTC (skipped with a note when the
/// library cannot be loaded).
#[test]
fn generated_source_compiles_with_nvrtc() {
    let cases = [
        (ElementwiseProgram::new("sq", "T x, T y", "T z", "z = (x - y) * (x - y)").unwrap(), "double"),
        (ElementwiseProgram::new("cv", "T x, scalar U s", "U y", "y = (U)x * s").unwrap(), "T=int, U=float"),
        (
            ElementwiseProgram::new("hx", "T x, scalar T a", "T y", "y = a * x + y")
                .unwrap()
                .preamble("#include <cuda_fp16.h>"),
            "__half",
        ),
        // CuPy's type_preamble: the placeholders are typedefs before the preamble.
        (
            ElementwiseProgram::new("tp", "T x, scalar U s", "T y", "y = scale(x, s)")
                .unwrap()
                .preamble("__device__ T scale(T v, U s) { return v * (T)s; }"),
            "T=double, U=int",
        ),
        (
            ElementwiseProgram::new("rv", "raw float x", "float y", "y = x[x.size() - 1 - i]")
                .unwrap()
                .loop_prep("const float zero = 0.0f;")
                .after_loop("(void)zero;"),
            "",
        ),
        (
            ElementwiseProgram::new("st", "scalar float dt", "struct P p", "p.pos += p.vel * dt")
                .unwrap()
                .preamble("struct P { float pos; float vel; };"),
            "",
        ),
    ];
    for (p, types) in &cases {
        let dir = std::env::temp_dir().join(format!("cuda-embed-ew-test-{}", std::process::id()));
        match p.program(types).unwrap().cache_dir(&dir).compile(90) {
            Ok(c) => assert_eq!(
                c.symbols.len(),
                2 + cuda_embed_source::ndarray::RANKS.len(),
                "the kernel, its types carrier and the strided kernels of `launch_nd`"
            ),
            Err(e) if e.to_string().contains("the NVRTC library") => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("{types}: {e}\n{}", p.source()),
        }
    }
    // A compile error names the program and quotes NVRTC.
    let bad = ElementwiseProgram::new("bad", "float x", "float y", "y = xx").unwrap();
    let e = bad.program("").unwrap().compile(90).unwrap_err();
    assert!(e.to_string().contains("identifier \"xx\" is undefined"), "{e}");
}

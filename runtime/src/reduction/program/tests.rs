//! CPU tests of run-time reductions: argument checks, definition errors, and (with NVRTC) that
//! the generated source compiles and is cached.

use super::*;
use crate::args::typed::CudaType;

fn lists(inputs: &str, outputs: &str) -> ParamLists {
    ParamLists::parse(inputs, outputs).unwrap()
}

fn arr<T: CudaType>(len: usize) -> ArgInfo {
    ArgInfo { names: T::NAMES, len: Some(len), kind: TypedArgKind::Input }
}

fn out<T: CudaType>(len: usize) -> ArgInfo {
    ArgInfo { names: T::NAMES, len: Some(len), kind: TypedArgKind::Output }
}

fn scalar<T: CudaType>() -> ArgInfo {
    ArgInfo { names: T::NAMES, len: None, kind: TypedArgKind::Scalar }
}

#[test]
fn selects_the_instance_the_element_types_match() {
    let l = lists("T x, T w", "T y");
    let inst = l.instances(&["float", "double"]).unwrap();
    assert_eq!(select(&l, &inst, &[arr::<f32>(4), arr::<f32>(4), out::<f32>(1)]), Ok(0));
    assert_eq!(select(&l, &inst, &[arr::<f64>(4), arr::<f64>(4), out::<f64>(1)]), Ok(1));
    let e = select(&l, &inst, &[arr::<f64>(4), arr::<f32>(4), out::<f64>(1)]).unwrap_err();
    assert!(e.contains("no instance") && e.contains("`w`: float") && e.contains("\"T=double\""), "{e}");
    let e = select(&l, &inst, &[arr::<i32>(4), arr::<i32>(4), out::<i32>(1)]).unwrap_err();
    assert!(e.contains("`x`: int"), "{e}");
}

#[test]
fn concrete_types_and_spellings() {
    let l = lists("unsigned int x, scalar long long s", "unsigned long long y");
    let inst = l.instances::<&str>(&[]).unwrap();
    assert_eq!(select(&l, &inst, &[arr::<u32>(3), scalar::<i64>(), out::<u64>(1)]), Ok(0));
    let e = select(&l, &inst, &[arr::<i32>(3), scalar::<i64>(), out::<u64>(1)]).unwrap_err();
    assert!(e.contains("the parameters are `x`: unsigned int"), "{e}");
}

#[test]
fn argument_count_and_kind() {
    let l = lists("float x, scalar float s", "float y");
    let inst = l.instances::<&str>(&[]).unwrap();
    let e = select(&l, &inst, &[arr::<f32>(3), out::<f32>(1)]).unwrap_err();
    assert!(e.contains("2 arguments given, the reduction takes 3 (x, s, y"), "{e}");
    let e = select(&l, &inst, &[arr::<f32>(3), arr::<f32>(3), out::<f32>(1)]).unwrap_err();
    assert!(e.contains("argument `s` must be a scalar"), "{e}");
    let e = select(&l, &inst, &[arr::<f32>(3), scalar::<f32>(), arr::<f32>(1)]).unwrap_err();
    assert!(e.contains("argument `y` must be an output array"), "{e}");
}

#[test]
fn lengths() {
    let l = lists("float x, float w, scalar float s", "float y, int c");
    let args = |nx, nw, ny, nc| [arr::<f32>(nx), arr::<f32>(nw), scalar::<f32>(), out::<f32>(ny), out::<i32>(nc)];
    assert_eq!(shape_of(&l, &args(12, 12, 1, 1), Shape::Full, 0), Ok((1, 12, 1)));
    assert_eq!(shape_of(&l, &args(12, 12, 3, 3), Shape::Rows, 4), Ok((3, 4, 3)));
    assert_eq!(shape_of(&l, &args(12, 12, 4, 4), Shape::Cols, 4), Ok((3, 4, 4)));
    // Empty: the full reduction still writes the identity; zero columns give one per output row.
    assert_eq!(shape_of(&l, &args(0, 0, 1, 1), Shape::Full, 0), Ok((1, 0, 1)));
    assert_eq!(shape_of(&l, &args(0, 0, 5, 5), Shape::Rows, 0), Ok((5, 0, 5)));
    assert_eq!(shape_of(&l, &args(0, 0, 0, 0), Shape::Cols, 0), Ok((0, 0, 0)));
    let e = shape_of(&l, &args(12, 11, 1, 1), Shape::Full, 0).unwrap_err();
    assert_eq!(e, "input `w` has 11 elements but `x` has 12");
    let e = shape_of(&l, &args(12, 12, 1, 1), Shape::Rows, 5).unwrap_err();
    assert_eq!(e, "`x` has 12 elements, not a multiple of `cols` = 5");
    let e = shape_of(&l, &args(12, 12, 3, 2), Shape::Rows, 4).unwrap_err();
    assert_eq!(e, "output `c` has 2 elements but the reduction gives 3");
    let e = shape_of(&l, &args(12, 12, 1, 1), Shape::Cols, 0).unwrap_err();
    assert_eq!(e, "`cols` is 0 but `x` has 12 elements");
}

fn sum_of_squares() -> ReductionProgram {
    ReductionProgram::new("sum_sq", "T x", "T y").map("x * x").reduce("a + b").identity("0").types(["float", "double"])
}

#[test]
fn definition_errors() {
    let err = |p: ReductionProgram| match p.source() {
        Err(Error::Compile { cause, origin, .. }) => format!("{origin}: {cause}"),
        other => panic!("expected a definition error, got {other:?}"),
    };
    let e = err(ReductionProgram::new("r", "float x", "float y").reduce("a + b").identity("0"));
    assert!(e.starts_with("reduction program `r`: `map` is not set"), "{e}");
    let e = err(ReductionProgram::new("r", "raw float x", "float y").map("x[i]").reduce("a + b").identity("0"));
    assert!(e.contains("`raw float x`"), "{e}");
    let e = err(ReductionProgram::new("r", "scalar float s", "float y").map("s").reduce("a + b").identity("0"));
    assert!(e.contains("at least one array input"), "{e}");
    let e = err(ReductionProgram::new("r", "T x", "T y").map("x").reduce("a + b").identity("0"));
    assert!(e.contains("placeholder `T` has no instances to build"), "{e}");
    let e = err(ReductionProgram::new("r", "float x", "float x").map("x").reduce("a + b").identity("0"));
    assert!(e.contains("both an input and an output"), "{e}");
    let e = err(ReductionProgram::new("my-sum", "float x", "float y").map("x").reduce("a + b").identity("0"));
    assert!(e.contains("not a C identifier"), "{e}");
    let e = err(ReductionProgram::new("union", "float x", "float y").map("x").reduce("a + b").identity("0"));
    assert!(e.contains("`union` is a C++ keyword"), "{e}");
    let src = sum_of_squares().source().unwrap();
    assert!(src.contains("sum_sq_full") && src.contains("sum_sq_cols") && src.contains("x * x"));
    // A define or a preamble macro redefining a type name the element sizes rest on.
    let e = err(sum_of_squares().option("-Dfloat=double"));
    assert!(e.contains("the define of `float`: the macro `float` redefines a C++ keyword"), "{e}");
    let e = err(sum_of_squares().preamble("#define int64_t int"));
    assert!(e.contains("the preamble: the macro `int64_t` redefines a CUDA type name"), "{e}");
    assert!(sum_of_squares().option("-DSCALE=2").preamble("#define TWICE(v) (2 * (v))").source().is_ok());
}

fn cache(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cuda-embed-redprog-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The generated source compiles with NVRTC (placeholders, scalars, several outputs, a struct
/// `reduce_type`, half input, parameters named `O`/`R`/`V`), and the second compile is a disk-cache hit.
#[test]
fn nvrtc_compiles_and_caches() {
    if !crate::program::nvrtc::is_available() {
        eprintln!("skipped: no NVRTC library (run under scripts/with-cuda)");
        return;
    }
    let dir = cache("compile");
    let programs = [
        sum_of_squares(),
        ReductionProgram::new("scaled", "float x, scalar float s", "float y, int count")
            .map("x * s")
            .reduce("a + b")
            .identity("0")
            .post_map("y = a; count = (int)n"),
        ReductionProgram::new("argmax", "float x", "long long y")
            .preamble("struct ValIdx { float v; long long i; };")
            .reduce_type("ValIdx")
            .map("ValIdx{x, i}")
            .reduce("(a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b")
            .identity("ValIdx{-INFINITY, -1}")
            .post_map("y = a.i"),
        ReductionProgram::new("half_sum", "__half x", "float y")
            .map("__half2float(x)")
            .reduce("a + b")
            .identity("0.0f"),
        // CuPy's type_preamble: one instance, so the preamble may name `T`.
        ReductionProgram::new("typed_pre", "T x", "T y")
            .preamble("__device__ T square(T v) { return v * v; }")
            .map("square(x)")
            .reduce("a + b")
            .identity("0")
            .types(["double"]),
        ReductionProgram::new("dot", "T x, U w", "double y")
            .map("(double)x * (double)w")
            .reduce("a + b")
            .identity("0")
            .types(["T=float, U=int", "T=double, U=double"]),
        // Parameters named like the generated kernels' own names once were (`O`, `R`, `V`).
        ReductionProgram::new("named_like_locals", "float O, float R, scalar float V", "float y")
            .map("O * R + V")
            .reduce("a + b")
            .identity("0"),
    ];
    for p in &programs {
        let p = p.clone().cache_dir(&dir);
        let first = p.compile(90).unwrap_or_else(|e| panic!("{e}"));
        assert!(!first.cubin.is_empty());
        // The cubin reader gives every kernel's parameter count, so loading never probes the
        // driver past the last parameter (a failing call compute-sanitizer reports).
        let counts = cuda_embed_source::cubin::param_counts(&first.cubin)
            .unwrap_or_else(|| panic!("`{}`: the cubin reader could not read the kernels' parameter counts", p.name));
        for symbol in &first.symbols {
            assert!(cuda_embed_source::cubin::lookup(&counts, symbol).is_some(), "`{}`: no count for {symbol}", p.name);
        }
        // full, rows, cols and axes (ndarray) per instance.
        let want = if p.types.is_empty() { 0 } else { 4 * p.types.len() };
        assert_eq!(first.symbols.len(), want);
        let again = p.compile(90).unwrap();
        assert!(again.from_cache, "second compile of `{}` not from the cache", p.name);
        assert_eq!(again.cubin, first.cubin);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A C++ error in `map` comes back as NVRTC's log in an `Error::Compile`.
#[test]
fn nvrtc_error_in_map() {
    if !crate::program::nvrtc::is_available() {
        eprintln!("skipped: no NVRTC library (run under scripts/with-cuda)");
        return;
    }
    let dir = cache("error");
    let p = ReductionProgram::new("bad", "float x", "float y").map("x * scale").reduce("a + b").identity("0");
    match p.cache_dir(&dir).compile(90) {
        Err(Error::Compile { cause, origin, arch }) => {
            assert_eq!((origin.as_str(), arch), ("reduction program `bad`", 90));
            assert!(cause.contains("\"scale\" is undefined"), "{cause}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

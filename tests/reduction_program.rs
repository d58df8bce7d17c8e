//! The run-time twin of reduction_kernel! (`ReductionProgram`): results against f64 CPU results,
//! bit-identical to the macro on the same input, argument checks as `Error`s. GPU tests are
//! ignored without a GPU.

use cuda_embed::{reduction_kernel, Error, ReductionProgram, TypedArg};

mod common;
use common::{close, data, gpu};

reduction_kernel!(
    sum_of_squares,
    inputs = "T x",
    outputs = "T y",
    map = "x * x",
    reduce = "a + b",
    identity = "0",
    types = ["float", "double"],
);

fn ssq_program() -> ReductionProgram {
    ReductionProgram::new("rt_sum_sq", "T x", "T y")
        .map("x * x")
        .reduce("a + b")
        .identity("0")
        .types(["float", "double"])
}

/// Full, rows and columns on several shapes, f32 and f64 instances chosen by the arguments,
/// and the same bits as the macro's reduction of the same input.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sum_of_squares_matches_cpu_and_macro() -> cuda_embed::Result<()> {
    let stream = gpu();
    let red = ssq_program().load(stream.context())?;
    for (si, &(rows, cols)) in
        [(1usize, 1usize), (3, 7), (1000, 1), (1, 100_003), (513, 129), (65536, 32)].iter().enumerate()
    {
        let x = data(rows * cols, si as u64 + 11);
        let dx = stream.clone_htod(&x)?;
        let mut y = stream.alloc_zeros::<f32>(1)?;
        red.launch(&stream, &mut [TypedArg::slice(&dx), TypedArg::slice_mut(&mut y)])?;
        let got = stream.clone_dtoh(&y)?[0];
        close(f64::from(got), x.iter().map(|&a| f64::from(a * a)).sum(), 1e-4, &format!("full {rows}x{cols}"));
        let mut ym = stream.alloc_zeros::<f32>(1)?;
        sum_of_squares::launch(&stream, &dx, &mut ym)?;
        assert_eq!(got.to_bits(), stream.clone_dtoh(&ym)?[0].to_bits(), "twin and macro differ on {rows}x{cols}");
        let mut yr = stream.alloc_zeros::<f32>(rows)?;
        red.launch_rows(&stream, cols, &mut [TypedArg::slice(&dx), TypedArg::slice_mut(&mut yr)])?;
        for (r, g) in stream.clone_dtoh(&yr)?.iter().enumerate() {
            let want: f64 = x[r * cols..(r + 1) * cols].iter().map(|&a| f64::from(a * a)).sum();
            close(f64::from(*g), want, 1e-4, &format!("rows {rows}x{cols} row {r}"));
        }
        let mut yc = stream.alloc_zeros::<f32>(cols)?;
        red.launch_cols(&stream, cols, &mut [TypedArg::slice(&dx), TypedArg::slice_mut(&mut yc)])?;
        for (c, g) in stream.clone_dtoh(&yc)?.iter().enumerate() {
            let want: f64 = (0..rows).map(|r| f64::from(x[r * cols + c] * x[r * cols + c])).sum();
            close(f64::from(*g), want, 1e-4, &format!("cols {rows}x{cols} col {c}"));
        }
    }
    let xd: Vec<f64> = data(100_001, 5).iter().map(|&v| f64::from(v)).collect();
    let dx = stream.clone_htod(&xd)?;
    let mut y = stream.alloc_zeros::<f64>(1)?;
    red.launch(&stream, &mut [TypedArg::slice(&dx.slice(1..)), TypedArg::slice_mut(&mut y)])?;
    close(stream.clone_dtoh(&y)?[0], xd[1..].iter().map(|a| a * a).sum(), 1e-12, "f64 misaligned view");
    // Empty input: the identity.
    let de = stream.alloc_zeros::<f32>(0)?;
    let mut y = stream.clone_htod(&[f32::NAN])?;
    red.launch(&stream, &mut [TypedArg::slice(&de), TypedArg::slice_mut(&mut y)])?;
    assert_eq!(stream.clone_dtoh(&y)?, [0.0]);
    Ok(())
}

/// A struct `reduce_type` (argmax), a scalar and two outputs, exact integer sums.
#[test]
#[ignore = "needs a CUDA GPU"]
fn argmax_scalars_and_integers() -> cuda_embed::Result<()> {
    let stream = gpu();
    let ctx = stream.context();
    let argmax = ReductionProgram::new("rt_argmax", "float x", "long long y")
        .preamble("struct ValIdx { float v; long long i; };")
        .reduce_type("ValIdx")
        .map("ValIdx{x, i}")
        .reduce("(a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b")
        .identity("ValIdx{-INFINITY, -1}")
        .post_map("y = a.i")
        .load(ctx)?;
    let n = 1_000_003;
    let mut x = data(n, 3);
    x[n / 3] = 5.0;
    x[n - 2] = 5.0;
    let dx = stream.clone_htod(&x)?;
    let mut yi = stream.alloc_zeros::<i64>(1)?;
    argmax.launch(&stream, &mut [TypedArg::slice(&dx), TypedArg::slice_mut(&mut yi)])?;
    assert_eq!(stream.clone_dtoh(&yi)?[0], (n / 3) as i64);

    let scaled = ReductionProgram::new("rt_scaled", "float x, scalar float s", "float y, int count")
        .map("x * s")
        .reduce("a + b")
        .identity("0")
        .post_map("y = a; count = (int)n")
        .load(ctx)?;
    let (rows, cols) = (300, 1001);
    let x = data(rows * cols, 4);
    let dx = stream.clone_htod(&x)?;
    let s = 0.5f32;
    let (mut y, mut c) = (stream.alloc_zeros::<f32>(rows)?, stream.alloc_zeros::<i32>(rows)?);
    scaled.launch_rows(
        &stream,
        cols,
        &mut [TypedArg::slice(&dx), TypedArg::scalar(&s), TypedArg::slice_mut(&mut y), TypedArg::slice_mut(&mut c)],
    )?;
    for (r, g) in stream.clone_dtoh(&y)?.iter().enumerate() {
        let want: f64 = x[r * cols..(r + 1) * cols].iter().map(|&a| f64::from(a * 0.5)).sum();
        close(f64::from(*g), want, 1e-4, &format!("scaled row {r}"));
    }
    assert_eq!(stream.clone_dtoh(&c)?, vec![cols as i32; rows]);

    let int_sum = ReductionProgram::new("rt_int_sum", "int x", "long long y")
        .map("(long long)x")
        .reduce("a + b")
        .identity("0")
        .reduce_type("long long")
        .load(ctx)?;
    let xi: Vec<i32> = (0..5_000_011).map(|k: i64| ((k * 7919) % 200_001 - 100_000) as i32).collect();
    let dxi = stream.clone_htod(&xi)?;
    let mut y = stream.alloc_zeros::<i64>(1)?;
    int_sum.launch(&stream, &mut [TypedArg::slice(&dxi), TypedArg::slice_mut(&mut y)])?;
    assert_eq!(stream.clone_dtoh(&y)?[0], xi.iter().map(|&v| i64::from(v)).sum::<i64>());
    Ok(())
}

/// Wrong element types, kinds and lengths are `Error`s naming the parameters; nothing runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn argument_errors() -> cuda_embed::Result<()> {
    let stream = gpu();
    let red = ssq_program().load(stream.context())?;
    let xi = stream.alloc_zeros::<i32>(8)?;
    let x = stream.alloc_zeros::<f32>(8)?;
    let mut y = stream.alloc_zeros::<f32>(1)?;
    let mut y2 = stream.alloc_zeros::<f32>(2)?;
    let msg = |r: cuda_embed::Result<()>| match r {
        Err(e @ Error::Launch { .. }) => e.to_string(),
        other => panic!("expected an argument error, got {other:?}"),
    };
    let e = msg(red.launch(&stream, &mut [TypedArg::slice(&xi), TypedArg::slice_mut(&mut y)]));
    assert!(e.contains("no instance takes these element types (`x`: int, `y`: float)"), "{e}");
    let e = msg(red.launch(&stream, &mut [TypedArg::slice(&x), TypedArg::slice_mut(&mut y2)]));
    assert!(e.contains("output `y` has 2 elements but the reduction gives 1"), "{e}");
    let e = msg(red.launch_rows(&stream, 3, &mut [TypedArg::slice(&x), TypedArg::slice_mut(&mut y)]));
    assert!(e.contains("`x` has 8 elements, not a multiple of `cols` = 3"), "{e}");
    let e = msg(red.launch(&stream, &mut [TypedArg::slice(&x)]));
    assert!(e.contains("1 arguments given, the reduction takes 2"), "{e}");
    Ok(())
}

/// Loading twice: the second load takes the cubin from the disk cache.
#[test]
#[ignore = "needs a CUDA GPU"]
fn second_load_is_a_cache_hit() -> cuda_embed::Result<()> {
    let stream = gpu();
    let dir = std::env::temp_dir().join(format!("cuda-embed-redprog-gpu-{}", std::process::id()));
    let p = ssq_program().cache_dir(&dir);
    let _first = p.load(stream.context())?;
    let arch = {
        let (a, b) = stream.context().compute_capability().map_err(Error::from)?;
        (a * 10 + b) as u32
    };
    assert!(p.compile(arch)?.from_cache);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

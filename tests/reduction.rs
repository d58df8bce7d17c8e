//! reduction_kernel!: results against f64 CPU references on every shape class, determinism,
//! length errors. GPU tests are ignored without a GPU.

use cuda_embed::{f16, reduction_kernel};

mod common;
use common::{close, data, gpu};

reduction_kernel!(
    sum_of_squares,
    inputs = "T x",
    outputs = "T y",
    map = "x * x",
    reduce = "a + b",
    post_map = "y = a",
    identity = "0",
    types = ["float", "double"],
);

reduction_kernel!(
    sum_f64,
    inputs = "float x",
    outputs = "double y",
    map = "x",
    reduce = "a + b",
    identity = "0",
    reduce_type = "double"
);

reduction_kernel!(
    max_of,
    inputs = "T x",
    outputs = "T y",
    map = "x",
    reduce = "fmax(a, b)",
    identity = "-INFINITY",
    types = ["float"]
);

reduction_kernel!(
    min_of,
    inputs = "float x",
    outputs = "float y",
    map = "x",
    reduce = "fminf(a, b)",
    identity = "INFINITY"
);

reduction_kernel!(
    argmax,
    inputs = "float x",
    outputs = "long long y",
    preamble = "struct ValIdx { float v; long long i; };",
    reduce_type = "ValIdx",
    map = "ValIdx{x, i}",
    reduce = "(a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b",
    identity = "ValIdx{-INFINITY, -1}",
    post_map = "y = a.i",
);

reduction_kernel!(
    weighted,
    inputs = "T x, T w",
    outputs = "T y",
    map = "x * w",
    reduce = "a + b",
    identity = "0",
    types = ["float"]
);

reduction_kernel!(
    scaled_sum,
    inputs = "float x, scalar float s",
    outputs = "float y, int count",
    map = "x * s",
    reduce = "a + b",
    identity = "0",
    post_map = "y = a; count = (int)n",
);

reduction_kernel!(
    half_sum,
    inputs = "__half x",
    outputs = "float y",
    map = "__half2float(x)",
    reduce = "a + b",
    identity = "0.0f",
    reduce_type = "float"
);

reduction_kernel!(
    int_sum,
    inputs = "int x",
    outputs = "long long y",
    map = "(long long)x",
    reduce = "a + b",
    identity = "0",
    reduce_type = "long long"
);

fn cpu_rows(x: &[f32], cols: usize, f: impl Fn(&[f32]) -> f64) -> Vec<f64> {
    x.chunks(cols).map(f).collect()
}

fn cpu_cols(x: &[f32], cols: usize, f: impl Fn(&[f32]) -> f64) -> Vec<f64> {
    let rows = x.len() / cols;
    (0..cols).map(|c| f(&(0..rows).map(|r| x[r * cols + c]).collect::<Vec<_>>())).collect()
}

fn ssq(v: &[f32]) -> f64 {
    v.iter().map(|&a| f64::from(a * a)).sum()
}

/// Every shape class: full, rows and columns of tall, wide, single-row, single-column and
/// odd-sized matrices.
#[test]
#[ignore = "needs a CUDA GPU"]
fn sum_of_squares_every_shape() -> cuda_embed::Result<()> {
    let stream = gpu();
    let shapes: &[(usize, usize)] = &[
        (1, 1),
        (1, 1000),
        (1000, 1),
        (3, 7),
        (513, 129),
        (4096, 33),
        (7, 100_003),
        (65536, 32),
        (1 << 14, 1 << 8),
        (1, 1 << 22),
        (1 << 20, 3),
        // At least a wave of rows longer than one block's loads: rows split over blocks.
        (600, 10_001),
        (1024, 20_000),
    ];
    for (si, &(rows, cols)) in shapes.iter().enumerate() {
        let x = data(rows * cols, si as u64);
        let dx = stream.clone_htod(&x)?;
        let mut y = stream.alloc_zeros::<f32>(1)?;
        sum_of_squares::launch(&stream, &dx, &mut y)?;
        close(f64::from(stream.clone_dtoh(&y)?[0]), ssq(&x), 1e-4, &format!("full {rows}x{cols}"));
        let mut yr = stream.clone_htod(&vec![f32::NAN; rows])?;
        sum_of_squares::launch_rows(&stream, &dx, cols, &mut yr)?;
        for (r, (g, w)) in stream.clone_dtoh(&yr)?.iter().zip(cpu_rows(&x, cols, ssq)).enumerate() {
            close(f64::from(*g), w, 1e-4, &format!("rows {rows}x{cols} row {r}"));
        }
        let mut yc = stream.clone_htod(&vec![f32::NAN; cols])?;
        sum_of_squares::launch_cols(&stream, &dx, cols, &mut yc)?;
        for (c, (g, w)) in stream.clone_dtoh(&yc)?.iter().zip(cpu_cols(&x, cols, ssq)).enumerate() {
            close(f64::from(*g), w, 1e-4, &format!("cols {rows}x{cols} col {c}"));
        }
    }
    // f64 instance, and a view starting at element 1 (misaligned for 16-byte loads).
    let x = data(100_001, 99);
    let xd: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let dx = stream.clone_htod(&xd)?;
    let mut y = stream.alloc_zeros::<f64>(1)?;
    sum_of_squares::launch(&stream, &dx.slice(1..), &mut y)?;
    close(stream.clone_dtoh(&y)?[0], xd[1..].iter().map(|a| a * a).sum(), 1e-12, "f64 misaligned view");
    Ok(())
}

/// A stream's scratch buffer reused by plans with ever more last-block counters: the partials a
/// full reduction leaves behind must never be read as counters by a later rows reduction (they
/// were, before the counters got a region of their own: NaN rows).
#[test]
#[ignore = "needs a CUDA GPU"]
fn scratch_counters_stay_clear_of_earlier_partials() -> cuda_embed::Result<()> {
    let stream = cuda_embed::context(0).expect("a CUDA GPU").new_stream()?;
    let x = data(1 << 22, 21);
    let dx = stream.clone_htod(&x)?;
    let mut y = stream.alloc_zeros::<f32>(1)?;
    sum_of_squares::launch(&stream, &dx, &mut y)?;
    close(f64::from(stream.clone_dtoh(&y)?[0]), ssq(&x), 1e-4, "full 2^22");
    for (rows, cols) in [(64, 65536), (100, 41_943), (600, 6_990), (4000, 1_048)] {
        let part = &x[..rows * cols];
        let mut yr = stream.alloc_zeros::<f32>(rows)?;
        sum_of_squares::launch_rows(&stream, &dx.slice(..rows * cols), cols, &mut yr)?;
        for (r, (g, w)) in stream.clone_dtoh(&yr)?.iter().zip(cpu_rows(part, cols, ssq)).enumerate() {
            close(f64::from(*g), w, 1e-4, &format!("rows {rows}x{cols} row {r} after a full reduction"));
        }
        sum_of_squares::launch(&stream, &dx, &mut y)?;
    }
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_input_gives_identity() -> cuda_embed::Result<()> {
    let stream = gpu();
    let dx = stream.alloc_zeros::<f32>(0)?;
    let mut y = stream.clone_htod(&[f32::NAN])?;
    sum_of_squares::launch(&stream, &dx, &mut y)?;
    assert_eq!(stream.clone_dtoh(&y)?, [0.0]);
    max_of::launch(&stream, &dx, &mut y)?;
    assert_eq!(stream.clone_dtoh(&y)?, [f32::NEG_INFINITY]);
    let mut yr = stream.clone_htod(&[f32::NAN; 3])?;
    sum_of_squares::launch_rows(&stream, &dx, 0, &mut yr)?;
    assert_eq!(stream.clone_dtoh(&yr)?, [0.0; 3]);
    let mut yc = stream.clone_htod(&[f32::NAN; 5])?;
    sum_of_squares::launch_cols(&stream, &dx, 5, &mut yc)?;
    assert_eq!(stream.clone_dtoh(&yc)?, [0.0; 5]);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn max_min_argmax() -> cuda_embed::Result<()> {
    let stream = gpu();
    for (n, seed) in [(1usize, 1u64), (1000, 2), (1 << 20, 3), (12_345_677, 4)] {
        let mut x = data(n, seed);
        x[n / 3] = 5.0; // the maximum, and a tie later: the first index wins
        if n > 10 {
            x[n - 2] = 5.0;
        }
        let dx = stream.clone_htod(&x)?;
        let mut y = stream.alloc_zeros::<f32>(1)?;
        max_of::launch(&stream, &dx, &mut y)?;
        assert_eq!(stream.clone_dtoh(&y)?[0], 5.0);
        min_of::launch(&stream, &dx, &mut y)?;
        assert_eq!(stream.clone_dtoh(&y)?[0], x.iter().copied().fold(f32::INFINITY, f32::min));
        let mut yi = stream.alloc_zeros::<i64>(1)?;
        argmax::launch(&stream, &dx, &mut yi)?;
        assert_eq!(stream.clone_dtoh(&yi)?[0], (n / 3) as i64, "argmax of {n}");
    }
    // Per row: argmax gives the column of each row's maximum.
    let (rows, cols) = (1000, 77);
    let x = data(rows * cols, 5);
    let dx = stream.clone_htod(&x)?;
    let mut yi = stream.alloc_zeros::<i64>(rows)?;
    argmax::launch_rows(&stream, &dx, cols, &mut yi)?;
    let want: Vec<i64> = x
        .chunks(cols)
        .map(|r| {
            r.iter().enumerate().fold((0, f32::NEG_INFINITY), |b, (i, &v)| if v > b.1 { (i, v) } else { b }).0 as i64
        })
        .collect();
    assert_eq!(stream.clone_dtoh(&yi)?, want);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn weighted_scalars_half_and_integers() -> cuda_embed::Result<()> {
    let stream = gpu();
    let n = 3_000_001;
    let (x, w) = (data(n, 7), data(n, 8));
    let (dx, dw) = (stream.clone_htod(&x)?, stream.clone_htod(&w)?);
    let mut y = stream.alloc_zeros::<f32>(1)?;
    weighted::launch(&stream, &dx, &dw, &mut y)?;
    let want: f64 = x.iter().zip(&w).map(|(a, b)| f64::from(a * b)).sum();
    close(f64::from(stream.clone_dtoh(&y)?[0]), want, 1e-4, "weighted sum");

    let mut count = stream.alloc_zeros::<i32>(1)?;
    scaled_sum::launch(&stream, &dx, 0.5, &mut y, &mut count)?;
    close(f64::from(stream.clone_dtoh(&y)?[0]), x.iter().map(|&a| f64::from(a) * 0.5).sum(), 1e-4, "scaled");
    assert_eq!(stream.clone_dtoh(&count)?[0], n as i32);

    let mut yd = stream.alloc_zeros::<f64>(1)?;
    sum_f64::launch(&stream, &dx, &mut yd)?;
    close(stream.clone_dtoh(&yd)?[0], x.iter().map(|&a| f64::from(a)).sum(), 1e-12, "f32 summed in f64");

    let h: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    let dh = stream.clone_htod(&h)?;
    half_sum::launch(&stream, &dh, &mut y)?;
    close(f64::from(stream.clone_dtoh(&y)?[0]), h.iter().map(|v| f64::from(v.to_f32())).sum(), 1e-3, "f16 in f32");

    let xi: Vec<i32> = (0..n as i32).map(|i| i.wrapping_mul(2_654_435) % 1_000_003).collect();
    let dxi = stream.clone_htod(&xi)?;
    let mut yi = stream.alloc_zeros::<i64>(1)?;
    int_sum::launch(&stream, &dxi, &mut yi)?;
    assert_eq!(stream.clone_dtoh(&yi)?[0], xi.iter().map(|&v| i64::from(v)).sum::<i64>());
    let cols = 1001;
    let m = &xi[..(n / cols) * cols];
    let dm = stream.clone_htod(m)?;
    let mut yc = stream.alloc_zeros::<i64>(cols)?;
    int_sum::launch_cols(&stream, &dm, cols, &mut yc)?;
    let want: Vec<i64> = (0..cols).map(|c| m.iter().skip(c).step_by(cols).map(|&v| i64::from(v)).sum()).collect();
    assert_eq!(stream.clone_dtoh(&yc)?, want);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn deterministic_over_100_runs() -> cuda_embed::Result<()> {
    let stream = gpu();
    let (rows, cols) = (4099, 1027);
    let x = data(rows * cols, 11);
    let dx = stream.clone_htod(&x)?;
    let mut y = stream.alloc_zeros::<f32>(1)?;
    let mut yr = stream.alloc_zeros::<f32>(rows)?;
    let mut yc = stream.alloc_zeros::<f32>(cols)?;
    let mut first: Option<(Vec<u32>, Vec<u32>, Vec<u32>)> = None;
    for _ in 0..100 {
        sum_of_squares::launch(&stream, &dx, &mut y)?;
        sum_of_squares::launch_rows(&stream, &dx, cols, &mut yr)?;
        sum_of_squares::launch_cols(&stream, &dx, cols, &mut yc)?;
        let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect::<Vec<u32>>();
        let now = (bits(stream.clone_dtoh(&y)?), bits(stream.clone_dtoh(&yr)?), bits(stream.clone_dtoh(&yc)?));
        match &first {
            None => first = Some(now),
            Some(f) => assert!(*f == now, "a result changed between runs"),
        }
    }
    // Rows split over several blocks (a wave of long rows) combine in a fixed order too.
    let (rows, cols) = (1100, 9001);
    let dw = stream.clone_htod(&data(rows * cols, 12))?;
    let mut yw = stream.alloc_zeros::<f32>(rows)?;
    let mut first_wide: Option<Vec<u32>> = None;
    for _ in 0..100 {
        sum_of_squares::launch_rows(&stream, &dw, cols, &mut yw)?;
        let now: Vec<u32> = stream.clone_dtoh(&yw)?.iter().map(|f| f.to_bits()).collect();
        match &first_wide {
            None => first_wide = Some(now),
            Some(f) => assert!(*f == now, "a split-row result changed between runs"),
        }
    }
    // A misaligned view of the same values gives the same bits (same combination order).
    let xd = stream.clone_htod(&[&[0.0f32][..], &x].concat())?;
    sum_of_squares::launch(&stream, &xd.slice(1..), &mut y)?;
    assert_eq!(stream.clone_dtoh(&y)?[0].to_bits(), first.map(|f| f.0[0]).unwrap_or_default());
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn lengths_are_checked() -> cuda_embed::Result<()> {
    let stream = gpu();
    let (dx, dw) = (stream.alloc_zeros::<f32>(10)?, stream.alloc_zeros::<f32>(9)?);
    let mut y = stream.alloc_zeros::<f32>(1)?;
    let e = weighted::launch(&stream, &dx, &dw, &mut y).unwrap_err().to_string();
    assert!(e.contains("`w` has 9 elements but `x` has 10"), "{e}");
    let e = sum_of_squares::launch_rows(&stream, &dx, 3, &mut y).unwrap_err().to_string();
    assert!(e.contains("not a multiple of `cols` = 3"), "{e}");
    let e = sum_of_squares::launch_rows(&stream, &dx, 5, &mut y).unwrap_err().to_string();
    assert!(e.contains("output `y` has 1 elements but the reduction gives 2"), "{e}");
    let mut y2 = stream.alloc_zeros::<f32>(2)?;
    let e = sum_of_squares::launch(&stream, &dx, &mut y2).unwrap_err().to_string();
    assert!(e.contains("sum_of_squares") && e.contains("gives 1"), "{e}");
    Ok(())
}

// Integer keywords in any order, as C++ allows (`int unsigned`): the same Rust types.
reduction_kernel!(
    count_set,
    inputs = "int unsigned x",
    outputs = "long unsigned long y",
    map = "(unsigned long long)(x & 1u)",
    reduce = "a + b",
    identity = "0",
);

#[test]
fn integer_keywords_in_any_order_map_to_the_same_rust_types() {
    // Compiles only if `int unsigned` is u32 and `long unsigned long` is u64.
    fn _typed(
        s: &std::sync::Arc<cuda_embed::CudaStream>,
        x: &cuda_embed::CudaSlice<u32>,
        y: &mut cuda_embed::CudaSlice<u64>,
    ) {
        let _ = count_set::launch(s, x, y);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_reduction_over_int_unsigned() {
    let stream = gpu();
    let x: Vec<u32> = (0..100_000u32).collect();
    let dx = stream.clone_htod(&x).unwrap();
    let mut y = stream.alloc_zeros::<u64>(1).unwrap();
    count_set::launch(&stream, &dx, &mut y).unwrap();
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [50_000]);
}

/// `with_full_plan`: the configurations a tuner would try (benches/reduction_sweep.rs) all give
/// the sum, including one block, more blocks than a wave, and blocks of 32 threads; the
/// automatic plan comes back after the closure.
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_full_plan_a_tuner_would_try_gives_the_sum() -> cuda_embed::Result<()> {
    use cuda_embed::__private::reduce::with_full_plan;
    let stream = gpu();
    for n in [1000usize, 4096, 1 << 20, (1 << 20) + 3] {
        let host = data(n, 11);
        let want: f64 = host.iter().map(|v| f64::from(*v)).sum();
        let x = stream.clone_htod(&host)?;
        let mut y = stream.alloc_zeros::<f64>(1)?;
        sum_f64::launch(&stream, &x, &mut y)?;
        let auto = stream.clone_dtoh(&y)?[0];
        close(auto, want, 1e-9, "automatic plan");
        for (blocks, threads) in [(1, 256), (1, 32), (7, 64), (64, 128), (528, 256), (4096, 64)] {
            with_full_plan(blocks, threads, || sum_f64::launch(&stream, &x, &mut y))??;
            close(stream.clone_dtoh(&y)?[0], want, 1e-9, &format!("n = {n}, {blocks} x {threads}"));
        }
        // The automatic plan again, bit for bit.
        sum_f64::launch(&stream, &x, &mut y)?;
        assert_eq!(stream.clone_dtoh(&y)?[0].to_bits(), auto.to_bits(), "n = {n}");
    }
    Ok(())
}

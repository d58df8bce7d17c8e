//! The run-time twin of `elementwise_kernel!` on a GPU, against CPU results: placeholders and
//! instances, scalars, raw arrays, tails and misaligned views, argument and length errors, the
//! disk cache.

use cuda_embed::{Arg, ElementwiseProgram, Error};

mod common;
use common::data_pm2 as data;

#[test]
#[ignore = "needs a CUDA GPU"]
fn twin_matches_cpu() {
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    let stream = ctx.default_stream();
    let cache = std::env::temp_dir().join(format!("cuda-embed-ew-twin-{}", std::process::id()));
    let axpy = ElementwiseProgram::new("axpy", "T x, scalar T a", "T y", "y = a * x + y").unwrap().cache_dir(&cache);
    let k32 = axpy.build(&ctx, "float").unwrap();
    assert!(!k32.program_kernel().name().is_empty());
    for n in [0usize, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1023, 4097, (1 << 20) + 3] {
        let (xh, yh) = (data(n + 3, n as u64), data(n + 3, 3 + n as u64));
        let x = stream.clone_htod(&xh).unwrap();
        // Every pair of offsets 0..3: both aligned (vector path), or not (unrolled scalar path).
        for (ox, oy) in (0..16).map(|c| (c & 3, c >> 2)) {
            let mut y = stream.clone_htod(&yh).unwrap();
            let a = 1.5f32;
            {
                let xs = x.slice(ox..ox + n);
                let mut ys = y.slice_mut(oy..oy + n);
                k32.launch(&stream, &mut [Arg::slice(&xs), Arg::value(&a), Arg::slice_mut(&mut ys)]).unwrap();
            }
            let got = stream.clone_dtoh(&y).unwrap();
            for k in 0..n + 3 {
                // The GPU fuses a * x + y into one FMA (one rounding): mul_add on the CPU.
                let want = if k >= oy && k < oy + n { a.mul_add(xh[k - oy + ox], yh[k]) } else { yh[k] };
                assert_eq!(got[k], want, "n={n} offsets x={ox} y={oy} k={k}");
            }
        }
    }
    // Another instance of the same program: f64; and a second build comes from the disk cache.
    let k64 = axpy.build(&ctx, "double").unwrap();
    let x = stream.clone_htod(&[1.0f64, 2.0, 3.0]).unwrap();
    let mut y = stream.clone_htod(&[1.0f64, 1.0, 1.0]).unwrap();
    k64.launch(&stream, &mut [Arg::slice(&x), Arg::value(&2.0f64), Arg::slice_mut(&mut y)]).unwrap();
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [3.0, 5.0, 7.0]);
    assert!(axpy.program("double").unwrap().load(&ctx).unwrap().from_cache(), "second load from the disk cache");
    // Errors name the parameter; nothing runs.
    let e = k64.launch(&stream, &mut [Arg::slice(&x), Arg::value(&2.0f32), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(matches!(&e, Error::Argument { parameter, .. } if parameter == "a"), "{e}");
    let short = stream.clone_htod(&[1.0f64, 2.0]).unwrap();
    let e = k64.launch(&stream, &mut [Arg::slice(&short), Arg::value(&2.0f64), Arg::slice_mut(&mut y)]).unwrap_err();
    assert!(matches!(e, Error::Length { .. }) && e.to_string().contains("`x` has 2, `y` has 3"), "{e}");
    // n = 0 is a no-op.
    let (e0, mut z0) = (stream.alloc_zeros::<f64>(0).unwrap(), stream.alloc_zeros::<f64>(0).unwrap());
    k64.launch(&stream, &mut [Arg::slice(&e0), Arg::value(&2.0f64), Arg::slice_mut(&mut z0)]).unwrap();
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn twin_two_placeholders_raw_and_config() {
    let ctx = cuda_embed::context(0).expect("a CUDA GPU");
    let stream = ctx.default_stream();
    let convert = ElementwiseProgram::new("convert", "T x, scalar U s", "U y", "y = (U)x * s").unwrap();
    let k = convert.build(&ctx, "T=int, U=double").unwrap();
    let xh: Vec<i32> = (0..1001).map(|v| v - 500).collect();
    let x = stream.clone_htod(&xh).unwrap();
    let mut y = stream.alloc_zeros::<f64>(1001).unwrap();
    let cfg = cuda_embed::LaunchConfig { grid_dim: (3, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
    k.launch_with(&stream, cfg, &mut [Arg::slice(&x), Arg::value(&0.5f64), Arg::slice_mut(&mut y)]).unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().zip(&xh).all(|(g, x)| *g == *x as f64 * 0.5));
    // Raw input, reversed.
    let rev = ElementwiseProgram::new("rev", "raw float x", "float y", "y = x[x.size() - 1 - i]").unwrap();
    let k = rev.build(&ctx, "").unwrap();
    let xh = data(777, 9);
    let x = stream.clone_htod(&xh).unwrap();
    let mut y = stream.alloc_zeros::<f32>(777).unwrap();
    assert!(k.has_raw());
    assert!(k.launch(&stream, &mut [Arg::slice(&x), Arg::slice_mut(&mut y)]).is_err(), "raw needs launch_raw");
    // SAFETY: the operation reads x[size - 1 - i] with i < n = 777 = x's length.
    unsafe { k.launch_raw(&stream, None, None, &mut [Arg::slice(&x), Arg::slice_mut(&mut y)]) }.unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    assert!((0..777).all(|i| got[i] == xh[776 - i]));
    // No arrays: launch_n.
    let fill =
        ElementwiseProgram::new("fill", "scalar long long base", "raw long long out", "out[i] = base + i").unwrap();
    let k = fill.build(&ctx, "").unwrap();
    let mut out = stream.alloc_zeros::<i64>(300).unwrap();
    // SAFETY: writes out[i] for i < n = 300 = out's length.
    unsafe { k.launch_raw(&stream, None, Some(300), &mut [Arg::value(&10i64), Arg::slice_mut(&mut out)]) }.unwrap();
    assert!(stream.clone_dtoh(&out).unwrap().iter().enumerate().all(|(i, v)| *v == 10 + i as i64));
}

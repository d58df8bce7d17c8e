//! `elementwise_kernel!`: every parameter kind, placeholders and instances, f16/bf16, vector
//! types, lengths, n = 0, tails and misaligned views, against CPU results.

use cuda_embed::cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr};
use cuda_embed::{bf16, elementwise_kernel, f16, DeviceSafe, Error, Float4, LaunchConfig};
use std::fmt::Debug;
use std::sync::Arc;

mod common;
use common::data_pm2 as data;

elementwise_kernel!(
    squared_diff,
    inputs = "T x, T y",
    outputs = "T z",
    operation = "z = (x - y) * (x - y)",
    types = ["float", "double"],
);

elementwise_kernel!(
    axpy,
    inputs = "T x, scalar T a",
    outputs = "T y",
    operation = "y = a * x + y",
    types = ["float", "double", "__half", "__nv_bfloat16"],
    preamble = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>",
);

elementwise_kernel!(
    convert,
    inputs = "T x, scalar U scale",
    outputs = "U y",
    operation = "y = (U)x * scale",
    types = ["T=int, U=double", "T=float, U=float", "T=unsigned char, U=float"],
);

elementwise_kernel!(
    reverse,
    inputs = "raw float x",
    outputs = "float y",
    operation = "y = x[x.size() - 1 - i] + (float)n * 0.0f",
);

elementwise_kernel!(
    fill_index,
    inputs = "scalar long long base",
    outputs = "raw long long out",
    operation = "out[i] = base + i",
);

elementwise_kernel!(
    relu_clip,
    inputs = "float x, scalar float cap",
    outputs = "float y",
    loop_prep = "const float lo = 0.0f;",
    operation = "float t = x < lo ? lo : x;\n t = t > cap ? cap : t;\n y = t;",
    preamble = "__device__ float unused_helper(float v) { return v; }",
);

elementwise_kernel!(keep_positive, inputs = "float x", outputs = "float y", operation = "if (x > 0.0f) y = x;",);

elementwise_kernel!(
    norm4,
    inputs = "float4 v",
    outputs = "float len",
    operation = "len = sqrtf(v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w)",
);

elementwise_kernel!(
    mix_bytes,
    inputs = "unsigned char a, unsigned char b",
    outputs = "unsigned char c",
    operation = "c = (unsigned char)(a * 3 + b + c)",
);

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, DeviceSafe)]
pub struct Particle {
    pos: f32,
    vel: f32,
}

elementwise_kernel!(
    step,
    inputs = "scalar float dt",
    outputs = "struct Particle p",
    preamble = "struct Particle { float pos; float vel; };",
    operation = "p.pos += p.vel * dt",
);

fn setup() -> Option<(Arc<cuda_embed::CudaContext>, Arc<CudaStream>)> {
    let ctx = cuda_embed::context(0).ok()?;
    let stream = ctx.default_stream();
    Some((ctx, stream))
}

fn poisoned(stream: &Arc<CudaStream>, n: usize) -> CudaSlice<f32> {
    stream.clone_htod(&vec![f32::NAN; n]).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn squared_diff_every_length_and_both_paths() {
    let (_ctx, stream) = setup().expect("a CUDA GPU");
    for n in [1usize, 3, 4, 5, 1023, 1024, 4097, 1 << 20, (1 << 20) + 3] {
        let (xh, yh) = (data(n + 1, n as u64), data(n + 1, 7 + n as u64));
        let x = stream.clone_htod(&xh).unwrap();
        let y = stream.clone_htod(&yh).unwrap();
        // Aligned (vector path) and views starting at element 1 (scalar path).
        let mut z = poisoned(&stream, n + 1);
        squared_diff::launch(&stream, &x.slice(..n), &y.slice(..n), &mut z.slice_mut(..n)).unwrap();
        let got = stream.clone_dtoh(&z).unwrap();
        for k in 0..n {
            assert_eq!(got[k], (xh[k] - yh[k]) * (xh[k] - yh[k]), "n={n} k={k}");
        }
        assert!(got[n].is_nan(), "element past n untouched");
        let mut z = poisoned(&stream, n + 1);
        squared_diff::launch(&stream, &x.slice(1..), &y.slice(1..), &mut z.slice_mut(1..)).unwrap();
        let got = stream.clone_dtoh(&z).unwrap();
        assert!(got[0].is_nan());
        for k in 1..=n {
            assert_eq!(got[k], (xh[k] - yh[k]) * (xh[k] - yh[k]), "misaligned n={n} k={k}");
        }
    }
    // f64 instance.
    let xh: Vec<f64> = data(1001, 1).iter().map(|&v| v as f64).collect();
    let x = stream.clone_htod(&xh).unwrap();
    let y = stream.alloc_zeros::<f64>(1001).unwrap();
    let mut z = stream.alloc_zeros::<f64>(1001).unwrap();
    squared_diff::launch(&stream, &x, &y, &mut z).unwrap();
    let got = stream.clone_dtoh(&z).unwrap();
    assert!(got.iter().zip(&xh).all(|(g, x)| *g == x * x));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn axpy_reads_its_output_in_four_types() {
    let (_ctx, stream) = setup().expect("a CUDA GPU");
    let n = 10_007;
    let (xh, yh) = (data(n, 3), data(n, 4));
    let x = stream.clone_htod(&xh).unwrap();
    let mut y = stream.clone_htod(&yh).unwrap();
    axpy::launch(&stream, &x, 2.5f32, &mut y).unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    for k in 0..n {
        assert!((got[k] - (2.5 * xh[k] + yh[k])).abs() <= 1e-5, "k={k}");
    }
    let xs: Vec<f16> = xh.iter().map(|&v| f16::from_f32(v)).collect();
    let ys: Vec<f16> = yh.iter().map(|&v| f16::from_f32(v)).collect();
    let xd = stream.clone_htod(&xs).unwrap();
    let mut yd = stream.clone_htod(&ys).unwrap();
    axpy::launch(&stream, &xd, f16::from_f32(0.5), &mut yd).unwrap();
    let got = stream.clone_dtoh(&yd).unwrap();
    for k in 0..n {
        let want = 0.5 * xs[k].to_f32() + ys[k].to_f32();
        assert!((got[k].to_f32() - want).abs() <= 4e-3 * want.abs().max(1.0), "f16 k={k}");
    }
    let xs: Vec<bf16> = xh.iter().map(|&v| bf16::from_f32(v)).collect();
    let ys: Vec<bf16> = yh.iter().map(|&v| bf16::from_f32(v)).collect();
    let xd = stream.clone_htod(&xs).unwrap();
    let mut yd = stream.clone_htod(&ys).unwrap();
    axpy::launch(&stream, &xd.slice(1..), bf16::from_f32(-1.5), &mut yd.slice_mut(1..)).unwrap();
    let got = stream.clone_dtoh(&yd).unwrap();
    assert_eq!(got[0], ys[0]);
    for k in 1..n {
        let want = -1.5 * xs[k].to_f32() + ys[k].to_f32();
        assert!((got[k].to_f32() - want).abs() <= 2e-2 * want.abs().max(1.0), "bf16 k={k}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_placeholders_and_three_instances() {
    let (_ctx, stream) = setup().expect("a CUDA GPU");
    let xi: Vec<i32> = (0..777).map(|k| k * 3 - 1000).collect();
    let x = stream.clone_htod(&xi).unwrap();
    let mut y = stream.alloc_zeros::<f64>(777).unwrap();
    convert::launch(&stream, &x, 0.5f64, &mut y).unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().zip(&xi).all(|(g, x)| *g == *x as f64 * 0.5));
    let xb: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let x = stream.clone_htod(&xb).unwrap();
    let mut y = stream.alloc_zeros::<f32>(1000).unwrap();
    convert::launch(&stream, &x, 2.0f32, &mut y).unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().zip(&xb).all(|(g, x)| *g == *x as f32 * 2.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn raw_parameters() {
    let (_ctx, stream) = setup().expect("a CUDA GPU");
    let xh = data(333, 9);
    let x = stream.clone_htod(&xh).unwrap();
    let mut y = poisoned(&stream, 333);
    // SAFETY: the operation reads x[x.size() - 1 - i] with i < n = y.len() = x.len().
    unsafe { reverse::launch(&stream, &x, &mut y).unwrap() };
    let got = stream.clone_dtoh(&y).unwrap();
    assert!((0..333).all(|k| got[k] == xh[332 - k]));
    let mut out = stream.alloc_zeros::<i64>(100).unwrap();
    // SAFETY: out[i] for i < n = 100 = out.len().
    unsafe { fill_index::launch(&stream, 100, 1000i64, &mut out).unwrap() };
    let got = stream.clone_dtoh(&out).unwrap();
    assert!((0..100).all(|k| got[k] == 1000 + k as i64));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn snippets_conditional_outputs_vectors_structs() {
    let (_ctx, stream) = setup().expect("a CUDA GPU");
    let xh = data(5000, 11);
    let x = stream.clone_htod(&xh).unwrap();
    let mut y = poisoned(&stream, 5000);
    relu_clip::launch(&stream, &x, 1.0f32, &mut y).unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().zip(&xh).all(|(g, x)| *g == x.clamp(0.0, 1.0)));
    // A conditionally assigned output keeps its old value elsewhere (so it was loaded).
    let mut y = stream.clone_htod(&vec![-7.0f32; 5000]).unwrap();
    keep_positive::launch(&stream, &x, &mut y).unwrap();
    let got = stream.clone_dtoh(&y).unwrap();
    assert!(got.iter().zip(&xh).all(|(g, x)| *g == if *x > 0.0 { *x } else { -7.0 }));
    let vh: Vec<Float4> = (0..999).map(|k| Float4::new(k as f32, 1.0, -2.0, 0.5)).collect();
    let v = stream.clone_htod(&vh).unwrap();
    let mut len = poisoned(&stream, 999);
    norm4::launch(&stream, &v, &mut len).unwrap();
    let got = stream.clone_dtoh(&len).unwrap();
    for (k, g) in got.iter().enumerate() {
        let want = ((k * k) as f32 + 1.0 + 4.0 + 0.25).sqrt();
        assert!((g - want).abs() <= 1e-5 * want, "k={k}");
    }
    let ph: Vec<Particle> = (0..300).map(|k| Particle { pos: k as f32, vel: 2.0 }).collect();
    let mut p = stream.clone_htod(&ph).unwrap();
    step::launch(&stream, 0.25f32, &mut p).unwrap();
    let got = stream.clone_dtoh(&p).unwrap();
    assert!(got.iter().enumerate().all(|(k, q)| *q == Particle { pos: k as f32 + 0.5, vel: 2.0 }));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn lengths_empty_and_explicit_config() {
    let (_ctx, stream) = setup().expect("a CUDA GPU");
    let x = stream.alloc_zeros::<f32>(10).unwrap();
    let y = stream.alloc_zeros::<f32>(9).unwrap();
    let mut z = stream.alloc_zeros::<f32>(10).unwrap();
    let e = squared_diff::launch(&stream, &x, &y, &mut z).unwrap_err();
    assert!(matches!(e, Error::Length { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("`x` has 10") && msg.contains("`y` has 9") && msg.contains("`z` has 10"), "{msg}");
    // n = 0: nothing launched, Ok.
    let e0 = stream.alloc_zeros::<f32>(0).unwrap();
    let mut z0 = stream.alloc_zeros::<f32>(0).unwrap();
    squared_diff::launch(&stream, &e0, &e0, &mut z0).unwrap();
    // Any configuration works (grid-stride loop).
    let xh = data(100_003, 5);
    let x = stream.clone_htod(&xh).unwrap();
    let mut z = poisoned(&stream, 100_003);
    let cfg = LaunchConfig { grid_dim: (3, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
    squared_diff::launch_with(&stream, cfg, &x, &x, &mut z).unwrap();
    let got = stream.clone_dtoh(&z).unwrap();
    assert!(got.iter().all(|g| *g == 0.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn launch_with_refuses_configurations_that_are_not_1d() {
    let stream = common::gpu();
    let x = stream.clone_htod(&[1.0f32; 64]).unwrap();
    let y = stream.clone_htod(&[2.0f32; 64]).unwrap();
    let mut z = stream.alloc_zeros::<f32>(64).unwrap();
    for cfg in [
        LaunchConfig { grid_dim: (1, 2, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 },
        LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 2, 1), shared_mem_bytes: 0 },
        LaunchConfig { grid_dim: (1, 1, 2), block_dim: (8, 1, 4), shared_mem_bytes: 0 },
    ] {
        let e = squared_diff::launch_with(&stream, cfg, &x, &y, &mut z).unwrap_err();
        let Error::Launch { cause, fix, .. } = e else { panic!("expected Error::Launch, got {e:?}") };
        assert!(cause.contains("1-D") && fix.is_some_and(|f| f.contains("1-D")), "{cause}");
    }
    let cfg = LaunchConfig { grid_dim: (3, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    squared_diff::launch_with(&stream, cfg, &x, &y, &mut z).unwrap();
    assert_eq!(stream.clone_dtoh(&z).unwrap(), [1.0f32; 64]);
}

/// The lengths the offset tests run: every tiny length, lengths that are not multiples of any
/// vector width, and lengths over several chunks of the unrolled loop.
const OFFSET_LENGTHS: [usize; 15] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 31, 1023, 4097, 70_001];

/// Launches `launch` on views of `x`, `y` and `z` starting at every offset 0..3 of each (so every
/// operand is aligned or not for the vector path, alone or together) over `n` elements, and
/// compares each element of `z` with `want(x, y, old z)` bit for bit, and the elements around the
/// output view with their old values.
fn every_offset<T: DeviceRepr + Copy + PartialEq + Debug>(
    stream: &Arc<CudaStream>,
    what: &str,
    [xh, yh, zh]: [&[T]; 3],
    n: usize,
    launch: impl Fn(&CudaView<T>, &CudaView<T>, &mut CudaViewMut<T>),
    want: impl Fn(T, T, T) -> T,
) {
    let (x, y) = (stream.clone_htod(xh).unwrap(), stream.clone_htod(yh).unwrap());
    for (ox, oy, oz) in (0..64).map(|c| (c & 3, (c >> 2) & 3, c >> 4)) {
        let mut z = stream.clone_htod(zh).unwrap();
        launch(&x.slice(ox..ox + n), &y.slice(oy..oy + n), &mut z.slice_mut(oz..oz + n));
        let got = stream.clone_dtoh(&z).unwrap();
        for (k, g) in got.iter().enumerate() {
            let w = if (oz..oz + n).contains(&k) { want(xh[ox + k - oz], yh[oy + k - oz], zh[k]) } else { zh[k] };
            assert_eq!(*g, w, "{what}: n={n}, offsets x={ox} y={oy} z={oz}, element {k}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn misaligned_operands_every_offset_and_length() {
    let stream = common::gpu();
    for n in OFFSET_LENGTHS {
        let cap = n + 4;
        let (xh, yh, zh) = (data(cap, n as u64 + 1), data(cap, n as u64 + 2), data(cap, n as u64 + 3));
        let sq = |a: f32, b: f32, _: f32| (a - b) * (a - b);
        every_offset(&stream, "f32", [&xh, &yh, &zh], n, |x, y, z| squared_diff::launch(&stream, x, y, z).unwrap(), sq);
        // The caller's configuration: fewer threads than elements, so the grid-stride loop repeats.
        let cfg = LaunchConfig { grid_dim: (3, 1, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
        every_offset(
            &stream,
            "f32 launch_with",
            [&xh, &yh, &zh],
            n,
            |x, y, z| squared_diff::launch_with(&stream, cfg, x, y, z).unwrap(),
            sq,
        );
        // A conditionally assigned output: loaded first, kept where the condition fails.
        every_offset(
            &stream,
            "f32 read output",
            [&xh, &yh, &zh],
            n,
            |x, _, z| keep_positive::launch(&stream, x, z).unwrap(),
            |x, _, z| if x > 0.0 { x } else { z },
        );
        let wide = |v: &[f32]| v.iter().map(|&a| a as f64 * 1.5).collect::<Vec<f64>>();
        every_offset(
            &stream,
            "f64",
            [&wide(&xh), &wide(&yh), &wide(&zh)],
            n,
            |x, y, z| squared_diff::launch(&stream, x, y, z).unwrap(),
            |a, b, _| (a - b) * (a - b),
        );
        // One-byte elements: 16 per vector, 16 per thread on the unrolled path.
        let bytes = |v: &[f32]| v.iter().map(|&a| (a * 60.0) as i32 as u8).collect::<Vec<u8>>();
        every_offset(
            &stream,
            "u8",
            [&bytes(&xh), &bytes(&yh), &bytes(&zh)],
            n,
            |a, b, c| mix_bytes::launch(&stream, a, b, c).unwrap(),
            |a, b, c| a.wrapping_mul(3).wrapping_add(b).wrapping_add(c),
        );
    }
}

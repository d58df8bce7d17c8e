//! `fuse!`: a fused chain with a final reduction and a purely elementwise chain, against the
//! unfused kernels (and a CPU reference).

use cuda_embed::{elementwise_kernel, fuse, reduction_kernel, NdView, NdViewMut};

mod common;
use common::{data_pm2 as data, gpu};

fuse!(
    weighted_sq_diff,
    inputs = "T x, T y, T w",
    steps = ["T d = x - y", "T e = d * d * w"],
    outputs = "T s",
    reduce = "a + b",
    identity = "0",
    types = ["double"],
);

fuse!(
    gelu_bias,
    inputs = "float x, float b, scalar float k",
    steps = [
        "float v = x + b",
        "float t = tanhf(0.7978845608f * (v + 0.044715f * v * v * v))",
        "y = 0.5f * v * (1.0f + t) * k"
    ],
    outputs = "float y",
);

elementwise_kernel!(sub, inputs = "double x, double y", outputs = "double d", operation = "d = x - y");
elementwise_kernel!(sq_w, inputs = "double d, double w", outputs = "double e", operation = "e = d * d * w");
reduction_kernel!(sum, inputs = "double e", outputs = "double s", map = "e", reduce = "a + b", identity = "0");

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_reduction_matches_the_unfused_kernels() {
    let st = gpu();
    let n = (1 << 20) + 3;
    let to64 = |v: Vec<f32>| v.into_iter().map(f64::from).collect::<Vec<_>>();
    let (x, y, w) = (to64(data(n, 1)), to64(data(n, 2)), to64(data(n, 3)));
    let (dx, dy, dw) = (st.clone_htod(&x).unwrap(), st.clone_htod(&y).unwrap(), st.clone_htod(&w).unwrap());
    let mut s = st.alloc_zeros::<f64>(1).unwrap();
    weighted_sq_diff::launch(&st, &dx, &dy, &dw, &mut s).unwrap();
    let fused = st.clone_dtoh(&s).unwrap()[0];
    let mut d = st.alloc_zeros::<f64>(n).unwrap();
    let mut e = st.alloc_zeros::<f64>(n).unwrap();
    sub::launch(&st, &dx, &dy, &mut d).unwrap();
    sq_w::launch(&st, &d, &dw, &mut e).unwrap();
    let mut s2 = st.alloc_zeros::<f64>(1).unwrap();
    sum::launch(&st, &e, &mut s2).unwrap();
    let unfused = st.clone_dtoh(&s2).unwrap()[0];
    let cpu: f64 = (0..n).map(|k| (x[k] - y[k]) * (x[k] - y[k]) * w[k]).sum();
    assert!((fused - unfused).abs() <= 1e-9 * unfused.abs(), "fused {fused} unfused {unfused}");
    assert!((fused - cpu).abs() <= 1e-9 * cpu.abs(), "fused {fused} cpu {cpu}");
    // The fused reduction has the reduction's launchers: per row, and over axes of a view.
    let rows = 1024;
    let mut r = st.alloc_zeros::<f64>(rows).unwrap();
    let xs = dx.slice(0..rows * 1024);
    let ys = dy.slice(0..rows * 1024);
    let ws = dw.slice(0..rows * 1024);
    weighted_sq_diff::launch_rows(&st, &xs, &ys, &ws, 1024, &mut r).unwrap();
    let got = st.clone_dtoh(&r).unwrap();
    for (k, g) in got.iter().enumerate().step_by(97) {
        let want: f64 = (k * 1024..(k + 1) * 1024).map(|j| (x[j] - y[j]) * (x[j] - y[j]) * w[j]).sum();
        assert!((g - want).abs() <= 1e-9 * want.abs().max(1.0), "row {k}: {g} vs {want}");
    }
    let xv = NdView::new(&dx, &[32, 64, 16]).unwrap();
    let yv = NdView::new(&dy, &[32, 64, 16]).unwrap();
    let wv = NdView::new(&dw, &[16]).unwrap();
    let mut o = st.alloc_zeros::<f64>(64).unwrap();
    weighted_sq_diff::launch_axes(&st, &xv, &yv, &wv, &[0, 2], &mut o).unwrap();
    let got = st.clone_dtoh(&o).unwrap();
    for (c, g) in got.iter().enumerate() {
        let mut want = 0.0;
        for a in 0..32 {
            for (b, wb) in w.iter().enumerate().take(16) {
                let j = (a * 64 + c) * 16 + b;
                want += (x[j] - y[j]) * (x[j] - y[j]) * wb;
            }
        }
        assert!((g - want).abs() <= 1e-9 * want.abs().max(1.0), "channel {c}: {g} vs {want}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn fused_elementwise_chain_with_broadcast() {
    let st = gpu();
    let (m, n) = (64, 300);
    let x = data(m * n, 4);
    let b = data(n, 5);
    let (dx, db) = (st.clone_htod(&x).unwrap(), st.clone_htod(&b).unwrap());
    let mut y = st.alloc_zeros::<f32>(m * n).unwrap();
    {
        let mut yv = NdViewMut::new(&mut y, &[m, n]).unwrap();
        gelu_bias::launch_nd(&st, &NdView::new(&dx, &[m, n]).unwrap(), &NdView::new(&db, &[n]).unwrap(), 2.0, &mut yv)
            .unwrap();
    }
    let got = st.clone_dtoh(&y).unwrap();
    for r in 0..m {
        for c in 0..n {
            let v = x[r * n + c] + b[c];
            let want = 0.5 * v * (1.0 + (0.797_884_6 * (v + 0.044715 * v * v * v)).tanh()) * 2.0;
            let g = got[r * n + c];
            assert!((g - want).abs() <= 1e-5 * want.abs().max(1.0), "({r}, {c}): {g} vs {want}");
        }
    }
}

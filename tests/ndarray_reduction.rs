//! `reduction_kernel!`'s `launch_axes`: every subset of the axes of a 4-D array, with and without
//! keepdims, transposed, stepped and broadcast inputs, strided outputs, against a CPU reference.

use cuda_embed::ndarray::Layout;
use cuda_embed::{reduction_kernel, Error, NdView, NdViewMut};

mod common;
use common::nd::{all_close as close, element_at, reduce_axes};
use common::{data, gpu};

reduction_kernel!(
    total,
    inputs = "float x",
    outputs = "double y",
    map = "(double)x",
    reduce = "a + b",
    identity = "0.0",
    reduce_type = "double",
);

reduction_kernel!(
    weighted,
    inputs = "T x, scalar T s",
    outputs = "T y",
    map = "x * s * (T)(i % 7 + 1) + (T)0 * (T)n",
    reduce = "a + b",
    identity = "0",
    types = ["double"],
);

/// CPU: for each kept index (row-major over the kept axes), the sum over the reduced axes
/// (row-major) of `f(element, reduced index)`.
fn reference(buf: &[f32], l: &Layout, axes: &[usize], f: impl Fn(f64, usize) -> f64) -> Vec<f64> {
    reduce_axes(l.shape(), axes, |coord, r| f(buf[element_at(l, coord)] as f64, r))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_axis_subset_of_a_4d_array() {
    let s = gpu();
    let shape = [6, 5, 34, 40];
    let n: usize = shape.iter().product();
    let a = data(n, 5);
    let da = s.clone_htod(&a).unwrap();
    let x = NdView::new(&da, &shape).unwrap();
    for mask in 0u32..16 {
        let axes: Vec<usize> = (0..4).filter(|k| mask & (1 << k) != 0).collect();
        let want = reference(&a, x.layout(), &axes, |v, _| v);
        for keepdims in [false, true] {
            let out_shape: Vec<usize> = if keepdims {
                (0..4).map(|k| if axes.contains(&k) { 1 } else { shape[k] }).collect()
            } else {
                (0..4).filter(|k| !axes.contains(k)).map(|k| shape[k]).collect()
            };
            let mut y = s.alloc_zeros::<f64>(want.len()).unwrap();
            {
                let mut yv = NdViewMut::new(&mut y, &out_shape).unwrap();
                total::launch_axes(&s, &x, &axes, &mut yv).unwrap();
            }
            let got = s.clone_dtoh(&y).unwrap();
            close(&got, &want, &format!("axes {axes:?} keepdims {keepdims}"));
            // Deterministic: the same bits again.
            let mut y2 = s.alloc_zeros::<f64>(want.len()).unwrap();
            {
                let mut yv = NdViewMut::new(&mut y2, &out_shape).unwrap();
                total::launch_axes(&s, &x, &axes, &mut yv).unwrap();
            }
            assert_eq!(got, s.clone_dtoh(&y2).unwrap(), "axes {axes:?}: run to run");
        }
        // The same over a permuted view (every axis order differs from memory order).
        let p = x.permute(&[2, 0, 3, 1]).unwrap();
        let want = reference(&a, p.layout(), &axes, |v, _| v);
        let mut y = s.alloc_zeros::<f64>(want.len()).unwrap();
        let out_shape: Vec<usize> = (0..4).filter(|k| !axes.contains(k)).map(|k| p.shape()[k]).collect();
        {
            let mut yv = NdViewMut::new(&mut y, &out_shape).unwrap();
            total::launch_axes(&s, &p, &axes, &mut yv).unwrap();
        }
        close(&s.clone_dtoh(&y).unwrap(), &want, &format!("permuted, axes {axes:?}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transposed_stepped_broadcast_and_indexed() {
    let s = gpu();
    let (m, n) = (333, 1001);
    let a = data(m * n, 6);
    let da = s.clone_htod(&a).unwrap();
    // Last axis of a transposed view (a strided reduction of stride n).
    let t = NdView::new(&da, &[m, n]).unwrap().transpose();
    let want = reference(&a, t.layout(), &[1], |v, _| v);
    let mut y = s.alloc_zeros::<f64>(n).unwrap();
    total::launch_axes(&s, &t, &[1], &mut y).unwrap();
    close(&s.clone_dtoh(&y).unwrap(), &want, "transposed last axis");
    // Stepped rows, reversed columns, into a strided output (every other element).
    let st = NdView::new(&da, &[m, n]).unwrap().slice(0, 3.., 4).unwrap().slice(1, .., -3).unwrap();
    let want = reference(&a, st.layout(), &[1], |v, _| v);
    let mut y = s.alloc_zeros::<f64>(2 * want.len()).unwrap();
    {
        let mut yv = NdViewMut::new(&mut y, &[want.len(), 2])
            .unwrap()
            .slice(1, 1..2, 1)
            .unwrap()
            .reshape(&[want.len()])
            .unwrap();
        total::launch_axes(&s, &st, &[1], &mut yv).unwrap();
    }
    let got = s.clone_dtoh(&y).unwrap();
    let odd: Vec<f64> = got.iter().skip(1).step_by(2).copied().collect();
    close(&odd, &want, "stepped into strided");
    assert!(got.iter().step_by(2).all(|v| *v == 0.0));
    // `i` is the index over the reduced axes; a scalar; doubles.
    let d: Vec<f64> = a.iter().map(|v| *v as f64).collect();
    let dd = s.clone_htod(&d).unwrap();
    let x = NdView::new(&dd, &[7, 11, 13]).unwrap();
    let want = reference(&a, &Layout::row_major(&[7, 11, 13], 0, m * n).unwrap(), &[0, 2], |v, r| {
        v * 0.5 * ((r % 7) + 1) as f64
    });
    let mut y = s.alloc_zeros::<f64>(11).unwrap();
    weighted::launch_axes(&s, &x, 0.5, &[0, 2], &mut y).unwrap();
    close(&s.clone_dtoh(&y).unwrap(), &want, "indexed");
    // An input broadcast along the reduced axis: a [1, k] row reduced over axis 0 of [r, k]
    // (each column sums the same value r times).
    let row = NdView::new(&da, &[1, 50]).unwrap();
    let b = row.broadcast_to(&[9, 50]).unwrap();
    let want: Vec<f64> = (0..50).map(|c| 9.0 * a[c] as f64).collect();
    let mut y = s.alloc_zeros::<f64>(50).unwrap();
    total::launch_axes(&s, &b, &[0], &mut y).unwrap();
    close(&s.clone_dtoh(&y).unwrap(), &want, "broadcast input");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn axis_errors() {
    let s = gpu();
    let da = s.alloc_zeros::<f32>(60).unwrap();
    let x = NdView::new(&da, &[3, 4, 5]).unwrap();
    let mut y = s.alloc_zeros::<f64>(60).unwrap();
    let mut bad = NdViewMut::new(&mut y, &[5]).unwrap();
    match total::launch_axes(&s, &x, &[0, 2], &mut bad) {
        Err(Error::Shape { op, detail }) => {
            assert!(op.contains("reduction `total`"), "{op}");
            assert!(detail.contains("gives [4]") && detail.contains("[1, 4, 1]"), "{detail}");
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    let mut ok = NdViewMut::new(&mut y, &[4]).unwrap();
    assert!(matches!(total::launch_axes(&s, &x, &[3], &mut ok), Err(Error::Shape { .. })));
    assert!(matches!(total::launch_axes(&s, &x, &[1, 1], &mut ok), Err(Error::Shape { .. })));
}

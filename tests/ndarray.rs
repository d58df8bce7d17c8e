//! N-D launches of `elementwise_kernel!` (`launch_nd`): broadcasting in every direction,
//! transposed, stepped and reversed views, strided outputs, ranks 1 to 5, against a CPU
//! reference that walks each view's shape and strides.

use cuda_embed::{elementwise_kernel, CudaSlice, CudaStream, Error, NdView, NdViewMut};
use std::sync::Arc;

mod common;
use common::nd::gather;
use common::{data_pm2 as data, gpu};

elementwise_kernel!(add, inputs = "T x, T y", outputs = "T z", operation = "z = x + y", types = ["float", "double"]);

elementwise_kernel!(
    scale_index,
    inputs = "float x, scalar float a",
    outputs = "float z",
    operation = "z = a * x + (float)i + 0.0f * (float)n"
);

elementwise_kernel!(accumulate, inputs = "float x", outputs = "float y", operation = "y += x");

fn up(stream: &Arc<CudaStream>, v: &[f32]) -> CudaSlice<f32> {
    stream.clone_htod(v).unwrap()
}

fn down(stream: &Arc<CudaStream>, v: &CudaSlice<f32>) -> Vec<f32> {
    stream.clone_dtoh(v).unwrap()
}

/// `x + y` into a fresh row-major output of `out_shape`, checked against the CPU.
fn check_add(stream: &Arc<CudaStream>, x: &NdView<f32>, xs: &[f32], y: &NdView<f32>, ys: &[f32], out_shape: &[usize]) {
    let n: usize = out_shape.iter().product();
    let mut z = stream.alloc_zeros::<f32>(n.max(1)).unwrap();
    {
        let mut zv = NdViewMut::new(&mut z, out_shape).unwrap();
        add::launch_nd(stream, x, y, &mut zv).unwrap();
    }
    let got = down(stream, &z);
    let xb = gather(xs, &x.layout().broadcast_to(out_shape).unwrap());
    let yb = gather(ys, &y.layout().broadcast_to(out_shape).unwrap());
    for k in 0..n {
        assert_eq!(got[k], xb[k] + yb[k], "element {k} of {out_shape:?} ({:?} + {:?})", x.shape(), y.shape());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn broadcasting_in_every_direction() {
    let s = gpu();
    let (m, n) = (37, 515);
    let a = data(m * n, 1);
    let b = data(m * n, 2);
    let (da, db) = (up(&s, &a), up(&s, &b));
    let full = NdView::new(&da, &[m, n]).unwrap();
    // Scalar-like, row, column, both ways at once, rank-extending.
    let one = NdView::new(&db, &[1]).unwrap();
    check_add(&s, &full, &a, &one, &b, &[m, n]);
    let one2 = NdView::new(&db, &[1, 1]).unwrap();
    check_add(&s, &one2, &b, &full, &a, &[m, n]);
    let row = NdView::new(&db, &[n]).unwrap();
    check_add(&s, &full, &a, &row, &b, &[m, n]);
    let col = NdView::new(&db, &[m, 1]).unwrap();
    check_add(&s, &col, &b, &full, &a, &[m, n]);
    let row1 = NdView::new(&da, &[1, n]).unwrap();
    check_add(&s, &col, &b, &row1, &a, &[m, n]);
    // Per-channel bias over [batch, channels, h, w].
    let x4 = NdView::new(&da, &[3, 5, 7, 11]).unwrap();
    let bias = NdView::new(&db, &[5, 1, 1]).unwrap();
    check_add(&s, &x4, &a, &bias, &b, &[3, 5, 7, 11]);
    // Both inputs smaller than the output.
    let c = NdView::new(&da, &[4, 1, 6]).unwrap();
    let d = NdView::new(&db, &[3, 1]).unwrap();
    check_add(&s, &c, &a, &d, &b, &[2, 4, 3, 6]);
    // Flat buffers are 1-D views.
    let mut z = s.alloc_zeros::<f32>(m * n).unwrap();
    add::launch_nd(&s, &da, &db, &mut z).unwrap();
    let got = down(&s, &z);
    assert!(got.iter().enumerate().all(|(k, v)| *v == a[k] + b[k]));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn transposed_stepped_and_reversed_views() {
    let s = gpu();
    let (m, n) = (300, 211);
    let a = data(m * n, 3);
    let b = data(m * n, 4);
    let (da, db) = (up(&s, &a), up(&s, &b));
    let xt = NdView::new(&da, &[n, m]).unwrap().transpose();
    let y = NdView::new(&db, &[m, n]).unwrap();
    check_add(&s, &xt, &a, &y, &b, &[m, n]);
    // Every third row, every other column backwards.
    let big = NdView::new(&da, &[m, n]).unwrap();
    let stepped = big.slice(0, 1..m, 3).unwrap().slice(1, .., -2).unwrap();
    let shape = stepped.shape().to_vec();
    let other = NdView::new(&db, &shape).unwrap();
    check_add(&s, &stepped, &a, &other, &b, &shape);
    // A strided output: every other column of a wider buffer, the rest untouched.
    let mut out = s.alloc_zeros::<f32>(m * 2 * n).unwrap();
    {
        let ov = NdViewMut::new(&mut out, &[m, 2 * n]).unwrap().slice(1, 1.., 2).unwrap();
        let mut ov = ov;
        add::launch_nd(&s, &xt, &y, &mut ov).unwrap();
    }
    let got = down(&s, &out);
    let xb = gather(&a, xt.layout());
    for r in 0..m {
        for c in 0..n {
            assert_eq!(got[r * 2 * n + 2 * c], 0.0);
            assert_eq!(got[r * 2 * n + 2 * c + 1], xb[r * n + c] + b[r * n + c]);
        }
    }
    // An output that is read (`y += x`) through a transposed view.
    let mut acc = up(&s, &b);
    {
        let mut av = NdViewMut::new(&mut acc, &[m, n]).unwrap().transpose();
        let x = NdView::new(&da, &[n, m]).unwrap();
        accumulate::launch_nd(&s, &x, &mut av).unwrap();
    }
    let got = down(&s, &acc);
    for r in 0..m {
        for c in 0..n {
            assert_eq!(got[r * n + c], b[r * n + c] + a[c * m + r]);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_rank_from_one_to_five_with_i_and_scalars() {
    let s = gpu();
    let shapes: [&[usize]; 5] = [&[1001], &[33, 65], &[7, 9, 130], &[3, 5, 7, 67], &[2, 3, 4, 5, 37]];
    for (r, shape) in shapes.iter().enumerate() {
        let n: usize = shape.iter().product();
        let a = data(n, 10 + r as u64);
        let da = up(&s, &a);
        // Read the input permuted (reversed axes of a buffer of the reversed shape), so no two
        // dimensions merge.
        let rev: Vec<usize> = shape.iter().rev().copied().collect();
        let x = NdView::new(&da, &rev).unwrap().transpose();
        let mut z = s.alloc_zeros::<f32>(n).unwrap();
        {
            let mut zv = NdViewMut::new(&mut z, shape).unwrap();
            scale_index::launch_nd(&s, &x, 0.5, &mut zv).unwrap();
        }
        let got = down(&s, &z);
        let xb = gather(&a, x.layout());
        for k in 0..n {
            assert_eq!(got[k], 0.5 * xb[k] + k as f32, "rank {} element {k}", r + 1);
        }
        // Contiguous N-D: the flat path, the same values.
        let xc = NdView::new(&da, shape).unwrap();
        let mut zc = s.alloc_zeros::<f32>(n).unwrap();
        {
            let mut zv = NdViewMut::new(&mut zc, shape).unwrap();
            scale_index::launch_nd(&s, &xc, 0.5, &mut zv).unwrap();
        }
        let got = down(&s, &zc);
        assert!((0..n).all(|k| got[k] == 0.5 * a[k] + k as f32), "contiguous rank {}", r + 1);
    }
    // Doubles and a rank-8 view (all dims of 2 with alternating order).
    let n = 256;
    let a: Vec<f64> = (0..n).map(|k| k as f64).collect();
    let da = s.clone_htod(&a).unwrap();
    let x = NdView::new(&da, &[2; 8]).unwrap().permute(&[1, 0, 3, 2, 5, 4, 7, 6]).unwrap();
    let y = NdView::new(&da, &[2; 8]).unwrap();
    let mut z = s.alloc_zeros::<f64>(n).unwrap();
    {
        let mut zv = NdViewMut::new(&mut z, &[2; 8]).unwrap();
        add::launch_nd(&s, &x, &y, &mut zv).unwrap();
    }
    let got = s.clone_dtoh(&z).unwrap();
    for (k, g) in got.iter().enumerate() {
        // Swapping each pair of axes swaps each pair of index bits.
        let swapped = ((k & 0xaa) >> 1) | ((k & 0x55) << 1);
        assert_eq!(*g, (swapped + k) as f64);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn shape_errors_name_operands_and_shapes() {
    let s = gpu();
    let da = s.alloc_zeros::<f32>(64).unwrap();
    let mut z = s.alloc_zeros::<f32>(64).unwrap();
    let x = NdView::new(&da, &[4, 8]).unwrap();
    let y = NdView::new(&da, &[4]).unwrap();
    let mut zv = NdViewMut::new(&mut z, &[4, 8]).unwrap();
    match add::launch_nd(&s, &x, &y, &mut zv) {
        Err(Error::Shape { op, detail }) => {
            assert!(op.contains("kernel `add"), "{op}");
            assert!(
                detail.contains("input `y` of shape [4] does not broadcast to the shape [4, 8] of output `z`"),
                "{detail}"
            );
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    // Views are checked when made.
    assert!(matches!(NdView::new(&da, &[9, 8]), Err(Error::Shape { .. })));
    assert!(matches!(NdView::with_strides(&da, &[4, 4], &[21, 1], 0), Err(Error::Shape { .. })));
    assert!(matches!(NdViewMut::with_strides(&mut z, &[4, 4], &[1, 1], 0), Err(Error::Shape { .. })));
    // Empty: nothing launched.
    let e = NdView::new(&da, &[0, 8]).unwrap();
    let mut ev = NdViewMut::new(&mut z, &[0, 8]).unwrap();
    add::launch_nd(&s, &e, &e, &mut ev).unwrap();
}

//! The run-time twins on N-D views: `ElementwiseKernel::launch_nd` and `Reduction::launch_axes`
//! (broadcast, transposed, stepped and permuted operands; every axis subset of a 4-D array),
//! against a CPU reference and bit for bit against the macros' `launch_nd` / `launch_axes` of the
//! same definitions; shape and argument errors.

use cuda_embed::{
    elementwise_kernel, reduction_kernel, Arg, ElementwiseProgram, Error, NdView, NdViewMut, ReductionProgram, TypedArg,
};

mod common;
use common::nd::{all_close as close, gather, reduce_flat as reduce_ref};
use common::{data_pm2 as data, gpu};

elementwise_kernel!(add, inputs = "T x, T y", outputs = "T z", operation = "z = x + y", types = ["float"]);

reduction_kernel!(
    total,
    inputs = "float x",
    outputs = "double y",
    map = "(double)x",
    reduce = "a + b",
    identity = "0.0",
    reduce_type = "double",
);

/// What `x + y` is checked on: a name, the two inputs and the output's shape.
type Case<'a> = (&'a str, NdView<'a, f32>, NdView<'a, f32>, Vec<usize>);

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_program_launch_nd() {
    let s = gpu();
    let prog = ElementwiseProgram::new("rt_add", "T x, T y", "T z", "z = x + y").unwrap();
    let k = prog.build(s.context(), "float").unwrap();
    let (m, n) = (37, 515);
    let (a, b) = (data(m * n, 1), data(m * n, 2));
    let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
    let x = NdView::new(&da, &[m, n]).unwrap();
    let cases: Vec<Case> = vec![
        ("contiguous", x.clone(), NdView::new(&db, &[m, n]).unwrap(), vec![m, n]),
        ("transposed + column bias", x.transpose(), NdView::new(&db, &[n, 1]).unwrap(), vec![n, m]),
        ("row broadcast", x.clone(), NdView::new(&db, &[n]).unwrap(), vec![m, n]),
        ("scalar-like", x.clone(), NdView::new(&db, &[1, 1]).unwrap(), vec![m, n]),
        (
            "stepped, reversed",
            x.slice(0, .., 2).unwrap().slice(1, 1.., -3).unwrap(),
            NdView::new(&db, &[172]).unwrap(),
            vec![19, 172],
        ),
        (
            "rank 5, permuted",
            NdView::new(&da, &[2, 3, 4, 5, 6]).unwrap().permute(&[4, 2, 0, 3, 1]).unwrap(),
            NdView::new(&db, &[4, 1, 5, 1]).unwrap(),
            vec![6, 4, 2, 5, 3],
        ),
    ];
    for (what, xv, yv, shape) in &cases {
        let len: usize = shape.iter().product();
        let (mut z, mut zm) = (s.alloc_zeros::<f32>(len).unwrap(), s.alloc_zeros::<f32>(len).unwrap());
        {
            let mut zv = NdViewMut::new(&mut z, shape).unwrap();
            k.launch_nd(&s, &mut [Arg::view(xv), Arg::view(yv), Arg::view_mut(&mut zv)]).unwrap();
            let mut zmv = NdViewMut::new(&mut zm, shape).unwrap();
            add::launch_nd(&s, xv, yv, &mut zmv).unwrap();
        }
        let got = s.clone_dtoh(&z).unwrap();
        let xb = gather(&a, &xv.layout().broadcast_to(shape).unwrap());
        let yb = gather(&b, &yv.layout().broadcast_to(shape).unwrap());
        for e in 0..len {
            assert_eq!(got[e], xb[e] + yb[e], "{what}: element {e}");
        }
        assert_eq!(got, s.clone_dtoh(&zm).unwrap(), "{what}: the program and the macro");
    }
    // Flat buffers are 1-D views; a strided output (every other element).
    let mut z = s.alloc_zeros::<f32>(2 * m * n).unwrap();
    {
        let mut zv = NdViewMut::new(&mut z, &[m * n, 2]).unwrap().slice(1, 0..1, 1).unwrap().reshape(&[m * n]).unwrap();
        k.launch_nd(&s, &mut [Arg::slice(&da), Arg::slice(&db), Arg::view_mut(&mut zv)]).unwrap();
    }
    let got = s.clone_dtoh(&z).unwrap();
    for e in 0..m * n {
        assert_eq!((got[2 * e], got[2 * e + 1]), (a[e] + b[e], 0.0), "strided output element {e}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_program_nd_errors() {
    let s = gpu();
    let k = ElementwiseProgram::new("rt_add_err", "T x, T y", "T z", "z = x + y")
        .unwrap()
        .build(s.context(), "float")
        .unwrap();
    let da = s.alloc_zeros::<f32>(60).unwrap();
    let mut dz = s.alloc_zeros::<f32>(60).unwrap();
    let x = NdView::new(&da, &[3, 4, 5]).unwrap();
    let bad = NdView::new(&da, &[4]).unwrap();
    {
        let mut z = NdViewMut::new(&mut dz, &[3, 4, 5]).unwrap();
        match k.launch_nd(&s, &mut [Arg::view(&x), Arg::view(&bad), Arg::view_mut(&mut z)]) {
            Err(Error::Shape { op, detail }) => {
                assert!(op.contains("rt_add_err"), "{op}");
                assert!(
                    detail.contains("input `y` of shape [4] does not broadcast to the shape [3, 4, 5]"),
                    "{detail}"
                );
            }
            other => panic!("expected a shape error, got {other:?}"),
        }
        // A read-only view as the output.
        let zr = NdView::new(&da, &[3, 4, 5]).unwrap();
        match k.launch_nd(&s, &mut [Arg::view(&x), Arg::view(&x), Arg::view(&zr)]) {
            Err(Error::Argument { parameter, .. }) => assert_eq!(parameter, "z"),
            other => panic!("expected an argument error, got {other:?}"),
        }
        // The flat launch refuses views.
        match k.launch(&s, &mut [Arg::view(&x), Arg::view(&x), Arg::view_mut(&mut z)]) {
            Err(Error::Argument { parameter, detail, .. }) => {
                assert_eq!(parameter, "x");
                assert!(detail.contains("launch_nd"), "{detail}");
            }
            other => panic!("expected an argument error, got {other:?}"),
        }
    }
    // Wrong element type of a view.
    let dd = s.alloc_zeros::<f64>(60).unwrap();
    let xd = NdView::new(&dd, &[3, 4, 5]).unwrap();
    let mut z = NdViewMut::new(&mut dz, &[3, 4, 5]).unwrap();
    assert!(matches!(
        k.launch_nd(&s, &mut [Arg::view(&xd), Arg::view(&x), Arg::view_mut(&mut z)]),
        Err(Error::Argument { .. })
    ));
}

fn total_program() -> ReductionProgram {
    ReductionProgram::new("rt_total", "float x", "double y")
        .map("(double)x")
        .reduce("a + b")
        .identity("0.0")
        .reduce_type("double")
}

/// Every axis subset of a 4-D array (full, rows, columns and strided plans), with and without
/// keepdims, and of a permuted view: the CPU's sums, and the macro's bits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn reduction_program_launch_axes_every_subset() {
    let s = gpu();
    let red = total_program().load(s.context()).unwrap();
    let shape = [6, 5, 34, 40];
    let n: usize = shape.iter().product();
    let a = data(n, 5);
    let da = s.clone_htod(&a).unwrap();
    let x = NdView::new(&da, &shape).unwrap();
    let p = x.permute(&[2, 0, 3, 1]).unwrap();
    let pl = gather(&a, p.layout());
    for mask in 0u32..16 {
        let axes: Vec<usize> = (0..4).filter(|k| mask & (1 << k) != 0).collect();
        let want = reduce_ref(&shape, &axes, |f| a[f] as f64);
        let keep: Vec<usize> = (0..4).map(|k| if axes.contains(&k) { 1 } else { shape[k] }).collect();
        let kept: Vec<usize> = (0..4).filter(|k| !axes.contains(k)).map(|k| shape[k]).collect();
        let (mut y, mut yk, mut ym) = (
            s.alloc_zeros::<f64>(want.len()).unwrap(),
            s.alloc_zeros::<f64>(want.len()).unwrap(),
            s.alloc_zeros::<f64>(want.len()).unwrap(),
        );
        {
            let mut yv = NdViewMut::new(&mut y, &kept).unwrap();
            red.launch_axes(&s, &axes, &mut [TypedArg::view(&x), TypedArg::view_mut(&mut yv)]).unwrap();
            let mut ykv = NdViewMut::new(&mut yk, &keep).unwrap();
            red.launch_axes(&s, &axes, &mut [TypedArg::view(&x), TypedArg::view_mut(&mut ykv)]).unwrap();
            total::launch_axes(&s, &x, &axes, &mut NdViewMut::new(&mut ym, &kept).unwrap()).unwrap();
        }
        let what = format!("axes {axes:?}");
        let got = s.clone_dtoh(&y).unwrap();
        close(&got, &want, &what);
        assert_eq!(got, s.clone_dtoh(&yk).unwrap(), "{what}: keepdims");
        assert_eq!(got, s.clone_dtoh(&ym).unwrap(), "{what}: the program and the macro");
        if kept.len() == 1 {
            // A 1-D result may also be a flat buffer.
            let mut yf = s.alloc_zeros::<f64>(want.len()).unwrap();
            red.launch_axes(&s, &axes, &mut [TypedArg::view(&x), TypedArg::slice_mut(&mut yf)]).unwrap();
            assert_eq!(got, s.clone_dtoh(&yf).unwrap(), "{what}: flat output");
        }
        let pwant = reduce_ref(p.shape(), &axes, |f| pl[f] as f64);
        let pkept: Vec<usize> = (0..4).filter(|k| !axes.contains(k)).map(|k| p.shape()[k]).collect();
        let mut yp = s.alloc_zeros::<f64>(pwant.len()).unwrap();
        {
            let mut ypv = NdViewMut::new(&mut yp, &pkept).unwrap();
            red.launch_axes(&s, &axes, &mut [TypedArg::view(&p), TypedArg::view_mut(&mut ypv)]).unwrap();
        }
        close(&s.clone_dtoh(&yp).unwrap(), &pwant, &format!("permuted, {what}"));
    }
    // An input that is a region of a larger buffer (offset, contiguous rows): the rows kernel on
    // that region only.
    let rows = x.slice(0, 2..4, 1).unwrap().reshape(&[2 * 5 * 34, 40]).unwrap();
    let mut y = s.alloc_zeros::<f64>(2 * 5 * 34).unwrap();
    red.launch_axes(&s, &[1], &mut [TypedArg::view(&rows), TypedArg::slice_mut(&mut y)]).unwrap();
    let start = 2 * 5 * 34 * 40;
    let want: Vec<f64> = (0..2 * 5 * 34).map(|r| (0..40).map(|c| a[start + r * 40 + c] as f64).sum()).collect();
    close(&s.clone_dtoh(&y).unwrap(), &want, "offset rows");
}

/// Two placeholders, two array inputs (one broadcast) and a scalar.
#[test]
#[ignore = "needs a CUDA GPU"]
fn reduction_program_launch_axes_two_inputs() {
    let s = gpu();
    let red = ReductionProgram::new("rt_weighted", "T x, U w, scalar T s", "T y")
        .map("x * (T)w * s")
        .reduce("a + b")
        .identity("0")
        .types(["T=double, U=float"])
        .load(s.context())
        .unwrap();
    let shape = [8, 30, 50];
    let n: usize = shape.iter().product();
    let a: Vec<f64> = data(n, 7).iter().map(|v| *v as f64).collect();
    let w = data(30 * 50, 8);
    let (da, dw) = (s.clone_htod(&a).unwrap(), s.clone_htod(&w).unwrap());
    let x = NdView::new(&da, &shape).unwrap();
    let wv = NdView::new(&dw, &[30, 50]).unwrap();
    let scale = 0.25f64;
    for axes in [vec![0], vec![1], vec![2], vec![0, 2], vec![1, 2], vec![0, 1, 2]] {
        let want = reduce_ref(&shape, &axes, |f| a[f] * w[f % (30 * 50)] as f64 * 0.25);
        let kept: Vec<usize> = (0..3).filter(|k| !axes.contains(k)).map(|k| shape[k]).collect();
        let mut y = s.alloc_zeros::<f64>(want.len()).unwrap();
        {
            let mut yv = NdViewMut::new(&mut y, &kept).unwrap();
            red.launch_axes(
                &s,
                &axes,
                &mut [TypedArg::view(&x), TypedArg::view(&wv), TypedArg::scalar(&scale), TypedArg::view_mut(&mut yv)],
            )
            .unwrap();
        }
        close(&s.clone_dtoh(&y).unwrap(), &want, &format!("axes {axes:?}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn reduction_program_axes_errors() {
    let s = gpu();
    let red = total_program().load(s.context()).unwrap();
    let da = s.alloc_zeros::<f32>(60).unwrap();
    let x = NdView::new(&da, &[3, 4, 5]).unwrap();
    let mut y = s.alloc_zeros::<f64>(4).unwrap();
    match red.launch_axes(&s, &[3], &mut [TypedArg::view(&x), TypedArg::slice_mut(&mut y)]) {
        Err(Error::Shape { op, detail }) => {
            assert!(op.contains("rt_total"), "{op}");
            assert!(detail.contains("axis 3 is out of range"), "{detail}");
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    match red.launch_axes(&s, &[1], &mut [TypedArg::view(&x), TypedArg::slice_mut(&mut y)]) {
        Err(Error::Shape { detail, .. }) => assert!(detail.contains("gives [3, 5]"), "{detail}"),
        other => panic!("expected a shape error, got {other:?}"),
    }
    // The flat launchers refuse views.
    let e = red.launch(&s, &mut [TypedArg::view(&x), TypedArg::slice_mut(&mut y)]).unwrap_err();
    assert!(e.to_string().contains("launch_axes"), "{e}");
}

//! N-D launches as graph nodes: `elementwise_kernel!`'s `node_nd` and `reduction_kernel!`'s
//! `node_axes` (broadcast, transposed, stepped and contiguous operands; every axis subset of a
//! 4-D array, which covers the full, rows, columns and strided plans), replayed and checked
//! against a CPU reference; shape errors add nothing to the graph.

use cuda_embed::{elementwise_kernel, reduction_kernel, Error, Graph, NdView, NdViewMut, NodeKind};

mod common;
use common::nd::{all_close as close, gather, reduce_flat as reduce_ref};
use common::{data_pm2 as data, gpu};

elementwise_kernel!(add, inputs = "T x, T y", outputs = "T z", operation = "z = x + y", types = ["float", "double"]);

elementwise_kernel!(
    scale_index,
    inputs = "float x, scalar float a",
    outputs = "float z",
    operation = "z = a * x + (float)i + 0.0f * (float)n"
);

elementwise_kernel!(accumulate, inputs = "float x", outputs = "float y", operation = "y += x");

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
    weighted_sum,
    inputs = "T x, U w, scalar T s",
    outputs = "T y",
    map = "x * (T)w * s",
    reduce = "a + b",
    identity = "0",
    types = ["T=double, U=float"],
);

/// Instantiates `g` and replays it `times` times on the stream.
fn replay(g: &Graph, s: &std::sync::Arc<cuda_embed::CudaStream>, times: usize) {
    let exec = g.instantiate().unwrap();
    for _ in 0..times {
        // SAFETY: every node's kernel stays within its checked views.
        unsafe { exec.launch(s).unwrap() };
    }
    exec.synchronize(s).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nd_elementwise_nodes_replayed() {
    let s = gpu();
    let ctx = s.context().clone();
    let (m, n) = (37, 515);
    let (a, b) = (data(m * n, 1), data(m * n, 2));
    let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
    let (mut z_contig, mut z_bias, mut z_step) = (
        s.alloc_zeros::<f32>(m * n).unwrap(),
        s.alloc_zeros::<f32>(n * m).unwrap(),
        s.alloc_zeros::<f32>(2 * 19 * 172).unwrap(),
    );
    let acc = s.alloc_zeros::<f32>(m * n).unwrap();
    let x = NdView::new(&da, &[m, n]).unwrap();
    let y = NdView::new(&db, &[m, n]).unwrap();
    let xt = x.transpose(); // [n, m], strides [1, n]
    let bias = NdView::new(&db, &[n, 1]).unwrap(); // a column, broadcast along m
    let st = x.slice(0, .., 2).unwrap().slice(1, 1.., -3).unwrap(); // stepped rows, reversed columns
    let (sr, sc) = (st.shape()[0], st.shape()[1]);
    assert_eq!((sr, sc), (19, 172));
    {
        let zc = NdViewMut::new(&mut z_contig, &[m, n]).unwrap();
        let zb = NdViewMut::new(&mut z_bias, &[n, m]).unwrap();
        // Every other element of a [sr, 2 * sc] array: a strided output.
        let zs = NdViewMut::new(&mut z_step, &[sr, 2 * sc]).unwrap().slice(1, .., 2).unwrap();
        let mut g = Graph::new(&ctx).unwrap();
        let k1 = add::node_nd(&mut g, &x, &y, &zc).unwrap(); // contiguous: the flat kernel
        let k2 = add::node_nd(&mut g, &xt, &bias, &zb).unwrap(); // transposed + broadcast: strided
        let k3 = scale_index::node_nd(&mut g, &st, 0.5, &zs).unwrap(); // stepped, reversed, a scalar, `i`
                                                                       // A read-modify-write output twice: a chain of two nodes.
        let k4 = accumulate::node_nd(&mut g, &da, &acc).unwrap(); // flat buffers: 1-D
        let k5 = accumulate::node_nd(&mut g, &da, &acc).unwrap();
        for k in [k1, k2, k3, k4, k5] {
            assert_eq!(g.kind(k), Some(NodeKind::Kernel));
        }
        assert_eq!(g.edges(), vec![(k4, k5)], "only the accumulations share a written buffer");
        replay(&g, &s, 3);
    }
    let got = s.clone_dtoh(&z_contig).unwrap();
    for k in 0..m * n {
        assert_eq!(got[k], a[k] + b[k], "contiguous element {k}");
    }
    let got = s.clone_dtoh(&z_bias).unwrap();
    let xtl = gather(&a, xt.layout());
    let bl = gather(&b, &bias.layout().broadcast_to(&[n, m]).unwrap());
    for k in 0..n * m {
        assert_eq!(got[k], xtl[k] + bl[k], "transposed + bias element {k}");
    }
    let got = s.clone_dtoh(&z_step).unwrap();
    let stl = gather(&a, st.layout());
    for k in 0..sr * sc {
        assert_eq!(got[2 * k], 0.5 * stl[k] + k as f32, "stepped element {k}");
        assert_eq!(got[2 * k + 1], 0.0, "untouched element {}", 2 * k + 1);
    }
    // Three replays of two accumulations each.
    let got = s.clone_dtoh(&acc).unwrap();
    for k in 0..m * n {
        let mut want = 0.0f32;
        for _ in 0..6 {
            want += a[k];
        }
        assert_eq!(got[k], want, "accumulated element {k}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nd_node_shape_errors_add_nothing() {
    let s = gpu();
    let ctx = s.context().clone();
    let da = s.alloc_zeros::<f32>(60).unwrap();
    let mut dz = s.alloc_zeros::<f32>(60).unwrap();
    let x = NdView::new(&da, &[3, 4, 5]).unwrap();
    let wrong = NdView::new(&da, &[4]).unwrap();
    let z = NdViewMut::new(&mut dz, &[3, 4, 5]).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    match add::node_nd(&mut g, &x, &wrong, &z) {
        Err(Error::Shape { op, detail }) => {
            assert!(op.contains("add"), "{op}");
            assert!(detail.contains("input `y` of shape [4] does not broadcast to the shape [3, 4, 5]"), "{detail}");
        }
        other => panic!("expected a shape error, got {other:?}"),
    }
    let small = s.alloc_zeros::<f32>(7).unwrap();
    assert!(matches!(add::node_nd(&mut g, &x, &x, &small), Err(Error::Shape { .. })), "output shape [7]");
    let small64 = s.alloc_zeros::<f64>(7).unwrap();
    match total::node_axes(&mut g, &x, &[3], &small64) {
        Err(Error::Shape { detail, .. }) => assert!(detail.contains("axis 3 is out of range"), "{detail}"),
        other => panic!("expected a shape error, got {other:?}"),
    }
    let y4 = s.alloc_zeros::<f64>(4).unwrap();
    assert!(matches!(total::node_axes(&mut g, &x, &[1, 1], &y4), Err(Error::Shape { .. })), "axis twice");
    match total::node_axes(&mut g, &x, &[0, 2], &small64) {
        Err(Error::Shape { detail, .. }) => assert!(detail.contains("gives [4]"), "{detail}"),
        other => panic!("expected a shape error, got {other:?}"),
    }
    assert!(g.is_empty(), "a refused node adds nothing");
    // No element: an empty node.
    let e = NdView::new(&da, &[0, 5]).unwrap();
    let mut de = s.alloc_zeros::<f32>(1).unwrap();
    let ze = NdViewMut::new(&mut de, &[0, 5]).unwrap();
    let node = add::node_nd(&mut g, &e, &e, &ze).unwrap();
    assert_eq!(g.kind(node), Some(NodeKind::Empty));
}

/// `node_axes` over every axis subset of a 4-D array (full, rows, columns and strided plans), with
/// and without keepdims, and over a permuted view; three replays give the CPU's sums.
#[test]
#[ignore = "needs a CUDA GPU"]
fn axes_nodes_every_subset_replayed() {
    let s = gpu();
    let ctx = s.context().clone();
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
        let pshape = p.shape().to_vec();
        let pwant = reduce_ref(&pshape, &axes, |f| pl[f] as f64);
        let kept: Vec<usize> = (0..4).filter(|k| !axes.contains(k)).map(|k| shape[k]).collect();
        let pkept: Vec<usize> = (0..4).filter(|k| !axes.contains(k)).map(|k| pshape[k]).collect();
        let (mut y, mut y2, mut yp) = (
            s.alloc_zeros::<f64>(want.len()).unwrap(),
            s.alloc_zeros::<f64>(want.len()).unwrap(),
            s.alloc_zeros::<f64>(pwant.len()).unwrap(),
        );
        // A 1-D result may also be a flat buffer.
        let y_flat = s.alloc_zeros::<f64>(want.len()).unwrap();
        {
            let yk = NdViewMut::new(&mut y, &keep).unwrap(); // keepdims
            let yv = NdViewMut::new(&mut y2, &kept).unwrap();
            let ypv = NdViewMut::new(&mut yp, &pkept).unwrap();
            let mut g = Graph::new(&ctx).unwrap();
            let k1 = total::node_axes(&mut g, &x, &axes, &yk).unwrap();
            total::node_axes(&mut g, &x, &axes, &yv).unwrap();
            total::node_axes(&mut g, &p, &axes, &ypv).unwrap();
            if kept.len() == 1 {
                total::node_axes(&mut g, &x, &axes, &y_flat).unwrap();
            }
            assert_eq!(g.kind(k1), Some(NodeKind::Kernel), "axes {axes:?}");
            replay(&g, &s, 3);
        }
        let what = format!("axes {axes:?}");
        let got = s.clone_dtoh(&y2).unwrap();
        close(&got, &want, &what);
        assert_eq!(s.clone_dtoh(&y).unwrap(), got, "{what}: keepdims");
        if kept.len() == 1 {
            assert_eq!(s.clone_dtoh(&y_flat).unwrap(), got, "{what}: flat output");
        }
        close(&s.clone_dtoh(&yp).unwrap(), &pwant, &format!("permuted, {what}"));
        // The same bits as `launch_axes`.
        let mut direct = s.alloc_zeros::<f64>(want.len()).unwrap();
        {
            let mut dv = NdViewMut::new(&mut direct, &kept).unwrap();
            total::launch_axes(&s, &x, &axes, &mut dv).unwrap();
        }
        assert_eq!(s.clone_dtoh(&direct).unwrap(), got, "{what}: node and launch");
    }
}

/// Two placeholders and two array inputs (one broadcast): `launch_axes` and `node_axes`.
#[test]
#[ignore = "needs a CUDA GPU"]
fn axes_with_two_placeholders() {
    let s = gpu();
    let ctx = s.context().clone();
    let shape = [8, 30, 50];
    let n: usize = shape.iter().product();
    let a: Vec<f64> = data(n, 7).iter().map(|v| *v as f64).collect();
    let w = data(30 * 50, 8);
    let (da, dw) = (s.clone_htod(&a).unwrap(), s.clone_htod(&w).unwrap());
    let x = NdView::new(&da, &shape).unwrap();
    let wv = NdView::new(&dw, &[30, 50]).unwrap(); // broadcast along axis 0
    let xt = x.permute(&[2, 1, 0]).unwrap(); // [50, 30, 8]
    let wt = wv.transpose().reshape(&[50, 30, 1]).unwrap(); // broadcast along axis 2
    let xtl = gather(&a, xt.layout());
    let wtl = gather(&w, &wt.layout().broadcast_to(&[50, 30, 8]).unwrap());
    for axes in [vec![0], vec![1], vec![2], vec![0, 2], vec![1, 2], vec![0, 1, 2]] {
        let want = reduce_ref(&shape, &axes, |f| a[f] * w[f % (30 * 50)] as f64 * 0.25);
        let twant = reduce_ref(&[50, 30, 8], &axes, |f| xtl[f] * wtl[f] as f64 * 0.25);
        let kept: Vec<usize> = (0..3).filter(|k| !axes.contains(k)).map(|k| shape[k]).collect();
        let tkept: Vec<usize> = (0..3).filter(|k| !axes.contains(k)).map(|k| [50, 30, 8][k]).collect();
        let mut y = s.alloc_zeros::<f64>(want.len()).unwrap();
        weighted_sum::launch_axes(&s, &x, &wv, 0.25, &axes, &mut NdViewMut::new(&mut y, &kept).unwrap()).unwrap();
        close(&s.clone_dtoh(&y).unwrap(), &want, &format!("launch_axes {axes:?}"));
        let mut yt = s.alloc_zeros::<f64>(twant.len()).unwrap();
        weighted_sum::launch_axes(&s, &xt, &wt, 0.25, &axes, &mut NdViewMut::new(&mut yt, &tkept).unwrap()).unwrap();
        close(&s.clone_dtoh(&yt).unwrap(), &twant, &format!("launch_axes transposed {axes:?}"));
        let (mut yg, mut ygt) = (s.alloc_zeros::<f64>(want.len()).unwrap(), s.alloc_zeros::<f64>(twant.len()).unwrap());
        {
            let (ygv, ygtv) = (NdViewMut::new(&mut yg, &kept).unwrap(), NdViewMut::new(&mut ygt, &tkept).unwrap());
            let mut g = Graph::new(&ctx).unwrap();
            weighted_sum::node_axes(&mut g, &x, &wv, 0.25, &axes, &ygv).unwrap();
            weighted_sum::node_axes(&mut g, &xt, &wt, 0.25, &axes, &ygtv).unwrap();
            replay(&g, &s, 2);
        }
        close(&s.clone_dtoh(&yg).unwrap(), &want, &format!("node_axes {axes:?}"));
        close(&s.clone_dtoh(&ygt).unwrap(), &twant, &format!("node_axes transposed {axes:?}"));
    }
    // A shape that does not broadcast names both operands.
    let bad = NdView::new(&dw, &[7]).unwrap();
    let mut y = s.alloc_zeros::<f64>(8).unwrap();
    match weighted_sum::launch_axes(&s, &x, &bad, 1.0, &[1, 2], &mut y) {
        Err(Error::Shape { detail, .. }) => assert!(detail.contains("input `w` of shape [7]"), "{detail}"),
        other => panic!("expected a shape error, got {other:?}"),
    }
}

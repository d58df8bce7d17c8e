//! N-D launches as graph nodes: `elementwise_kernel!`'s `node_nd` and `reduction_kernel!`'s
//! `node_axes` (broadcast, transposed, stepped and contiguous operands; every axis subset of a
//! 4-D array, which covers the full, rows, columns and strided plans), replayed and checked
//! against a CPU reference; shape errors add nothing to the graph. `update_nd` on an instantiated
//! graph: other buffers and views of the same layout class, new scalars; another layout class or
//! rank, an empty/non-empty swap and another kernel's node are refused and change nothing.

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

/// `r` is the `Error::Graph` of an `update_nd` that needs another node: it names the reason
/// (`needle`), says nothing was changed and to build the graph again.
fn expect_rebuild(r: cuda_embed::Result<()>, needle: &str, what: &str) {
    match r {
        Err(Error::Graph { cause, fix, .. }) => {
            assert!(cause.contains(needle) && cause.contains("nothing was changed"), "{what}: {cause}");
            assert!(fix.as_deref().unwrap_or("").contains("build the graph again"), "{what}: {fix:?}");
        }
        other => panic!("{what}: expected Error::Graph, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nd_elementwise_nodes_updated() {
    let s = gpu();
    let ctx = s.context().clone();
    let (m, n) = (37, 515); // 515 = 5 * 103
    let (a, b, a2, b2) = (data(m * n, 1), data(m * n, 2), data(m * n, 3), data(m * n, 4));
    let (da, db) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
    let (da2, db2) = (s.clone_htod(&a2).unwrap(), s.clone_htod(&b2).unwrap());
    let zeros = |len: usize| s.alloc_zeros::<f32>(len).unwrap();
    let (mut bzc, mut bzc2, mut bzt, mut bzt2) = (zeros(m * n), zeros(m * n), zeros(n * m), zeros(n * m));
    let (mut bzs, mut bzs2, mut bo3) = (zeros(19 * 172), zeros(19 * 172), zeros(m * n));
    let (acc, acc2, spare, empty) = (zeros(m * n), zeros(m * n), zeros(m * n), zeros(0));
    let x = NdView::new(&da, &[m, n]).unwrap();
    let y = NdView::new(&db, &[m, n]).unwrap();
    let x2 = NdView::new(&da2, &[m, n]).unwrap();
    let y2 = NdView::new(&db2, &[m, n]).unwrap();
    let (xt, x2t) = (x.transpose(), x2.transpose()); // [n, m], strides [1, n]
    let bias = NdView::new(&db, &[n, 1]).unwrap(); // a column, broadcast along m
    let bias2 = NdView::new(&db2, &[n, 1]).unwrap();
    let st = x.slice(0, .., 2).unwrap().slice(1, 1.., -3).unwrap(); // [19, 172], stepped and reversed
    let st2 = x2.slice(0, .., 2).unwrap().slice(1, 1.., -3).unwrap();
    assert_eq!(st.shape(), &[19, 172]);
    let zc = NdViewMut::new(&mut bzc, &[m, n]).unwrap();
    let zc2 = NdViewMut::new(&mut bzc2, &[m, n]).unwrap();
    let zt = NdViewMut::new(&mut bzt, &[n, m]).unwrap();
    let zt2 = NdViewMut::new(&mut bzt2, &[n, m]).unwrap();
    let zs = NdViewMut::new(&mut bzs, &[19, 172]).unwrap();
    let zs2 = NdViewMut::new(&mut bzs2, &[19, 172]).unwrap();
    // Rank 3 after merging: [103, 5, m] with x3's strides [1, 103, 515] against row-major ones.
    let x3 = NdView::new(&da2, &[m, 5, 103]).unwrap().permute(&[2, 1, 0]).unwrap();
    let y3 = NdView::new(&db2, &[103, 5, m]).unwrap();
    let z3 = NdViewMut::new(&mut bo3, &[103, 5, m]).unwrap();
    let short = NdView::new(&da2, &[m, n - 1]).unwrap();

    let mut g = Graph::new(&ctx).unwrap();
    let k1 = add::node_nd(&mut g, &x, &y, &zc).unwrap(); // contiguous: the flat kernel
    let k2 = add::node_nd(&mut g, &xt, &bias, &zt).unwrap(); // transposed + broadcast: strided, rank 2
    let k3 = scale_index::node_nd(&mut g, &st, 0.5, &zs).unwrap(); // stepped, a scalar, `i`
    let k4 = accumulate::node_nd(&mut g, &empty, &empty).unwrap(); // no element: an empty node
    let k5 = accumulate::node_nd(&mut g, &da, &acc).unwrap(); // flat buffers, read-modify-write
    assert_eq!(g.kind(k4), Some(NodeKind::Empty));
    let mut exec = g.instantiate().unwrap();
    let launch = |exec: &cuda_embed::GraphExec| {
        // SAFETY: every node's kernel stays within its checked views.
        unsafe { exec.launch(&s).unwrap() };
        exec.synchronize(&s).unwrap();
    };
    launch(&exec);

    // Other buffers of the same shapes, a transposed view where the first was transposed, a new
    // scalar and another stepped view: the same kernels and grids.
    add::update_nd(&mut exec, k1, &x2, &y2, &zc2).unwrap();
    add::update_nd(&mut exec, k2, &x2t, &bias2, &zt2).unwrap();
    scale_index::update_nd(&mut exec, k3, &st2, 2.0, &zs2).unwrap();
    accumulate::update_nd(&mut exec, k4, &empty, &empty).unwrap(); // empty stays empty
    accumulate::update_nd(&mut exec, k5, &da2, &acc2).unwrap();
    launch(&exec);

    // Refused, changing nothing: another layout class (a transposed operand where all were
    // contiguous), another merged rank, elements where the node is empty and none where it has
    // some, another kernel's node, a node of another graph.
    expect_rebuild(add::update_nd(&mut exec, k1, &x2t, &bias2, &zt2), "strided kernel of rank 2", "transposed");
    expect_rebuild(add::update_nd(&mut exec, k2, &x3, &y3, &z3), "rank 3", "3-D");
    expect_rebuild(accumulate::update_nd(&mut exec, k4, &da2, &spare), "the empty node", "elements into an empty node");
    expect_rebuild(accumulate::update_nd(&mut exec, k5, &empty, &empty), "no element", "no element");
    expect_rebuild(scale_index::update_nd(&mut exec, k5, &da2, 1.0, &spare), "another one", "another kernel's node");
    // A shape error is reported as `launch_nd` reports it.
    assert!(matches!(add::update_nd(&mut exec, k1, &short, &y2, &zc2), Err(Error::Shape { .. })));
    let mut other = Graph::new(&ctx).unwrap();
    let k_other = add::node_nd(&mut other, &x2, &y2, &zc2).unwrap();
    match add::update_nd(&mut exec, k_other, &x2, &y2, &zc2) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("another graph"), "{cause}"),
        r => panic!("a node of another graph: {r:?}"),
    }
    // The nodes still run on the updated operands: a third launch accumulates `a2` once more.
    launch(&exec);
    drop(exec);
    drop(other);
    drop(g);

    let expect_each = |got: &[f32], want: &dyn Fn(usize) -> f32, what: &str| {
        for (k, v) in got.iter().enumerate() {
            assert_eq!(*v, want(k), "{what} element {k}");
        }
    };
    expect_each(&s.clone_dtoh(&bzc).unwrap(), &|k| a[k] + b[k], "first contiguous");
    expect_each(&s.clone_dtoh(&bzc2).unwrap(), &|k| a2[k] + b2[k], "updated contiguous");
    let (xl, bl) = (gather(&a, xt.layout()), gather(&b, &bias.layout().broadcast_to(&[n, m]).unwrap()));
    expect_each(&s.clone_dtoh(&bzt).unwrap(), &|k| xl[k] + bl[k], "first transposed + bias");
    let (xl, bl) = (gather(&a2, x2t.layout()), gather(&b2, &bias2.layout().broadcast_to(&[n, m]).unwrap()));
    expect_each(&s.clone_dtoh(&bzt2).unwrap(), &|k| xl[k] + bl[k], "updated transposed + bias");
    let sl = gather(&a, st.layout());
    expect_each(&s.clone_dtoh(&bzs).unwrap(), &|k| 0.5 * sl[k] + k as f32, "first stepped");
    let sl = gather(&a2, st2.layout());
    expect_each(&s.clone_dtoh(&bzs2).unwrap(), &|k| 2.0 * sl[k] + k as f32, "updated stepped");
    expect_each(&s.clone_dtoh(&acc).unwrap(), &|k| a[k], "accumulated before the update");
    expect_each(&s.clone_dtoh(&acc2).unwrap(), &|k| a2[k] + a2[k], "accumulated after the update");
    assert!(s.clone_dtoh(&bo3).unwrap().iter().all(|&v| v == 0.0), "a refused update wrote");
    assert!(s.clone_dtoh(&spare).unwrap().iter().all(|&v| v == 0.0), "a refused update wrote");
}

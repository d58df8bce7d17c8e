//! Elementwise and reduction kernels as graph nodes (`NAME::node`, `node_with`, `node_rows`,
//! `node_cols`): the results equal their `launch`'s, replays give the same result (the reduction
//! scratch is reused), lengths are checked, dependencies are inferred from the arrays, and a
//! buffer of another device is an error. Every test needs a GPU (`#[ignore]`d without).

use cuda_embed::cudarc::driver::CudaSlice;
use cuda_embed::{elementwise_kernel, reduction_kernel, CudaContext, CudaStream, Error, Graph, LaunchConfig, NodeKind};
use std::sync::Arc;

elementwise_kernel!(
    squared_diff,
    inputs = "T x, T y",
    outputs = "T z",
    operation = "z = (x - y) * (x - y)",
    types = ["float", "double"],
);

elementwise_kernel!(axpy, inputs = "float x, scalar float a", outputs = "float y", operation = "y = a * x + y");

elementwise_kernel!(
    fill_index,
    inputs = "scalar long long base",
    outputs = "raw long long out",
    operation = "out[i] = base + i",
);

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
    weighted_sum,
    inputs = "float x, float w, scalar float scale",
    outputs = "float y",
    map = "x * w",
    reduce = "a + b",
    post_map = "y = a * scale",
    identity = "0",
);

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("a CUDA GPU")
}

fn data(stream: &Arc<CudaStream>, n: usize, seed: u32) -> CudaSlice<f32> {
    let host: Vec<f32> =
        (0..n).map(|i| ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0).collect();
    stream.clone_htod(&host).unwrap()
}

fn run(g: &Graph<'_>, stream: &Arc<CudaStream>, times: usize) {
    let exec = g.instantiate().unwrap();
    for _ in 0..times {
        // SAFETY: every node's kernel stays within its checked arrays.
        unsafe { exec.launch(stream).unwrap() };
    }
    exec.synchronize(stream).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_nodes_equal_launch() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 100_003; // a tail after the vector loop
    let (x, y) = (data(&stream, n, 1), data(&stream, n, 2));
    let mut want = stream.alloc_zeros::<f32>(n).unwrap();
    squared_diff::launch::<f32>(&stream, &x, &y, &mut want).unwrap();
    let z = stream.alloc_zeros::<f32>(n).unwrap();
    let z2 = stream.alloc_zeros::<f32>(n).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let a = squared_diff::node::<f32>(&mut g, &x, &y, &z).unwrap();
    let b = squared_diff::node_with::<f32>(&mut g, LaunchConfig::for_num_elems(256), &x, &y, &z2).unwrap();
    assert_eq!(g.kind(a), Some(NodeKind::Kernel));
    assert!(g.edges().is_empty(), "two nodes that only read x and y and write different outputs are independent");
    assert_eq!(g.label(b), g.label(a));
    run(&g, &stream, 2);
    let want = stream.clone_dtoh(&want).unwrap();
    assert_eq!(stream.clone_dtoh(&z).unwrap(), want);
    assert_eq!(stream.clone_dtoh(&z2).unwrap(), want);

    // A read-modify-write output twice: a chain; and the same result as two launches.
    let mut yl = data(&stream, n, 3);
    axpy::launch(&stream, &x, 2.0, &mut yl).unwrap();
    axpy::launch(&stream, &x, 2.0, &mut yl).unwrap();
    let yg = data(&stream, n, 3);
    let mut g = Graph::new(&ctx).unwrap();
    let k1 = axpy::node(&mut g, &x, 2.0, &yg).unwrap();
    let k2 = axpy::node(&mut g, &x, 2.0, &yg).unwrap();
    assert_eq!(g.edges(), vec![(k1, k2)]);
    run(&g, &stream, 1);
    assert_eq!(stream.clone_dtoh(&yg).unwrap(), stream.clone_dtoh(&yl).unwrap());

    // No array parameter: the count is given; a raw output is written as a whole.
    let out = stream.alloc_zeros::<i64>(1000).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    fill_index::node(&mut g, 1000, 7, &out).unwrap();
    run(&g, &stream, 1);
    let got = stream.clone_dtoh(&out).unwrap();
    assert_eq!((got[0], got[999]), (7, 1006));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn elementwise_node_lengths_and_empty() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (x, y, z) = (data(&stream, 10, 1), data(&stream, 11, 2), stream.alloc_zeros::<f32>(10).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
    match squared_diff::node::<f32>(&mut g, &x, &y, &z) {
        Err(Error::Length { detail, .. }) => assert!(detail.contains("`y` has 11"), "{detail}"),
        other => panic!("expected a length error, got {other:?}"),
    }
    assert!(g.is_empty());
    let e = stream.alloc_zeros::<f32>(0).unwrap();
    let node = squared_diff::node::<f32>(&mut g, &e, &e, &e).unwrap();
    assert_eq!(g.kind(node), Some(NodeKind::Empty));
}

/// Every plan kind (segments with scratch, short rows, columns with scratch), as nodes: bit for
/// bit the `launch` results, over three replays of one instantiation.
#[test]
#[ignore = "needs a CUDA GPU"]
fn reduction_nodes_equal_launch_on_every_plan() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 1 << 20;
    let x = data(&stream, n, 5);
    let shapes: [(&str, usize, usize); 5] = [
        ("full", 0, 1),
        ("rows 64x16384", 16384, 64),
        ("rows 32768x32", 32, 32768),
        ("cols 1024x1024", 1024, 1024),
        ("cols 16x65536", 65536, 65536),
    ];
    for (what, cols, outs) in shapes {
        let mut want = stream.alloc_zeros::<f32>(outs).unwrap();
        match what.split(' ').next() {
            Some("full") => sum_of_squares::launch::<f32>(&stream, &x, &mut want).unwrap(),
            Some("rows") => sum_of_squares::launch_rows::<f32>(&stream, &x, cols, &mut want).unwrap(),
            _ => sum_of_squares::launch_cols::<f32>(&stream, &x, cols, &mut want).unwrap(),
        }
        let got = stream.alloc_zeros::<f32>(outs).unwrap();
        let mut g = Graph::new(&ctx).unwrap();
        let node = match what.split(' ').next() {
            Some("full") => sum_of_squares::node::<f32>(&mut g, &x, &got).unwrap(),
            Some("rows") => sum_of_squares::node_rows::<f32>(&mut g, &x, cols, &got).unwrap(),
            _ => sum_of_squares::node_cols::<f32>(&mut g, &x, cols, &got).unwrap(),
        };
        assert_eq!(g.kind(node), Some(NodeKind::Kernel), "{what}");
        run(&g, &stream, 3);
        let (want, got) = (stream.clone_dtoh(&want).unwrap(), stream.clone_dtoh(&got).unwrap());
        assert_eq!(got, want, "{what}");
        eprintln!("{what}: node == launch ({} outputs, first {})", got.len(), got[0]);
    }
}

/// An elementwise node writes the input of a reduction node: an edge; the reduction's scratch is
/// its own, so two reductions of different arrays stay independent.
#[test]
#[ignore = "needs a CUDA GPU"]
fn mixed_graph_infers_edges_and_matches_stream_work() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 300_000;
    let (x, y, w) = (data(&stream, n, 1), data(&stream, n, 2), data(&stream, n, 3));
    let mut d_l = stream.alloc_zeros::<f32>(n).unwrap();
    let mut s_l = stream.alloc_zeros::<f32>(1).unwrap();
    let mut t_l = stream.alloc_zeros::<f32>(1).unwrap();
    squared_diff::launch::<f32>(&stream, &x, &y, &mut d_l).unwrap();
    sum_of_squares::launch::<f32>(&stream, &d_l, &mut s_l).unwrap();
    weighted_sum::launch(&stream, &x, &w, 0.5, &mut t_l).unwrap();

    let d = stream.alloc_zeros::<f32>(n).unwrap();
    let (s, t) = (stream.alloc_zeros::<f32>(1).unwrap(), stream.alloc_zeros::<f32>(1).unwrap());
    let mut g = Graph::new(&ctx).unwrap();
    let a = squared_diff::node::<f32>(&mut g, &x, &y, &d).unwrap();
    let b = sum_of_squares::node::<f32>(&mut g, &d, &s).unwrap();
    let c = weighted_sum::node(&mut g, &x, &w, 0.5, &t).unwrap();
    assert_eq!(g.edges(), vec![(a, b)], "{}", g.to_dot());
    assert!(!g.edges().iter().any(|e| e.1 == c));
    run(&g, &stream, 2);
    assert_eq!(stream.clone_dtoh(&s).unwrap(), stream.clone_dtoh(&s_l).unwrap());
    assert_eq!(stream.clone_dtoh(&t).unwrap(), stream.clone_dtoh(&t_l).unwrap());

    // Lengths are checked as launch checks them.
    let short = data(&stream, n - 1, 4);
    match weighted_sum::node(&mut g, &x, &short, 1.0, &t) {
        Err(Error::Launch { cause, .. }) => assert!(cause.contains("input `w`"), "{cause}"),
        other => panic!("expected a length error, got {other:?}"),
    }
    match sum_of_squares::node_rows::<f32>(&mut g, &x, 7, &t) {
        Err(Error::Launch { cause, .. }) => assert!(cause.contains("not a multiple"), "{cause}"),
        other => panic!("expected a length error, got {other:?}"),
    }
    assert_eq!(g.len(), 3);
}

#[test]
#[ignore = "needs 2 CUDA GPUs"]
fn fused_nodes_refuse_a_buffer_of_another_device() {
    let devices = CudaContext::device_count().unwrap_or(0) as usize;
    if devices < 2 {
        // Run with --include-ignored on one GPU this checks nothing: say so, and fail where two
        // GPUs are required (CI of a multi-GPU machine sets the variable).
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_MULTI_GPU").is_none(), "{devices} GPU(s), 2 required");
        eprintln!("graph_fused: {devices} GPU(s); the other-device check needs 2 — not run");
        return;
    }
    let (c0, c1) = (ctx(), cuda_embed::context(1).unwrap());
    let s1 = c1.default_stream();
    let (other, other_out) = (data(&s1, 1000, 1), s1.alloc_zeros::<f32>(1).unwrap());
    let here = c0.default_stream().alloc_zeros::<f32>(1000).unwrap();
    let mut g = Graph::new(&c0).unwrap();
    match squared_diff::node::<f32>(&mut g, &other, &other, &here) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("device 1"), "{cause}"),
        other => panic!("expected an other-device error, got {other:?}"),
    }
    match sum_of_squares::node::<f32>(&mut g, &other, &other_out) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("device 1"), "{cause}"),
        other => panic!("expected an other-device error, got {other:?}"),
    }
    assert!(g.is_empty());
}

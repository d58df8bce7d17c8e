//! CUDA graphs built from typed nodes: the two programs of Numba's graph proposal, every node
//! kind, the inferred edges, updates, host-node panics, a buffer of another device, run-time
//! program kernels and template instances. Every test needs a GPU (`#[ignore]`d without).

use cuda_embed::{cuda_kernel, graph::GraphArg, CudaContext, Error, Graph, LaunchConfig, NodeKind, Program};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

cuda_kernel!(
    r#"
    extern "C" __global__ void fill_index(int* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = i; }
    extern "C" __global__ void twice(int* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2; }
    extern "C" __global__ void fill_f(float* a, float v, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = v; }
    extern "C" __global__ void scale_f(float* a, float s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= s; }
    extern "C" __global__ void add_into(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += x[i]; }
    template <typename T> __global__ void fill_t(T* out, T value, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = value; }
"#,
    instances = ["fill_t<float>", "fill_t<int>"]
);

const N: usize = 1000;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("a CUDA GPU")
}

fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(N as u32)
}

fn idx(g: &Graph<'_>) -> Vec<(usize, usize)> {
    g.edges().iter().map(|(a, b)| (a.index(), b.index())).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn numba_program_one_two_kernels_on_one_array() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let arr = stream.alloc_zeros::<i32>(N).unwrap();
    let mut reference = stream.alloc_zeros::<i32>(N).unwrap();
    // SAFETY: both kernels stay within N elements.
    unsafe {
        fill_index::launch(&stream, cfg(), &mut reference, N as i32).unwrap();
        twice::launch(&stream, cfg(), &mut reference, N as i32).unwrap();
    }
    let mut g = Graph::new(&ctx).unwrap();
    let n1 = fill_index::node(&mut g, cfg(), &arr, N as i32).unwrap();
    let n2 = twice::node(g.after(&[*n1]), cfg(), &arr, N as i32).unwrap();
    assert_eq!(g.edges(), vec![(*n1, *n2)]); // the explicit and the inferred edge are one
    let exec = g.instantiate().unwrap();
    // SAFETY: as above.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    let got = stream.clone_dtoh(&arr).unwrap();
    assert_eq!(got, stream.clone_dtoh(&reference).unwrap());
    assert_eq!(got[7], 14);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn numba_program_two_htod_kernel_dtoh_host() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let host_in: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut host_out = vec![0.0f32; N];
    let d = stream.alloc_zeros::<f32>(N).unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    {
        let mut g = Graph::new(&ctx).unwrap();
        let up = g.memcpy_htod(&host_in, &d).unwrap();
        let k = scale_f::node(&mut g, cfg(), &d, 3.0, N as i32).unwrap();
        let down = g.memcpy_dtoh(&d, &mut host_out).unwrap();
        let s = seen.clone();
        let h = g
            .after(&[*down])
            .host(move || {
                s.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        assert_eq!(idx(&g), [(0, 1), (1, 2), (2, 3)]);
        assert_eq!(g.kind(*up), Some(NodeKind::Memcpy));
        assert_eq!(g.kind(*k), Some(NodeKind::Kernel));
        assert_eq!(g.kind(h), Some(NodeKind::Host));
        let exec = g.instantiate().unwrap();
        exec.upload(&stream).unwrap();
        // SAFETY: the kernel stays within N elements.
        unsafe { exec.launch(&stream).unwrap() };
        exec.synchronize(&stream).unwrap();
    }
    // The same program as plain stream work.
    let mut d2 = stream.clone_htod(&host_in).unwrap();
    // SAFETY: as above.
    unsafe { scale_f::launch(&stream, cfg(), &mut d2, 3.0, N as i32).unwrap() };
    assert_eq!(host_out, stream.clone_dtoh(&d2).unwrap());
    assert_eq!(host_out[5], 15.0);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_node_kind() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let a = stream.alloc_zeros::<f32>(N).unwrap();
    let b = stream.alloc_zeros::<f32>(N).unwrap();
    let ev = ctx.new_event(None).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let mut child = Graph::new(&ctx).unwrap();
    scale_f::node(&mut child, cfg(), &b, 2.0, N as i32).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let ms = g.memset(&a, 1.5f32).unwrap();
    let cp = g.memcpy_dtod(&a, &b).unwrap();
    let ch = g.child(&child).unwrap();
    let rec = g.after(&[ch]).event_record(&ev).unwrap();
    let wait = g.after(&[rec]).event_wait(&ev).unwrap();
    let r = ran.clone();
    let host = g
        .after(&[wait])
        .host(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let join = g.after(&[host, *ms]).empty().unwrap();
    let kinds: Vec<_> = g.nodes().into_iter().map(|n| g.kind(n).unwrap()).collect();
    use NodeKind::*;
    assert_eq!(kinds, [Memset, Memcpy, Child, EventRecord, EventWait, Host, Empty]);
    // memset -> copy (reads a), copy -> child (writes b), then the explicit chain.
    assert_eq!(idx(&g), [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 6), (5, 6)]);
    assert_eq!(g.label(*cp), Some("memcpy DtoD 4000 B"));
    assert_eq!(join.index(), 6);
    let exec = g.instantiate().unwrap();
    for _ in 0..2 {
        // SAFETY: scale_f stays within N elements.
        unsafe { exec.launch(&stream).unwrap() };
    }
    exec.synchronize(&stream).unwrap();
    assert!(stream.clone_dtoh(&b).unwrap().iter().all(|&v| v == 3.0));
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    let dot = g.to_dot();
    assert!(dot.contains("n0 [label=\"memset 1000 x 4 B\"]") && dot.contains("n5 -> n6"), "{dot}");
    let path = std::env::temp_dir().join(format!("cuda-embed-graph-{}.dot", std::process::id()));
    g.write_driver_dot(&path).unwrap();
    assert!(std::fs::read_to_string(&path).unwrap().contains("digraph"));
    let _ = std::fs::remove_file(path);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn inferred_edges_raw_war_waw() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let (x, y, z) = (
        stream.alloc_zeros::<f32>(N).unwrap(),
        stream.alloc_zeros::<f32>(N).unwrap(),
        stream.alloc_zeros::<f32>(N).unwrap(),
    );
    let n = N as i32;
    let mut g = Graph::new(&ctx).unwrap();
    fill_f::node(&mut g, cfg(), &x, 1.0, n).unwrap(); // 0 writes x
    add_into::node(&mut g, cfg(), &x, &y, n).unwrap(); // 1 reads x (RAW on 0), writes y
    add_into::node(&mut g, cfg(), &x, &z, n).unwrap(); // 2 reads x (RAW on 0), writes z; no edge to 1
    fill_f::node(&mut g, cfg(), &x, 2.0, n).unwrap(); // 3 writes x: WAW on 0, WAR on 1 and 2
    fill_f::node(&mut g, cfg(), &x, 3.0, n).unwrap(); // 4 writes x: WAW on 3 only
    assert_eq!(idx(&g), [(0, 1), (0, 2), (0, 3), (1, 3), (2, 3), (3, 4)]);
    let exec = g.instantiate().unwrap();
    // SAFETY: every kernel stays within N elements.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 1.0));
    assert!(stream.clone_dtoh(&x).unwrap().iter().all(|&v| v == 3.0));
    // Off: no edges at all.
    let mut g = Graph::new(&ctx).unwrap();
    g.infer_dependencies(false);
    fill_f::node(&mut g, cfg(), &x, 1.0, n).unwrap();
    fill_f::node(&mut g, cfg(), &x, 1.0, n).unwrap();
    assert!(g.edges().is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn inferred_edges_disjoint_views_none_overlapping_views_some() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut w = stream.alloc_zeros::<f32>(N).unwrap();
    let y = stream.alloc_zeros::<f32>(N).unwrap();
    let (z1, z2) = (stream.alloc_zeros::<f32>(N / 2).unwrap(), stream.alloc_zeros::<f32>(N / 2).unwrap());
    let (v1, v2) = (y.slice(0..N / 2), y.slice(N / 4..N / 4 + N / 2)); // overlapping views of y
    let (lo, hi) = w.split_at_mut(N / 2); // disjoint views of w
    let half = (N / 2) as i32;
    let hcfg = LaunchConfig::for_num_elems(N as u32 / 2);
    let mut g = Graph::new(&ctx).unwrap();
    fill_f::node(&mut g, hcfg, &lo, 1.0, half).unwrap(); // 0 writes w[..N/2]
    fill_f::node(&mut g, hcfg, &hi, 2.0, half).unwrap(); // 1 writes w[N/2..]: disjoint, no edge
    fill_f::node(&mut g, cfg(), &y, 5.0, N as i32).unwrap(); // 2 writes all of y
    add_into::node(&mut g, hcfg, &v1, &z1, half).unwrap(); // 3 reads y[..N/2]: edge from 2
    add_into::node(&mut g, hcfg, &v2, &z2, half).unwrap(); // 4 reads y[N/4..3N/4]: edge from 2, none from 3
    add_into::node(&mut g, hcfg, &lo, &z1, half).unwrap(); // 5 reads w lo (0), writes z1 (after 3)
    assert_eq!(idx(&g), [(2, 3), (2, 4), (0, 5), (3, 5)]);
    let exec = g.instantiate().unwrap();
    // SAFETY: every kernel stays within its view.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    drop(exec);
    drop(g);
    assert!(stream.clone_dtoh(&z1).unwrap().iter().all(|&v| v == 6.0));
    assert!(stream.clone_dtoh(&z2).unwrap().iter().all(|&v| v == 5.0));
    let w_host = stream.clone_dtoh(&w).unwrap();
    assert_eq!((w_host[0], w_host[N - 1]), (1.0, 2.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn typed_updates_memset_memcpy_and_whole_graph() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = N as i32;
    let (a, b) = (stream.alloc_zeros::<f32>(N).unwrap(), stream.alloc_zeros::<f32>(N).unwrap());
    let src1 = vec![1.0f32; N];
    let src2 = vec![10.0f32; N];
    let mut g = Graph::new(&ctx).unwrap();
    let ms = g.memset(&b, 0.0f32).unwrap();
    let up = g.memcpy_htod(&src1, &a).unwrap();
    let k = scale_f::node(&mut g, cfg(), &a, 2.0, n).unwrap();
    let add = add_into::node(&mut g, cfg(), &a, &b, n).unwrap();
    let mut exec = g.instantiate().unwrap();
    let run = |exec: &cuda_embed::GraphExec<'_>| {
        // SAFETY: every kernel stays within N elements.
        unsafe { exec.launch(&stream).unwrap() };
        exec.synchronize(&stream).unwrap();
        stream.clone_dtoh(&b).unwrap()[3]
    };
    assert_eq!(run(&exec), 2.0);
    exec.set(&k, cfg(), (&a, 3.0f32, n)).unwrap(); // typed tuple form
    assert_eq!(run(&exec), 3.0);
    scale_f::update(&mut exec, &k, cfg(), &a, 4.0, n).unwrap(); // generated form
    assert_eq!(run(&exec), 4.0);
    exec.set_memset(&ms, 100.0f32).unwrap();
    assert_eq!(run(&exec), 104.0);
    exec.set_memcpy_htod(&up, &src2, &a).unwrap();
    assert_eq!(run(&exec), 140.0);
    add_into::update(&mut exec, &add, cfg(), &a, &b, n).unwrap();
    let bad = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4096, 1, 1), shared_mem_bytes: 0 };
    assert!(matches!(exec.set(&k, bad, (&a, 1.0f32, n)), Err(Error::Launch { .. })));

    // Whole-graph update: same topology, other values.
    let mut g2 = Graph::new(&ctx).unwrap();
    g2.memset(&b, 0.0f32).unwrap();
    g2.memcpy_htod(&src1, &a).unwrap();
    scale_f::node(&mut g2, cfg(), &a, 7.0, n).unwrap();
    add_into::node(&mut g2, cfg(), &a, &b, n).unwrap();
    exec.update(&g2).unwrap();
    assert_eq!(run(&exec), 7.0);
    // Another topology: a clear error, found before the driver is asked (so no failing
    // cuGraphExecUpdate call for compute-sanitizer to report).
    let mut g3 = Graph::new(&ctx).unwrap();
    g3.memset(&b, 0.0f32).unwrap();
    match exec.update(&g3) {
        Err(Error::Graph { cause, fix, .. }) => {
            assert!(cause.contains("topology") && cause.contains("1 nodes, the instantiated one 4"), "{cause}");
            assert!(fix.unwrap().contains("instantiate"));
        }
        other => panic!("expected a topology error, got {other:?}"),
    }
    // The same node kinds, other edges (the scale now writes `b`, not `a`).
    let mut g4 = Graph::new(&ctx).unwrap();
    g4.memset(&b, 0.0f32).unwrap();
    g4.memcpy_htod(&src1, &a).unwrap();
    scale_f::node(&mut g4, cfg(), &b, 7.0, n).unwrap();
    add_into::node(&mut g4, cfg(), &a, &b, n).unwrap();
    match exec.update(&g4) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("edge(s) added"), "{cause}"),
        other => panic!("expected a topology error, got {other:?}"),
    }
    // A node of another graph.
    assert!(matches!(exec.set_memset(&g3.memset(&b, 1.0f32).unwrap(), 2.0), Err(Error::Graph { .. })));
}

/// A typed update of an instantiated graph's kernel node, which no longer collects the ranges
/// its buffers touch (the graph's edges stay as built), still checks what adding the node
/// checks: the node's graph, the launch limits and every buffer's context. A refused update
/// changes nothing; the next valid one applies.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_typed_update_checks_what_adding_the_node_checks() {
    let ctx = ctx();
    let other_ctx = CudaContext::new_non_primary(0, 0).unwrap();
    let foreign = other_ctx.default_stream().alloc_zeros::<f32>(N).unwrap();
    // Creating the second context and allocating on it made it current: bind ours again.
    ctx.bind_to_thread().unwrap();
    let stream = ctx.default_stream();
    let n = N as i32;
    let a = stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let k = fill_f::node(&mut g, cfg(), &a, 1.0, n).unwrap();
    let mut g_other = Graph::new(&ctx).unwrap();
    let k_other = fill_f::node(&mut g_other, cfg(), &a, 1.0, n).unwrap();
    let mut exec = g.instantiate().unwrap();
    let run = |exec: &cuda_embed::GraphExec<'_>| {
        // SAFETY: the kernel stays within N elements.
        unsafe { exec.launch(&stream).unwrap() };
        exec.synchronize(&stream).unwrap();
        stream.clone_dtoh(&a).unwrap()[7]
    };
    assert_eq!(run(&exec), 1.0);
    match fill_f::update(&mut exec, &k, cfg(), &foreign, 5.0, n) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("a graph belongs to one context"), "{cause}"),
        other => panic!("expected an error for another context's buffer, got {other:?}"),
    }
    let bad = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4096, 1, 1), shared_mem_bytes: 0 };
    match fill_f::update(&mut exec, &k, bad, &a, 5.0, n) {
        Err(Error::Launch { cause, .. }) => assert!(cause.contains("4096"), "{cause}"),
        other => panic!("expected a launch-limit error, got {other:?}"),
    }
    match fill_f::update(&mut exec, &k_other, cfg(), &a, 5.0, n) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("another graph"), "{cause}"),
        other => panic!("expected an error for a node of another graph, got {other:?}"),
    }
    assert_eq!(run(&exec), 1.0, "a refused update changed the graph");
    fill_f::update(&mut exec, &k, cfg(), &a, 6.0, n).unwrap();
    assert_eq!(run(&exec), 6.0);
}

/// A graph and an instantiation remember the last kernel and configuration that passed the
/// checks, and for the same grid and block only compare the dynamic shared memory again: more
/// than the kernel allows is still refused there (and nothing added or changed), another
/// kernel or block in between is checked in full, and the next valid node and update apply.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_repeated_kernel_and_configuration_is_still_checked() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = N as i32;
    let a = stream.alloc_zeros::<f32>(N).unwrap();
    let too_much = LaunchConfig { shared_mem_bytes: 1 << 30, ..cfg() };
    let too_wide = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4096, 1, 1), shared_mem_bytes: 0 };
    let smem_error = |r: cuda_embed::Result<()>| match r {
        Err(Error::Launch { cause, .. }) => assert!(cause.contains("dynamic shared memory"), "{cause}"),
        other => panic!("expected a shared-memory error, got {other:?}"),
    };
    let mut g = Graph::new(&ctx).unwrap();
    let k = fill_f::node(&mut g, cfg(), &a, 1.0, n).unwrap();
    smem_error(fill_f::node(&mut g, too_much, &a, 2.0, n).map(drop));
    scale_f::node(&mut g, cfg(), &a, 3.0, n).unwrap();
    assert!(matches!(fill_f::node(&mut g, too_wide, &a, 2.0, n), Err(Error::Launch { .. })));
    smem_error(fill_f::node(&mut g, too_much, &a, 2.0, n).map(drop));
    assert_eq!(g.len(), 2, "a refused node was added");
    assert_eq!(idx(&g), [(0, 1)]);
    let mut exec = g.instantiate().unwrap();
    fill_f::update(&mut exec, &k, cfg(), &a, 4.0, n).unwrap();
    smem_error(fill_f::update(&mut exec, &k, too_much, &a, 5.0, n));
    assert!(matches!(fill_f::update(&mut exec, &k, too_wide, &a, 5.0, n), Err(Error::Launch { .. })));
    smem_error(fill_f::update(&mut exec, &k, too_much, &a, 5.0, n));
    // SAFETY: both kernels stay within N elements.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert_eq!(stream.clone_dtoh(&a).unwrap()[7], 12.0, "fill 4, then scale by 3");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn host_node_panic_is_an_error_on_the_next_sync_and_launch() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mut g = Graph::new(&ctx).unwrap();
    let h = g
        .host(move || {
            if c.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("boom in the host node");
            }
        })
        .unwrap();
    let after = g.after(&[h]).host(|| {}).unwrap();
    assert_eq!(g.edges(), vec![(h, after)]);
    let exec = g.instantiate().unwrap();
    // SAFETY: no kernels.
    unsafe { exec.launch(&stream).unwrap() };
    match exec.synchronize(&stream) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("boom in the host node"), "{cause}"),
        other => panic!("expected the host panic, got {other:?}"),
    }
    exec.synchronize(&stream).unwrap(); // reported once
                                        // SAFETY: as above.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn program_kernels_and_template_instances_as_nodes() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let src = r#"extern "C" __global__ void add_k(float* y, float k, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += k; }"#;
    let module = Program::new(src).name("graph_prog").load(&ctx).unwrap();
    let add_k = module.kernel("add_k").unwrap();
    let y = stream.alloc_zeros::<f32>(N).unwrap();
    let (k, n) = (0.5f32, N as i32);
    let ints = stream.alloc_zeros::<i32>(N).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    fill_t::node::<f32>(&mut g, cfg(), &y, 2.0, n).unwrap();
    add_k.node(&mut g, cfg(), &[GraphArg::write(&y), GraphArg::value(&k), GraphArg::value(&n)]).unwrap();
    assert_eq!(idx(&g), [(0, 1)]);
    assert_eq!(g.label(g.nodes()[0]), Some("fill_t<float>"));
    let wrong = add_k.node(&mut g, cfg(), &[GraphArg::write(&y), GraphArg::value(&n)]);
    assert!(matches!(wrong, Err(Error::Arguments { .. })), "{wrong:?}");
    let exec = g.instantiate().unwrap();
    // SAFETY: both kernels stay within N elements.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 2.5));
    fill_t::node::<i32>(&mut g, cfg(), &ints, 9, n).unwrap();
    let bad = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4096, 1, 1), shared_mem_bytes: 0 };
    assert!(matches!(fill_t::node::<i32>(&mut g, bad, &ints, 9, n), Err(Error::Launch { .. })));
}

/// A program kernel taken with a C signature checks a node's arguments against it, as its
/// launches do: nothing is added for arguments of the wrong kind or type.
#[test]
#[ignore = "needs a CUDA GPU"]
fn program_kernel_nodes_are_checked_against_the_signature() {
    let ctx = ctx();
    let src = r#"extern "C" __global__ void scale_k(const float* x, float* y, float k, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = k * x[i]; }"#;
    let module = Program::new(src).name("graph_sig").load(&ctx).unwrap();
    let k = module.kernel_checked("scale_k").unwrap();
    let stream = ctx.default_stream();
    let x = stream.clone_htod(&vec![1.0f32; N]).unwrap();
    let xi = stream.alloc_zeros::<i32>(N).unwrap();
    let y = stream.alloc_zeros::<f32>(N).unwrap();
    let (s, s64, n) = (3.0f32, 3.0f64, N as i32);
    let mut g = Graph::new(&ctx).unwrap();
    let cases: Vec<(Vec<GraphArg<'_>>, &str)> = vec![
        (vec![GraphArg::read(&xi), GraphArg::write(&y), GraphArg::value(&s), GraphArg::value(&n)], "holds `i32`"),
        (vec![GraphArg::read(&x), GraphArg::read(&y), GraphArg::value(&s), GraphArg::value(&n)], "GraphArg::write"),
        (vec![GraphArg::read(&x), GraphArg::write(&y), GraphArg::value(&s64), GraphArg::value(&n)], "`f64`"),
    ];
    for (args, want) in cases {
        match k.node(&mut g, cfg(), &args) {
            Err(e @ Error::Signature { .. }) => assert!(e.to_string().contains(want), "{e}\nwants: {want}"),
            other => panic!("expected Error::Signature containing {want}, got {other:?}"),
        }
    }
    assert!(g.nodes().is_empty(), "nothing was added");
    k.node(&mut g, cfg(), &[GraphArg::read(&x), GraphArg::write(&y), GraphArg::value(&s), GraphArg::value(&n)])
        .unwrap();
    let exec = g.instantiate().unwrap();
    // SAFETY: the kernel stays within N elements.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|&v| v == 3.0));
}

#[test]
#[ignore = "needs 2 CUDA GPUs"]
fn a_buffer_of_another_device_is_an_error() {
    let devices = CudaContext::device_count().unwrap_or(0) as usize;
    if devices < 2 {
        // Run with --include-ignored on one GPU this checks nothing: say so, and fail where two
        // GPUs are required (CI of a multi-GPU machine sets the variable).
        assert!(std::env::var_os("CUDA_EMBED_REQUIRE_MULTI_GPU").is_none(), "{devices} GPU(s), 2 required");
        eprintln!("graph: {devices} GPU(s); the other-device check needs 2 — not run");
        return;
    }
    let (c0, c1) = (ctx(), cuda_embed::context(1).unwrap());
    let other = c1.default_stream().alloc_zeros::<f32>(N).unwrap();
    let mut g = Graph::new(&c0).unwrap();
    match fill_f::node(&mut g, cfg(), &other, 1.0, N as i32) {
        Err(Error::Graph { cause, .. }) => assert!(cause.contains("device 1"), "{cause}"),
        other => panic!("expected an other-device error, got {other:?}"),
    }
    assert!(g.is_empty());
    let exec = g.instantiate().unwrap();
    // SAFETY: an empty graph.
    assert!(matches!(unsafe { exec.launch(&c1.default_stream()) }, Err(Error::Graph { .. })));
}

/// A graph made after another one was dropped on the same thread reuses that graph's lists
/// (emptied): it starts with no nodes, no edges and nothing on record, so its first node on the
/// same buffer depends on nothing; an instantiation of the first graph, alive meanwhile, keeps
/// its own nodes and still runs; a graph made while another is alive gets lists of its own; an
/// instantiation made after another was dropped has exactly its graph's nodes and edges.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_made_after_another_starts_empty() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let a = stream.alloc_zeros::<f32>(N).unwrap();
    let exec = {
        let mut g = Graph::new(&ctx).unwrap();
        for i in 0..100 {
            fill_f::node(&mut g, cfg(), &a, i as f32, N as i32).unwrap();
        }
        assert_eq!(g.edges().len(), 99);
        g.instantiate().unwrap()
    };
    let mut g = Graph::new(&ctx).unwrap();
    assert!(g.is_empty() && g.edges().is_empty());
    let first = fill_f::node(&mut g, cfg(), &a, 1.0, N as i32).unwrap();
    let second = scale_f::node(&mut g, cfg(), &a, 3.0, N as i32).unwrap();
    assert_eq!((first.index(), second.index()), (0, 1));
    assert_eq!(idx(&g), vec![(0, 1)]); // nothing of the dropped graph's records
    let mut other = Graph::new(&ctx).unwrap(); // `g` is alive: new lists
    assert!(other.is_empty());
    fill_f::node(&mut other, cfg(), &a, 5.0, N as i32).unwrap();
    assert_eq!((g.len(), other.len()), (2, 1));
    // SAFETY: every node stays within N elements.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert!(stream.clone_dtoh(&a).unwrap().iter().all(|&v| v == 99.0));
    drop(exec);
    // The next instantiation copies `g`'s two nodes and one edge into the dropped one's lists:
    // a whole-graph update from `g` (same topology) and a typed update of its second node work.
    let mut exec2 = g.instantiate().unwrap();
    exec2.update(&g).unwrap();
    scale_f::update(&mut exec2, &second, cfg(), &a, 4.0, N as i32).unwrap();
    // SAFETY: as above.
    unsafe { exec2.launch(&stream).unwrap() };
    exec2.synchronize(&stream).unwrap();
    assert!(stream.clone_dtoh(&a).unwrap().iter().all(|&v| v == 4.0));
}

//! Conditional graph nodes: `while` loops of 0, 1 and N iterations, nested conditionals, a
//! `switch` over three bodies, `if`/`else`, updates of nodes inside a body and of the kernel that
//! sets a condition, and every misuse refused as an `Error` before the driver sees it. Every test
//! needs a GPU (`#[ignore]`d without).

use cuda_embed::{cuda_kernel, CudaContext, Error, Graph, LaunchConfig, NodeKind};
use std::sync::Arc;

cuda_kernel!(
    r#"
    // Sets the loop counter to `k` and the loop's condition to whether there is an iteration.
    extern "C" __global__ void start(int* counter, int k, cudaGraphConditionalHandle more) {
        if (threadIdx.x == 0 && blockIdx.x == 0) {
            *counter = k;
            cudaGraphSetConditional(more, k > 0 ? 1u : 0u);
        }
    }
    // One iteration: counts itself, counts the counter down, stops the loop at 0.
    extern "C" __global__ void step(int* counter, int* runs, cudaGraphConditionalHandle more) {
        if (threadIdx.x == 0 && blockIdx.x == 0) {
            *runs += 1;
            int c = --*counter;
            cudaGraphSetConditional(more, c > 0 ? 1u : 0u);
        }
    }
    // Outer iteration `i` of `n`: sets `more` (the outer loop's) and `even` (the inner if's).
    extern "C" __global__ void tick(int* i, int n, cudaGraphConditionalHandle more, cudaGraphConditionalHandle even) {
        if (threadIdx.x == 0 && blockIdx.x == 0) {
            int v = ++*i;
            cudaGraphSetConditional(more, v < n ? 1u : 0u);
            cudaGraphSetConditional(even, v % 2 == 0 ? 1u : 0u);
        }
    }
    extern "C" __global__ void add_one(int* x) {
        if (threadIdx.x == 0 && blockIdx.x == 0) *x += 1;
    }
    // Sets the switch's condition from device memory.
    extern "C" __global__ void pick(const int* sel, cudaGraphConditionalHandle h) {
        if (threadIdx.x == 0 && blockIdx.x == 0) cudaGraphSetConditional(h, (unsigned)*sel);
    }
    extern "C" __global__ void put(int* out, int v, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = v;
    }
    extern "C" __global__ void add_f(float* acc, float v, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) acc[i] += v;
    }
"#
);

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("a CUDA GPU")
}

fn one() -> LaunchConfig {
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 }
}

fn graph_error(e: &Error, words: &str) {
    match e {
        Error::Graph { cause, .. } => assert!(cause.contains(words), "`{cause}` does not say `{words}`"),
        other => panic!("expected Error::Graph saying `{words}`, got {other:?}"),
    }
}

/// One graph, its loop count changed by an update of the kernel that starts the loop: 0, 1 and
/// 37 iterations, each counted on the device. The loop node depends on that kernel (it sets the
/// loop's condition: an inferred edge).
#[test]
#[ignore = "needs a CUDA GPU"]
fn while_loop_runs_zero_one_and_n_iterations() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let counter = stream.alloc_zeros::<i32>(1).unwrap();
    let runs = stream.alloc_zeros::<i32>(1).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let more = g.condition(0).unwrap();
    let reset = g.memset(&runs, 0i32).unwrap();
    let s = start::node(&mut g, one(), &counter, 0, &more).unwrap();
    let lp = g
        .while_loop(&more, |body| {
            step::node(body, one(), &counter, &runs, &more)?;
            Ok(())
        })
        .unwrap();
    assert_eq!(g.kind(lp), Some(NodeKind::Conditional));
    assert_eq!(g.label(lp), Some("while (1 nodes)"));
    let mut edges = g.edges();
    edges.sort();
    assert_eq!(edges, vec![(*reset, lp), (*s, lp)], "the loop waits for the memset of `runs` and for `start`");
    let mut exec = g.instantiate().unwrap();
    for k in [0, 1, 37, 2] {
        start::update(&mut exec, &s, one(), &counter, k, &more).unwrap();
        // SAFETY: every kernel touches element 0 of one-element buffers.
        unsafe { exec.launch(&stream).unwrap() };
        exec.synchronize(&stream).unwrap();
        assert_eq!(stream.clone_dtoh(&runs).unwrap(), [k], "iterations for k = {k}");
        assert_eq!(stream.clone_dtoh(&counter).unwrap(), [0], "the counter ends at 0 for k = {k}");
    }
}

/// A condition's initial value alone drives a loop: initial 1 runs the body once when the body
/// sets it to 0 (a `do ... while (false)`), initial 0 never.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_initial_value_starts_every_launch() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let counter = stream.alloc_zeros::<i32>(1).unwrap();
    for (initial, want) in [(0u32, 0), (1, 1)] {
        let runs = stream.alloc_zeros::<i32>(1).unwrap();
        let mut g = Graph::new(&ctx).unwrap();
        let more = g.condition(initial).unwrap();
        assert_eq!(more.initial(), initial);
        g.while_loop(&more, |body| step::node(body, one(), &counter, &runs, &more).map(drop)).unwrap();
        let exec = g.instantiate().unwrap();
        for launch in 1..=3 {
            // SAFETY: one-element buffers, element 0.
            unsafe { exec.launch(&stream).unwrap() };
            exec.synchronize(&stream).unwrap();
            assert_eq!(stream.clone_dtoh(&runs).unwrap(), [want * launch], "initial {initial}, launch {launch}");
        }
    }
}

/// An `if` inside a `while`: the outer loop runs 9 times; its body's kernel sets the inner
/// condition (made for the body) and the outer one; the `if` counts the even iterations.
#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_conditionals() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let i = stream.alloc_zeros::<i32>(1).unwrap();
    let evens = stream.alloc_zeros::<i32>(1).unwrap();
    let odds = stream.alloc_zeros::<i32>(1).unwrap();
    let n = 9;
    let mut g = Graph::new(&ctx).unwrap();
    let more = g.condition(1).unwrap();
    g.memset(&i, 0i32).unwrap();
    g.memset(&evens, 0i32).unwrap();
    g.memset(&odds, 0i32).unwrap();
    g.while_loop(&more, |body| {
        let even = body.condition(0)?;
        let t = tick::node(body, one(), &i, n, &more, &even)?;
        let branch = body.if_else(
            &even,
            |then| add_one::node(then, one(), &evens).map(drop),
            |otherwise| add_one::node(otherwise, one(), &odds).map(drop),
        )?;
        assert_eq!(body.edges(), vec![(*t, branch)], "the if/else waits for the kernel that sets its condition");
        assert_eq!(body.label(branch), Some("if/else (1 | 1 nodes)"));
        Ok(())
    })
    .unwrap();
    let exec = g.instantiate().unwrap();
    for _ in 0..2 {
        // SAFETY: one-element buffers, element 0.
        unsafe { exec.launch(&stream).unwrap() };
        exec.synchronize(&stream).unwrap();
        assert_eq!(stream.clone_dtoh(&i).unwrap(), [n]);
        assert_eq!(stream.clone_dtoh(&evens).unwrap(), [n / 2], "iterations 2, 4, 6, 8");
        assert_eq!(stream.clone_dtoh(&odds).unwrap(), [n - n / 2], "iterations 1, 3, 5, 7, 9");
    }
}

/// A `switch` over three bodies, its value read by a kernel from device memory (a selector
/// buffer per value, swapped in by an update of that kernel): 0, 1 and 2 run their case; 5 runs
/// none (the memset before it stays).
#[test]
#[ignore = "needs a CUDA GPU"]
fn switch_over_three_bodies() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 1000;
    let values = [0, 1, 2, 5, 1];
    let sels: Vec<_> = values.iter().map(|&v| stream.clone_htod(&[v]).unwrap()).collect();
    let out = stream.alloc_zeros::<i32>(n).unwrap();
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let mut g = Graph::new(&ctx).unwrap();
    let which = g.condition(0).unwrap();
    g.memset(&out, -1i32).unwrap();
    let p = pick::node(&mut g, one(), &sels[0], &which).unwrap();
    let sw = g
        .switch(&which, 3, |case, body| put::node(body, cfg, &out, 10 * (case as i32 + 1), n as i32).map(drop))
        .unwrap();
    assert_eq!(g.label(sw), Some("switch (1 | 1 | 1 nodes)"));
    let mut exec = g.instantiate().unwrap();
    for (sel, want) in sels.iter().zip([10, 20, 30, -1, 20]) {
        pick::update(&mut exec, &p, one(), sel, &which).unwrap();
        // SAFETY: `put` writes `n` elements of `out` with `n` threads; `pick` reads one element.
        unsafe { exec.launch(&stream).unwrap() };
        exec.synchronize(&stream).unwrap();
        let got = stream.clone_dtoh(&out).unwrap();
        assert!(got.iter().all(|&v| v == want), "want {want}: {:?}", &got[..4]);
    }
}

/// A kernel node inside a loop body is updated like any other: the loop runs 4 times adding
/// 1.0, then (updated) 2.5, to every element.
#[test]
#[ignore = "needs a CUDA GPU"]
fn update_inside_a_body() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 4096;
    let acc = stream.alloc_zeros::<f32>(n).unwrap();
    let counter = stream.alloc_zeros::<i32>(1).unwrap();
    let runs = stream.alloc_zeros::<i32>(1).unwrap();
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let mut g = Graph::new(&ctx).unwrap();
    let more = g.condition(0).unwrap();
    g.memset(&acc, 0.0f32).unwrap();
    start::node(&mut g, one(), &counter, 4, &more).unwrap();
    let mut inner = None;
    g.while_loop(&more, |body| {
        inner = Some(add_f::node(body, cfg, &acc, 1.0, n as i32)?);
        step::node(body, one(), &counter, &runs, &more)?;
        Ok(())
    })
    .unwrap();
    let inner = inner.unwrap();
    assert_eq!(g.kind(*inner), None, "a body's node is not a node of the parent graph");
    let mut exec = g.instantiate().unwrap();
    for (v, want) in [(1.0f32, 4.0f32), (2.5, 10.0)] {
        add_f::update(&mut exec, &inner, cfg, &acc, v, n as i32).unwrap();
        // SAFETY: `n` threads on `n` elements; one-element counters.
        unsafe { exec.launch(&stream).unwrap() };
        exec.synchronize(&stream).unwrap();
        let got = stream.clone_dtoh(&acc).unwrap();
        assert!(got.iter().all(|&x| x == want), "adding {v} four times: {:?}", &got[..4]);
    }
    // A body's node is not a node of another graph's instantiation.
    let mut other = Graph::new(&ctx).unwrap();
    other.empty().unwrap();
    let mut other_exec = other.instantiate().unwrap();
    let e = add_f::update(&mut other_exec, &inner, cfg, &acc, 1.0, n as i32).unwrap_err();
    graph_error(&e, "another graph");
}

/// Every misuse is an `Error::Graph` before the driver is called, and the graph stays usable.
#[test]
#[ignore = "needs a CUDA GPU"]
fn misuse_is_an_error() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let counter = stream.alloc_zeros::<i32>(1).unwrap();
    let runs = stream.alloc_zeros::<i32>(1).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let mut h = Graph::new(&ctx).unwrap();
    let theirs = h.condition(1).unwrap();
    let mine = g.condition(1).unwrap();
    // A condition of another graph: as a conditional node's, and as a kernel's argument.
    graph_error(&g.while_loop(&theirs, |_| Ok(())).unwrap_err(), "another graph");
    graph_error(&start::node(&mut g, one(), &counter, 1, &theirs).unwrap_err(), "condition of another graph");
    // ... also inside a body.
    let e = g.while_loop(&mine, |body| step::node(body, one(), &counter, &runs, &theirs).map(drop)).unwrap_err();
    graph_error(&e, "condition of another graph");
    // A body's node list is not left behind by a refused body: the condition is still free.
    g.while_loop(&mine, |body| step::node(body, one(), &counter, &runs, &mine).map(drop)).unwrap();
    // Each condition controls one node.
    graph_error(&g.if_then(&mine, |_| Ok(())).unwrap_err(), "already controls");
    // A conditional node in a body tests a condition of that body, not of the enclosing graph.
    let outer = g.condition(0).unwrap();
    let again = g.condition(0).unwrap();
    let e = g.while_loop(&outer, |body| body.if_then(&again, |_| Ok(())).map(drop)).unwrap_err();
    graph_error(&e, "enclosing graph");
    // A switch needs a case for every value: none at all, or none for the initial value.
    let s0 = g.condition(0).unwrap();
    graph_error(&g.switch(&s0, 0, |_, _| Ok(())).unwrap_err(), "no case");
    let s4 = g.condition(4).unwrap();
    graph_error(&g.switch(&s4, 3, |_, _| Ok(())).unwrap_err(), "value 4 has no case");
    // A body holds device work only.
    let host_in = [1i32];
    let c = g.condition(0).unwrap();
    let e = g.if_then(&c, |body| body.host(|| ()).map(drop)).unwrap_err();
    graph_error(&e, "host node");
    let e = g.if_then(&c, |body| body.memcpy_htod(&host_in, &counter).map(drop)).unwrap_err();
    graph_error(&e, "host-to-device");
    // A condition that controls no node: the graph does not instantiate (the driver may refuse
    // it), and a body with one is refused.
    graph_error(&g.instantiate().unwrap_err(), "control no conditional node");
    // The refused nodes left nothing behind: with every condition given its node, the graph
    // instantiates and runs.
    g.if_then(&c, |body| body.memset(&counter, 0i32).map(drop)).unwrap();
    for cond in [&outer, &again, &s0, &s4] {
        g.if_then(cond, |body| body.empty().map(drop)).unwrap();
    }
    let exec = g.instantiate().unwrap();
    // SAFETY: one-element buffers.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    assert_eq!(stream.clone_dtoh(&runs).unwrap(), [1], "the one loop that was added ran once");
    drop(h);
    // A body that made a condition and gave it no node is refused; the driver keeps that
    // condition (nothing deletes one), so the graph says it cannot be instantiated any more.
    let mut g2 = Graph::new(stream.context()).unwrap();
    let c2 = g2.condition(0).unwrap();
    let e = g2.if_then(&c2, |body| body.condition(1).map(drop)).unwrap_err();
    graph_error(&e, "for this body control no conditional node");
    g2.if_then(&c2, |body| body.empty().map(drop)).unwrap();
    graph_error(&g2.instantiate().unwrap_err(), "cannot delete it");
}

/// A run-time kernel sets a condition too: `GraphArg::condition`, checked against the kernel's C
/// signature (a plain `u64` for the handle is refused) and against the graph (a condition of
/// another graph is refused), then a loop of 5 iterations.
#[test]
#[ignore = "needs a CUDA GPU"]
fn program_kernels_set_conditions() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let src = r#"
        extern "C" __global__ void prog_step(int* counter, int* runs, cudaGraphConditionalHandle more) {
            if (threadIdx.x == 0 && blockIdx.x == 0) {
                *runs += 1;
                int c = --*counter;
                cudaGraphSetConditional(more, c > 0 ? 1u : 0u);
            }
        }"#;
    let module = cuda_embed::Program::new(src).name("graph_cond").load(&ctx).unwrap();
    let k = module.kernel_checked("prog_step").unwrap();
    let counter = stream.clone_htod(&[5i32]).unwrap();
    let runs = stream.alloc_zeros::<i32>(1).unwrap();
    let raw = 7u64;
    let mut other = Graph::new(&ctx).unwrap();
    let theirs = other.condition(1).unwrap();
    let mut g = Graph::new(&ctx).unwrap();
    let more = g.condition(1).unwrap();
    g.while_loop(&more, |body| {
        use cuda_embed::graph::GraphArg;
        let e = k.node(body, one(), &[GraphArg::write(&counter), GraphArg::write(&runs), GraphArg::value(&raw)]);
        assert!(matches!(e, Err(Error::Signature { .. })), "a u64 for the handle: {e:?}");
        let e = k.node(body, one(), &[GraphArg::write(&counter), GraphArg::write(&runs), GraphArg::condition(&theirs)]);
        graph_error(&e.unwrap_err(), "condition of another graph");
        k.node(body, one(), &[GraphArg::write(&counter), GraphArg::write(&runs), GraphArg::condition(&more)])?;
        Ok(())
    })
    .unwrap();
    let exec = g.instantiate().unwrap();
    // SAFETY: one-element buffers.
    unsafe { exec.launch(&stream).unwrap() };
    exec.synchronize(&stream).unwrap();
    drop(exec);
    drop(g);
    assert_eq!(stream.clone_dtoh(&runs).unwrap(), [5]);
}

//! Programmatic dependent launch: a chain of 100 dependent kernels (each reads the previous one's
//! output) launched with `launch_dependent` on a stream, and built into a graph with programmatic
//! edges (`Graph::dependent`), gives exactly the results of the same chain in plain stream order
//! and of the CPU. A kernel that does not wait, after one that does not trigger, is harmless.
//! Every test needs a GPU (`#[ignore]`d without).

use cuda_embed::{cuda_kernel, CudaContext, CudaSlice, Graph, LaunchConfig};
use std::sync::Arc;

// `link`: one link of the chain (waits for the kernel before it, lets the next one start).
cuda_kernel!(file = "examples/kernels/pdl_link.cu");

cuda_kernel!(
    r#"
    // The same link that neither waits nor triggers.
    extern "C" __global__ void plain_link(const float* in, float* out, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = in[i] * a + 1.0f;
    }
"#
);

const N: usize = 1 << 16;
const CHAIN: usize = 100;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("a CUDA GPU")
}

fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(N as u32)
}

/// The factor of link `k` (varied, so a link run out of order or twice changes the result).
fn factor(k: usize) -> f32 {
    0.5 + (k % 7) as f32 * 0.125
}

/// The chain on the CPU, in f32 as the kernels compute it (`in * a + 1` is one fused
/// multiply-add on the GPU: `mul_add` here).
fn on_cpu(x: &[f32]) -> Vec<f32> {
    let mut v = x.to_vec();
    for k in 0..CHAIN {
        v.iter_mut().for_each(|e| *e = e.mul_add(factor(k), 1.0));
    }
    v
}

fn input() -> Vec<f32> {
    (0..N).map(|i| (i % 1000) as f32 * 1e-3).collect()
}

/// The chain on `stream` over the ping-pong buffers `a` (holding the input) and `b`; the result
/// ends in `a` (CHAIN is even). `dependent` picks `launch_dependent` for every link but the first.
fn chain(stream: &Arc<cuda_embed::CudaStream>, a: &mut CudaSlice<f32>, b: &mut CudaSlice<f32>, dependent: bool) {
    for k in 0..CHAIN {
        let (from, to) = if k % 2 == 0 { (&*a, &mut *b) } else { (&*b, &mut *a) };
        // SAFETY: N threads over N elements of each buffer.
        unsafe {
            if dependent && k > 0 {
                link::launch_dependent(stream, cfg(), from, to, factor(k), N as i32).unwrap();
            } else {
                link::launch(stream, cfg(), from, to, factor(k), N as i32).unwrap();
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_dependent_chain_on_a_stream_gives_the_plain_results() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    let x = input();
    let want = on_cpu(&x);
    let mut results = Vec::new();
    for dependent in [false, true, false, true] {
        let (mut a, mut b) = (stream.clone_htod(&x).unwrap(), stream.alloc_zeros::<f32>(N).unwrap());
        chain(&stream, &mut a, &mut b, dependent);
        results.push(stream.clone_dtoh(&a).unwrap());
    }
    for (i, got) in results.iter().enumerate() {
        assert_eq!(got, &results[0], "run {i} (dependent: {}) differs from the plain chain", i % 2 == 1);
    }
    let worst = results[0].iter().zip(&want).map(|(g, w)| (g - w).abs() / w.abs().max(1.0)).fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "the chain differs from the CPU by {worst} (relative)");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_graph_with_programmatic_edges_gives_the_plain_results() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    let x = input();
    let mut results = Vec::new();
    for dependent in [false, true] {
        let (a, b) = (stream.clone_htod(&x).unwrap(), stream.alloc_zeros::<f32>(N).unwrap());
        {
            let mut g = Graph::new(&ctx).unwrap();
            for k in 0..CHAIN {
                let (from, to) = if k % 2 == 0 { (&a, &b) } else { (&b, &a) };
                let g = if dependent && k > 0 { g.dependent() } else { &mut g };
                link::node(g, cfg(), from, to, factor(k), N as i32).unwrap();
            }
            // Link k reads what link k - 1 wrote (and overwrites what it read), and overwrites
            // what link k - 2 wrote: from the third link on, two inferred edges. A dependent
            // link drops the one from k - 2, which k - 1 follows (k waits for k - 1, which
            // waited for k - 2): a chain of single programmatic edges, as on a stream.
            let inferred = if dependent { CHAIN - 1 } else { 1 + 2 * (CHAIN - 2) };
            assert_eq!(g.edges().len(), inferred, "the chain's inferred edges");
            let programmatic = g.programmatic_edges();
            assert_eq!(programmatic.len(), if dependent { inferred } else { 0 });
            assert_eq!(g.to_dot().matches("style=dashed").count(), programmatic.len());
            let exec = g.instantiate().unwrap();
            for _ in 0..3 {
                // SAFETY: N threads over N elements of each buffer; the chain of one launch
                // leaves its input in `a` for the next only through `a` itself, so the replays
                // apply it three times.
                unsafe { exec.launch(&stream).unwrap() };
            }
            exec.synchronize(&stream).unwrap();
        }
        results.push(stream.clone_dtoh(&a).unwrap());
    }
    assert_eq!(results[1], results[0], "programmatic edges change the result");
    // And both equal the stream chain applied three times.
    let (mut a, mut b) = (stream.clone_htod(&x).unwrap(), stream.alloc_zeros::<f32>(N).unwrap());
    for _ in 0..3 {
        chain(&stream, &mut a, &mut b, true);
    }
    assert_eq!(stream.clone_dtoh(&a).unwrap(), results[0]);
}

/// A kernel that does not wait, launched dependent after one that does not trigger, starts as
/// that kernel's blocks finish: the result is the plain one.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_dependent_launch_of_a_kernel_that_does_not_wait_is_harmless_after_one_that_does_not_trigger() {
    let ctx = ctx();
    let stream = ctx.new_stream().unwrap();
    let x = input();
    let (mut a, mut b) = (stream.clone_htod(&x).unwrap(), stream.alloc_zeros::<f32>(N).unwrap());
    for k in 0..CHAIN {
        let (from, to) = if k % 2 == 0 { (&a, &mut b) } else { (&b, &mut a) };
        // SAFETY: N threads over N elements of each buffer.
        unsafe { plain_link::launch_dependent(&stream, cfg(), from, to, factor(k), N as i32).unwrap() };
    }
    let (mut c, mut d) = (stream.clone_htod(&x).unwrap(), stream.alloc_zeros::<f32>(N).unwrap());
    chain(&stream, &mut c, &mut d, false);
    assert_eq!(stream.clone_dtoh(&a).unwrap(), stream.clone_dtoh(&c).unwrap());
}

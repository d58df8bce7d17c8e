//! The conformance matrix (issue 33): every public launcher family against every hazard, from
//! one table (`rows.rs`). Each `Gpu` cell is asserted by the GPU test of its name, which must
//! exercise every row that names it (a row added without its test code fails that test); each
//! `Compile` cell's ui-test must exist; `macros/core/tests/launcher_rows.rs` fails when a macro
//! generates a public launcher without a row.
//!
//! "Another device" is a second, non-primary context on GPU 0: its memory is as foreign to the
//! primary context as another GPU's (the driver refuses it), so the column runs on one GPU.

mod rows;

use cuda_embed::device::*;
use cuda_embed::future::block_on;
use cuda_embed::graph::GraphArg;
use cuda_embed::{
    cuda_kernel, elementwise_kernel, fuse, reduction_kernel, Arg, CudaContext, CudaStream, ElementwiseProgram, Error,
    Graph, Kernel, LaunchConfig, NdView, NdViewMut, Program, ReductionProgram, TensorMap, TensorMapMut, TypedArg,
};
use rows::{Cell, HAZARDS, ROWS};
use std::collections::BTreeSet;
use std::sync::Arc;

cuda_kernel!(
    r#"
    extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
    extern "C" __global__ void split(const float* x, float* y, float* z, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { y[i] = x[i]; z[i] = 2.0f * x[i]; }
    }
    template <int BLOCK>
    __global__ void tsplit(const float* x, float* y, float* z, size_t n) {
        size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x;
        if (i < n) { y[i] = x[i]; z[i] = 2.0f * x[i]; }
    }
"#,
    tune = { kernel = "tsplit", params = ["BLOCK: 64, 128"], block = "BLOCK", grid = "cdiv(n, BLOCK)", key = "n" }
);

// The tensor-map row: a kernel that takes two maps (it reads nothing: the hazards are refused
// before the launch, and a valid launch only has to run).
cuda_kernel!(
    r#"
    #include <cuda.h>
    extern "C" __global__ void tmap_pair(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst) {}
"#
);

elementwise_kernel!(
    ew,
    inputs = "float x, scalar float a",
    outputs = "float y, float z",
    operation = "y = a * x; z = x"
);

reduction_kernel!(
    red,
    inputs = "float x",
    outputs = "float y, float z",
    map = "x",
    reduce = "a + b",
    identity = "0",
    post_map = "y = a; z = a",
);

fuse!(fz, inputs = "float x, float b", steps = ["float v = x + b", "y = v", "z = v"], outputs = "float y, float z");

fuse!(fr, inputs = "float x", steps = ["float v = x * x"], outputs = "float s", reduce = "a + b", identity = "0");

/// The Rust-syntax row: one input, two outputs.
#[cuda_embed::kernel]
pub fn rsplit(x: &[f32], y: &mut [f32], z: &mut [f32]) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    if i < x.len() && i < y.len() && i < z.len() {
        y[i] = x[i];
        z[i] = 2.0 * x[i];
    }
}

const N: usize = 256;

/// Which rows a column test exercised; `done` checks it covered exactly the rows naming it.
struct Column {
    name: &'static str,
    /// What a refusal of this hazard must be.
    expect: fn(&Error) -> bool,
    seen: BTreeSet<(&'static str, &'static str)>,
}

/// Another context's memory: refused by a launch or by a graph.
fn foreign(e: &Error) -> bool {
    matches!(e, Error::Launch { cause, .. } if cause.contains("device memory of"))
        || matches!(e, Error::Graph { cause, .. } if cause.contains("a graph belongs to one context"))
}

/// An output over another operand of a graph node.
fn aliased(e: &Error) -> bool {
    matches!(e, Error::Argument { detail, .. } if detail.contains("overlap"))
}

/// A 2-D configuration for a 1-D kernel.
fn not_1d(e: &Error) -> bool {
    matches!(e, Error::Launch { cause, .. } if cause.contains("is not 1-D"))
}

fn any(_: &Error) -> bool {
    true
}

impl Column {
    fn new(name: &'static str, expect: fn(&Error) -> bool) -> Self {
        Column { name, expect, seen: BTreeSet::new() }
    }

    /// `r` must be an error (refused before anything was enqueued).
    #[track_caller]
    fn err<T: std::fmt::Debug>(&mut self, family: &'static str, launcher: &'static str, r: cuda_embed::Result<T>) {
        match r {
            Err(e) => {
                assert!((self.expect)(&e), "{}: {family} {launcher}: refused for another reason: {e}", self.name);
                eprintln!("{}: {family} {launcher}: refused: {e}", self.name);
            }
            Ok(v) => panic!("{}: {family} {launcher} accepted the hazard ({v:?})", self.name),
        }
        self.seen.insert((family, launcher));
    }

    /// `r` must succeed (a row whose cell says the case is no hazard, run anyway).
    #[track_caller]
    fn ok<T>(&mut self, family: &'static str, launcher: &'static str, r: cuda_embed::Result<T>) {
        if let Err(e) = r {
            panic!("{}: {family} {launcher}: {e}", self.name);
        }
        self.seen.insert((family, launcher));
    }

    fn mark(&mut self, family: &'static str, launcher: &'static str) {
        self.seen.insert((family, launcher));
    }

    /// Every row whose cell in `column` is `Gpu(self.name)` was exercised, and no other.
    fn done(self, column: usize) {
        let want: BTreeSet<_> =
            ROWS.iter().filter(|r| r.cells[column] == Cell::Gpu(self.name)).map(|r| (r.family, r.launcher)).collect();
        let missing: Vec<_> = want.difference(&self.seen).collect();
        assert!(missing.is_empty(), "{}: rows not exercised: {missing:?}", self.name);
    }
}

fn stream() -> Arc<CudaStream> {
    cuda_embed::context(0).expect("this test needs a CUDA GPU").default_stream()
}

fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(N as u32)
}

/// The stream's context still works: a launch and a copy after whatever was refused.
fn still_usable(s: &Arc<CudaStream>) {
    let x = s.clone_htod(&vec![1.0f32; N]).unwrap();
    let mut y = s.alloc_zeros::<f32>(N).unwrap();
    unsafe { axpy::launch(s, cfg(), 3.0, &x, &mut y, N as i32) }.unwrap();
    assert!(s.clone_dtoh(&y).unwrap().iter().all(|&v| v == 3.0), "the context is usable afterwards");
}

fn program(s: &Arc<CudaStream>) -> Option<cuda_embed::ProgramModule> {
    if !cuda_embed::nvrtc::is_available() {
        return None;
    }
    let src = r#"extern "C" __global__ void copy2(const float* x, float* y, float* z, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { y[i] = x[i]; z[i] = x[i]; }
    }"#;
    Some(Program::new(src).name("conformance.cu").load(s.context()).unwrap())
}

#[test]
fn the_matrix_is_complete() {
    // Every launcher has one row, every row a cell per hazard, every Gpu cell a test below, every
    // Compile cell a ui-test.
    let mut names = BTreeSet::new();
    for r in ROWS {
        assert!(names.insert((r.family, r.launcher)), "{} {} has two rows", r.family, r.launcher);
        for (cell, hazard) in r.cells.iter().zip(HAZARDS) {
            match cell {
                Cell::Gpu(t) => assert!(
                    [
                        "another_device",
                        "graph_aliasing",
                        "two_dimensional_block",
                        "slice_out_of_range",
                        "empty_operands"
                    ]
                    .contains(t),
                    "{} {}: `{hazard}` names no test `{t}`",
                    r.family,
                    r.launcher
                ),
                Cell::Compile(case) => {
                    // The crate's directory at run time (the packed GPU run sets it), else at build time.
                    let root = std::env::var_os("CARGO_MANIFEST_DIR")
                        .map(std::path::PathBuf::from)
                        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
                    let path = root.join("ui-tests/cases").join(case);
                    assert!(
                        path.is_file(),
                        "{} {}: `{hazard}` names a missing ui-test {}",
                        r.family,
                        r.launcher,
                        path.display()
                    );
                    assert!(path.with_extension("stderr").is_file(), "{} has no .stderr", path.display());
                }
                Cell::None(why) => assert!(!why.is_empty()),
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn another_device() {
    let s = stream();
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let f = other.default_stream();
    let mut col = Column::new("another_device", foreign);
    let (xf, mut yf) = (f.clone_htod(&vec![1.0f32; N]).unwrap(), f.alloc_zeros::<f32>(N).unwrap());
    let (x, mut y, mut z) =
        (s.clone_htod(&vec![1.0f32; N]).unwrap(), s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
    let (n, ni) = (N, N as i32);
    s.context().bind_to_thread().unwrap();
    unsafe {
        col.err("cuda_kernel!", "launch", axpy::launch(&s, cfg(), 2.0, &xf, &mut y, ni));
        col.err("cuda_kernel!", "launch_timed", axpy::launch_timed(&s, cfg(), 2.0, &x, &mut yf, ni));
        col.err("cuda_kernel!", "launch_cooperative", axpy::launch_cooperative(&s, cfg(), 2.0, &xf, &mut y, ni));
        col.err("cuda_kernel!", "launch_cluster", axpy::launch_cluster(&s, cfg(), (1, 1, 1), 2.0, &xf, &mut y, ni));
        col.err("cuda_kernel!", "launch_dependent", axpy::launch_dependent(&s, cfg(), 2.0, &xf, &mut y, ni));
        col.err("cuda_kernel!", "tuned", tsplit::tuned(&s, &x, &mut yf, &mut z, n));
        col.err("cuda_kernel!", "tuned_async", block_on(tsplit::tuned_async(&s, &xf, &mut y, &mut z, n)));
        col.err("#[kernel]", "launch", rsplit::launch(&s, cfg(), &xf, &mut y, &mut z));
        col.err("#[kernel]", "launch_timed", rsplit::launch_timed(&s, cfg(), &x, &mut yf, &mut z));
        col.err("#[kernel]", "launch_cooperative", rsplit::launch_cooperative(&s, cfg(), &xf, &mut y, &mut z));
        col.err("#[kernel]", "launch_cluster", rsplit::launch_cluster(&s, cfg(), (1, 1, 1), &xf, &mut y, &mut z));
        let k: Kernel<_> = axpy::KERNEL;
        col.err("Kernel", "launch", k.launch(&s, cfg(), (2.0f32, &xf, &mut y, ni)));
        col.err("Kernel", "launch_timed", k.launch_timed(&s, cfg(), (2.0f32, &x, &mut yf, ni)));
        col.err("Kernel", "launch_cooperative", k.launch_cooperative(&s, cfg(), (2.0f32, &xf, &mut y, ni)));
        col.err("Kernel", "launch_cluster", k.launch_cluster(&s, cfg(), (1, 1, 1), (2.0f32, &xf, &mut y, ni)));
        // The async forms: the refusal is the future's result, before anything is queued.
        col.err("cuda_kernel!", "launch_async", block_on(axpy::launch_async(&s, cfg(), 2.0, &x, &mut yf, ni)));
        col.err("#[kernel]", "launch_async", block_on(rsplit::launch_async(&s, cfg(), &xf, &mut y, &mut z)));
        col.err("Kernel", "launch_async", block_on(k.launch_async(&s, cfg(), (2.0f32, &xf, &mut y, ni))));
        col.err("Kernel", "launch_dependent", k.launch_dependent(&s, cfg(), (2.0f32, &xf, &mut y, ni)));
    }
    // Tensor maps: the map of another context's buffer, as the read or the written map, in
    // launches, graph nodes and updates.
    {
        let t = "cuda_kernel! (CUtensorMap)";
        let (xt, mut yt) = (s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
        let (xft, mut yft) = (f.alloc_zeros::<f32>(N).unwrap(), f.alloc_zeros::<f32>(N).unwrap());
        let (xv, xfv) = (NdView::new(&xt, &[16, 16]).unwrap(), NdView::new(&xft, &[16, 16]).unwrap());
        let (mut yv, mut yfv) =
            (NdViewMut::new(&mut yt, &[16, 16]).unwrap(), NdViewMut::new(&mut yft, &[16, 16]).unwrap());
        let (src, srcf) = (TensorMap::new(&xv, [4, 8]).unwrap(), TensorMap::new(&xfv, [4, 8]).unwrap());
        let (mut dst, mut dstf) =
            (TensorMapMut::new(&mut yv, [4, 8]).unwrap(), TensorMapMut::new(&mut yfv, [4, 8]).unwrap());
        s.context().bind_to_thread().unwrap();
        unsafe {
            tmap_pair::launch(&s, cfg(), &src, &mut dst).unwrap();
            col.err(t, "launch", tmap_pair::launch(&s, cfg(), &srcf, &mut dst));
            col.err(t, "launch_timed", tmap_pair::launch_timed(&s, cfg(), &src, &mut dstf));
            col.err(t, "launch_cooperative", tmap_pair::launch_cooperative(&s, cfg(), &srcf, &mut dst));
            col.err(t, "launch_cluster", tmap_pair::launch_cluster(&s, cfg(), (1, 1, 1), &src, &mut dstf));
            col.err(t, "launch_async", block_on(tmap_pair::launch_async(&s, cfg(), &srcf, &mut dst)));
            col.err(t, "launch_dependent", tmap_pair::launch_dependent(&s, cfg(), &srcf, &mut dst));
        }
        let mut g = Graph::new(s.context()).unwrap();
        col.err(t, "node", tmap_pair::node(&mut g, cfg(), &srcf, &dst));
        col.err(t, "node", tmap_pair::node(&mut g, cfg(), &src, &dstf));
        assert_eq!(g.len(), 0, "nothing was added");
        let k = tmap_pair::node(&mut g, cfg(), &src, &dst).unwrap();
        let mut exec = g.instantiate().unwrap();
        col.err(t, "update", tmap_pair::update(&mut exec, &k, cfg(), &srcf, &dst));
        col.err(t, "update", tmap_pair::update(&mut exec, &k, cfg(), &src, &dstf));
        tmap_pair::update(&mut exec, &k, cfg(), &src, &dst).unwrap();
        // SAFETY: the kernel has an empty body.
        unsafe { exec.launch(&s).unwrap() };
        s.synchronize().unwrap();
    }
    col.err("elementwise_kernel!", "launch_async", block_on(ew::launch_async(&s, &xf, 2.0, &mut y, &mut z)));
    col.err("fuse!", "launch_async", block_on(fz::launch_async(&s, &x, &x, &mut y, &mut yf)));
    col.err("elementwise_kernel!", "launch", ew::launch(&s, &xf, 2.0, &mut y, &mut z));
    col.err("elementwise_kernel!", "launch_with", ew::launch_with(&s, cfg(), &x, 2.0, &mut yf, &mut z));
    col.err("fuse!", "launch", fz::launch(&s, &xf, &x, &mut y, &mut z));
    col.err("fuse!", "launch_with", fz::launch_with(&s, cfg(), &x, &x, &mut y, &mut yf));
    {
        let (xv, xfv) = (NdView::new(&x, &[16, 16]).unwrap(), NdView::new(&xf, &[16, 16]).unwrap());
        let mut yv = NdViewMut::new(&mut y, &[16, 16]).unwrap();
        let mut zv = NdViewMut::new(&mut z, &[16, 16]).unwrap();
        col.err("elementwise_kernel!", "launch_nd", ew::launch_nd(&s, &xfv, 2.0, &mut yv, &mut zv));
        col.err("fuse!", "launch_nd", fz::launch_nd(&s, &xv, &xfv, &mut yv, &mut zv));
        col.err(
            "elementwise_kernel!",
            "launch_nd_async",
            block_on(ew::launch_nd_async(&s, &xfv, 2.0, &mut yv, &mut zv)),
        );
        col.err("fuse!", "launch_nd_async", block_on(fz::launch_nd_async(&s, &xv, &xfv, &mut yv, &mut zv)));
        let mut yfv = NdViewMut::new(&mut yf, &[16, 16]).unwrap();
        col.err("elementwise_kernel!", "launch_nd", ew::launch_nd(&s, &xv, 2.0, &mut yfv, &mut zv));
    }
    let (mut r1, mut r2) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
    let mut rf = f.alloc_zeros::<f32>(1).unwrap();
    col.err("reduction_kernel!", "launch", red::launch(&s, &xf, &mut r1, &mut r2));
    col.err("reduction_kernel!", "launch", red::launch(&s, &x, &mut rf, &mut r2));
    col.err("reduction_kernel!", "launch_async", block_on(red::launch_async(&s, &xf, &mut r1, &mut r2)));
    col.err("fuse!", "launch_async", block_on(fr::launch_async(&s, &xf, &mut r1)));
    col.err("fuse!", "launch", fr::launch(&s, &xf, &mut r1));
    let (mut rows1, mut rows2) = (s.alloc_zeros::<f32>(16).unwrap(), s.alloc_zeros::<f32>(16).unwrap());
    col.err("reduction_kernel!", "launch_rows", red::launch_rows(&s, &xf, 16, &mut rows1, &mut rows2));
    col.err("reduction_kernel!", "launch_cols", red::launch_cols(&s, &xf, 16, &mut rows1, &mut rows2));
    col.err("fuse!", "launch_rows", fr::launch_rows(&s, &xf, 16, &mut rows1));
    col.err("fuse!", "launch_cols", fr::launch_cols(&s, &xf, 16, &mut rows1));
    {
        let xfv = NdView::new(&xf, &[16, 16]).unwrap();
        let mut a = NdViewMut::new(&mut rows1, &[16]).unwrap();
        let mut b = NdViewMut::new(&mut rows2, &[16]).unwrap();
        col.err("reduction_kernel!", "launch_axes", red::launch_axes(&s, &xfv, &[1], &mut a, &mut b));
        col.err("fuse!", "launch_axes", fr::launch_axes(&s, &xfv, &[0], &mut a));
        col.err(
            "reduction_kernel!",
            "launch_axes_async",
            block_on(red::launch_axes_async(&s, &xfv, &[1], &mut a, &mut b)),
        );
        col.err("fuse!", "launch_axes_async", block_on(fr::launch_axes_async(&s, &xfv, &[0], &mut a)));
    }
    // Graph nodes: a buffer of another context than the graph's.
    {
        let (mut yn, mut zn) = (s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
        let (mut ra, mut rb) = (s.alloc_zeros::<f32>(16).unwrap(), s.alloc_zeros::<f32>(16).unwrap());
        let xfv = NdView::new(&xf, &[16, 16]).unwrap();
        let yv = NdViewMut::new(&mut yn, &[16, 16]).unwrap();
        let zv = NdViewMut::new(&mut zn, &[16, 16]).unwrap();
        let (a, b) = (NdViewMut::new(&mut ra, &[16]).unwrap(), NdViewMut::new(&mut rb, &[16]).unwrap());
        let mut g = Graph::new(s.context()).unwrap();
        col.err("cuda_kernel!", "node", axpy::node(&mut g, cfg(), 2.0, &xf, &y, ni));
        col.err("#[kernel]", "node", rsplit::node(&mut g, cfg(), &xf, &y, &z));
        col.err("Kernel", "node", axpy::KERNEL.node(&mut g, cfg(), (2.0f32, &xf, &y, ni)));
        col.err("elementwise_kernel!", "node", ew::node(&mut g, &xf, 2.0, &y, &z));
        col.err("elementwise_kernel!", "node_with", ew::node_with(&mut g, cfg(), &x, 2.0, &yf, &z));
        col.err("fuse!", "node", fz::node(&mut g, &xf, &x, &y, &z));
        col.err("fuse!", "node_with", fz::node_with(&mut g, cfg(), &x, &xf, &y, &z));
        col.err("reduction_kernel!", "node", red::node(&mut g, &xf, &r1, &r2));
        col.err("reduction_kernel!", "node_rows", red::node_rows(&mut g, &xf, 16, &rows1, &rows2));
        col.err("reduction_kernel!", "node_cols", red::node_cols(&mut g, &xf, 16, &rows1, &rows2));
        col.err("fuse!", "node", fr::node(&mut g, &xf, &r1));
        col.err("fuse!", "node_rows", fr::node_rows(&mut g, &xf, 16, &rows1));
        col.err("fuse!", "node_cols", fr::node_cols(&mut g, &xf, 16, &rows1));
        col.err("elementwise_kernel!", "node_nd", ew::node_nd(&mut g, &xfv, 2.0, &yv, &zv));
        col.err("fuse!", "node_nd", fz::node_nd(&mut g, &xfv, &xfv, &yv, &zv));
        col.err("reduction_kernel!", "node_axes", red::node_axes(&mut g, &xfv, &[1], &a, &b));
        col.err("fuse!", "node_axes", fr::node_axes(&mut g, &xfv, &[1], &a));
        assert_eq!(g.len(), 0, "nothing was added");
    }
    // Updates of an instantiated graph: a valid node first, then a foreign operand.
    {
        let (x2, y2, z2) = (
            s.clone_htod(&vec![1.0f32; N]).unwrap(),
            s.alloc_zeros::<f32>(N).unwrap(),
            s.alloc_zeros::<f32>(N).unwrap(),
        );
        let mut g = Graph::new(s.context()).unwrap();
        let k = axpy::node(&mut g, cfg(), 2.0, &x2, &y2, ni).unwrap();
        let kr = rsplit::node(&mut g, cfg(), &x2, &y2, &z2).unwrap();
        let xv = NdView::new(&x2, &[16, 16]).unwrap();
        let (mut y3, mut z3) = (s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
        let yv = NdViewMut::new(&mut y3, &[16, 16]).unwrap();
        let zv = NdViewMut::new(&mut z3, &[16, 16]).unwrap();
        let kn = ew::node_nd(&mut g, &xv, 2.0, &yv, &zv).unwrap();
        let kf = fz::node_nd(&mut g, &xv, &xv, &yv, &zv).unwrap();
        let xfv = NdView::new(&xf, &[16, 16]).unwrap();
        let mut exec = g.instantiate().unwrap();
        col.err("cuda_kernel!", "update", axpy::update(&mut exec, &k, cfg(), 2.0, &xf, &y2, ni));
        col.err("Kernel", "GraphExec::set", exec.set(&k, cfg(), (2.0f32, &x2, &yf, ni)));
        col.err("#[kernel]", "update", rsplit::update(&mut exec, &kr, cfg(), &xf, &y2, &z2));
        col.err("elementwise_kernel!", "update_nd", ew::update_nd(&mut exec, kn, &xfv, 2.0, &yv, &zv));
        col.err("fuse!", "update_nd", fz::update_nd(&mut exec, kf, &xv, &xfv, &yv, &zv));
    }
    // The run-time twins.
    if let Some(m) = program(&s) {
        let k = m.kernel("copy2").unwrap();
        let ni = N as i32;
        unsafe {
            col.err(
                "ProgramKernel",
                "launch",
                k.launch(
                    &s,
                    cfg(),
                    &mut [Arg::slice(&xf), Arg::slice_mut(&mut y), Arg::slice_mut(&mut z), Arg::value(&ni)],
                ),
            );
            col.err(
                "ProgramKernel",
                "launch_as",
                k.launch_as(
                    &s,
                    cfg(),
                    cuda_embed::LaunchKind::Timed,
                    &mut [Arg::slice(&x), Arg::slice_mut(&mut yf), Arg::slice_mut(&mut z), Arg::value(&ni)],
                ),
            );
            col.err(
                "ProgramKernel",
                "launch_async",
                block_on(k.launch_async(
                    &s,
                    cfg(),
                    &mut [Arg::slice(&xf), Arg::slice_mut(&mut y), Arg::slice_mut(&mut z), Arg::value(&ni)],
                )),
            );
        }
        let mut g = Graph::new(s.context()).unwrap();
        col.err(
            "ProgramKernel",
            "node",
            k.node(
                &mut g,
                cfg(),
                &[GraphArg::read(&xf), GraphArg::write(&y), GraphArg::write(&z), GraphArg::value(&ni)],
            ),
        );
        let ek = ElementwiseProgram::new("conf_ew", "float x", "float y", "y = 2 * x")
            .unwrap()
            .build(s.context(), "")
            .unwrap();
        col.err("ElementwiseKernel", "launch", ek.launch(&s, &mut [Arg::slice(&xf), Arg::slice_mut(&mut y)]));
        col.err(
            "ElementwiseKernel",
            "launch_async",
            block_on(ek.launch_async(&s, &mut [Arg::slice(&x), Arg::slice_mut(&mut yf)])),
        );
        col.err(
            "ElementwiseKernel",
            "launch_with",
            ek.launch_with(&s, cfg(), &mut [Arg::slice(&x), Arg::slice_mut(&mut yf)]),
        );
        col.err("ElementwiseKernel", "launch_n", ek.launch_n(&s, N, &mut [Arg::slice(&xf), Arg::slice_mut(&mut y)]));
        col.err("ElementwiseKernel", "launch_raw", unsafe {
            ek.launch_raw(&s, Some(cfg()), Some(N), &mut [Arg::slice(&xf), Arg::slice_mut(&mut y)])
        });
        {
            let xfv = NdView::new(&xf, &[16, 16]).unwrap();
            let mut yv = NdViewMut::new(&mut y, &[16, 16]).unwrap();
            col.err("ElementwiseKernel", "launch_nd", ek.launch_nd(&s, &mut [Arg::view(&xfv), Arg::view_mut(&mut yv)]));
            col.err("ElementwiseKernel", "launch_nd_raw", unsafe {
                ek.launch_nd_raw(&s, &mut [Arg::view(&xfv), Arg::view_mut(&mut yv)])
            });
        }
        let rk = ReductionProgram::new("conf_sum", "float x", "float y")
            .map("x")
            .reduce("a + b")
            .identity("0")
            .load(s.context())
            .unwrap();
        col.err("Reduction", "launch", rk.launch(&s, &mut [TypedArg::slice(&xf), TypedArg::slice_mut(&mut r1)]));
        col.err(
            "Reduction",
            "launch_async",
            block_on(rk.launch_async(&s, &mut [TypedArg::slice(&xf), TypedArg::slice_mut(&mut r1)])),
        );
        col.err(
            "Reduction",
            "launch_rows",
            rk.launch_rows(&s, 16, &mut [TypedArg::slice(&xf), TypedArg::slice_mut(&mut rows1)]),
        );
        col.err(
            "Reduction",
            "launch_cols",
            rk.launch_cols(&s, 16, &mut [TypedArg::slice(&xf), TypedArg::slice_mut(&mut rows1)]),
        );
        let xfv = NdView::new(&xf, &[16, 16]).unwrap();
        let mut a = NdViewMut::new(&mut rows1, &[16]).unwrap();
        col.err(
            "Reduction",
            "launch_axes",
            rk.launch_axes(&s, &[1], &mut [TypedArg::view(&xfv), TypedArg::view_mut(&mut a)]),
        );
    } else {
        eprintln!("another_device: libnvrtc not found; the run-time twins were not checked");
        for r in ROWS.iter().filter(|r| ["ProgramKernel", "ElementwiseKernel", "Reduction"].contains(&r.family)) {
            col.mark(r.family, r.launcher);
        }
    }
    still_usable(&s);
    col.done(0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn graph_aliasing() {
    let s = stream();
    let ni = N as i32;
    // Column 2: an output over an input (`io`); column 3: two outputs over one buffer (`oo`).
    let (mut io, mut oo) = (Column::new("graph_aliasing", aliased), Column::new("graph_aliasing", aliased));
    let (x, y, z) =
        (s.clone_htod(&vec![1.0f32; N]).unwrap(), s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
    let (one, one2) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
    let mut g = Graph::new(s.context()).unwrap();
    io.err("cuda_kernel!", "node", axpy::node(&mut g, cfg(), 2.0, &y, &y, ni));
    oo.err("cuda_kernel!", "node", split::node(&mut g, cfg(), &x, &y, &y, ni));
    io.err("#[kernel]", "node", rsplit::node(&mut g, cfg(), &y, &y, &z));
    oo.err("#[kernel]", "node", rsplit::node(&mut g, cfg(), &x, &z, &z));
    io.err("Kernel", "node", axpy::KERNEL.node(&mut g, cfg(), (2.0f32, &y, &y, ni)));
    oo.err("Kernel", "node", split::KERNEL.node(&mut g, cfg(), (&x, &y, &y, ni)));
    io.err("elementwise_kernel!", "node", ew::node(&mut g, &y, 2.0, &y, &z));
    oo.err("elementwise_kernel!", "node", ew::node(&mut g, &x, 2.0, &z, &z));
    io.err("elementwise_kernel!", "node_with", ew::node_with(&mut g, cfg(), &z, 2.0, &y, &z));
    oo.err("elementwise_kernel!", "node_with", ew::node_with(&mut g, cfg(), &x, 2.0, &y, &y));
    io.err("fuse!", "node", fz::node(&mut g, &x, &y, &y, &z));
    oo.err("fuse!", "node", fz::node(&mut g, &x, &x, &z, &z));
    io.err("fuse!", "node_with", fz::node_with(&mut g, cfg(), &y, &x, &y, &z));
    oo.err("fuse!", "node_with", fz::node_with(&mut g, cfg(), &x, &x, &y, &y));
    // Reductions of one element into one: in and out over one buffer, or both outputs over one.
    io.err("reduction_kernel!", "node", red::node(&mut g, &one, &one, &one2));
    oo.err("reduction_kernel!", "node", red::node(&mut g, &x, &one, &one));
    io.err("reduction_kernel!", "node_rows", red::node_rows(&mut g, &one, 1, &one, &one2));
    oo.err("reduction_kernel!", "node_rows", red::node_rows(&mut g, &x, N, &one, &one));
    io.err("reduction_kernel!", "node_cols", red::node_cols(&mut g, &one, 1, &one2, &one));
    oo.err("reduction_kernel!", "node_cols", red::node_cols(&mut g, &one, 1, &one2, &one2));
    io.err("fuse!", "node_rows", fr::node_rows(&mut g, &one, 1, &one));
    io.err("fuse!", "node_cols", fr::node_cols(&mut g, &one, 1, &one));
    assert_eq!(g.len(), 0, "no aliased node was added");
    {
        let xv = NdView::new(&x, &[16, 16]).unwrap();
        let (mut y2, mut z2) = (s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
        let y2v = NdViewMut::new(&mut y2, &[16, 16]).unwrap();
        let z2v = NdViewMut::new(&mut z2, &[16, 16]).unwrap();
        let (o, o2, o3) =
            (s.alloc_zeros::<f32>(16).unwrap(), s.alloc_zeros::<f32>(16).unwrap(), s.alloc_zeros::<f32>(16).unwrap());
        let sixteen = NdView::new(&o, &[16, 1]).unwrap();
        let other = NdView::new(&o3, &[16, 1]).unwrap();
        let mut g = Graph::new(s.context()).unwrap();
        // A flat buffer and a view of the same memory: the view's buffer is what counts.
        let yflat = NdView::new(&y, &[N]).unwrap();
        io.err("elementwise_kernel!", "node_nd", ew::node_nd(&mut g, &yflat, 2.0, &y, &z));
        oo.err("elementwise_kernel!", "node_nd", ew::node_nd(&mut g, &xv, 2.0, &y2v, &y2v));
        io.err("fuse!", "node_nd", fz::node_nd(&mut g, &yflat, &yflat, &y, &z));
        oo.err("fuse!", "node_nd", fz::node_nd(&mut g, &xv, &xv, &z2v, &z2v));
        io.err("reduction_kernel!", "node_axes", red::node_axes(&mut g, &sixteen, &[1], &o, &o2));
        oo.err("reduction_kernel!", "node_axes", red::node_axes(&mut g, &other, &[1], &o2, &o2));
        io.err("fuse!", "node_axes", fr::node_axes(&mut g, &sixteen, &[1], &o));
        assert_eq!(g.len(), 0, "no aliased node was added");
    }
    // Updates: valid nodes first, then aliased operands.
    {
        let (a, b, c) = (
            s.clone_htod(&vec![1.0f32; N]).unwrap(),
            s.alloc_zeros::<f32>(N).unwrap(),
            s.alloc_zeros::<f32>(N).unwrap(),
        );
        let (f1, f2, f3) =
            (s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
        let mut g = Graph::new(s.context()).unwrap();
        let k = axpy::node(&mut g, cfg(), 2.0, &a, &b, ni).unwrap();
        let k2 = split::node(&mut g, cfg(), &a, &b, &c, ni).unwrap();
        let kr = rsplit::node(&mut g, cfg(), &a, &b, &c).unwrap();
        let av = NdView::new(&a, &[16, 16]).unwrap();
        let (mut d, mut e) = (s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
        let dv = NdViewMut::new(&mut d, &[16, 16]).unwrap();
        let ev = NdViewMut::new(&mut e, &[16, 16]).unwrap();
        let kn = ew::node_nd(&mut g, &av, 2.0, &dv, &ev).unwrap();
        let kf = fz::node_nd(&mut g, &av, &av, &dv, &ev).unwrap();
        // Flat N-D nodes: their update may take a view of an output's own buffer as the input.
        let aflat = NdView::new(&a, &[N]).unwrap();
        let kn1 = ew::node_nd(&mut g, &aflat, 2.0, &f1, &f2).unwrap();
        let kf1 = fz::node_nd(&mut g, &aflat, &aflat, &f1, &f2).unwrap();
        let f3flat = NdView::new(&f3, &[N]).unwrap();
        let mut exec = g.instantiate().unwrap();
        io.err("cuda_kernel!", "update", axpy::update(&mut exec, &k, cfg(), 2.0, &b, &b, ni));
        oo.err("cuda_kernel!", "update", split::update(&mut exec, &k2, cfg(), &a, &c, &c, ni));
        io.err("Kernel", "GraphExec::set", exec.set(&k, cfg(), (2.0f32, &b, &b, ni)));
        oo.err("Kernel", "GraphExec::set", exec.set(&k2, cfg(), (&a, &c, &c, ni)));
        io.err("#[kernel]", "update", rsplit::update(&mut exec, &kr, cfg(), &b, &b, &c));
        oo.err("#[kernel]", "update", rsplit::update(&mut exec, &kr, cfg(), &a, &c, &c));
        io.err("elementwise_kernel!", "update_nd", ew::update_nd(&mut exec, kn1, &f3flat, 2.0, &f3, &f2));
        oo.err("elementwise_kernel!", "update_nd", ew::update_nd(&mut exec, kn, &av, 2.0, &dv, &dv));
        io.err("fuse!", "update_nd", fz::update_nd(&mut exec, kf1, &aflat, &f3flat, &f1, &f3));
        oo.err("fuse!", "update_nd", fz::update_nd(&mut exec, kf, &av, &av, &ev, &ev));
        // The same updates without aliasing still work.
        exec.set(&k, cfg(), (2.0f32, &a, &c, ni)).unwrap();
        ew::update_nd(&mut exec, kn, &av, 2.0, &dv, &ev).unwrap();
    }
    if let Some(m) = program(&s) {
        let k = m.kernel("copy2").unwrap();
        let mut g = Graph::new(s.context()).unwrap();
        let args = |a: &'static str| match a {
            "io" => [GraphArg::read(&y), GraphArg::write(&y), GraphArg::write(&z), GraphArg::value(&ni)],
            _ => [GraphArg::read(&x), GraphArg::write(&y), GraphArg::write(&y), GraphArg::value(&ni)],
        };
        io.err("ProgramKernel", "node", k.node(&mut g, cfg(), &args("io")));
        oo.err("ProgramKernel", "node", k.node(&mut g, cfg(), &args("oo")));
        assert_eq!(g.len(), 0);
    } else {
        io.mark("ProgramKernel", "node");
        oo.mark("ProgramKernel", "node");
    }
    // A conditional node's body is built by the same builder: its nodes and their updates are
    // checked the same way (the rows above, again inside an `if` body).
    {
        let mut g = Graph::new(s.context()).unwrap();
        let c = g.condition(0).unwrap();
        let mut inner = None;
        g.if_then(&c, |b| {
            io.err("cuda_kernel!", "node", axpy::node(b, cfg(), 2.0, &y, &y, ni));
            oo.err("Kernel", "node", split::KERNEL.node(b, cfg(), (&x, &y, &y, ni)));
            assert_eq!(b.len(), 0, "no aliased node was added to the body");
            inner = Some(split::node(b, cfg(), &x, &y, &z, ni)?);
            Ok(())
        })
        .unwrap();
        let k = inner.unwrap();
        let mut exec = g.instantiate().unwrap();
        oo.err("cuda_kernel!", "update", split::update(&mut exec, &k, cfg(), &x, &z, &z, ni));
        io.err("Kernel", "GraphExec::set", exec.set(&k, cfg(), (&z, &y, &z, ni)));
        split::update(&mut exec, &k, cfg(), &x, &z, &y, ni).unwrap();
    }
    // Two reads of one buffer are no hazard; a node without aliasing is added.
    let mut g = Graph::new(s.context()).unwrap();
    fz::node(&mut g, &x, &x, &y, &z).unwrap();
    assert_eq!(g.len(), 1);
    still_usable(&s);
    io.done(2);
    oo.done(3);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_dimensional_block() {
    let s = stream();
    let mut col = Column::new("two_dimensional_block", not_1d);
    let x = s.clone_htod(&vec![1.0f32; N]).unwrap();
    let (mut y, mut z) = (s.alloc_zeros::<f32>(N).unwrap(), s.alloc_zeros::<f32>(N).unwrap());
    let two_d = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (16, 16, 1), shared_mem_bytes: 0 };
    let tall = LaunchConfig { grid_dim: (1, 4, 1), block_dim: (64, 1, 1), shared_mem_bytes: 0 };
    for c in [two_d, tall] {
        col.err("elementwise_kernel!", "launch_with", ew::launch_with(&s, c, &x, 2.0, &mut y, &mut z));
        col.err("fuse!", "launch_with", fz::launch_with(&s, c, &x, &x, &mut y, &mut z));
        let mut g = Graph::new(s.context()).unwrap();
        col.err("elementwise_kernel!", "node_with", ew::node_with(&mut g, c, &x, 2.0, &y, &z));
        col.err("fuse!", "node_with", fz::node_with(&mut g, c, &x, &x, &y, &z));
        assert_eq!(g.len(), 0);
    }
    if let Some(_m) = program(&s) {
        let ek = ElementwiseProgram::new("conf_ew2", "float x", "float y", "y = 2 * x")
            .unwrap()
            .build(s.context(), "")
            .unwrap();
        col.err(
            "ElementwiseKernel",
            "launch_with",
            ek.launch_with(&s, two_d, &mut [Arg::slice(&x), Arg::slice_mut(&mut y)]),
        );
    } else {
        col.mark("ElementwiseKernel", "launch_with");
    }
    still_usable(&s);
    col.done(4);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn slice_out_of_range() {
    // No launcher ever sees an operand out of range: none can be made. Flat buffers: cudarc's
    // checked slices; views: every constructor and every view operation checks its extent.
    let s = stream();
    let mut x = s.alloc_zeros::<f32>(N).unwrap();
    assert!(x.try_slice(0..N + 1).is_none());
    assert!(x.try_slice(N..N + 1).is_none());
    assert!(x.try_slice_mut(1..N + 1).is_none());
    assert!(matches!(NdView::new(&x, &[N + 1]), Err(Error::Shape { .. })));
    assert!(matches!(NdView::with_strides(&x, &[16, 16], &[16, 1], 1), Err(Error::Shape { .. })));
    assert!(matches!(NdView::with_strides(&x, &[2], &[-1], 0), Err(Error::Shape { .. })));
    let v = NdView::new(&x, &[16, 16]).unwrap();
    // A range past the end is refused or clipped, never a view past the buffer.
    assert!(!matches!(v.slice(0, 0..17, 1), Ok(w) if w.shape()[0] > 16));
    assert!(matches!(v.reshape(&[N + 1]), Err(Error::Shape { .. })));
    assert!(matches!(v.broadcast_to(&[2, 17, 16]), Err(Error::Shape { .. })));
    // A huge step overflows no arithmetic (an `Error` or a view, never a panic in debug builds).
    let _ = v.slice(1, 0..16, isize::MAX);
    assert!(matches!(NdViewMut::new(&mut x, &[N, 2]), Err(Error::Shape { .. })));
    assert!(matches!(NdViewMut::with_strides(&mut x, &[16, 16], &[1, 1], 0), Err(Error::Shape { .. })), "overlapping");
    assert!(matches!(NdViewMut::with_strides(&mut x, &[16, 17], &[17, 1], 0), Err(Error::Shape { .. })));
    let mut col = Column::new("slice_out_of_range", any);
    for r in ROWS.iter().filter(|r| r.cells[5] == Cell::Gpu("slice_out_of_range")) {
        col.mark(r.family, r.launcher);
    }
    col.done(5);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn empty_operands() {
    // Empty operands launch nothing and succeed (reductions write the identity), and the
    // context stays usable; raw kernels get `n = 0`.
    let s = stream();
    let mut col = Column::new("empty_operands", any);
    let x = s.alloc_zeros::<f32>(0).unwrap_or_else(|_| s.alloc_zeros::<f32>(1).unwrap());
    let x = x.slice(0..0);
    let (mut y0, mut z0) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
    let (mut yb, mut zb) = (y0.slice_mut(0..0), z0.slice_mut(0..0));
    let c = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    unsafe {
        col.ok("cuda_kernel!", "launch", axpy::launch(&s, c, 2.0, &x, &mut yb, 0));
        col.ok("cuda_kernel!", "launch_timed", axpy::launch_timed(&s, c, 2.0, &x, &mut yb, 0));
        col.ok("cuda_kernel!", "launch_cooperative", axpy::launch_cooperative(&s, c, 2.0, &x, &mut yb, 0));
        col.ok("cuda_kernel!", "launch_cluster", axpy::launch_cluster(&s, c, (1, 1, 1), 2.0, &x, &mut yb, 0));
        col.ok("cuda_kernel!", "launch_dependent", axpy::launch_dependent(&s, c, 2.0, &x, &mut yb, 0));
        // The tuned grid of no element has no block: refused before the driver (an empty launch).
        let e = tsplit::tuned(&s, &x, &mut yb, &mut zb, 0).unwrap_err();
        assert!(e.to_string().contains("empty launch"), "{e}");
        col.mark("cuda_kernel!", "tuned");
        let e = block_on(tsplit::tuned_async(&s, &x, &mut yb, &mut zb, 0)).unwrap_err();
        assert!(e.to_string().contains("empty launch"), "{e}");
        col.mark("cuda_kernel!", "tuned_async");
        col.ok("#[kernel]", "launch", rsplit::launch(&s, c, &x, &mut yb, &mut zb));
        col.ok("#[kernel]", "launch_timed", rsplit::launch_timed(&s, c, &x, &mut yb, &mut zb));
        col.ok("#[kernel]", "launch_cooperative", rsplit::launch_cooperative(&s, c, &x, &mut yb, &mut zb));
        col.ok("#[kernel]", "launch_cluster", rsplit::launch_cluster(&s, c, (1, 1, 1), &x, &mut yb, &mut zb));
        let k: Kernel<_> = axpy::KERNEL;
        col.ok("Kernel", "launch", k.launch(&s, c, (2.0f32, &x, &mut yb, 0i32)));
        col.ok("Kernel", "launch_timed", k.launch_timed(&s, c, (2.0f32, &x, &mut yb, 0i32)));
        col.ok("Kernel", "launch_cooperative", k.launch_cooperative(&s, c, (2.0f32, &x, &mut yb, 0i32)));
        col.ok("Kernel", "launch_cluster", k.launch_cluster(&s, c, (1, 1, 1), (2.0f32, &x, &mut yb, 0i32)));
        col.ok("cuda_kernel!", "launch_async", block_on(axpy::launch_async(&s, c, 2.0, &x, &mut yb, 0)));
        col.ok("#[kernel]", "launch_async", block_on(rsplit::launch_async(&s, c, &x, &mut yb, &mut zb)));
        col.ok("Kernel", "launch_async", block_on(k.launch_async(&s, c, (2.0f32, &x, &mut yb, 0i32))));
        col.ok("Kernel", "launch_dependent", k.launch_dependent(&s, c, (2.0f32, &x, &mut yb, 0i32)));
    }
    col.ok("elementwise_kernel!", "launch_async", block_on(ew::launch_async(&s, &x, 2.0, &mut yb, &mut zb)));
    col.ok("fuse!", "launch_async", block_on(fz::launch_async(&s, &x, &x, &mut yb, &mut zb)));
    rsplit::check_errors(&s).unwrap();
    col.ok("elementwise_kernel!", "launch", ew::launch(&s, &x, 2.0, &mut yb, &mut zb));
    col.ok("elementwise_kernel!", "launch_with", ew::launch_with(&s, c, &x, 2.0, &mut yb, &mut zb));
    col.ok("fuse!", "launch", fz::launch(&s, &x, &x, &mut yb, &mut zb));
    col.ok("fuse!", "launch_with", fz::launch_with(&s, c, &x, &x, &mut yb, &mut zb));
    {
        let xv = NdView::from_view(x.slice(..), &[0, 4]).unwrap();
        let mut yv = NdViewMut::from_view(yb.slice_mut(..), &[0, 4]).unwrap();
        let mut zv = NdViewMut::from_view(zb.slice_mut(..), &[0, 4]).unwrap();
        col.ok("elementwise_kernel!", "launch_nd", ew::launch_nd(&s, &xv, 2.0, &mut yv, &mut zv));
        col.ok("fuse!", "launch_nd", fz::launch_nd(&s, &xv, &xv, &mut yv, &mut zv));
        col.ok("elementwise_kernel!", "launch_nd_async", block_on(ew::launch_nd_async(&s, &xv, 2.0, &mut yv, &mut zv)));
        col.ok("fuse!", "launch_nd_async", block_on(fz::launch_nd_async(&s, &xv, &xv, &mut yv, &mut zv)));
    }
    // Reductions of nothing: the identity.
    let (mut r1, mut r2) = (s.clone_htod(&[7.0f32]).unwrap(), s.clone_htod(&[7.0f32]).unwrap());
    col.ok("reduction_kernel!", "launch", red::launch(&s, &x, &mut r1, &mut r2));
    assert_eq!(s.clone_dtoh(&r1).unwrap(), [0.0]);
    col.ok("fuse!", "launch", fr::launch(&s, &x, &mut r1));
    col.ok("reduction_kernel!", "launch_async", block_on(red::launch_async(&s, &x, &mut r1, &mut r2)));
    assert_eq!(s.clone_dtoh(&r1).unwrap(), [0.0]);
    col.ok("fuse!", "launch_async", block_on(fr::launch_async(&s, &x, &mut r1)));
    col.ok("reduction_kernel!", "launch_rows", red::launch_rows(&s, &x, 4, &mut yb, &mut zb));
    col.ok("reduction_kernel!", "launch_cols", red::launch_cols(&s, &x, 0, &mut yb, &mut zb));
    col.ok("fuse!", "launch_rows", fr::launch_rows(&s, &x, 4, &mut yb));
    col.ok("fuse!", "launch_cols", fr::launch_cols(&s, &x, 0, &mut yb));
    {
        let xv = NdView::from_view(x.slice(..), &[0, 4]).unwrap();
        let mut a = NdViewMut::from_view(yb.slice_mut(..), &[0]).unwrap();
        let mut b = NdViewMut::from_view(zb.slice_mut(..), &[0]).unwrap();
        col.ok("reduction_kernel!", "launch_axes", red::launch_axes(&s, &xv, &[1], &mut a, &mut b));
        col.ok("fuse!", "launch_axes", fr::launch_axes(&s, &xv, &[1], &mut a));
        col.ok(
            "reduction_kernel!",
            "launch_axes_async",
            block_on(red::launch_axes_async(&s, &xv, &[1], &mut a, &mut b)),
        );
        col.ok("fuse!", "launch_axes_async", block_on(fr::launch_axes_async(&s, &xv, &[1], &mut a)));
    }
    {
        let (yb, zb) = (y0.slice(0..0), z0.slice(0..0));
        let _ = (&yb, &zb);
    }
    // Graph nodes of empty operands: an empty node, or a kernel node with `n = 0`.
    {
        let (y, z) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
        let e = s.alloc_zeros::<f32>(1).unwrap();
        let e = e.slice(0..0);
        let one = s.clone_htod(&[5.0f32]).unwrap();
        let (mut ya, mut za) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
        let (ye, ze) = (ya.slice_mut(0..0), za.slice_mut(0..0));
        let mut g = Graph::new(s.context()).unwrap();
        let k = axpy::node(&mut g, c, 2.0, &e, &y, 0).unwrap();
        col.mark("cuda_kernel!", "node");
        let kr = rsplit::node(&mut g, c, &e, &y, &z).unwrap();
        col.mark("#[kernel]", "node");
        col.ok("Kernel", "node", axpy::KERNEL.node(&mut g, c, (2.0f32, &e, &y, 0i32)));
        col.ok("elementwise_kernel!", "node", ew::node(&mut g, &e, 2.0, &ye, &ze));
        col.ok("elementwise_kernel!", "node_with", ew::node_with(&mut g, c, &e, 2.0, &ye, &ze));
        col.ok("fuse!", "node", fz::node(&mut g, &e, &e, &ye, &ze));
        col.ok("fuse!", "node_with", fz::node_with(&mut g, c, &e, &e, &ye, &ze));
        col.ok("reduction_kernel!", "node", red::node(&mut g, &e, &y, &z));
        col.ok("fuse!", "node", fr::node(&mut g, &e, &one));
        col.ok("reduction_kernel!", "node_rows", red::node_rows(&mut g, &e, 4, &ye, &ze));
        col.ok("reduction_kernel!", "node_cols", red::node_cols(&mut g, &e, 0, &ye, &ze));
        col.ok("fuse!", "node_rows", fr::node_rows(&mut g, &e, 4, &ye));
        col.ok("fuse!", "node_cols", fr::node_cols(&mut g, &e, 0, &ye));
        let ev = NdView::from_view(e.slice(..), &[0, 4]).unwrap();
        let (mut w1, mut w2) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
        let wv1 = NdViewMut::from_view(w1.slice_mut(0..0), &[0, 4]).unwrap();
        let wv2 = NdViewMut::from_view(w2.slice_mut(0..0), &[0, 4]).unwrap();
        let kn = ew::node_nd(&mut g, &ev, 2.0, &wv1, &wv2).unwrap();
        col.mark("elementwise_kernel!", "node_nd");
        let kf = fz::node_nd(&mut g, &ev, &ev, &wv1, &wv2).unwrap();
        col.mark("fuse!", "node_nd");
        let (mut o1, mut o2) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
        let ov1 = NdViewMut::from_view(o1.slice_mut(0..0), &[0]).unwrap();
        let ov2 = NdViewMut::from_view(o2.slice_mut(0..0), &[0]).unwrap();
        col.ok("reduction_kernel!", "node_axes", red::node_axes(&mut g, &ev, &[1], &ov1, &ov2));
        col.ok("fuse!", "node_axes", fr::node_axes(&mut g, &ev, &[1], &ov1));
        let mut exec = g.instantiate().unwrap();
        col.ok("cuda_kernel!", "update", axpy::update(&mut exec, &k, c, 2.0, &e, &y, 0));
        col.ok("Kernel", "GraphExec::set", exec.set(&k, c, (2.0f32, &e, &y, 0i32)));
        col.ok("#[kernel]", "update", rsplit::update(&mut exec, &kr, c, &e, &y, &z));
        col.ok("elementwise_kernel!", "update_nd", ew::update_nd(&mut exec, kn, &ev, 2.0, &wv1, &wv2));
        col.ok("fuse!", "update_nd", fz::update_nd(&mut exec, kf, &ev, &ev, &wv1, &wv2));
        unsafe { exec.launch(&s) }.unwrap();
        s.synchronize().unwrap();
        assert_eq!(s.clone_dtoh(&one).unwrap(), [0.0], "the fused reduction of nothing wrote its identity");
    }
    if let Some(m) = program(&s) {
        let k = m.kernel("copy2").unwrap();
        let zero = 0i32;
        let (mut y, mut z) = (s.alloc_zeros::<f32>(1).unwrap(), s.alloc_zeros::<f32>(1).unwrap());
        unsafe {
            let args = &mut [Arg::slice(&x), Arg::slice_mut(&mut y), Arg::slice_mut(&mut z), Arg::value(&zero)];
            col.ok("ProgramKernel", "launch", k.launch(&s, c, args));
            col.ok("ProgramKernel", "launch_as", k.launch_as(&s, c, cuda_embed::LaunchKind::Plain, args));
            col.ok("ProgramKernel", "launch_async", block_on(k.launch_async(&s, c, args)));
        }
        let mut g = Graph::new(s.context()).unwrap();
        col.ok(
            "ProgramKernel",
            "node",
            k.node(&mut g, c, &[GraphArg::read(&x), GraphArg::write(&y), GraphArg::write(&z), GraphArg::value(&zero)]),
        );
        let ek = ElementwiseProgram::new("conf_ew3", "float x", "float y", "y = 2 * x")
            .unwrap()
            .build(s.context(), "")
            .unwrap();
        let mut ye = y.slice_mut(0..0);
        col.ok("ElementwiseKernel", "launch", ek.launch(&s, &mut [Arg::slice(&x), Arg::slice_mut(&mut ye)]));
        col.ok(
            "ElementwiseKernel",
            "launch_async",
            block_on(ek.launch_async(&s, &mut [Arg::slice(&x), Arg::slice_mut(&mut ye)])),
        );
        col.ok(
            "ElementwiseKernel",
            "launch_with",
            ek.launch_with(&s, c, &mut [Arg::slice(&x), Arg::slice_mut(&mut ye)]),
        );
        col.ok("ElementwiseKernel", "launch_n", ek.launch_n(&s, 0, &mut [Arg::slice(&x), Arg::slice_mut(&mut ye)]));
        col.ok("ElementwiseKernel", "launch_raw", unsafe {
            ek.launch_raw(&s, Some(c), Some(0), &mut [Arg::slice(&x), Arg::slice_mut(&mut ye)])
        });
        let xv = NdView::from_view(x.slice(..), &[0, 4]).unwrap();
        let mut yv = NdViewMut::from_view(ye.slice_mut(..), &[0, 4]).unwrap();
        col.ok("ElementwiseKernel", "launch_nd", ek.launch_nd(&s, &mut [Arg::view(&xv), Arg::view_mut(&mut yv)]));
        col.ok("ElementwiseKernel", "launch_nd_raw", unsafe {
            ek.launch_nd_raw(&s, &mut [Arg::view(&xv), Arg::view_mut(&mut yv)])
        });
        let rk = ReductionProgram::new("conf_sum2", "float x", "float y")
            .map("x")
            .reduce("a + b")
            .identity("0")
            .load(s.context())
            .unwrap();
        let mut r = s.clone_htod(&[3.0f32]).unwrap();
        col.ok("Reduction", "launch", rk.launch(&s, &mut [TypedArg::slice(&x), TypedArg::slice_mut(&mut r)]));
        assert_eq!(s.clone_dtoh(&r).unwrap(), [0.0]);
        s.memcpy_htod(&[3.0f32], &mut r).unwrap();
        col.ok(
            "Reduction",
            "launch_async",
            block_on(rk.launch_async(&s, &mut [TypedArg::slice(&x), TypedArg::slice_mut(&mut r)])),
        );
        assert_eq!(s.clone_dtoh(&r).unwrap(), [0.0]);
        let mut re = r.slice_mut(0..0);
        col.ok(
            "Reduction",
            "launch_rows",
            rk.launch_rows(&s, 4, &mut [TypedArg::slice(&x), TypedArg::slice_mut(&mut re)]),
        );
        col.ok(
            "Reduction",
            "launch_cols",
            rk.launch_cols(&s, 0, &mut [TypedArg::slice(&x), TypedArg::slice_mut(&mut re)]),
        );
        let mut rv = NdViewMut::from_view(re.slice_mut(..), &[0]).unwrap();
        col.ok(
            "Reduction",
            "launch_axes",
            rk.launch_axes(&s, &[1], &mut [TypedArg::view(&xv), TypedArg::view_mut(&mut rv)]),
        );
    } else {
        for r in ROWS.iter().filter(|r| ["ProgramKernel", "ElementwiseKernel", "Reduction"].contains(&r.family)) {
            col.mark(r.family, r.launcher);
        }
    }
    s.synchronize().unwrap();
    still_usable(&s);
    col.done(6);
}

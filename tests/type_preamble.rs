//! CuPy's `type_preamble`: with one instance, the placeholders the preamble mentions are typedefs
//! before it, so its device functions can use them, in `elementwise_kernel!`,
//! `reduction_kernel!` and their run-time twins. That these macros expand and compile at all is
//! the build-time half of the test; the GPU tests check the results against the CPU.

use cuda_embed::{elementwise_kernel, reduction_kernel, Arg, ElementwiseProgram, ReductionProgram, TypedArg};

mod common;
use common::{data_pm2 as data, gpu};

elementwise_kernel!(
    scaled_clamp,
    inputs = "T x, scalar U s",
    outputs = "T y",
    preamble = "__device__ T clamp_scaled(T v, U s) { const T w = v * (T)s; return w < (T)-1 ? (T)-1 : (w > (T)1 ? (T)1 : w); }",
    operation = "y = clamp_scaled(x, s)",
    types = ["T=double, U=int"],
);

reduction_kernel!(
    sum_cubes,
    inputs = "T x",
    outputs = "T y",
    preamble = "__device__ T cube(T v) { return v * v * v; }",
    map = "cube(x)",
    reduce = "a + b",
    identity = "0",
    types = ["double"],
);

fn clamp(v: f64) -> f64 {
    v.clamp(-1.0, 1.0)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn preamble_uses_placeholders_in_the_macros() {
    let s = gpu();
    let x: Vec<f64> = data(10_001, 3).iter().map(|v| *v as f64).collect();
    let dx = s.clone_htod(&x).unwrap();
    let mut y = s.alloc_zeros::<f64>(x.len()).unwrap();
    scaled_clamp::launch(&s, &dx, 2i32, &mut y).unwrap();
    let got = s.clone_dtoh(&y).unwrap();
    for (k, (g, v)) in got.iter().zip(&x).enumerate() {
        assert_eq!(*g, clamp(v * 2.0), "element {k}");
    }
    let mut t = s.alloc_zeros::<f64>(1).unwrap();
    sum_cubes::launch(&s, &dx, &mut t).unwrap();
    let want: f64 = x.iter().map(|v| v * v * v).sum();
    common::close(s.clone_dtoh(&t).unwrap()[0], want, 1e-12, "sum of cubes");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn preamble_uses_placeholders_in_the_programs() {
    let s = gpu();
    let x: Vec<f64> = data(4_099, 4).iter().map(|v| *v as f64).collect();
    let dx = s.clone_htod(&x).unwrap();
    let k = ElementwiseProgram::new("rt_scaled_clamp", "T x, scalar U s", "T y", "y = clamp_scaled(x, s)")
        .unwrap()
        .preamble("__device__ T clamp_scaled(T v, U s) { const T w = v * (T)s; return w < (T)-1 ? (T)-1 : (w > (T)1 ? (T)1 : w); }");
    assert!(k.source_for("T=double, U=int").unwrap().contains("typedef double T;\ntypedef int U;\n"));
    let k = k.build(s.context(), "T=double, U=int").unwrap();
    let mut y = s.alloc_zeros::<f64>(x.len()).unwrap();
    let scale = 3i32;
    k.launch(&s, &mut [Arg::slice(&dx), Arg::value(&scale), Arg::slice_mut(&mut y)]).unwrap();
    for (e, (g, v)) in s.clone_dtoh(&y).unwrap().iter().zip(&x).enumerate() {
        assert_eq!(*g, clamp(v * 3.0), "element {e}");
    }
    let r = ReductionProgram::new("rt_sum_cubes", "T x", "T y")
        .preamble("__device__ T cube(T v) { return v * v * v; }")
        .map("cube(x)")
        .reduce("a + b")
        .identity("0")
        .types(["double"])
        .load(s.context())
        .unwrap();
    let mut t = s.alloc_zeros::<f64>(1).unwrap();
    r.launch(&s, &mut [TypedArg::slice(&dx), TypedArg::slice_mut(&mut t)]).unwrap();
    let want: f64 = x.iter().map(|v| v * v * v).sum();
    common::close(s.clone_dtoh(&t).unwrap()[0], want, 1e-12, "sum of cubes");
}

//! Kernels defined in a user header the `.cu` file includes get launchers, read with the macro's
//! defines (`HEADER_DOUBLE` switches the header's `real` typedef) and include directories;
//! toolkit headers (`<cooperative_groups.h>`) add none, nor do kernels a header only declares or
//! hides under `#if 0`. A header included inside `namespace ops { }` or `extern "C" { }`
//! declares its kernels, structs and `__constant__`/`__device__` variables there, and those
//! variables get `Global` handles like the source's. GPU tests are `#[ignore]`d (run them on a GPU
//! machine).

use cuda_embed::args::{In, Out};
use cuda_embed::{cuda_kernel, Kernel, LaunchConfig};

cuda_kernel!(
    file = "tests/kernels/header_kernels.cu",
    include_dirs = ["tests/kernels/include"],
    defines = ["HEADER_FACTOR=2.0f"],
    instances = ["header_add<int>"],
);

/// The same header with `real` = `double`.
mod double {
    cuda_embed::cuda_kernel!(
        file = "tests/kernels/header_kernels.cu",
        include_dirs = ["tests/kernels/include"],
        defines = ["HEADER_FACTOR=2.0", "HEADER_DOUBLE"],
    );
}

/// Headers included inside namespace and linkage blocks.
mod in_namespace {
    cuda_embed::cuda_kernel!(file = "tests/kernels/header_namespace.cu", include_dirs = ["tests/kernels/include"]);

    // SAFETY: the generated twin of `ops::Affine` holds two `f32`s: every bit pattern is valid.
    unsafe impl cuda_embed::AnyBitPattern for Affine {}
}

#[test]
fn headers_included_in_a_namespace_declare_their_kernels_and_globals_there() {
    use in_namespace::*;
    let _: Kernel<(Out<f32>, Affine, i32)> = affine::KERNEL;
    let _: Kernel<(Out<f32>, f32, i32)> = c_fill::KERNEL;
    assert_eq!(affine::NAME, "ops::affine");
    assert_eq!(c_fill::NAME, "c_fill");
    assert_eq!(biased_copy::NAME, "biased_copy");
    let _: &cuda_embed::Global<f32> = &bias;
    let _: &cuda_embed::Global<u32> = &calls;
    let _: &cuda_embed::Global<Affine> = &last;
    assert_eq!(
        (bias.name(), table.name(), calls.name(), last.name()),
        ("ops::bias", "ops::table", "ops::calls", "ops::last")
    );
    assert_eq!(table.static_len(), Some(4));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn headers_included_in_a_namespace_run() {
    use in_namespace::*;
    let ctx = cuda_embed::context(0).expect("needs a GPU");
    let stream = ctx.default_stream();
    let n = 64;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    bias.set(&stream, 0.25).unwrap();
    table.write(&stream, &[0.0, 1.0, 2.0, 3.0]).unwrap();
    calls.set(&stream, 0).unwrap();
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.alloc_zeros::<f32>(n).unwrap();
    unsafe { biased_copy::launch(&stream, cfg, &x, &mut y, n as i32).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    assert!(out.iter().enumerate().all(|(i, v)| *v == i as f32 + 0.25 + (i % 4) as f32), "{out:?}");

    unsafe { c_fill::launch(&stream, cfg, &mut y, 3.0, n as i32).unwrap() };
    let a = Affine { scale: 2.0, shift: 1.0 };
    unsafe { affine::launch(&stream, cfg, &mut y, a, n as i32).unwrap() };
    unsafe { affine::launch(&stream, cfg, &mut y, a, n as i32).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    // (2 * 3 + 1.25) = 7.25, then 2 * 7.25 + 1.25 = 15.75.
    assert!(out.iter().all(|v| *v == 15.75), "{out:?}");
    assert_eq!(calls.get(&stream).unwrap(), 2);
    assert_eq!(last.get(&stream).unwrap(), a);
    println!("header in namespace ops: biased_copy, c_fill, ops::affine ran; ops::calls = 2, ops::last = {a:?}");
}

#[test]
fn header_kernels_get_typed_launchers() {
    let scale: Kernel<(In<f32>, Out<f32>, i32)> = header_scale::KERNEL;
    let negate: Kernel<(Out<f32>, i32)> = declared_in_header::KERNEL;
    let scale_f64: Kernel<(In<f64>, Out<f64>, i32)> = double::header_scale::KERNEL;
    let negate_f64: Kernel<(Out<f64>, i32)> = double::declared_in_header::KERNEL;
    let _ = (scale, negate, scale_f64, negate_f64);
    assert_eq!(header_scale::NAME, "header_scale");
    assert_eq!(fill::NAME, "hdr::fill");
    // The struct parameter's Rust twin is generated from the header's C++ definition.
    let _p = Pair { a: 1.0f32, b: 2.0f32 };
    let _q = double::Pair { a: 1.0f64, b: 2.0f64 };
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn header_kernels_run() {
    let ctx = cuda_embed::context(0).expect("needs a GPU");
    let stream = ctx.default_stream();
    let n = 100;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.alloc_zeros::<f32>(n).unwrap();
    unsafe { header_scale::launch(&stream, cfg, &x, &mut y, n as i32).unwrap() };
    unsafe { declared_in_header::launch(&stream, cfg, &mut y, n as i32).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    assert!(xs.iter().zip(&out).all(|(x, y)| *y == -2.0 * x), "{out:?}");

    unsafe { fill::launch(&stream, cfg, &mut y, Pair { a: 0.5, b: 1.0 }, n as i32).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    assert!(out.iter().enumerate().all(|(i, y)| *y == 0.5 * i as f32 + 1.0), "{out:?}");

    let mut k = stream.clone_htod(&vec![1i32; n]).unwrap();
    unsafe { header_add::launch(&stream, cfg, &mut k, 41, n as i32).unwrap() };
    assert!(stream.clone_dtoh(&k).unwrap().iter().all(|v| *v == 42));

    let xd = stream.clone_htod(&[1.0f64, 2.0]).unwrap();
    let mut yd = stream.alloc_zeros::<f64>(2).unwrap();
    unsafe { double::header_scale::launch(&stream, LaunchConfig::for_num_elems(2), &xd, &mut yd, 2).unwrap() };
    assert_eq!(stream.clone_dtoh(&yd).unwrap(), [2.0, 4.0]);
}

//! Kernels defined in a user header the `.cu` file includes get launchers, read with the macro's
//! defines (`HEADER_DOUBLE` switches the header's `real` typedef) and include directories;
//! toolkit headers (`<cooperative_groups.h>`) add none, nor do kernels a header only declares or
//! hides under `#if 0`. GPU tests are `#[ignore]`d (run them on a GPU machine).

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

//! Kernels from a `.cu` file with headers, include directories and compile options. GPU tests are
//! `#[ignore]`d (run them on a GPU machine).

use cuda_embed::{cuda_kernel, LaunchConfig};

cuda_kernel!(
    file = "tests/kernels/scale.cu",
    include_dirs = ["tests/kernels/include"],
    defines = ["OFFSET=0.5f"],
    std = "c++17",
    lineinfo = true,
);

#[test]
fn the_file_kernel_exists_and_names_its_origin() {
    assert_eq!(scale_shift::NAME, "scale_shift");
    let origin = scale_shift::module().origin();
    assert!(origin.starts_with("tests/kernels/scale.cu (tests/from_file.rs:"), "{origin}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_cu_kernel_with_headers_runs() {
    let ctx = cuda_embed::context(0).expect("needs a GPU");
    let stream = ctx.default_stream();
    let xs: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.alloc_zeros::<f32>(100).unwrap();
    unsafe { scale_shift::launch(&stream, LaunchConfig::for_num_elems(100), &x, &mut y, 100).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    assert!(xs.iter().zip(&out).all(|(x, y)| *y == 3.0 * x + 0.5), "{out:?}");
}

/// The same file through the run-time NVRTC path: its headers are embedded at build time, so it
/// compiles on a machine where the source tree does not exist.
mod nvrtc_path {
    cuda_embed::cuda_kernel!(
        file = "tests/kernels/scale.cu",
        include_dirs = ["tests/kernels/include"],
        defines = ["OFFSET=0.5f"],
        compiler = "nvrtc",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_nvrtc_path_uses_the_embedded_headers() {
    let ctx = cuda_embed::context(0).expect("needs a GPU");
    let stream = ctx.default_stream();
    assert!(matches!(nvrtc_path::scale_shift::module().build_info(), cuda_embed::BuildPath::Nvrtc { .. }));
    let x = stream.clone_htod(&[1.0f32, 2.0]).unwrap();
    let mut y = stream.alloc_zeros::<f32>(2).unwrap();
    unsafe { nvrtc_path::scale_shift::launch(&stream, LaunchConfig::for_num_elems(2), &x, &mut y, 2).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [3.5, 6.5]);
}

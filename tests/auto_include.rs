//! Kernels that take `__half`, `__nv_bfloat16` and fp8 parameters build without including
//! `cuda_fp16.h`, `cuda_bf16.h` or `cuda_fp8.h`: the macro adds the headers of the types the source
//! names (issue: a user should not need to know which header declares which type).

use cuda_embed::{bf16, cuda_kernel, f16, LaunchConfig, F8E4M3};

cuda_kernel!(
    r#"
    extern "C" __global__ void half_axpy(__half a, const __half* x, __half* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = __hadd(__hmul(a, x[i]), y[i]);
    }
    extern "C" __global__ void bf16_to_float(const __nv_bfloat16* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = __bfloat162float(x[i]);
    }
    extern "C" __global__ void fp8_to_float(const __nv_fp8_e4m3* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = float(x[i]);
    }
"#
);

#[test]
fn the_modules_build_and_say_how() {
    // The build itself is the check (a missing header is a compile error); the module is there.
    assert_eq!(half_axpy::NAME, "half_axpy");
    assert!(!format!("{}", half_axpy::module().build_info()).is_empty());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn half_bf16_and_fp8_kernels_run() -> cuda_embed::Result<()> {
    let ctx = cuda_embed::context(0)?;
    let stream = ctx.default_stream();
    let n = 1000usize;
    let xs: Vec<f16> = (0..n).map(|i| f16::from_f32((i % 17) as f32 * 0.25)).collect();
    let ys: Vec<f16> = (0..n).map(|i| f16::from_f32((i % 5) as f32)).collect();
    let x = stream.clone_htod(&xs)?;
    let mut y = stream.clone_htod(&ys)?;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    // SAFETY: every kernel touches [0, n) of buffers of n elements.
    unsafe { half_axpy::launch(&stream, cfg, f16::from_f32(2.0), &x, &mut y, n as i32)? };
    let got = stream.clone_dtoh(&y)?;
    for i in 0..n {
        let want = 2.0 * xs[i].to_f32() + ys[i].to_f32();
        assert_eq!(got[i].to_f32(), want, "half_axpy at {i}");
    }
    let bs: Vec<bf16> = (0..n).map(|i| bf16::from_f32(i as f32 - 500.0)).collect();
    let b = stream.clone_htod(&bs)?;
    let mut out = stream.alloc_zeros::<f32>(n)?;
    unsafe { bf16_to_float::launch(&stream, cfg, &b, &mut out, n as i32)? };
    let got = stream.clone_dtoh(&out)?;
    assert!(got.iter().zip(&bs).all(|(g, b)| *g == b.to_f32()));
    let es: Vec<F8E4M3> = (0..n).map(|i| F8E4M3::from_f32((i % 13) as f32 * 0.5)).collect();
    let e = stream.clone_htod(&es)?;
    unsafe { fp8_to_float::launch(&stream, cfg, &e, &mut out, n as i32)? };
    let got = stream.clone_dtoh(&out)?;
    assert!(got.iter().zip(&es).all(|(g, e)| *g == e.to_f32()));
    Ok(())
}

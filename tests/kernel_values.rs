//! Kernels as values: `NAME::KERNEL` is a typed, `Copy` handle that can be stored in a `Vec`,
//! passed to generic code and launched with a tuple of arguments, and `function(&ctx)` gives
//! cudarc's own `CudaFunction` for cudarc's launch builder.

use cuda_embed::args::{In, Out};
use cuda_embed::{cuda_kernel, Kernel, LaunchConfig};

cuda_kernel!(
    r#"
    extern "C" __global__ void add_one(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + i + 1; }
    extern "C" __global__ void add_two(int* out, int base, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = base + i + 2; }
    extern "C" __global__ void scale(const float* x, float* y, float a, unsigned n) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }
    template <typename T> __global__ void fill(T* out, T value, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = value; }
"#,
    instances = ["fill<float>", "fill<int>"]
);

type Writer = Kernel<(Out<i32>, i32, i32)>;

/// Generic code over any kernel of one signature.
fn run_all(
    kernels: &[Writer],
    stream: &std::sync::Arc<cuda_embed::CudaStream>,
    out: &mut cuda_embed::CudaSlice<i32>,
    n: i32,
) -> cuda_embed::Result<Vec<Vec<i32>>> {
    let mut results = Vec::new();
    for k in kernels {
        // SAFETY: each kernel writes out[0..n) and `out` holds n elements.
        unsafe { k.launch(stream, LaunchConfig::for_num_elems(n as u32), (&mut *out, 10, n))? };
        results.push(stream.clone_dtoh(out)?);
    }
    Ok(results)
}

#[test]
fn kernel_values_have_names_and_signatures_without_a_gpu() {
    let kernels: Vec<Writer> = vec![add_one::KERNEL, add_two::KERNEL];
    assert_eq!(kernels.iter().map(|k| k.name()).collect::<Vec<_>>(), ["add_one", "add_two"]);
    assert_eq!(kernels[0].param_sizes(), &[8, 4, 4]);
    let scale: Kernel<(In<f32>, Out<f32>, f32, u32)> = scale::KERNEL;
    assert_eq!(scale.name(), "scale");
    assert_eq!(fill::kernel::<f32>().name(), "fill<float>");
    assert_eq!(fill::kernel::<i32>().name(), "fill<int>");
    assert!(std::ptr::eq(add_one::KERNEL.module(), fill::kernel::<f32>().module()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn kernels_stored_in_a_vec_launch() {
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let n = 1000;
    let mut out = stream.alloc_zeros::<i32>(n as usize).unwrap();
    let results = run_all(&[add_one::KERNEL, add_two::KERNEL], &stream, &mut out, n).unwrap();
    for (k, got) in results.iter().enumerate() {
        assert!(got.iter().enumerate().all(|(i, v)| *v == 10 + i as i32 + k as i32 + 1), "kernel {k}");
    }

    // Views and typed template instances through the same path.
    let x = stream.clone_htod(&vec![2.0f32; 256]).unwrap();
    let mut y = stream.alloc_zeros::<f32>(256).unwrap();
    let cfg = LaunchConfig::for_num_elems(256);
    unsafe { scale::KERNEL.launch(&stream, cfg, (&x.slice(..), &mut y, 1.5f32, 256u32)).unwrap() };
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|v| *v == 3.0));
    let ms = unsafe { fill::kernel::<f32>().launch_timed(&stream, cfg, (&mut y, 7.0f32, 256)).unwrap() };
    assert!(ms >= 0.0);
    assert!(stream.clone_dtoh(&y).unwrap().iter().all(|v| *v == 7.0));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_function_is_the_same_kernel() {
    use cuda_embed::cudarc::driver::PushKernelArg;
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let f = add_two::KERNEL.function(&ctx).unwrap();
    let n = 64i32;
    let mut out = stream.alloc_zeros::<i32>(n as usize).unwrap();
    let base = 5i32;
    let mut builder = stream.launch_builder(&f);
    builder.arg(&mut out).arg(&base).arg(&n);
    unsafe { builder.launch(LaunchConfig::for_num_elems(n as u32)).unwrap() };
    let got = stream.clone_dtoh(&out).unwrap();
    assert!(got.iter().enumerate().all(|(i, v)| *v == 5 + i as i32 + 2));
    assert_eq!(add_two::module().loads(), 1, "the cudarc function shares the loaded module");
}

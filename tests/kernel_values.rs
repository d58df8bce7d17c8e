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

// Kernels whose dynamic shared memory limit is raised (two modules: one has its cudarc handle made
// before the limit is raised, the other after).
cuda_kernel!(
    r#"
    extern "C" __global__ void reverse_before(int* out, int n) {
        extern __shared__ int buf[];
        int i = threadIdx.x;
        buf[i] = 3 * i;
        __syncthreads();
        if (i < n) out[i] = buf[n - 1 - i];
    }
"#
);
cuda_kernel!(
    r#"
    extern "C" __global__ void reverse_after(int* out, int n) {
        extern __shared__ int buf[];
        int i = threadIdx.x;
        buf[i] = 3 * i;
        __syncthreads();
        if (i < n) out[i] = buf[n - 1 - i];
    }
"#
);

mod with_global {
    // A module with a `__device__` variable: its cudarc handle is a function of the very module
    // the launchers and the `Global` handle use.
    cuda_embed::cuda_kernel!(
        r#"
        __device__ int offset;
        extern "C" __global__ void add_offset(int* out, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) out[i] = offset + i;
        }
    "#
    );
}

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
    assert_eq!(add_two::module().loads(), 1, "asking for the cudarc function is not a second module load");
}

/// A module built into the binary without globals is loaded in place, and its cudarc handles come
/// from a second load of the image: the dynamic shared memory limit raised through cuda-embed
/// applies to them too, whether a handle was made before or after, and cudarc launches with it.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_function_takes_the_limits_set_through_cuda_embed() {
    use cuda_embed::cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN;
    use cuda_embed::cudarc::driver::PushKernelArg;
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let big = 64 * 1024u32; // above the 48 KiB every kernel may use without opting in
    let before = reverse_before::KERNEL.function(&ctx).unwrap();
    reverse_before::KERNEL.set_max_dynamic_shared_memory(&ctx, big).unwrap();
    reverse_after::KERNEL.set_max_dynamic_shared_memory(&ctx, big).unwrap();
    let after = reverse_after::KERNEL.function(&ctx).unwrap();
    let n = 256i32;
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: big };
    let want: Vec<i32> = (0..n).map(|i| 3 * (n - 1 - i)).collect();
    for (name, f) in [("made before", &before), ("made after", &after)] {
        assert_eq!(f.get_attribute(MAX_DYN).unwrap(), big as i32, "handle {name} the limit was raised");
        let mut out = stream.alloc_zeros::<i32>(n as usize).unwrap();
        let mut builder = stream.launch_builder(f);
        builder.arg(&mut out).arg(&n);
        // SAFETY: one block of n threads writes out[0..n); `big` bytes of shared memory hold n ints.
        unsafe { builder.launch(cfg).unwrap() };
        assert_eq!(stream.clone_dtoh(&out).unwrap(), want, "cudarc launch of the handle {name}");
        // The launcher itself uses the raised limit too.
        let mut out = stream.alloc_zeros::<i32>(n as usize).unwrap();
        let k = if name == "made before" { reverse_before::KERNEL } else { reverse_after::KERNEL };
        // SAFETY: as above.
        unsafe { k.launch(&stream, cfg, (&mut out, n)).unwrap() };
        assert_eq!(stream.clone_dtoh(&out).unwrap(), want, "launcher of the kernel whose handle was {name}");
    }
    assert_eq!(reverse_before::module().loads(), 1, "the cudarc handle's load is not a second module load");
}

/// A module with a `__device__` variable is loaded through cudarc: a cudarc launch of its handle
/// reads the value written through the `Global` handle.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cudarc_function_of_a_module_with_globals_sees_them() {
    use cuda_embed::cudarc::driver::PushKernelArg;
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    with_global::offset.set(&stream, 100).unwrap();
    let f = with_global::add_offset::KERNEL.function(&ctx).unwrap();
    let n = 64i32;
    let mut out = stream.alloc_zeros::<i32>(n as usize).unwrap();
    let mut builder = stream.launch_builder(&f);
    builder.arg(&mut out).arg(&n);
    // SAFETY: n threads write out[0..n).
    unsafe { builder.launch(LaunchConfig::for_num_elems(n as u32)).unwrap() };
    let got = stream.clone_dtoh(&out).unwrap();
    assert!(got.iter().enumerate().all(|(i, v)| *v == 100 + i as i32), "{got:?}");
}

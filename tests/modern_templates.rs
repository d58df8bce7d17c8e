//! Issue 39: template-heavy CUDA as today's GPU libraries write it, through the macro and on the
//! GPU: a class-template instance by value, the source's own explicit instantiations, templates
//! that nothing instantiates beside the kernels used, and the flags such libraries need (relaxed
//! constexpr, C++20, arch-specific `sm_90a`) on nvcc and on NVRTC at first use; same-named
//! templates named by their namespace paths or by `rename`, and explicit instantiations whose
//! template arguments are deduced. GPU tests are `#[ignore]`d (run them on a GPU machine); the
//! `sm_90a` ones need a compute capability 9.0 GPU.

use cuda_embed::cudarc::driver::DevicePtr;
use cuda_embed::{cuda_kernel, LaunchConfig, RawDevicePtr};

cuda_kernel!(
    r#"
    template <typename T, int N> struct Tensor { T* data; long size[N]; };
    __global__ void tensor_sum(Tensor<float, 1> t, float* out) {
        float s = 0.f;
        for (long i = 0; i < t.size[0]; ++i) s += t.data[i];
        out[0] = s;
    }

    // Overloaded and same-named templates nobody instantiates: no module, no error.
    namespace lib { template <class T> __global__ void init(T* p, int n) {}
                    template <class T> __global__ void init(T* p) {} }
    namespace a { template <class T> __global__ void kernel(T* p) {} }
    namespace b { template <class T> __global__ void kernel(T* p) {} }

    // Instantiated by the source itself (through a macro too): launchers without `instances`.
    template <class T, int N> __global__ void fill(T* p) { p[threadIdx.x] = T(N); }
    template __global__ void fill<float, 4>(float*);
    #define FILL(T, N) template __global__ void fill<T, N>(T*);
    FILL(int, 7)

    // Alternative definitions under `__CUDA_ARCH__`: one template.
    template <typename T>
    #if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
    __global__ void by_arch(T* p) { p[0] = T(90); }
    #else
    __global__ void by_arch(T* p) { p[0] = T(80); }
    #endif
    template __global__ void by_arch<int>(int*);
"#,
    archs = [80, 90]
);

/// Same-named templates in two namespaces, both instantiated: named by their namespace paths
/// (`a_kernel`, `b_kernel`) or by `rename` (`add`, `sub`); explicit instantiations whose template
/// arguments are deduced from the parameter list (`axpy(float, ...)`, `axpy<>`, `b::kernel`).
mod named {
    cuda_embed::cuda_kernel!(
        r#"
        namespace a { template <class T> __global__ void kernel(T* p) { p[threadIdx.x] = T(1); } }
        namespace b { template <class T> __global__ void kernel(T* p) { p[threadIdx.x] = T(2); } }
        template __global__ void a::kernel<float>(float*);
        template __global__ void b::kernel(int*);

        namespace c { template <class T> __global__ void step(T* p, T v) { p[threadIdx.x] += v; } }
        namespace d { template <class T> __global__ void step(T* p, T v) { p[threadIdx.x] -= v; } }

        template <class T, int SCALE = 3>
        __global__ void axpy(T a, const T* x, T* y) { y[threadIdx.x] += a * x[threadIdx.x] * T(SCALE); }
        template __global__ void axpy(float, const float*, float*);
        template __global__ void axpy<>(double, const double*, double*);
    "#,
        instances = ["c::step<float>", "d::step<float>"],
        rename = { "c::step" => add, "d::step" => sub },
        archs = [80, 90]
    );
}

/// The flags modern libraries need, on NVRTC at first use: a constexpr host function called on
/// the device, a C++20 concept, and an instruction only `sm_90a` has.
mod first_use {
    cuda_embed::cuda_kernel!(
        r#"
        constexpr float twice(float v) { return v * 2.f; }
        template <class T> concept Word = sizeof(T) == 4;
        template <Word T> __device__ T same(T v) { return v; }
        extern "C" __global__ void hopper(float* x) {
        #if defined(__CUDA_ARCH_FEAT_SM90_ALL)
            asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
            x[1] = 1.f;
        #endif
            x[0] = same(twice(x[0]));
        }
    "#,
        compiler = "nvrtc",
        archs = [80, "90a"],
        std = "c++20",
        relaxed_constexpr = true
    );
}

/// The same module built at build time (nvcc, or libnvrtc), for `sm_90a` only.
mod built {
    cuda_embed::cuda_kernel!(
        r#"
        constexpr float twice(float v) { return v * 2.f; }
        template <class T> concept Word = sizeof(T) == 4;
        template <Word T> __device__ T same(T v) { return v; }
        // `__launch_bounds__`: without a register count at entry ptxas ignores `setmaxnreg`
        // (its C7508 note, which the macro makes a build warning).
        extern "C" __global__ void __launch_bounds__(128, 1) hopper(float* x) {
            asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
            x[1] = 1.f;
            x[0] = same(twice(x[0]));
        }
    "#,
        archs = ["90a"],
        std = "c++20",
        relaxed_constexpr = true
    );
}

#[test]
fn a_class_template_instance_has_a_generated_twin() {
    let t = Tensor_float_1 { data: RawDevicePtr(8), size: 3 };
    assert_eq!((std::mem::size_of::<Tensor_float_1>(), t.data.0, t.size), (16, 8, 3));
}

#[test]
fn same_named_templates_are_named_by_path_or_rename() {
    assert_eq!((named::a_kernel::NAME, named::b_kernel::NAME), ("a::kernel", "b::kernel"));
    assert_eq!((named::add::NAME, named::sub::NAME, named::axpy::NAME), ("c::step", "d::step", "axpy"));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn renamed_and_deduced_templates_run() {
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let four = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4, 1, 1), shared_mem_bytes: 0 };
    let mut f = stream.alloc_zeros::<f32>(4).unwrap();
    let mut i = stream.alloc_zeros::<i32>(4).unwrap();
    unsafe { named::a_kernel::launch::<f32>(&stream, four, &mut f).unwrap() };
    unsafe { named::b_kernel::launch::<i32>(&stream, four, &mut i).unwrap() };
    assert_eq!((stream.clone_dtoh(&f).unwrap(), stream.clone_dtoh(&i).unwrap()), (vec![1.0; 4], vec![2; 4]));

    // `add` and `sub` are `c::step` and `d::step`: +2.5 then -0.5 on the ones a_kernel wrote.
    unsafe { named::add::launch(&stream, four, &mut f, 2.5f32).unwrap() };
    unsafe { named::sub::launch(&stream, four, &mut f, 0.5f32).unwrap() };
    assert_eq!(stream.clone_dtoh(&f).unwrap(), [3.0; 4]);

    // Deduced: `axpy<float, 3>` and `axpy<double, 3>` (SCALE defaulted): y += a * x * 3.
    let x = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut y = stream.clone_htod(&[1.0f32; 4]).unwrap();
    unsafe { named::axpy::launch::<f32, 3>(&stream, four, 2.0, &x, &mut y).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [7.0, 13.0, 19.0, 25.0]);
    let xd = stream.clone_htod(&[0.5f64, 1.0, 1.5, 2.0]).unwrap();
    let mut yd = stream.alloc_zeros::<f64>(4).unwrap();
    unsafe { named::axpy::launch::<f64, 3>(&stream, four, -1.0, &xd, &mut yd).unwrap() };
    assert_eq!(stream.clone_dtoh(&yd).unwrap(), [-1.5, -3.0, -4.5, -6.0]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn template_heavy_source_runs() {
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let x = stream.clone_htod(&[1.0f32, 2.0, 3.5]).unwrap();
    let mut out = stream.alloc_zeros::<f32>(1).unwrap();
    {
        let (px, _g) = x.device_ptr(&stream);
        let t = Tensor_float_1 { data: RawDevicePtr(px), size: 3 };
        unsafe { tensor_sum::launch(&stream, one, t, &mut out).unwrap() };
    }
    assert_eq!(stream.clone_dtoh(&out).unwrap(), [6.5]);

    let four = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4, 1, 1), shared_mem_bytes: 0 };
    let mut f = stream.alloc_zeros::<f32>(4).unwrap();
    let mut i = stream.alloc_zeros::<i32>(4).unwrap();
    unsafe { fill::launch::<f32, 4>(&stream, four, &mut f).unwrap() };
    unsafe { fill::launch::<i32, 7>(&stream, four, &mut i).unwrap() };
    assert_eq!((stream.clone_dtoh(&f).unwrap(), stream.clone_dtoh(&i).unwrap()), (vec![4.0; 4], vec![7; 4]));

    let mut v = stream.alloc_zeros::<i32>(1).unwrap();
    unsafe { by_arch::launch::<i32>(&stream, one, &mut v).unwrap() };
    let (major, _) = ctx.compute_capability().unwrap();
    assert_eq!(stream.clone_dtoh(&v).unwrap(), [if major >= 9 { 90 } else { 80 }]);
}

#[test]
#[ignore = "needs a compute capability 9.0 GPU"]
fn sm_90a_and_the_flags_run_at_first_use_and_when_built() {
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
    for first_use in [true, false] {
        let mut x = stream.clone_htod(&[3.0f32, 0.0]).unwrap();
        if first_use {
            unsafe { first_use::hopper::launch(&stream, one, &mut x).unwrap() };
        } else {
            unsafe { built::hopper::launch(&stream, one, &mut x).unwrap() };
        }
        // x[1] = 1: the `sm_90a` branch ran (at first use, NVRTC built for `sm_90a` on this GPU).
        assert_eq!(stream.clone_dtoh(&x).unwrap(), [6.0, 1.0], "first use: {first_use}");
    }
}

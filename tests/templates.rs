//! Template kernels: `instances = [...]` compiles the listed instances and `NAME::launch::<..>`
//! picks one by its Rust generic arguments. GPU tests are `#[ignore]`d (run them on a GPU machine).

use cuda_embed::{cuda_kernel, CudaContext, LaunchConfig};
use std::sync::Arc;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

cuda_kernel!(
    r#"
    #include <cstddef>
    template <typename T>
    __global__ void axpy(T a, const T* x, T* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }

    // Block-wide sum with the block size as a template parameter.
    template <typename T, int BLOCK>
    __global__ void block_sum(const T* x, T* out, int n) {
        __shared__ T s[BLOCK];
        T acc = 0;
        for (int i = threadIdx.x; i < n; i += BLOCK) acc += x[i];
        s[threadIdx.x] = acc;
        __syncthreads();
        for (int w = BLOCK / 2; w > 0; w /= 2) {
            if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
            __syncthreads();
        }
        if (threadIdx.x == 0) out[0] = s[0];
    }

    // A type used only in the body: the instance is chosen by turbofish alone.
    template <class Acc>
    __global__ void count_as(const int* x, int n, long long* out) {
        Acc c = 0;
        for (int i = 0; i < n; ++i) c += (Acc)x[i];
        *out = (long long)c;
    }

    namespace ops {
    template <typename T, bool NEGATE = false>
    __global__ void fill(T* y, T v, unsigned n) {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = NEGATE ? -v : v;
    }
    }

    extern "C" __global__ void plain(int* y) { *y = 7; }
"#,
    instances = [
        "axpy<float>",
        "axpy<double>",
        "axpy<int>",
        "block_sum<float, 256>",
        "block_sum<float, 128>",
        "block_sum<double, 256>",
        "count_as<short>",
        "count_as<std::size_t>",
        "count_as<unsigned long>",
        "ops::fill<float>",
        "ops::fill<float, true>",
    ]
);

#[test]
fn instances_have_names_and_the_template_its_own_module() {
    assert_eq!(axpy::NAME, "axpy");
    assert_eq!(ops_fill_name(), "ops::fill");
    assert_eq!(plain::NAME, "plain");
    let names: Vec<&str> = axpy::module().kernel_names().collect();
    assert!(names.contains(&"axpy<float>") && names.contains(&"block_sum<float, 128>"), "{names:?}");
    // `count_as<size_t>` and `count_as<unsigned long>` are one kernel (the same symbol, resolved by
    // the compiler) under two Rust types (usize and u64): no collision (cupy#10173).
    let spec = axpy::module().spec();
    let symbol = |name: &str| spec.kernels.iter().find(|k| k.name == name).and_then(|k| k.symbol);
    if let cuda_embed::BuildPath::Nvcc { .. } = axpy::module().build_info() {
        assert_eq!(symbol("count_as<std::size_t>"), symbol("count_as<unsigned long>"));
        assert_eq!(symbol("axpy<float>"), Some("_Z4axpyIfEvT_PKS0_PS0_i"));
    }
}

fn ops_fill_name() -> &'static str {
    fill::NAME
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_instance_computes_the_right_result() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 1000usize;
    let cfg = LaunchConfig::for_num_elems(n as u32);

    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.clone_htod(&vec![1.0f32; n]).unwrap();
    unsafe { axpy::launch(&stream, cfg, 2.0f32, &x, &mut y, n as i32).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    assert!((0..n).all(|i| out[i] == 2.0 * xs[i] + 1.0));

    let xd: Vec<f64> = (0..n).map(|i| i as f64 / 3.0).collect();
    let x = stream.clone_htod(&xd).unwrap();
    let mut y = stream.clone_htod(&vec![0.5f64; n]).unwrap();
    unsafe { axpy::launch::<f64>(&stream, cfg, -1.5, &x, &mut y, n as i32).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    // The GPU contracts a*x+y into one fused multiply-add: compare with the fused result.
    assert!((0..n).all(|i| out[i] == (-1.5f64).mul_add(xd[i], 0.5)));

    let xi: Vec<i32> = (0..n as i32).collect();
    let x = stream.clone_htod(&xi).unwrap();
    let mut y = stream.clone_htod(&vec![3i32; n]).unwrap();
    unsafe { axpy::launch(&stream, cfg, 4i32, &x, &mut y, n as i32).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    assert!((0..n).all(|i| out[i] == 4 * xi[i] + 3));

    let mut z = stream.alloc_zeros::<f32>(n).unwrap();
    unsafe { fill::launch::<f32, false>(&stream, cfg, &mut z, 2.5, n as u32).unwrap() };
    assert!(stream.clone_dtoh(&z).unwrap().iter().all(|&v| v == 2.5));
    unsafe { fill::launch::<f32, true>(&stream, cfg, &mut z, 2.5, n as u32).unwrap() };
    assert!(stream.clone_dtoh(&z).unwrap().iter().all(|&v| v == -2.5));

    let ones = stream.clone_htod(&vec![1i32; 77]).unwrap();
    let mut c = stream.alloc_zeros::<i64>(1).unwrap();
    for which in 0..3 {
        let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        unsafe {
            match which {
                0 => count_as::launch::<i16>(&stream, one, &ones, 77, &mut c),
                1 => count_as::launch::<usize>(&stream, one, &ones, 77, &mut c),
                _ => count_as::launch::<u64>(&stream, one, &ones, 77, &mut c),
            }
            .unwrap()
        };
        assert_eq!(stream.clone_dtoh(&c).unwrap()[0], 77);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn const_generic_block_size_instances() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 10_000usize;
    let xs: Vec<f32> = (0..n).map(|i| (i % 10) as f32).collect();
    let want: f32 = xs.iter().sum();
    let x = stream.clone_htod(&xs).unwrap();
    let mut out = stream.alloc_zeros::<f32>(1).unwrap();
    let block = |b: u32| LaunchConfig { grid_dim: (1, 1, 1), block_dim: (b, 1, 1), shared_mem_bytes: 0 };
    unsafe { block_sum::launch::<f32, 256>(&stream, block(256), &x, &mut out, n as i32).unwrap() };
    assert_eq!(stream.clone_dtoh(&out).unwrap()[0], want);
    unsafe { block_sum::launch::<f32, 128>(&stream, block(128), &x, &mut out, n as i32).unwrap() };
    assert_eq!(stream.clone_dtoh(&out).unwrap()[0], want);
    let xd: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
    let x = stream.clone_htod(&xd).unwrap();
    let mut out = stream.alloc_zeros::<f64>(1).unwrap();
    unsafe { block_sum::launch::<f64, 256>(&stream, block(256), &x, &mut out, n as i32).unwrap() };
    assert_eq!(stream.clone_dtoh(&out).unwrap()[0], want as f64);
    // Attributes are per instance: the 256-wide instance uses twice the shared memory.
    let a = block_sum::attributes::<f32, 256>(&ctx).unwrap();
    let b = block_sum::attributes::<f32, 128>(&ctx).unwrap();
    assert_eq!(a.static_shared_bytes, 1024);
    assert_eq!(b.static_shared_bytes, 512);
}

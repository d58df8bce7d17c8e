//! GPU behaviour of generated launchers. Every test here needs a CUDA GPU and is `#[ignore]`d so
//! CI (no GPU) reports them as ignored; run them with `--include-ignored` on a GPU machine.

use cuda_embed::{cuda_kernel, CudaContext, LaunchConfig};
use std::sync::Arc;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

fn one() -> LaunchConfig {
    LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 }
}

cuda_kernel!(
    r#"
    extern "C" __global__ void saxpy(float a, const float* x, float* y, size_t n) {
        size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + y[i];
    }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn saxpy_matches_cpu() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let n = 1_000_003usize;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let ys: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.clone_htod(&ys).unwrap();
    unsafe { saxpy::launch(&stream, LaunchConfig::for_num_elems(n as u32), 3.0, &x, &mut y, n).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    for i in 0..n {
        assert_eq!(out[i], 3.0 * xs[i] + ys[i], "element {i}");
    }
    // Views work as well as slices.
    let mut yv = stream.clone_htod(&ys).unwrap();
    let xv = x.slice(10..20);
    let mut yvm = yv.slice_mut(0..10);
    unsafe { saxpy::launch(&stream, LaunchConfig::for_num_elems(10), 1.0, &xv, &mut yvm, 10).unwrap() };
    let out = stream.clone_dtoh(&yv).unwrap();
    assert_eq!(out[0], xs[10] + ys[0]);
    assert_eq!(out[10], ys[10]);
}

cuda_kernel!(
    r#"
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    #include <cuda_fp8.h>
    #include <cuComplex.h>
    #include <cstdint>
    template <typename T> __device__ void put(unsigned char* out, size_t& at, T v) {
        at = (at + alignof(T) - 1) / alignof(T) * alignof(T);
        memcpy(out + at, &v, sizeof(T));
        at += sizeof(T);
    }
    extern "C" __global__ void scalars(bool b, char c, signed char sc, unsigned char uc, short s,
        unsigned short us, int i, unsigned u, long l, unsigned long ul, long long ll,
        unsigned long long ull, float f, double d, size_t z, ptrdiff_t pd, int8_t i8, uint16_t u16,
        int64_t i64, __half h, __nv_bfloat16 bf, __nv_fp8_e4m3 e4, __nv_fp8_e5m2 e5,
        unsigned char* out) {
        size_t at = 0;
        put(out, at, b); put(out, at, c); put(out, at, sc); put(out, at, uc); put(out, at, s);
        put(out, at, us); put(out, at, i); put(out, at, u); put(out, at, l); put(out, at, ul);
        put(out, at, ll); put(out, at, ull); put(out, at, f); put(out, at, d); put(out, at, z);
        put(out, at, pd); put(out, at, i8); put(out, at, u16); put(out, at, i64); put(out, at, h);
        put(out, at, bf); put(out, at, e4); put(out, at, e5);
    }
    extern "C" __global__ void vectors(char4 a, uchar4 b, short2 c, int2 d, int4 e, uint4 f,
        float2 g, float3 h, float4 i, double2 j, longlong2 k, __half2 l, __nv_bfloat162 m,
        cuComplex n, cuDoubleComplex o, cudaTextureObject_t t, unsigned char* out) {
        size_t at = 0;
        put(out, at, a); put(out, at, b); put(out, at, c); put(out, at, d); put(out, at, e);
        put(out, at, f); put(out, at, g); put(out, at, h); put(out, at, i); put(out, at, j);
        put(out, at, k); put(out, at, l); put(out, at, m); put(out, at, n); put(out, at, o);
        put(out, at, t);
    }
"#
);

/// Appends `v`'s bytes at its alignment, the way the kernels' `put` does.
fn put<T: Copy>(buf: &mut Vec<u8>, v: T) {
    let align = std::mem::align_of::<T>();
    while !buf.len().is_multiple_of(align) {
        buf.push(0);
    }
    // SAFETY: reading the bytes of a plain Copy value of known size.
    let bytes = unsafe { std::slice::from_raw_parts(&v as *const T as *const u8, std::mem::size_of::<T>()) };
    buf.extend_from_slice(bytes);
}

/// Compares only the bytes the kernel wrote (padding is left zero on both sides).
fn assert_bytes(got: &[u8], want: &[u8]) {
    assert_eq!(&got[..want.len()], want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_scalar_type_by_value() {
    use cuda_embed::{bf16, f16, F8E4M3, F8E5M2};
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut out = stream.alloc_zeros::<u8>(512).unwrap();
    let (h, bf) = (f16::from_f32(-1.5), bf16::from_f32(3.25));
    let (e4, e5) = (F8E4M3::from_f32(0.5), F8E5M2::from_f32(-2.0));
    unsafe {
        scalars::launch(
            &stream,
            one(),
            true,
            -5i8,
            -7i8,
            250u8,
            -300i16,
            60000u16,
            -123456,
            4000000000u32,
            -9_000_000_000i64,
            18_000_000_000_000_000_000u64,
            i64::MIN + 1,
            u64::MAX - 1,
            1.25f32,
            -2.5e300f64,
            usize::MAX - 3,
            -42isize,
            -128i8,
            65535u16,
            i64::MAX,
            h,
            bf,
            e4,
            e5,
            &mut out,
        )
        .unwrap()
    };
    let got = stream.clone_dtoh(&out).unwrap();
    let mut want = Vec::new();
    put(&mut want, true);
    put(&mut want, -5i8);
    put(&mut want, -7i8);
    put(&mut want, 250u8);
    put(&mut want, -300i16);
    put(&mut want, 60000u16);
    put(&mut want, -123456i32);
    put(&mut want, 4000000000u32);
    put(&mut want, -9_000_000_000i64);
    put(&mut want, 18_000_000_000_000_000_000u64);
    put(&mut want, i64::MIN + 1);
    put(&mut want, u64::MAX - 1);
    put(&mut want, 1.25f32);
    put(&mut want, -2.5e300f64);
    put(&mut want, usize::MAX - 3);
    put(&mut want, -42isize);
    put(&mut want, -128i8);
    put(&mut want, 65535u16);
    put(&mut want, i64::MAX);
    put(&mut want, h);
    put(&mut want, bf);
    put(&mut want, e4);
    put(&mut want, e5);
    assert_bytes(&got, &want);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_vector_type_by_value() {
    use cuda_embed::*;
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut out = stream.alloc_zeros::<u8>(512).unwrap();
    let a = Char4::new(-1, 2, -3, 4);
    let b = UChar4::new(250, 251, 252, 253);
    let c = Short2::new(-30000, 30000);
    let d = Int2::new(i32::MIN, i32::MAX);
    let e = Int4::new(1, -2, 3, -4);
    let f = UInt4::new(5, 6, 7, u32::MAX);
    let g = Float2::new(0.5, -0.25);
    let h = Float3::new(1.0, 2.0, 3.0);
    let i = Float4::new(4.0, 5.0, 6.0, 7.0);
    let j = Double2::new(1e-300, -1e300);
    let k = LongLong2::new(i64::MIN, i64::MAX);
    let l = Half2::new(f16::from_f32(1.5), f16::from_f32(-0.75));
    let m = Bf162::new(bf16::from_f32(8.0), bf16::from_f32(-9.0));
    let n = Complex32::new(1.0, -1.0);
    let o = Complex64::new(2.0, -2.0);
    let t = TextureObject(0x1234_5678_9abc_def0);
    unsafe { vectors::launch(&stream, one(), a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, t, &mut out).unwrap() };
    let got = stream.clone_dtoh(&out).unwrap();
    let mut want = Vec::new();
    put(&mut want, a);
    put(&mut want, b);
    put(&mut want, c);
    put(&mut want, d);
    put(&mut want, e);
    put(&mut want, f);
    put(&mut want, g);
    put(&mut want, h);
    put(&mut want, i);
    put(&mut want, j);
    put(&mut want, k);
    put(&mut want, l);
    put(&mut want, m);
    put(&mut want, n);
    put(&mut want, o);
    put(&mut want, t);
    assert_bytes(&got, &want);
}

/// The Rust twin of the CUDA `Params` struct below.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, cuda_embed::DeviceSafe)]
struct Params {
    scale: f32,
    offset: f64,
    count: i32,
}

cuda_kernel!(
    r#"
    struct Params { float scale; double offset; int count; };
    typedef float floatX;
    #define INDEX_T unsigned int
    __device__ float twice(float v) { return 2.0f * v; }
    extern "C" __global__ void apply(__grid_constant__ const Params p, const floatX* __restrict__ in,
                                     floatX* __restrict__ out, INDEX_T n) {
        INDEX_T i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n && (int)i < p.count) out[i] = twice(in[i]) * p.scale + (float)p.offset;
    }
    extern "C" __global__ void fill(void* out, int n, unsigned char byte) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) ((unsigned char*)out)[i] = byte;
    }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn struct_typedef_and_two_kernels_share_one_module() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let input: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let x = stream.clone_htod(&input).unwrap();
    let mut y = stream.alloc_zeros::<f32>(100).unwrap();
    let p = Params { scale: 0.5, offset: 10.0, count: 90 };
    unsafe { apply::launch(&stream, LaunchConfig::for_num_elems(100), p, &x, &mut y, 100).unwrap() };
    let out = stream.clone_dtoh(&y).unwrap();
    for i in 0..100 {
        let want = if i < 90 { 2.0 * input[i] * 0.5 + 10.0 } else { 0.0 };
        assert_eq!(out[i], want, "element {i}");
    }
    // `void*` takes any element type.
    let mut bytes = stream.alloc_zeros::<u32>(8).unwrap();
    unsafe { fill::launch(&stream, LaunchConfig::for_num_elems(32), &mut bytes, 32, 0xab).unwrap() };
    assert_eq!(stream.clone_dtoh(&bytes).unwrap(), vec![0xabababab_u32; 8]);
    assert!(std::ptr::eq(apply::module(), fill::module()));
    assert_eq!(apply::module().loads(), 1);
}

cuda_kernel!(
    r#"
    namespace ops {
    __global__ void scale(double* data, double by, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) data[i] *= by;
    }
    }
    __global__ void __launch_bounds__(128) add_one(long long* data, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) data[i] += 1;
    }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn cxx_linkage_kernels() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut d = stream.clone_htod(&[1.0f64, 2.0, 3.0]).unwrap();
    unsafe { scale::launch(&stream, LaunchConfig::for_num_elems(3), &mut d, 2.5, 3).unwrap() };
    assert_eq!(stream.clone_dtoh(&d).unwrap(), [2.5, 5.0, 7.5]);
    let mut l = stream.clone_htod(&[i64::MAX - 1, -1]).unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
    unsafe { add_one::launch(&stream, cfg, &mut l, 2).unwrap() };
    assert_eq!(stream.clone_dtoh(&l).unwrap(), [i64::MAX, 0]);
    assert_eq!(scale::NAME, "ops::scale");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn too_many_threads_is_an_error() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let mut l = stream.alloc_zeros::<i64>(4).unwrap();
    // __launch_bounds__(128): 256 threads exceed the kernel's own limit.
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let err = unsafe { add_one::launch(&stream, cfg, &mut l, 4) }.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, cuda_embed::Error::Launch { .. }), "{msg}");
    assert!(msg.contains("add_one") && msg.contains("256") && msg.contains("128"), "{msg}");
    // Over the device limit too.
    let mut y = stream.alloc_zeros::<f32>(4).unwrap();
    let x = stream.alloc_zeros::<f32>(4).unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (2048, 1, 1), shared_mem_bytes: 0 };
    let msg = unsafe { saxpy::launch(&stream, cfg, 1.0, &x, &mut y, 4) }.unwrap_err().to_string();
    assert!(msg.contains("saxpy") && msg.contains("2048") && msg.contains("1024"), "{msg}");
    // The stream is still usable afterwards.
    unsafe { saxpy::launch(&stream, LaunchConfig::for_num_elems(4), 1.0, &x, &mut y, 4).unwrap() };
    stream.synchronize().unwrap();
}

cuda_kernel!(
    r#"
    extern "C" __global__ void race(int* out, int v) { out[threadIdx.x] = v; }
"#
);

#[test]
#[ignore = "needs a CUDA GPU"]
fn sixty_four_threads_load_once() {
    let ctx = ctx();
    assert_eq!(race::module().loads(), 0);
    let barrier = Arc::new(std::sync::Barrier::new(64));
    let handles: Vec<_> = (0..64)
        .map(|t| {
            let ctx = ctx.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let stream = ctx.new_stream().unwrap();
                let mut out = stream.alloc_zeros::<i32>(32).unwrap();
                barrier.wait();
                let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
                unsafe { race::launch(&stream, cfg, &mut out, t).unwrap() };
                assert_eq!(stream.clone_dtoh(&out).unwrap(), vec![t; 32]);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(race::module().loads(), 1);
}

cuda_kernel!(
    r#"
    typedef float real_t;
    namespace jit {
    __global__ void axpb(real_t a, const real_t* x, real_t b, real_t* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] + b;
    }
    }
"#,
    compiler = "nvrtc"
);

const NVRTC_CHILD: &str = "CUDA_EMBED_TEST_NVRTC_CHILD";

/// Runs the NVRTC module in this process and prints whether its code came from the disk cache.
#[test]
#[ignore = "needs a CUDA GPU"]
fn nvrtc_child() {
    if std::env::var_os(NVRTC_CHILD).is_none() {
        return; // only meaningful when spawned by `nvrtc_fallback_and_disk_cache`
    }
    let ctx = ctx();
    let stream = ctx.default_stream();
    let x = stream.clone_htod(&[1.0f32, 2.0, 3.0]).unwrap();
    let mut y = stream.alloc_zeros::<f32>(3).unwrap();
    unsafe { axpb::launch(&stream, LaunchConfig::for_num_elems(3), 2.0, &x, 0.5, &mut y, 3).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [2.5, 4.5, 6.5]);
    println!("FROM_DISK_CACHE={}", axpb::module().loaded_from_disk_cache(&ctx));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nvrtc_fallback_and_disk_cache() {
    assert!(matches!(axpb::module().build_info(), cuda_embed::BuildPath::Nvrtc { .. }));
    let cache = tempfile::tempdir().unwrap();
    let run = || {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["nvrtc_child", "--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
            .env(NVRTC_CHILD, "1")
            .env("CUDA_EMBED_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{text}");
        text
    };
    let first = run();
    assert!(first.contains("FROM_DISK_CACHE=false"), "{first}");
    let files: Vec<String> = std::fs::read_dir(cache.path().join("nvrtc"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The module's cubin, nothing else: its one compile is also its type check (the check is
    // compiled with it as `static_assert`s; the probe is compiled only to explain a failure).
    assert_eq!(files.iter().filter(|f| f.ends_with(".cubin")).count(), 1, "{files:?}");
    assert_eq!(files.len(), 1, "{files:?}");
    // The entry carries the run-time inputs it was compiled for (a second blob) and the record
    // that the load's other checks passed (a third).
    let store = cuda_embed_source::cache::Store::new(cache.path().join("nvrtc"), "cubin");
    let blobs: Vec<usize> =
        files.iter().map(|f| store.read(f.trim_end_matches(".cubin")).expect("a valid entry").blobs.len()).collect();
    assert_eq!(blobs, [3], "{files:?}");
    let second = run();
    assert!(second.contains("FROM_DISK_CACHE=true"), "{second}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn build_path_is_reported() {
    match saxpy::module().build_info() {
        cuda_embed::BuildPath::Nvcc { targets, .. } => assert!(targets.iter().any(|t| t == "sm_90"), "{targets:?}"),
        other => panic!("the test suite is built with nvcc: {other:?}"),
    }
}

cuda_kernel!(
    r#"
    extern "C" __global__ void slow_fill(int* out, int value, long long cycles) {
        long long start = clock64();
        while (clock64() - start < cycles) {}
        out[threadIdx.x] = value;
    }
    extern "C" __global__ void copy_ints(const int* in, int* out) {
        out[threadIdx.x] = in[threadIdx.x];
    }
"#
);

/// With cudarc's event tracking on and several streams, a launch that writes a buffer records
/// the buffer's write event on its stream, and a launch on another stream that reads the buffer
/// waits on it: the generated launchers keep cudarc's ordering (they skip the guard protocol only
/// where the context manages no synchronisation). The writer spins for tens of milliseconds
/// first, so a reader that did not wait would copy the zeros.
#[test]
#[ignore = "needs a CUDA GPU"]
fn launches_on_two_streams_are_ordered_by_cudarcs_events() {
    let ctx = ctx();
    assert!(ctx.is_event_tracking(), "cudarc's default: event tracking on");
    let (writer, reader) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    assert!(ctx.is_managing_stream_synchronization());
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    for round in 1..=3 {
        let mut buf = writer.alloc_zeros::<i32>(32).unwrap();
        let mut out = reader.alloc_zeros::<i32>(32).unwrap();
        writer.synchronize().unwrap();
        reader.synchronize().unwrap();
        unsafe { slow_fill::launch(&writer, cfg, &mut buf, round, 50_000_000).unwrap() };
        unsafe { copy_ints::launch(&reader, cfg, &buf, &mut out).unwrap() };
        assert_eq!(reader.clone_dtoh(&out).unwrap(), vec![round; 32], "round {round}");
    }
}

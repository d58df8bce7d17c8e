//! Structs passed by value with no hand-written Rust type: the macro generates the `#[repr(C)]`
//! twin from the layout the compiler gave the C++ struct (names, types, offsets checked), so a
//! struct parameter needs no Rust at all; a twin the user writes wins.

use cuda_embed::{cuda_kernel, LaunchConfig, RawDevicePtr, UInt2};

mod generated {
    cuda_embed::cuda_kernel!(
        r#"
        struct Params {
            float scale;
            int n;
            double bias[3];
            float* out;
            uint2 dims;
        };
        extern "C" __global__ void apply(Params p, float* y) {
            int i = threadIdx.x;
            if (i < p.n) y[i] = p.scale * (float)(p.bias[0] + p.bias[1] + p.bias[2]) + (float)(p.dims.x + p.dims.y);
        }
    "#
    );
}

mod handwritten {
    use cuda_embed::DeviceSafe;

    /// The user's own twin: it shadows the generated one.
    #[repr(C)]
    #[derive(Clone, Copy, DeviceSafe)]
    pub struct Scale {
        pub factor: f32,
    }

    impl Scale {
        pub fn twice() -> Scale {
            Scale { factor: 2.0 }
        }
    }

    cuda_embed::cuda_kernel!(
        r#"
        struct Scale { float factor; };
        extern "C" __global__ void scale(Scale s, float* y, int n) {
            int i = threadIdx.x; if (i < n) y[i] *= s.factor;
        }
    "#
    );
}

cuda_kernel!(
    r#"
    struct Limits { unsigned long long lo, hi; };
    __constant__ Limits limits;
    extern "C" __global__ void clamp(float* y, int n) {
        int i = threadIdx.x; if (i < n && y[i] > (float)limits.hi) y[i] = (float)limits.hi;
    }
"#
);

fn params() -> generated::Params {
    generated::Params { scale: 2.0, n: 4, bias: [0.25, 0.25, 0.5], out: RawDevicePtr(0), dims: UInt2 { x: 1, y: 2 } }
}

#[test]
fn the_generated_twin_has_the_cuda_layout() {
    let p = params();
    assert_eq!(std::mem::size_of::<generated::Params>(), 48, "float, int, double[3], float*, uint2");
    assert_eq!(std::mem::align_of::<generated::Params>(), 8);
    assert_eq!(p.bias.len(), 3);
    assert_eq!(std::mem::size_of::<Limits>(), 16);
    // The user's type, with its own methods, is the one the launcher takes.
    assert_eq!(handwritten::Scale::twice().factor, 2.0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn generated_twins_are_passed_by_value() {
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let mut y = stream.alloc_zeros::<f32>(4).unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4, 1, 1), shared_mem_bytes: 0 };
    unsafe { generated::apply::launch(&stream, cfg, params(), &mut y).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [5.0; 4], "2 * (0.25 + 0.25 + 0.5) + (1 + 2)");
    unsafe { handwritten::scale::launch(&stream, cfg, handwritten::Scale::twice(), &mut y, 4).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [10.0; 4]);
    limits.write(&stream, &[Limits { lo: 0, hi: 7 }]).unwrap();
    unsafe { clamp::launch(&stream, cfg, &mut y, 4).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [7.0; 4]);
}

/// A host function with the kernel's name beside it (real code does this): the struct twin is
/// still generated.
mod host_function_same_name {
    cuda_embed::cuda_kernel!(
        r#"
        struct Coeffs { float* a; float* b; };
        __global__ void calc(Coeffs d, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) d.b[i] = 2.0f * d.a[i];
        }
        void calc() { Coeffs d; calc<<<1, 1>>>(d, 0); }
    "#
    );
}

#[test]
fn a_host_function_with_the_kernel_name_keeps_the_twin() {
    use host_function_same_name::Coeffs;
    let c = Coeffs { a: RawDevicePtr(1), b: RawDevicePtr(2) };
    assert_eq!(std::mem::size_of::<Coeffs>(), 16, "two device pointers");
    assert_eq!((c.a.0, c.b.0), (1, 2));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_twin_beside_a_same_name_host_function_is_passed_by_value() {
    use cuda_embed::cudarc::driver::{DevicePtr, DevicePtrMut};
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let a = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut b = stream.alloc_zeros::<f32>(4).unwrap();
    let (pa, _ga) = a.device_ptr(&stream);
    let (pb, _gb) = b.device_ptr_mut(&stream);
    let d = host_function_same_name::Coeffs { a: RawDevicePtr(pa), b: RawDevicePtr(pb) };
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4, 1, 1), shared_mem_bytes: 0 };
    unsafe { host_function_same_name::calc::launch(&stream, cfg, d, 4).unwrap() };
    drop((_ga, _gb));
    assert_eq!(stream.clone_dtoh(&b).unwrap(), [2.0, 4.0, 6.0, 8.0]);
}

/// A struct the macro can generate no twin for (a nested struct member): the user's own type of
/// the same name is the one the launcher takes, and the macro's stand-in (which stops the build
/// with an error naming the struct when there is no such type) stays out of the way.
mod written_where_no_twin_is_generated {
    use cuda_embed::DeviceSafe;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceSafe)]
    pub struct Inner {
        pub n: i32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, DeviceSafe)]
    pub struct Nested {
        pub scale: f32,
        pub inner: Inner,
    }

    cuda_embed::cuda_kernel!(
        r#"
        struct Inner { int n; };
        struct Nested { float scale; Inner inner; };
        extern "C" __global__ void nested(float* y, Nested p) {
            int i = threadIdx.x; if (i < p.inner.n) y[i] *= p.scale;
        }
    "#
    );
}

#[test]
fn the_users_type_is_taken_where_no_twin_is_generated() {
    use written_where_no_twin_is_generated::{nested, Inner, Nested};
    let p = Nested { scale: 3.0, inner: Inner { n: 4 } };
    assert_eq!(std::mem::size_of::<Nested>(), 8);
    // The launcher's by-value parameter is the user's `Nested` (a stand-in would not accept it).
    let _launch = |stream: &cuda_embed::CudaStream, y: &mut cuda_embed::CudaSlice<f32>| unsafe {
        nested::launch(stream, LaunchConfig::for_num_elems(4), y, p)
    };
    assert_eq!(p.inner.n, 4);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_user_written_struct_without_a_twin_is_passed_by_value() {
    use written_where_no_twin_is_generated::{nested, Inner, Nested};
    let ctx = cuda_embed::context(0).unwrap();
    let stream = ctx.default_stream();
    let mut y = stream.clone_htod(&[1.0f32; 4]).unwrap();
    let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (4, 1, 1), shared_mem_bytes: 0 };
    unsafe { nested::launch(&stream, cfg, &mut y, Nested { scale: 3.0, inner: Inner { n: 3 } }).unwrap() };
    assert_eq!(stream.clone_dtoh(&y).unwrap(), [3.0, 3.0, 3.0, 1.0]);
}

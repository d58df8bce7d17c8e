//! `__constant__` and `__device__` variables as typed `Global<T>` handles. GPU tests are
//! `#[ignore]`d (run them on a GPU machine).

use cuda_embed::{cuda_kernel, CudaContext, LaunchConfig};
use std::sync::Arc;

fn ctx() -> Arc<CudaContext> {
    cuda_embed::context(0).expect("these tests need a CUDA GPU")
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default, cuda_embed::DeviceSafe)]
pub struct Affine {
    scale: f32,
    shift: f32,
}
// SAFETY: two f32 fields: every bit pattern is valid (needed to read it back).
unsafe impl cuda_embed::AnyBitPattern for Affine {}

cuda_kernel!(
    r#"
    #define NCOEF 4
    struct Affine { float scale; float shift; };

    __constant__ float coeffs[NCOEF];          // polynomial coefficients, written from the host
    __constant__ Affine affine;                // a user struct
    namespace stats { __device__ unsigned long long calls; }
    __device__ int histogram[4][4];            // a 2-D array, read back flat
    __device__ float* scratch;                 // a device pointer held in a global

    extern "C" __global__ void poly(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i == 0) atomicAdd(&stats::calls, 1ull);
        if (i < n) {
            float v = x[i], acc = 0.f;
            for (int k = NCOEF - 1; k >= 0; --k) acc = acc * v + coeffs[k];
            y[i] = affine.scale * acc + affine.shift;
            atomicAdd(&histogram[i % 4][(i / 4) % 4], 1);
        }
    }

    extern "C" __global__ void through_scratch(int n) {
        int i = threadIdx.x;
        if (i < n) scratch[i] = 10.f * i;
    }
"#
);

#[test]
fn handles_know_their_names_and_sizes() {
    assert_eq!(coeffs.name(), "coeffs");
    assert_eq!(calls.name(), "stats::calls");
    // Without nvcc only literal extents are known before loading; `NCOEF` is a #define the
    // signature reader expands, so both paths know it.
    assert_eq!(coeffs.static_len(), Some(4));
    assert_eq!(histogram.static_len(), Some(16));
    assert_eq!(affine.static_len().unwrap_or(1), 1);
    let _: &cuda_embed::Global<f32> = &coeffs;
    let _: &cuda_embed::Global<Affine> = &affine;
    let _: &cuda_embed::Global<u64> = &calls;
    let _: &cuda_embed::Global<i32> = &histogram;
    let _: &cuda_embed::Global<cuda_embed::RawDevicePtr> = &scratch;
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn constant_coefficients_written_from_the_host_are_used() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    coeffs.write(&stream, &[1.0, 2.0, 0.5, 0.25]).unwrap();
    affine.set(&stream, Affine { scale: 2.0, shift: -1.0 }).unwrap();
    calls.set(&stream, 0).unwrap();
    histogram.write(&stream, &[0; 16]).unwrap();
    let n = 64usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 / 8.0).collect();
    let x = stream.clone_htod(&xs).unwrap();
    let mut y = stream.alloc_zeros::<f32>(n).unwrap();
    for _ in 0..3 {
        unsafe { poly::launch(&stream, LaunchConfig::for_num_elems(n as u32), &x, &mut y, n as i32).unwrap() };
    }
    let out = stream.clone_dtoh(&y).unwrap();
    for (i, &v) in xs.iter().enumerate() {
        let p = 1.0 + 2.0 * v + 0.5 * v * v + 0.25 * v * v * v;
        assert!((out[i] - (2.0 * p - 1.0)).abs() < 1e-4, "element {i}: {} vs {}", out[i], 2.0 * p - 1.0);
    }
    assert_eq!(coeffs.read(&stream).unwrap(), [1.0, 2.0, 0.5, 0.25]);
    assert_eq!(affine.get(&stream).unwrap(), Affine { scale: 2.0, shift: -1.0 });
    assert_eq!(calls.get(&stream).unwrap(), 3);
    // The `__device__` array read back: 3 launches x 64 threads spread over 16 cells.
    let h = histogram.read(&stream).unwrap();
    assert_eq!(h.len(), 16);
    assert_eq!(h.iter().sum::<i32>(), 3 * 64);
    assert!(h.iter().all(|&c| c == 12), "{h:?}");
    let mut part = [0i32; 2];
    histogram.read_into(&stream, 14, &mut part).unwrap();
    assert_eq!(part, [12, 12]);
    histogram.write_at(&stream, 15, &[100]).unwrap();
    assert_eq!(histogram.read(&stream).unwrap()[15], 100);
    // A device buffer's address stored in a `__device__` pointer.
    let buf = stream.alloc_zeros::<f32>(8).unwrap();
    scratch.set(&stream, cuda_embed::RawDevicePtr::of(&buf, &stream)).unwrap();
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (8, 1, 1), shared_mem_bytes: 0 };
    unsafe { through_scratch::launch(&stream, one, 8).unwrap() };
    assert_eq!(stream.clone_dtoh(&buf).unwrap(), (0..8).map(|i| 10.0 * i as f32).collect::<Vec<_>>());
    assert_ne!(coeffs.address(&ctx).unwrap(), cuda_embed::RawDevicePtr::NULL);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn wrong_lengths_and_ranges_are_errors() {
    let ctx = ctx();
    let stream = ctx.default_stream();
    let e = coeffs.write(&stream, &[1.0, 2.0]).unwrap_err().to_string();
    assert!(e.contains("2 values given for a variable of 4 elements") && e.contains("write_at"), "{e}");
    let e = coeffs.write_at(&stream, 3, &[1.0, 2.0]).unwrap_err().to_string();
    assert!(e.contains("elements 3..5 of a variable holding 4"), "{e}");
    let mut out = [0.0f32; 5];
    assert!(coeffs.read_into(&stream, 0, &mut out).is_err());
    assert_eq!(coeffs.len(&ctx).unwrap(), 4);
}

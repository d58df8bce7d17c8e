//! The CUTLASS GEMMs of `gemm_sm90.cu` as Rust functions: the kernels through `cuda_kernel!`
//! (`cutlass = true`, arch `90a`), their `Params` twin, the TMA descriptors encoded by the driver
//! and the launch (cluster, dynamic shared memory above 48 KiB, CUTLASS's persistent grid).
//! Shared by examples/cutlass_gemm.rs, tests/cutlass_gemm.rs and benches/cutlass_gemm.rs.

use cuda_embed::{cuda_kernel, DeviceSafe, LaunchConfig};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use half::bf16;
use std::sync::Arc;

/// Errors of the example: cuda-embed's, the driver's, cuBLAS's, or a message.
pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

#[path = "params.rs"]
#[allow(dead_code)] // `fields` and `L2_PROMOTION` are for tests/cutlass_params.rs
pub mod params;

/// CUTLASS's kernel `Params` as bytes (`sizeof` 1792, `alignof` 128).
#[repr(C, align(128))]
#[derive(Clone, Copy, DeviceSafe)]
pub struct GemmParams {
    bytes: [u8; params::PARAMS_BYTES],
}

/// The fused GEMM's `Params` (bias and GELU in the epilogue; same size and alignment).
#[repr(C, align(128))]
#[derive(Clone, Copy, DeviceSafe)]
pub struct GemmBiasGeluParams {
    bytes: [u8; params::PARAMS_BYTES],
}

// NDEBUG as CUTLASS's release builds: without it CuTe's device asserts are calls inside the wgmma
// pipeline, which ptxas then serializes ("Potential Performance Loss", C7510).
cuda_kernel!(
    file = "examples/cutlass/gemm_sm90.cu",
    archs = ["90a"],
    std = "c++17",
    defines = ["NDEBUG"],
    cutlass = true
);

/// One TMA descriptor, encoded by the driver.
fn encode(t: &params::TmaArgs) -> Result<[u8; 128]> {
    use cudarc::driver::sys;
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    let data_type = if t.data_type == 1 {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16
    } else {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    };
    let swizzle = if t.swizzle == 3 {
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
    } else {
        sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B
    };
    let ones = [1u32; 3];
    // SAFETY: every pointer is to a live local array of the rank's length (strides: rank - 1);
    // the driver only writes the 128-byte map.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            data_type,
            3,
            t.address as *mut std::ffi::c_void,
            t.dims.as_ptr(),
            t.strides.as_ptr(),
            t.boxes.as_ptr(),
            ones.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuTensorMapEncodeTiled failed for {t:?}: {r:?}").into());
    }
    // SAFETY: the driver initialized the map (and it was zeroed before); it is 128 plain bytes.
    Ok(unsafe { std::mem::transmute::<sys::CUtensorMap, [u8; 128]>(map.assume_init()) })
}

/// The scheduler's largest tile swizzle for the GEMMs that follow (see [`params::Problem::swizzle`]).
static SWIZZLE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

/// Sets the tile swizzle (1, 2, 4 or 8) of the GEMMs launched after it.
#[allow(dead_code)] // the bench sweeps it
pub fn set_swizzle(swizzle: u32) {
    SWIZZLE.store(swizzle, std::sync::atomic::Ordering::Relaxed);
}

/// The problem of `D = alpha * A @ B + beta * C` over these buffers: A m x k, B n x k, C and D
/// m x n, all row-major bf16, on `stream`'s GPU. An `Err` when a buffer is too short or CUTLASS
/// cannot take the shape.
#[allow(clippy::too_many_arguments)]
fn problem(
    stream: &Arc<CudaStream>,
    (m, n, k): (u32, u32, u32),
    alpha: f32,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    beta: f32,
    c: &CudaSlice<bf16>,
    d: &CudaSlice<bf16>,
) -> Result<params::Problem> {
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    for (name, buf, need) in [("a", a, mu * ku), ("b", b, nu * ku), ("c", c, mu * nu), ("d", d, mu * nu)] {
        if buf.len() < need {
            return Err(format!("cutlass gemm {m}x{n}x{k}: `{name}` holds {} elements, needs {need}", buf.len()).into());
        }
    }
    let sm_count =
        stream.context().attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?
            as u32;
    let addr = |s: &CudaSlice<bf16>| s.device_ptr(stream).0;
    let swizzle = SWIZZLE.load(std::sync::atomic::Ordering::Relaxed);
    let p = params::Problem { m, n, k, a: addr(a), b: addr(b), c: addr(c), d: addr(d), alpha, beta, sm_count, swizzle };
    if let Some(why) = p.unsupported() {
        return Err(format!("cutlass gemm: {why}").into());
    }
    Ok(p)
}

/// The four TMA descriptors of `p`.
fn descriptors(p: &params::Problem) -> Result<[[u8; 128]; 4]> {
    let [ta, tb, tc, td] = params::tma_args(p);
    Ok([encode(&ta)?, encode(&tb)?, encode(&tc)?, encode(&td)?])
}

/// The launch configuration of `p`: CUTLASS's persistent grid, 384 threads, 225 KiB of dynamic
/// shared memory.
fn config(p: &params::Problem) -> LaunchConfig {
    LaunchConfig {
        grid_dim: params::grid(p),
        block_dim: (params::THREADS, 1, 1),
        shared_mem_bytes: params::SHARED_BYTES,
    }
}

/// `D = alpha * A @ B + beta * C` (A m x k, B n x k, C and D m x n, all row-major bf16).
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    stream: &Arc<CudaStream>,
    mnk: (u32, u32, u32),
    alpha: f32,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    beta: f32,
    c: &CudaSlice<bf16>,
    d: &mut CudaSlice<bf16>,
) -> Result<()> {
    let p = problem(stream, mnk, alpha, a, b, beta, c, d)?;
    let params = GemmParams { bytes: params::params(&p, &descriptors(&p)?) };
    // Above 48 KiB of dynamic shared memory a kernel must opt in (once per context is enough;
    // the call is cheap and idempotent).
    cutlass_gemm_bf16::set_max_dynamic_shared_memory(stream.context(), params::SHARED_BYTES)?;
    // SAFETY: the Params hold descriptors of a, b, c and d, whose lengths were checked against
    // m, n, k; the kernel reads a, b, c and writes d, all alive until the stream passes it.
    unsafe { cutlass_gemm_bf16::launch_cluster(stream, config(&p), params::CLUSTER, params)? };
    Ok(())
}

/// `D = GELU(alpha * A @ B + beta * C + bias)` with `bias` one bf16 per column of D (n).
#[allow(clippy::too_many_arguments)]
pub fn gemm_bias_gelu(
    stream: &Arc<CudaStream>,
    mnk: (u32, u32, u32),
    alpha: f32,
    a: &CudaSlice<bf16>,
    b: &CudaSlice<bf16>,
    bias: &CudaSlice<bf16>,
    beta: f32,
    c: &CudaSlice<bf16>,
    d: &mut CudaSlice<bf16>,
) -> Result<()> {
    let p = problem(stream, mnk, alpha, a, b, beta, c, d)?;
    if bias.len() < mnk.1 as usize {
        return Err(format!("cutlass gemm: `bias` holds {} elements, needs n = {}", bias.len(), mnk.1).into());
    }
    let bias = bias.device_ptr(stream).0;
    let params = GemmBiasGeluParams { bytes: params::params_bias_gelu(&p, &descriptors(&p)?, bias) };
    cutlass_gemm_bias_gelu_bf16::set_max_dynamic_shared_memory(stream.context(), params::SHARED_BYTES)?;
    // SAFETY: as for `gemm`, and the bias holds n elements.
    unsafe { cutlass_gemm_bias_gelu_bf16::launch_cluster(stream, config(&p), params::CLUSTER, params)? };
    Ok(())
}

/// Deterministic values in [-1, 1], a few thousand distinct ones (exact in bf16 after rounding):
/// the inputs of the example and the test.
#[allow(dead_code)] // the bench draws its own
pub fn fill(len: usize, seed: u32) -> Vec<half::bf16> {
    (0..len)
        .map(|i| {
            let x = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed.wrapping_mul(40_503)) >> 16;
            half::bf16::from_f32((x % 2001) as f32 / 1000.0 - 1.0)
        })
        .collect()
}

/// tanh GELU, as CUTLASS's `GELU_taylor` and PyTorch's `approximate="tanh"`: the fused
/// epilogue's reference.
#[allow(dead_code)] // the bench checks no values
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
}

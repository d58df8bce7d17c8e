// The thin wrappers `cuda_kernel!` reads: one `extern "C" __global__` function per GEMM, taking
// CUTLASS's kernel-level `Params` by value as a `__grid_constant__` (its TMA descriptors must
// live in parameter space), with CUTLASS's block size; the dynamic shared memory is CUTLASS's
// `SharedStorageSize` (examples/cutlass/params.rs).
#include "gemm_sm90.cuh"

using GemmParams = gemm_sm90::Plain::Kernel::Params;
using GemmBiasGeluParams = gemm_sm90::BiasGelu::Kernel::Params;

extern "C" __global__ void __launch_bounds__(384, 1) cutlass_gemm_bf16(const __grid_constant__ GemmParams params) {
    extern __shared__ char smem[];
    gemm_sm90::Plain::Kernel op;
    op(params, smem);
}

extern "C" __global__ void __launch_bounds__(384, 1)
    cutlass_gemm_bias_gelu_bf16(const __grid_constant__ GemmBiasGeluParams params) {
    extern __shared__ char smem[];
    gemm_sm90::BiasGelu::Kernel op;
    op(params, smem);
}

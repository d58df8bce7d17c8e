// The thin wrapper `cuda_kernel!` reads: one `extern "C" __global__` function per GEMM, taking
// CUTLASS's kernel-level `Params` by value as a `__grid_constant__` (its TMA descriptors must
// live in parameter space), with CUTLASS's block size and the dynamic shared memory it asks for.
#include "gemm_sm90.cuh"

using GemmParams = gemm_sm90::Plain::Kernel::Params;

extern "C" __global__ void __launch_bounds__(384, 1) cutlass_gemm_bf16(const __grid_constant__ GemmParams params) {
    extern __shared__ char smem[];
    gemm_sm90::Plain::Kernel op;
    op(params, smem);
}

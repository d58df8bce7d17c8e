// Kernels defined in a user header (found through `include_dirs`): they get launchers as if
// they were written in the `.cu` file that includes it.
#pragma once
#include <cooperative_groups.h>  // a toolkit header: nothing in it becomes a launcher
#include "header_types.cuh"

#ifndef HEADER_FACTOR
#error "HEADER_FACTOR comes from the macro's defines"
#endif

extern "C" __global__ void header_scale(const real* x, real* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = HEADER_FACTOR * x[i];
}

namespace hdr {
__global__ void fill(real* y, Pair p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = p.a * i + p.b;
}
}  // namespace hdr

template <typename T>
__global__ void header_add(T* y, T v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += v;
}

// Declared here, defined in the `.cu` file: one kernel, cited where it is defined.
extern "C" __global__ void declared_in_header(real* y, int n);

// Declared here and defined in no file this module compiles: no launcher.
extern "C" __global__ void defined_elsewhere(real* y);

#if 0
extern "C" __global__ void never_compiled(real* y) {}
#endif

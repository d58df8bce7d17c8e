// A kernel file with a header next to it and one from an include directory.
#include "common.cuh"
#include <ops.cuh>

extern "C" __global__ void scale_shift(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = shift(SCALE * x[i]);
}

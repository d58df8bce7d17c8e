// A kernel kept in its own file; `activations.cuh` sits next to it.
#include "activations.cuh"

extern "C" __global__ void softplus(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = softplus_of(x[i] * BETA) / BETA;
}

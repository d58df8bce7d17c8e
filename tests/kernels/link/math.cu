#include "shared.cuh"

__device__ unsigned int calls;

__device__ float square(float x) { return x * x; }
__device__ float axpb(float a, float x, float b) { return a * x + b; }

// A kernel of a linked file: it gets a typed launcher like the module's own.
extern "C" __global__ void add_calls(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += (float)calls;
}

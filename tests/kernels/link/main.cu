// Calls a __device__ function and uses a __device__ variable defined in math.cu.
#include "shared.cuh"

extern __device__ unsigned int calls;

extern "C" __global__ void square_all(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = square(y[i]);
        atomicAdd(&calls, 1u);
    }
}

// A tight loop of cross-file calls (the bench's kernel).
extern "C" __global__ void poly_loop(const float* x, float* y, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i], acc = 0.f;
        for (int k = 0; k < iters; ++k) acc = axpb(acc, v, 0.5f);
        y[i] = acc;
    }
}

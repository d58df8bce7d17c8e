// The linked file of the link_* ui cases.
__device__ unsigned int calls;
__device__ float square(float x) { return x * x; }
extern "C" __global__ void bump(float* y) { y[threadIdx.x] += 1.f; }

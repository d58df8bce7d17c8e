// Kernels the async tests (tests/future.rs, tests/future_contexts.rs) launch and await.

extern "C" __global__ void fill(float* y, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}

// Spins for `cycles` clock cycles in thread 0 of each block, then writes `v` everywhere: long
// enough that a future is still pending when a test drops or forgets it.
extern "C" __global__ void slow_fill(float* y, float v, long long cycles, int n) {
    if (threadIdx.x == 0) {
        long long start = clock64();
        while (clock64() - start < cycles) { }
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}

// The bench's kernel with the __device__ function in the same file (the reference for LTO).
__device__ float axpb(float a, float x, float b) { return a * x + b; }

extern "C" __global__ void poly_loop(const float* x, float* y, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i], acc = 0.f;
        for (int k = 0; k < iters; ++k) acc = axpb(acc, v, 0.5f);
        y[i] = acc;
    }
}

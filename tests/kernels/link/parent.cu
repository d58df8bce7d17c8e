// A parent kernel that launches its child on the GPU (dynamic parallelism): the modules of
// tests/link.rs built without nvcc compile it with `rdc = true`.
__global__ void child(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.f;
}
extern "C" __global__ void parent(float* y, int n) {
    if (threadIdx.x == 0) child<<<(n + 255) / 256, 256>>>(y, n);
}

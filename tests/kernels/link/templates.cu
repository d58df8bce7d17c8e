#include "shared.cuh"

// A template kernel of a linked file: the module's `instances = [...]` lists its instances, which
// are instantiated in this file. It calls math.cu's `square` across files.
template <typename T, int K>
__global__ void scale_square(T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (T)(K * square((float)y[i]));
}

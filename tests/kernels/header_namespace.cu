// Headers included inside namespace and linkage blocks: what they define lives there, so the
// kernels, structs and globals of `ns_kernels.cuh` are `ops::affine`, `ops::Affine`, `ops::bias`.
namespace ops {
#include "lib/ns_kernels.cuh"
}
extern "C" {
#include "lib/c_kernels.cuh"
}

// The source's own kernel reads the header's globals by their qualified names.
__global__ void biased_copy(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + ops::bias + ops::table[i % 4];
}

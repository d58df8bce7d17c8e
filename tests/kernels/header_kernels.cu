// A `.cu` file whose kernels are mostly defined in the header it includes.
#include <lib/header_kernels.cuh>

extern "C" __global__ void declared_in_header(real* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = -y[i];
}

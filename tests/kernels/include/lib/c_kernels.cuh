// Included inside `extern "C" { }` by header_namespace.cu: its kernel has C linkage (symbol
// `c_fill`, not a mangled name).
#pragma once
__global__ void c_fill(float* y, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}

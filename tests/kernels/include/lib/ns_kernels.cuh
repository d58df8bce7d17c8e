// Included inside `namespace ops { }` by header_namespace.cu: its struct, globals and kernel are
// `ops::Affine`, `ops::bias`, `ops::table`, `ops::calls`, `ops::last` and `ops::affine`.
#pragma once
struct Affine {
    float scale;
    float shift;
};

__constant__ float bias;
__constant__ float table[4];
__device__ unsigned int calls;
__device__ Affine last;

__global__ void affine(float* y, Affine a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        atomicAdd(&calls, 1u);
        last = a;
    }
    if (i < n) y[i] = a.scale * y[i] + a.shift + bias;
}

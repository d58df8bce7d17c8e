#pragma once
// 64 values live at once: more than 64 registers a thread, so fewer than 1024 threads a block
// (the block limit then comes from the registers). One definition for the build paths
// tests/launch_control.rs compares.
__device__ __forceinline__ float heavy_sum(const float* y, int n) {
    float acc[64];
    #pragma unroll
    for (int j = 0; j < 64; j++) acc[j] = y[threadIdx.x + j * n];
    #pragma unroll
    for (int k = 0; k < 8; k++) {
        #pragma unroll
        for (int j = 0; j < 64; j++) acc[j] = acc[j] * acc[(j + k) % 64] + 1.0f;
    }
    float s = 0.0f;
    #pragma unroll
    for (int j = 0; j < 64; j++) s += acc[j];
    return s;
}

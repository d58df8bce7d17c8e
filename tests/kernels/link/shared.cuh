#pragma once
// Declarations of what math.cu defines.
__device__ float square(float x);
__device__ float axpb(float a, float x, float b);

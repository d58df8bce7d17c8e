#pragma once
__device__ inline float shift(float v) { return v + OFFSET; }

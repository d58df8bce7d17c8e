#pragma once
__device__ inline float softplus_of(float v) { return v > 20.f ? v : log1pf(expf(v)); }

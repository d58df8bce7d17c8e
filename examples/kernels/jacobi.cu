// Jacobi iteration for -Laplace(u) = f on the unit square, u = 0 on the boundary: an n x n grid of
// interior points, stored with its boundary ring as (n + 2) x (n + 2) floats, spacing h.
//
// One sweep: out = (sum of the 4 neighbours of in + h^2 f) / 4. Then out - in = h^2/4 * (f + the
// 5-point Laplacian of in): the change of a point is its residual scaled by h^2/4, so the largest
// change of a sweep measures the residual. Each warp adds its largest change to *change with one
// atomicMax on the float's bits (non-negative floats order like their bits as unsigned ints).
extern "C" __global__ void jacobi_sweep(const float* in, const float* f, float* out, unsigned int* change, int n,
                                        float h2) {
    int x = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int y = blockIdx.y * blockDim.y + threadIdx.y + 1;
    float d = 0.0f;
    if (x <= n && y <= n) {
        int w = n + 2;
        int i = y * w + x;
        float v = 0.25f * (in[i - 1] + in[i + 1] + in[i - w] + in[i + w] + h2 * f[i]);
        out[i] = v;
        d = fabsf(v - in[i]);
    }
    for (int o = 16; o > 0; o >>= 1) d = fmaxf(d, __shfl_xor_sync(0xffffffffu, d, o));
    if (((threadIdx.y * blockDim.x + threadIdx.x) & 31) == 0) atomicMax(change, __float_as_uint(d));
}

// After the sweeps of one iteration: counts it, and keeps the loop going while the residual
// (the largest change, scaled back by 4 / h^2) is at least `tol` and fewer than `max_iterations`
// iterations ran.
extern "C" __global__ void jacobi_check(const unsigned int* change, int* iterations, float tol, float h2,
                                        int max_iterations, cudaGraphConditionalHandle more) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        int it = ++*iterations;
        float residual = __uint_as_float(*change) * 4.0f / h2;
        cudaGraphSetConditional(more, (residual >= tol && it < max_iterations) ? 1u : 0u);
    }
}

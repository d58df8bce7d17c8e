#ifndef CUDA_EMBED_REDUCE_HELPERS
#define CUDA_EMBED_REDUCE_HELPERS
// NVRTC has no <math.h>: the constants identities are usually written with.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
namespace cuda_embed_reduce {
template <int B> struct raw_vec { typedef unsigned char type; };
template <> struct raw_vec<2> { typedef unsigned short type; };
template <> struct raw_vec<4> { typedef unsigned int type; };
template <> struct raw_vec<8> { typedef uint2 type; };
template <> struct raw_vec<16> { typedef uint4 type; };
__host__ __device__ constexpr int max_size(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int vec_width(int m) { return (m > 0 && m <= 16 && 16 % m == 0) ? 16 / m : 1; }
// Streaming read-only loads: through the non-coherent path, not kept in L1 (every element is read
// once), with a 256-byte L2 prefetch (the reductions read whole arrays, so the neighbours are read
// next). Plain __ldg before sm_80, which has no such hints.
__device__ __forceinline__ void ld_stream(uint4& w, const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w) : "l"(p));
#else
    w = __ldg(reinterpret_cast<const uint4*>(p));
#endif
}
__device__ __forceinline__ void ld_stream(uint2& w, const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(w.x), "=r"(w.y) : "l"(p));
#else
    w = __ldg(reinterpret_cast<const uint2*>(p));
#endif
}
__device__ __forceinline__ void ld_stream(unsigned int& w, const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(w) : "l"(p));
#else
    w = __ldg(reinterpret_cast<const unsigned int*>(p));
#endif
}
__device__ __forceinline__ void ld_stream(unsigned short& w, const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("ld.global.nc.L1::no_allocate.L2::256B.u16 %0, [%1];" : "=h"(w) : "l"(p));
#else
    w = __ldg(reinterpret_cast<const unsigned short*>(p));
#endif
}
__device__ __forceinline__ void ld_stream(unsigned char& w, const void* p) { w = __ldg(reinterpret_cast<const unsigned char*>(p)); }
// V consecutive elements from p: one load of V * sizeof(T) bytes when `VEC`, else V loads.
template <bool VEC, int V, typename T>
__device__ __forceinline__ void load(const T* __restrict__ p, T (&out)[V]) {
    constexpr int B = V * (int)sizeof(T);
    if (VEC && (B == 2 || B == 4 || B == 8 || B == 16)) {
        typename raw_vec<B>::type w;
        ld_stream(w, p);
        memcpy(&out[0], &w, B);
    } else {
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = p[k];
    }
}
// Any trivially copyable value through warp shuffles, 32 bits at a time.
template <typename R>
__device__ __forceinline__ R shfl_down(const R& v, int d, int width) {
    constexpr int W = ((int)sizeof(R) + 3) / 4;
    unsigned int w[W];
    memcpy(&w[0], &v, sizeof(R));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_down_sync(0xffffffffu, w[k], d, width);
    R out;
    memcpy(&out, &w[0], sizeof(R));
    return out;
}
// A partial written by another block in this launch: read from L2, never a stale L1 line.
template <typename R>
__device__ __forceinline__ R load_partial(const R* p) {
    R out;
    if (sizeof(R) % 4 == 0) {
        unsigned int w[sizeof(R) / 4 + 1];
        for (int k = 0; k < (int)(sizeof(R) / 4); ++k) w[k] = __ldcg(reinterpret_cast<const unsigned int*>(p) + k);
        memcpy(&out, &w[0], sizeof(R));
    } else if (sizeof(R) % 2 == 0) {
        unsigned short w[sizeof(R) / 2 + 1];
        for (int k = 0; k < (int)(sizeof(R) / 2); ++k) w[k] = __ldcg(reinterpret_cast<const unsigned short*>(p) + k);
        memcpy(&out, &w[0], sizeof(R));
    } else {
        unsigned char w[sizeof(R) + 1];
        for (int k = 0; k < (int)sizeof(R); ++k) w[k] = __ldcg(reinterpret_cast<const unsigned char*>(p) + k);
        memcpy(&out, &w[0], sizeof(R));
    }
    return out;
}
// Block-wide combination in a fixed order (lanes, then warps); the result is valid in thread 0.
template <typename O, typename R>
__device__ __forceinline__ R block_reduce(R v, R* warp_vals) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v = O::reduce(v, shfl_down(v, d, 32));
    if (lane == 0) warp_vals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? warp_vals[lane] : O::identity();
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) v = O::reduce(v, shfl_down(v, d, 32));
    }
    __syncthreads();
    return v;
}
// The columns kernel's combination over threadIdx.y: a fixed tree over the block's tile, each
// thread's V values at `slot`; the result is in the slots of the threads with threadIdx.y == 0.
template <typename O, int V, typename R>
__device__ __forceinline__ void column_tree(R* tile, int slot) {
    __syncthreads();
    for (int s = blockDim.y / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.y < s)
#pragma unroll
            for (int k = 0; k < V; ++k)
                tile[slot + k] = O::reduce(tile[slot + k], tile[slot + s * blockDim.x * V + k]);
        __syncthreads();
    }
}
// The last of `parts` blocks to arrive at `counter` (after each wrote its partial) gets true.
// Thread 0 counts; every thread of the block gets the answer.
__device__ __forceinline__ bool arrive_last(unsigned int* counter, unsigned int parts, int* is_last) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) *is_last = atomicAdd(counter, 1u) == parts - 1;
    __syncthreads();
    if (*is_last) __threadfence();
    return *is_last;
}
} // namespace cuda_embed_reduce
#endif

"""Exploration sweep for the row reductions of `reduction_kernel!` (not part of the bench suite).

Sum of squares over float32 rows, hand-written variants of the row kernels (block per row with a
persistent grid, a group of G lanes per row with RB rows in flight per group, several load
flavours), each checked against a float64 reference and timed with CUDA events next to CuPy's
ReductionKernel axis=1, a pure read kernel and a device-to-device copy in the same process.
Run on the GPU machine: `python3 benches/reduction_sweep.py` (CuPy 14 compiles the variants with
NVRTC). The winner goes into `source/src/reduction*.rs`.
"""
import sys
import cupy as cp

from reduction_cupy import median_ms  # the same timing as the bench table

SRC = r"""
template <int HINT> __device__ __forceinline__ float4 ld4(const float* p) {
    float4 v;
    if (HINT == 0) {
        v = __ldg(reinterpret_cast<const float4*>(p));
    } else if (HINT == 1) {
        asm("ld.global.nc.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    } else if (HINT == 2) {
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    } else if (HINT == 3) {
        asm("ld.global.nc.L2::128B.v4.f32 {%0,%1,%2,%3}, [%4];"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    } else {
        asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_first.b64 pol, 1.0;\n"
            " ld.global.nc.L1::no_allocate.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], pol;\n}"
            : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    }
    return v;
}
__device__ __forceinline__ float ssq4(float acc, float4 v) {
    acc = acc + v.x * v.x; acc = acc + v.y * v.y; acc = acc + v.z * v.z; acc = acc + v.w * v.w;
    return acc;
}
__device__ __forceinline__ float block_sum(float v, float* wv) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if (lane == 0) wv[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? wv[lane] : 0.f;
        for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    }
    __syncthreads();
    return v;
}
// A block (256 threads) per row, grid-stride over rows; U float4 loads in flight per thread.
template <int U, int HINT>
__global__ void __launch_bounds__(256, 4) seg(const float* __restrict__ x, float* __restrict__ y, long long rows, long long n) {
    __shared__ float wv[32];
    const long long groups = n / 4;
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const float* base = x + row * n;
        float acc = 0.f;
        long long g = threadIdx.x;
        for (; g + (U - 1) * 256 < groups; g += U * 256) {
            float4 v[U];
#pragma unroll
            for (int u = 0; u < U; ++u) v[u] = ld4<HINT>(base + (g + u * 256) * 4);
#pragma unroll
            for (int u = 0; u < U; ++u) acc = ssq4(acc, v[u]);
        }
        for (; g < groups; g += 256) acc = ssq4(acc, ld4<HINT>(base + g * 4));
        acc = block_sum(acc, wv);
        if (threadIdx.x == 0) y[row] = acc;
    }
}
// G lanes per row (a power of two up to 32); each group takes RB rows at once (RB accumulators),
// U float4 loads per row in flight; grid-stride over row batches. CONTIG: a group's RB rows are
// consecutive (else spaced by the number of groups in the grid).
template <int G, int U, int RB, int CONTIG, int HINT>
__global__ void __launch_bounds__(256, 4) grp(const float* __restrict__ x, float* __restrict__ y, long long rows, long long n) {
    const int lane = threadIdx.x % G;
    const long long gid = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / G;
    const long long ngr = (long long)gridDim.x * blockDim.x / G;
    const long long groups = n / 4;
    for (long long b = gid; __any_sync(0xffffffffu, (CONTIG ? b * RB : (b / ngr) * ngr * RB + b % ngr) < rows); b += ngr) {
        float acc[RB];
        long long row[RB];
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            acc[r] = 0.f;
            row[r] = CONTIG ? b * RB + r : (b / ngr) * ngr * RB + r * ngr + (b % ngr);
        }
        long long g = lane;
        for (; g + (U - 1) * G < groups; g += U * G) {
            float4 v[RB][U];
#pragma unroll
            for (int r = 0; r < RB; ++r)
#pragma unroll
                for (int u = 0; u < U; ++u)
                    v[r][u] = row[r] < rows ? ld4<HINT>(x + row[r] * n + (g + u * G) * 4) : make_float4(0, 0, 0, 0);
#pragma unroll
            for (int r = 0; r < RB; ++r)
#pragma unroll
                for (int u = 0; u < U; ++u) acc[r] = ssq4(acc[r], v[r][u]);
        }
        for (; g < groups; g += G)
#pragma unroll
            for (int r = 0; r < RB; ++r)
                if (row[r] < rows) acc[r] = ssq4(acc[r], ld4<HINT>(x + row[r] * n + g * 4));
#pragma unroll
        for (int r = 0; r < RB; ++r) {
#pragma unroll
            for (int d = G / 2; d > 0; d >>= 1) acc[r] += __shfl_down_sync(0xffffffffu, acc[r], d, G);
            if (lane == 0 && row[r] < rows) y[row[r]] = acc[r];
        }
    }
}
// Pure read: every thread xors U float4 per iteration (the read ceiling).
template <int HINT>
__global__ void __launch_bounds__(256) readall(const float* __restrict__ x, float* __restrict__ y, long long n) {
    unsigned int acc = 0;
    const long long groups = n / 4, stride = (long long)gridDim.x * blockDim.x;
    long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; g + 3 * stride < groups; g += 4 * stride) {
        float4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) v[u] = ld4<HINT>(x + (g + u * stride) * 4);
#pragma unroll
        for (int u = 0; u < 4; ++u) acc ^= __float_as_uint(v[u].x) ^ __float_as_uint(v[u].y) ^ __float_as_uint(v[u].z) ^ __float_as_uint(v[u].w);
    }
    for (; g < groups; g += stride) { float4 v = ld4<HINT>(x + g * 4); acc ^= __float_as_uint(v.x) ^ __float_as_uint(v.w); }
    if (acc == 0x12345678u) y[0] = 1.f;
}
"""


def main():
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    n = 1 << 28
    x = (cp.arange(n, dtype=cp.uint64) * 2654435761 >> 7) % 1000
    x = x.astype(cp.float32) * 1e-3
    copy = cp.empty_like(x)
    copy_gbs = 2 * x.nbytes / median_ms(lambda: copy.data.copy_from_device(x.data, x.nbytes)) / 1e6
    del copy
    print(f"device: {props['name'].decode()}, {sms} SMs")
    print(f"device-to-device copy: {copy_gbs:.0f} GB/s (read + write)")
    names = []
    seg_v = [(u, h) for u in (4, 8) for h in (0, 1, 2, 3, 4)]
    names += [f"seg<{u},{h}>" for u, h in seg_v]
    grp_v = [(32, u, 1, 1, h) for u in (4, 8) for h in (0, 2)]
    grp_v += [(g, 1, rb, c, h) for g in (4, 8) for rb in (1, 2, 4, 8) for c in (0, 1) for h in (0, 2)]
    names += [f"grp<{g},{u},{rb},{c},{h}>" for g, u, rb, c, h in grp_v]
    names += [f"readall<{h}>" for h in (0, 1, 2, 3, 4)]
    mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
    dummy = cp.zeros(1, cp.float32)
    print(f"{'case':<44} {'ms':>9} {'GB/s':>7} {'xcopy':>6} {'err':>8}")

    def row(name, ms, b, err=0.0):
        gbs = b / ms / 1e6
        print(f"{name:<44} {ms:>9.4f} {gbs:>7.0f} {gbs / copy_gbs:>6.3f} {err:>8.1e}", flush=True)

    for h in range(5):
        try:
            k = mod.get_function(f"readall<{h}>")
            ms = median_ms(lambda: k((sms * 8,), (256,), (x, dummy, cp.int64(n))))
            row(f"read-only xor, hint {h}", ms, x.nbytes)
        except Exception as e:  # a hint the toolchain rejects
            print(f"readall<{h}> failed: {e}")
    ssq = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "ssq")
    row("cupy RK full", median_ms(lambda: ssq(x)), x.nbytes)
    row("cupy.sum full", median_ms(lambda: cp.sum(x)), x.nbytes)
    for rows, cols in [(65536, 4096), (4096, 65536), (1 << 20, 32)]:
        m = x[: rows * cols].reshape(rows, cols)
        ref = (m.astype(cp.float64) ** 2).sum(axis=1)
        y = cp.empty(rows, cp.float32)
        print(f"-- rows {rows}x{cols}")
        row(f"cupy RK axis=1 {rows}x{cols}", median_ms(lambda: ssq(m, axis=1)), m.nbytes)

        def try_kernel(label, name, grid):
            try:
                k = mod.get_function(name)
                y.fill(cp.nan)
                k((grid,), (256,), (m, y, cp.int64(rows), cp.int64(cols)))
                err = float(cp.abs(y - ref).max() / cp.abs(ref).max())
                ms = median_ms(lambda: k((grid,), (256,), (m, y, cp.int64(rows), cp.int64(cols))))
                row(label, ms, m.nbytes, err)
            except Exception as e:
                print(f"{label} failed: {e}")

        if cols >= 1024:
            for u, h in seg_v:
                for gmul in (8, 16):
                    grid = min(rows, sms * gmul)
                    try_kernel(f"seg<U{u},h{h}> grid {grid}", f"seg<{u},{h}>", grid)
                try_kernel(f"seg<U{u},h{h}> grid=rows", f"seg<{u},{h}>", rows)
            for g, u, rb, c, h in grp_v:
                if g == 32:
                    try_kernel(f"warp/row U{u} h{h} grid=rows/8", f"grp<{g},{u},{rb},{c},{h}>", rows // 8)
                    try_kernel(f"warp/row U{u} h{h} grid {sms * 8}", f"grp<{g},{u},{rb},{c},{h}>", sms * 8)
        else:
            for g, u, rb, c, h in grp_v:
                if g == 32:
                    continue
                per_block = 256 // g * rb
                for grid in (min(sms * 8, -(-rows // per_block)), min(sms * 32, -(-rows // per_block)), -(-rows // per_block)):
                    try_kernel(f"G{g} RB{rb} contig{c} h{h} grid {grid}", f"grp<{g},{u},{rb},{c},{h}>", grid)
    sys.stdout.flush()


main()

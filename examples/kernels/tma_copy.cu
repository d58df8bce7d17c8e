// Copies through Hopper's tensor memory accelerator (sm_90): `cp.async.bulk.tensor` moves a whole
// box between global and shared memory, described by a CUtensorMap that the launcher passes by
// value (`const __grid_constant__`, so the TMA reads it in parameter memory). Completion of a
// load is tracked by an mbarrier (transaction bytes), of a store by a bulk group.
//
// `tma_copy_boxes`: one box per block, any rank 1..5 (the test's kernel).
// `tma_copy_2d`: a pipelined 2-D copy, STAGES boxes in flight per block (the bench's kernel).
#include <cuda.h>
#include <stdint.h>

#ifndef STAGES
#define STAGES 4
#endif

__device__ __forceinline__ unsigned smem(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ unsigned char* align128(unsigned char* p) {
    return (unsigned char*)(((uintptr_t)p + 127) & ~(uintptr_t)127);
}

__device__ __forceinline__ void barrier_init(uint64_t* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(bar)) : "memory");
}

// Makes the initialised barriers visible to the async proxy (the TMA unit).
__device__ __forceinline__ void barrier_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void barrier_expect(uint64_t* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void barrier_wait(uint64_t* bar, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(smem(bar)), "r"(parity)
            : "memory");
    }
}

// Global -> shared: box at coordinates c (innermost first) of `map` into `dst`.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, uint64_t* bar, int rank, const int* c) {
    unsigned d = smem(dst), b = smem(bar);
    uint64_t m = reinterpret_cast<uint64_t>(map);
    switch (rank) {
    case 1:
        asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
                     ::"r"(d), "l"(m), "r"(b), "r"(c[0]) : "memory");
        break;
    case 2:
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                     ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]) : "memory");
        break;
    case 3:
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                     ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
        break;
    case 4:
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
                     ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
        break;
    default:
        asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
                     ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
        break;
    }
}

// Shared -> global: `src` to the box at coordinates c of `map` (elements outside the tensor are
// not written), as one bulk group.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, const void* src, int rank, const int* c) {
    unsigned s = smem(src);
    uint64_t m = reinterpret_cast<uint64_t>(map);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    switch (rank) {
    case 1:
        asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];"
                     ::"l"(m), "r"(s), "r"(c[0]) : "memory");
        break;
    case 2:
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                     ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]) : "memory");
        break;
    case 3:
        asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];"
                     ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
        break;
    case 4:
        asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
                     ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
        break;
    default:
        asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
                     ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
        break;
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most N bulk groups still read their shared memory.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// One box per block. geom[0..rank): boxes along each dimension (innermost first);
// geom[5..5+rank): the box extents. Dynamic shared memory: box_bytes + 128.
extern "C" __global__ void tma_copy_boxes(const __grid_constant__ CUtensorMap src,
                                          const __grid_constant__ CUtensorMap dst, int rank, const int* geom,
                                          unsigned box_bytes) {
    extern __shared__ unsigned char raw[];
    __shared__ uint64_t bar;
    unsigned char* tile = align128(raw);
    if (threadIdx.x != 0) return;
    int c[5] = {0, 0, 0, 0, 0};
    unsigned idx = blockIdx.x;
    for (int d = 0; d < rank; ++d) {
        unsigned n = (unsigned)geom[d];
        c[d] = (int)(idx % n) * geom[5 + d];
        idx /= n;
    }
    barrier_init(&bar);
    barrier_init_fence();
    barrier_expect(&bar, box_bytes);
    tma_load(tile, &src, &bar, rank, c);
    barrier_wait(&bar, 0);
    tma_store(&dst, tile, rank, c);
    tma_store_wait_read<0>();
}

// A 2-D copy: box b (of boxes_x per row of boxes, boxes in all) at (x, y) = ((b % boxes_x) * box_w,
// (b / boxes_x) * box_h). Each block takes boxes blockIdx.x, + gridDim.x, ... and keeps STAGES of
// them in flight: the load of box k + STAGES is issued once the store of box k has read its tile.
// Dynamic shared memory: STAGES * box_bytes + 128. One thread issues everything.
extern "C" __global__ void tma_copy_2d(const __grid_constant__ CUtensorMap src, const __grid_constant__ CUtensorMap dst,
                                       int boxes_x, int boxes, int box_w, int box_h, unsigned box_bytes) {
    extern __shared__ unsigned char raw[];
    __shared__ uint64_t bars[STAGES];
    unsigned char* tiles = align128(raw);
    if (threadIdx.x != 0) return;
    const int first = blockIdx.x, step = gridDim.x;
    for (int s = 0; s < STAGES; ++s) barrier_init(&bars[s]);
    barrier_init_fence();
    int c[2];
    for (int s = 0; s < STAGES; ++s) {
        int b = first + s * step;
        if (b < boxes) {
            c[0] = (b % boxes_x) * box_w;
            c[1] = (b / boxes_x) * box_h;
            barrier_expect(&bars[s], box_bytes);
            tma_load(tiles + s * box_bytes, &src, &bars[s], 2, c);
        }
    }
    int k = 0;
    for (int b = first; b < boxes; b += step, ++k) {
        const int s = k % STAGES;
        barrier_wait(&bars[s], (k / STAGES) & 1);
        c[0] = (b % boxes_x) * box_w;
        c[1] = (b / boxes_x) * box_h;
        tma_store(&dst, tiles + s * box_bytes, 2, c);
        // Refill the stage of box k - 1 once its store (the group before this one) has read it.
        const int next = b - step + STAGES * step;
        if (k >= 1 && next < boxes) {
            const int ps = (k - 1) % STAGES;
            tma_store_wait_read<1>();
            c[0] = (next % boxes_x) * box_w;
            c[1] = (next / boxes_x) * box_h;
            barrier_expect(&bars[ps], box_bytes);
            tma_load(tiles + ps * box_bytes, &src, &bars[ps], 2, c);
        }
    }
    tma_store_wait_read<0>();
}

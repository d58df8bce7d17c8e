// The reference of tests/cutlass_params.rs (which builds and runs it): CUTLASS's own host code (to_underlying_arguments,
// get_grid_shape) for the `Plain` and `BiasGelu` GEMMs of examples/cutlass/gemm_sm90.cuh at a few shapes, with
// cuTensorMapEncodeTiled replaced by a stand-in that prints its arguments. Bytes that differ
// between two runs over differently dirtied stacks (padding) or that the stand-in wrote
// (descriptors) print as `..`. Needs no GPU; the test does, by hand:
//
//   nvcc -O0 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -I$CUDA_EMBED_CUTLASS_DIR \
//        tests/cutlass/harness.cu -o /tmp/harness && /tmp/harness
#define CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL 1
#include <cuda.h>
#include <cstdio>
#include <cstring>
#include <cstdint>
extern "C" CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dt, cuuint32_t rank, void* addr,
    const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* es,
    CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  printf("encode dt=%d rank=%u addr=%p dims=", (int)dt, rank, addr);
  for (unsigned i = 0; i < rank; i++) printf("%llu,", (unsigned long long)dims[i]);
  printf(" strides="); for (unsigned i = 0; i + 1 < rank; i++) printf("%llu,", (unsigned long long)strides[i]);
  printf(" box="); for (unsigned i = 0; i < rank; i++) printf("%u,", box[i]);
  printf(" es="); for (unsigned i = 0; i < rank; i++) printf("%u,", es[i]);
  printf(" il=%d sw=%d l2=%d oob=%d\n", (int)il, (int)sw, (int)l2, (int)oob);
  memset(map, 0xEE, sizeof(*map));
  return CUDA_SUCCESS;
}
#include "../../examples/cutlass/gemm_sm90.cuh"

using namespace gemm_sm90;
template <class GK>
__attribute__((noinline)) void compute(unsigned char* out, int M, int N, int K_, float alpha, float beta, int sms, int swizzle) {
  using P = typename GK::Params;
  typename GK::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {M, N, K_, 1},
    {(T*)0x7000000000, typename GK::StrideA{(int64_t)K_, cute::_1{}, (int64_t)M*K_},
     (T*)0x7100000000, typename GK::StrideB{(int64_t)K_, cute::_1{}, (int64_t)N*K_}},
    {{alpha, beta}, (T*)0x7200000000, typename GK::StrideC{(int64_t)N, cute::_1{}, (int64_t)M*N},
     (T*)0x7300000000, typename GK::StrideD{(int64_t)N, cute::_1{}, (int64_t)M*N}}};
  args.hw_info.sm_count = sms;
  args.scheduler.max_swizzle_size = swizzle;
  if constexpr (!std::is_same_v<GK, Plain::Kernel>) {
    args.epilogue.thread.bias_ptr = (T*)0x7400000000;
  }
  P p = GK::to_underlying_arguments(args, nullptr);
  memcpy(out, &p, sizeof(P));
  dim3 g = GK::get_grid_shape(p);
  printf("grid %u %u %u\n", g.x, g.y, g.z);
}
__attribute__((noinline)) void dirty(unsigned char v) { volatile unsigned char junk[1 << 16]; for (int i = 0; i < (1 << 16); i++) junk[i] = v; }
template <class GK> void run(const char* name) {
  using P = typename GK::Params;
  printf("params %s %zu %zu smem %d threads %d\n", name, sizeof(P), alignof(P), (int)GK::SharedStorageSize, (int)GK::MaxThreadsPerBlock);
  int shapes[][5] = {{4096, 1024, 512, 132, 1}, {8192, 8192, 8192, 132, 1}, {1000, 1496, 3000, 132, 1},
                     {8192, 1024, 8192, 120, 1}, {8192, 8192, 8192, 132, 8}, {4096, 14336, 4096, 132, 4},
                     {1000, 1496, 3000, 132, 2}, {384, 8192, 1024, 132, 8}};
  for (auto& s : shapes) {
    static unsigned char a[sizeof(P)], b[sizeof(P)];
    printf("shape %d %d %d %d 1.5 0.25 %d\n", s[0], s[1], s[2], s[3], s[4]);
    dirty(0x00); compute<GK>(a, s[0], s[1], s[2], 1.5f, 0.25f, s[3], s[4]);
    dirty(0xAB); compute<GK>(b, s[0], s[1], s[2], 1.5f, 0.25f, s[3], s[4]);
    printf("bytes ");
    for (size_t i = 0; i < sizeof(P); i++) { if (a[i] == b[i] && a[i] != 0xEE) printf("%02x", a[i]); else printf(".."); }
    printf("\n");
  }
}
int main() {
  run<Plain::Kernel>("plain");
  run<BiasGelu::Kernel>("bias_gelu");
}

// A bf16 Hopper GEMM on CUTLASS 3.x's sm90 collectives: TMA loads, wgmma, warp-specialized
// cooperative persistent kernel, TMA epilogue. D = alpha * A @ B + beta * C with A row-major
// (M x K), B column-major (K x N, i.e. an N x K row-major weight as in x @ W^T), C and D row-major.
// `Plain` is the linear combination, `BiasGelu` fuses a bias per column and GELU into the epilogue.
//
// Included by examples/cutlass_gemm.rs through `cuda_kernel!(file = ..., cutlass = true)`; the
// layout of `Plain::Kernel::Params` that examples/cutlass/params.rs fills is pinned by
// tests/cutlass_params.rs against CUTLASS's own host code (tests/cutlass/harness.cu, run at test time).
#pragma once
#include <cutlass/cutlass.h>
#include <cute/tensor.hpp>
#include <cutlass/numeric_types.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

namespace gemm_sm90 {
using namespace cute;
using T = cutlass::bfloat16_t;
using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;

template <class Fusion>
struct Gemm {
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      T, cutlass::layout::RowMajor, 8, T, cutlass::layout::RowMajor, 8,
      cutlass::epilogue::TmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      T, cutlass::layout::RowMajor, 8, T, cutlass::layout::ColumnMajor, 8, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
};
using Plain = Gemm<cutlass::epilogue::fusion::LinearCombination<T, float, T, float>>;
// D = GELU(alpha * acc + beta * C + bias[n]) (tanh GELU, as PyTorch's approximate="tanh").
using BiasGelu = Gemm<cutlass::epilogue::fusion::LinCombPerColBiasEltAct<
    cutlass::epilogue::thread::GELU_taylor, T, float, T, T, float>>;
}

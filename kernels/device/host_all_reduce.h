// The CPU launch of the kernel templates (kernels/device/all_reduce_kernels.h compiled as host C++) for one
// value of threads per block; kernels/device/host_kernels_t<N>.cpp instantiate it for each value in
// kHostThreadsPerBlock, so the instantiations compile in parallel.
#pragma once

#include "kernels/all_reduce.h"
#include "kernels/device/all_reduce_kernels.h"
#include "kernels/device/low_precision_kernels.h"

namespace arfit::kernels::device {

// Calls f(T{}) with T the host element type of `dtype`.
template <typename F>
void with_host_element(DType dtype, const F& f) {
  switch (dtype) {
    case DType::BF16: f(bf16_t{}); break;
    case DType::FP16: f(fp16_t{}); break;
    case DType::FP32: f(float{}); break;
  }
}

template <int kThreads>
void launch_all_reduce_on_host(AllReduceAlgorithm algorithm, DType dtype, FusionOp fusion, const TeamPointers& team,
                               const AllReduceLaunch& args, const host::LaunchOptions& options) {
  const int grid = team.blocks_per_rank * team.local_ranks;
  auto with_algorithm = [&](auto chosen) {
    // std::decay_t: GCC names a generic lambda's by-reference-captured parameter as a reference type inside an
    // if constexpr of a nested lambda.
    using Chosen = std::decay_t<decltype(chosen)>;
    with_host_element(dtype, [&](auto element) {
      using Element = std::decay_t<decltype(element)>;
      dispatch_ranks_and_fusion(team.nranks, fusion, [&](auto ranks, auto op) {
        using Ranks = std::decay_t<decltype(ranks)>;
        using Op = std::decay_t<decltype(op)>;
        if constexpr (kHasAllReduceKernel<Chosen::value, Op::value>) {
          const auto kernel = all_reduce_kernel<Chosen::value, Element, Ranks::value, Op::value, kThreads>();
          host::launch(grid, kThreads, options, [&] { kernel(team, args); });
        }
      });
    });
  };
  if (algorithm == AllReduceAlgorithm::LowPrecision) {  // no fusion to dispatch (validated NONE)
    with_host_element(dtype, [&](auto element) {
      dispatch_ranks(team.nranks, [&](auto ranks) {
        const auto kernel = &low_precision_all_reduce_kernel<decltype(element), decltype(ranks)::value, kThreads>;
        host::launch(grid, kThreads, options, [&] { kernel(team, args); });
      });
    });
  } else {
    dispatch_algorithm(algorithm, with_algorithm);  // ONESHOT, TWOSHOT, MULTIMEM_ONESHOT, MULTIMEM_TWOSHOT
  }
}

template <int kThreads>
void launch_residual_rms_norm_on_host(DType dtype, FusionOp fusion, const void* reduced, const AllReduceBuffers& b,
                                      std::int64_t rows, std::int64_t hidden, float eps, float quant_scale) {
  with_host_element(dtype, [&](auto element) {
    using T = decltype(element);
    dispatch_fusion(fusion, [&](auto op) {
      host::launch(1, kThreads, {}, [&] {
        residual_rms_norm_kernel<T, decltype(op)::value, kThreads>(
            static_cast<const T*>(reduced), static_cast<const T*>(b.residual_in), static_cast<T*>(b.residual_out),
            static_cast<const T*>(b.gamma), static_cast<T*>(b.output), static_cast<std::uint8_t*>(b.fp8_out),
            static_cast<std::uint8_t*>(b.scale_out), rows, hidden, eps, quant_scale);
      });
    });
  });
}

}  // namespace arfit::kernels::device

// Explicit instantiations, one translation unit per value of threads per block.
#define ARFIT_INSTANTIATE_HOST_KERNELS(threads)                                                                      \
  namespace arfit::kernels::device {                                                                                 \
  template void launch_all_reduce_on_host<threads>(AllReduceAlgorithm, DType, FusionOp, const TeamPointers&,         \
                                                   const AllReduceLaunch&, const host::LaunchOptions&);              \
  template void launch_residual_rms_norm_on_host<threads>(DType, FusionOp, const void*, const AllReduceBuffers&,         \
                                                          std::int64_t, std::int64_t, float, float);                 \
  }

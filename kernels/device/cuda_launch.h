// CUDA launches of the kernel templates (nvcc only): the bodies in all_reduce_kernels.h instantiated with
// kCudaThreadsPerBlock threads, dispatched over rank count and fusion op. Included by the per-(algorithm,
// dtype) .cu files, each defining its two launcher entry points (launchers.h) with ARFIT_DEFINE_ALL_REDUCE_LAUNCHER.
#pragma once

#include "kernels/device/all_reduce_kernels.h"
#include "kernels/device/cuda_check.h"
#include "kernels/device/launchers.h"
#include "kernels/device/low_precision_kernels.h"

namespace arfit::kernels::device {

template <AllReduceAlgorithm kAlgorithm, typename T>
void launch_typed(FusionOp fusion, const TeamPointers& team, const AllReduceLaunch& args, int grid, cudaStream_t stream) {
  dispatch_ranks_and_fusion(team.nranks, fusion, [&](auto ranks, auto op) {
    using Ranks = std::decay_t<decltype(ranks)>;
    using Op = std::decay_t<decltype(op)>;
    if constexpr (kHasAllReduceKernel<kAlgorithm, Op::value>) {  // validate_all_reduce refused the others
      const auto kernel = all_reduce_kernel<kAlgorithm, T, Ranks::value, Op::value, kCudaThreadsPerBlock>();
      kernel<<<grid, kCudaThreadsPerBlock, 0, stream>>>(team, args);
    }
  });
}

// Blocks of the kernel an SM can hold at once (the barriers need every block of every local rank resident).
template <AllReduceAlgorithm kAlgorithm, typename T>
int active_blocks_per_sm_typed(FusionOp fusion, int nranks) {
  int blocks = 1 << 30;  // no kernel for (fusion, nranks): no constraint
  dispatch_ranks_and_fusion(nranks, fusion, [&](auto ranks, auto op) {
    using Ranks = std::decay_t<decltype(ranks)>;
    using Op = std::decay_t<decltype(op)>;
    if constexpr (kHasAllReduceKernel<kAlgorithm, Op::value>) {
      const auto kernel = all_reduce_kernel<kAlgorithm, T, Ranks::value, Op::value, kCudaThreadsPerBlock>();
      ARFIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kCudaThreadsPerBlock, 0));
    }
  });
  return blocks;
}

// LOWPRECISION (no fusion: validate_all_reduce refused any other than NONE).
template <typename T>
void launch_low_precision_typed(const TeamPointers& team, const AllReduceLaunch& args, int grid, cudaStream_t stream) {
  dispatch_ranks(team.nranks, [&](auto ranks) {
    low_precision_all_reduce_kernel<T, decltype(ranks)::value, kCudaThreadsPerBlock>
        <<<grid, kCudaThreadsPerBlock, 0, stream>>>(team, args);
  });
}

template <typename T>
int active_blocks_per_sm_low_precision_typed(int nranks) {
  int blocks = 0;
  dispatch_ranks(nranks, [&](auto ranks) {
    const auto kernel = &low_precision_all_reduce_kernel<T, decltype(ranks)::value, kCudaThreadsPerBlock>;
    ARFIT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kCudaThreadsPerBlock, 0));
  });
  return blocks;
}

}  // namespace arfit::kernels::device

#define ARFIT_DEFINE_LOW_PRECISION_LAUNCHER(dtype, element)                                                  \
  namespace arfit::kernels::device {                                                                          \
  void launch_low_precision_##dtype(FusionOp, const TeamPointers& team, const AllReduceLaunch& args, int grid, \
                                    cudaStream_t stream) {                                                    \
    launch_low_precision_typed<element>(team, args, grid, stream);                                            \
  }                                                                                                           \
  int active_blocks_per_sm_low_precision_##dtype(FusionOp, int nranks) {                                      \
    return active_blocks_per_sm_low_precision_typed<element>(nranks);                                         \
  }                                                                                                           \
  }

#define ARFIT_DEFINE_ALL_REDUCE_LAUNCHER(algorithm, enumerator, dtype, element)                                 \
  namespace arfit::kernels::device {                                                                            \
  void launch_##algorithm##_##dtype(FusionOp fusion, const TeamPointers& team, const AllReduceLaunch& args,    \
                                    int grid, cudaStream_t stream) {                                            \
    launch_typed<AllReduceAlgorithm::enumerator, element>(fusion, team, args, grid, stream);                    \
  }                                                                                                             \
  int active_blocks_per_sm_##algorithm##_##dtype(FusionOp fusion, int nranks) {                                \
    return active_blocks_per_sm_typed<AllReduceAlgorithm::enumerator, element>(fusion, nranks);                 \
  }                                                                                                             \
  }

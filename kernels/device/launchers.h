// Entry points of the per-(algorithm, dtype) CUDA translation units. Host code (all_reduce_launch.cpp)
// dispatches on the runtime dtype to these; each is defined in its own .cu file so the instantiations compile
// separately.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/kernel_types.h"
#include "kernels/team/team_layout.h"
#include "model/sample.h"

namespace arfit::kernels::device {

// Threads per block of every custom kernel on the GPU (the kernel template's kThreads).
inline constexpr int kCudaThreadsPerBlock = 512;

// launch_<algorithm>_<dtype>: enqueues the kernel for the team's rank count and `fusion`.
// active_blocks_per_sm_<algorithm>_<dtype>: cudaOccupancyMaxActiveBlocksPerMultiprocessor of that kernel.
#define ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(algorithm, dtype)                                                  \
  void launch_##algorithm##_##dtype(FusionOp fusion, const TeamPointers& team, const AllReduceLaunch& args, \
                                    int grid, cudaStream_t stream);                                           \
  int active_blocks_per_sm_##algorithm##_##dtype(FusionOp fusion, int nranks)
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(one_shot, bf16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(one_shot, fp16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(one_shot, fp32);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(two_shot, bf16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(two_shot, fp16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(two_shot, fp32);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(multimem_one_shot, bf16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(multimem_one_shot, fp16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(multimem_one_shot, fp32);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(multimem_two_shot, bf16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(multimem_two_shot, fp16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(multimem_two_shot, fp32);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(low_precision, bf16);  // `fusion` is NONE (validated)
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(low_precision, fp16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(low_precision, fp32);
#undef ARFIT_DECLARE_ALL_REDUCE_LAUNCHER

// The fewest blocks per SM any all-reduce kernel instantiation can keep resident (the co-residency the
// barriers need is computed from it: kernels/team.h co_resident_blocks_per_rank).
int min_active_blocks_per_sm();

// The unfused residual + RMSNorm (+ e4m3 / NVFP4) epilogue kernel, one per dtype.
// quant_out / scale_out: AllReduceBuffers' fp8_out / scale_out (what `fusion` quantises into); quant_scale is the
// kernels' fp8_inv_scale (1 / fp8_scale).
void launch_residual_rms_norm(DType dtype, FusionOp fusion, const void* reduced, const void* residual_in,
                              void* residual_out, const void* gamma, void* output, void* quant_out, void* scale_out,
                              std::int64_t rows, std::int64_t hidden, float eps, float quant_scale, int grid,
                              cudaStream_t stream);

}  // namespace arfit::kernels::device

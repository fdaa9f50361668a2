// Entry points of the per-(algorithm, dtype) translation units. Host code (all_reduce.cpp) dispatches on
// the runtime dtype to these; each is defined in its own .cu file so the instantiations compile separately.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/team_layout.h"
#include "model/sample.h"

namespace arfit::kernels::device {

// Threads per block of every custom kernel (all_reduce_device.cuh uses the same constant).
inline constexpr int kLaunchThreadsPerBlock = 512;

#define ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(algorithm, dtype)                                                  \
  void launch_##algorithm##_##dtype(FusionOp fusion, const TeamPointers& team, const AllReduceLaunch& args, \
                                    int grid, cudaStream_t stream)
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(one_shot, bf16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(one_shot, fp16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(one_shot, fp32);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(two_shot, bf16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(two_shot, fp16);
ARFIT_DECLARE_ALL_REDUCE_LAUNCHER(two_shot, fp32);
#undef ARFIT_DECLARE_ALL_REDUCE_LAUNCHER

// The unfused residual + RMSNorm (+ e4m3) epilogue kernel, one per dtype.
void launch_residual_rms_norm(DType dtype, bool quant_fp8, const void* reduced, const void* residual_in,
                              void* residual_out, const void* gamma, void* output, void* fp8_out, std::int64_t rows,
                              std::int64_t hidden, float eps, float fp8_inv_scale, int grid, cudaStream_t stream);

}  // namespace arfit::kernels::device

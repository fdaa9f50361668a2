// GPU launch of the custom all-reduce kernels: validate, fill the POD launch struct, choose the block
// partition (kernels/device/partition.h), dispatch on dtype to the per-(algorithm, dtype) translation units.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "kernels/all_reduce.h"
#include "kernels/device/cuda_check.h"
#include "kernels/device/launchers.h"
#include "kernels/device/partition.h"
#include "kernels/team.h"

namespace arfit::kernels {

void all_reduce(AllReduceAlgorithm algorithm, Team& team, const AllReduceParams& p, void* stream) {
  validate_all_reduce(algorithm, team.shape(), p);
  const AllReduceLaunch args = make_all_reduce_launch(p);
  const int blocks =
      all_reduce_blocks_per_rank(algorithm, p, device::kCudaThreadsPerBlock, team.max_blocks_per_rank());
  const TeamPointers table = team.pointers(blocks);
  const int grid = blocks * team.local_ranks();
  auto s = static_cast<cudaStream_t>(stream);
  ARFIT_CUDA_CHECK(cudaSetDevice(team.device()));
  if (algorithm == AllReduceAlgorithm::LowPrecision) {
    switch (p.dtype) {
      case DType::BF16: device::launch_low_precision_bf16(p.fusion, table, args, grid, s); break;
      case DType::FP16: device::launch_low_precision_fp16(p.fusion, table, args, grid, s); break;
      case DType::FP32: device::launch_low_precision_fp32(p.fusion, table, args, grid, s); break;
    }
  } else if (algorithm == AllReduceAlgorithm::OneShot) {
    switch (p.dtype) {
      case DType::BF16: device::launch_one_shot_bf16(p.fusion, table, args, grid, s); break;
      case DType::FP16: device::launch_one_shot_fp16(p.fusion, table, args, grid, s); break;
      case DType::FP32: device::launch_one_shot_fp32(p.fusion, table, args, grid, s); break;
    }
  } else {
    switch (p.dtype) {
      case DType::BF16: device::launch_two_shot_bf16(p.fusion, table, args, grid, s); break;
      case DType::FP16: device::launch_two_shot_fp16(p.fusion, table, args, grid, s); break;
      case DType::FP32: device::launch_two_shot_fp32(p.fusion, table, args, grid, s); break;
    }
  }
  ARFIT_CUDA_CHECK(cudaGetLastError());
}

int device::min_active_blocks_per_sm() {
  int least = 1 << 30;
  for (FusionOp fusion : all_fusion_ops()) {
    for (int n : {2, 4, 8}) {
      for (int blocks : {device::active_blocks_per_sm_one_shot_bf16(fusion, n),
                         device::active_blocks_per_sm_one_shot_fp16(fusion, n),
                         device::active_blocks_per_sm_one_shot_fp32(fusion, n),
                         device::active_blocks_per_sm_two_shot_bf16(fusion, n),
                         device::active_blocks_per_sm_two_shot_fp16(fusion, n),
                         device::active_blocks_per_sm_two_shot_fp32(fusion, n)}) {
        least = std::min(least, blocks);
      }
    }
  }
  for (int n : {2, 4, 8}) {  // LOWPRECISION: NONE only
    for (int blocks : {device::active_blocks_per_sm_low_precision_bf16(FusionOp::None, n),
                       device::active_blocks_per_sm_low_precision_fp16(FusionOp::None, n),
                       device::active_blocks_per_sm_low_precision_fp32(FusionOp::None, n)}) {
      least = std::min(least, blocks);
    }
  }
  return least;
}

void residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                       float fp8_scale, const void* reduced, const AllReduceBuffers& b, void* stream) {
  validate_residual_rms_norm(dtype, fusion, count, hidden, rms_eps, fp8_scale, reduced, b);
  int device = 0, sms = 0;
  ARFIT_CUDA_CHECK(cudaGetDevice(&device));
  ARFIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t rows = count / hidden;
  const int grid = static_cast<int>(std::min<std::int64_t>(rows, 4LL * sms));
  device::launch_residual_rms_norm(dtype, fusion, reduced, b.residual_in, b.residual_out, b.gamma, b.output, b.fp8_out,
                                   b.scale_out, rows, hidden, rms_eps, 1.0f / fp8_scale, grid,
                                   static_cast<cudaStream_t>(stream));
  ARFIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace arfit::kernels

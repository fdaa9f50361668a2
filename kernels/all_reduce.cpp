// Host launch of the custom all-reduce kernels: validate, fill the POD launch struct, choose the block
// partition, dispatch on dtype to the per-(algorithm, dtype) translation units.
#include "kernels/all_reduce.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/device/launchers.h"
#include "kernels/team.h"

namespace arfit::kernels {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Work units a block processes: rows for fused epilogues, chunks of 512 vectors otherwise. The same on every
// rank for the same case, so all ranks choose the same partition.
int blocks_for(const Team& team, const AllReduceParams& p) {
  std::int64_t units;
  if (p.fusion == FusionOp::None) {
    units = ceil_div(p.count / vector_width(p.dtype), device::kLaunchThreadsPerBlock);
  } else {
    units = p.count / p.hidden;
  }
  return static_cast<int>(std::clamp<std::int64_t>(units, 1, team.max_blocks_per_rank()));
}

}  // namespace

void all_reduce(AllReduceAlgorithm algorithm, Team& team, const AllReduceParams& p, void* stream) {
  validate_all_reduce(algorithm, team.shape(), p);
  AllReduceLaunch args{};
  args.count = p.count;
  args.hidden = p.fusion == FusionOp::None ? 0 : p.hidden;
  args.rms_eps = p.rms_eps;
  args.fp8_inv_scale = 1.0f / p.fp8_scale;
  for (int k = 0; k < team.local_ranks(); ++k) {
    const AllReduceBuffers& b = p.buffers[static_cast<std::size_t>(k)];
    args.input[k] = b.input;
    args.output[k] = b.output;
    args.residual_in[k] = b.residual_in;
    args.residual_out[k] = b.residual_out;
    args.gamma[k] = b.gamma;
    args.fp8_out[k] = b.fp8_out;
    // In place (or the input otherwise written during the launch): the read-only load path is not allowed.
    if (b.input == b.output || b.input == b.residual_out) args.input_may_alias = 1;
  }
  const int blocks = blocks_for(team, p);
  const TeamPointers table = team.pointers(blocks);
  const int grid = blocks * team.local_ranks();
  auto s = static_cast<cudaStream_t>(stream);
  ARFIT_CUDA_CHECK(cudaSetDevice(team.device()));
  if (algorithm == AllReduceAlgorithm::OneShot) {
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

void residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                       float fp8_scale, const void* reduced, const AllReduceBuffers& b, void* stream) {
  validate_residual_rms_norm(dtype, fusion, count, hidden, fp8_scale, reduced, b);
  int device = 0, sms = 0;
  ARFIT_CUDA_CHECK(cudaGetDevice(&device));
  ARFIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t rows = count / hidden;
  const int grid = static_cast<int>(std::min<std::int64_t>(rows, 4LL * sms));
  device::launch_residual_rms_norm(dtype, fusion == FusionOp::ResidualRmsNormQuantFp8, reduced, b.residual_in,
                                   b.residual_out, b.gamma, b.output, b.fp8_out, rows, hidden, rms_eps,
                                   1.0f / fp8_scale, grid, static_cast<cudaStream_t>(stream));
  ARFIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace arfit::kernels

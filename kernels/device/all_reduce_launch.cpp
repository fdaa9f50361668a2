// GPU launch of the custom all-reduce kernels: validate, fill the POD launch struct, choose the block
// partition (kernels/device/partition.h), dispatch on dtype to the per-(algorithm, dtype) translation units.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cuda.h>

#include "kernels/all_reduce.h"
#include "kernels/device/cuda_check.h"
#include "kernels/device/launchers.h"
#include "kernels/device/partition.h"
#include "kernels/team.h"

namespace arfit::kernels {
namespace {

// The per-dtype launchers of one algorithm (launchers.h), so that the dtype switch is written once.
#define ARFIT_ALGORITHM_LAUNCHERS(name, algorithm)                                                              \
  struct name {                                                                                               \
    static constexpr auto bf16 = &device::launch_##algorithm##_bf16;                                         \
    static constexpr auto fp16 = &device::launch_##algorithm##_fp16;                                         \
    static constexpr auto fp32 = &device::launch_##algorithm##_fp32;                                         \
  }
ARFIT_ALGORITHM_LAUNCHERS(OneShotLaunchers, one_shot);
ARFIT_ALGORITHM_LAUNCHERS(TwoShotLaunchers, two_shot);
ARFIT_ALGORITHM_LAUNCHERS(LowPrecisionLaunchers, low_precision);
ARFIT_ALGORITHM_LAUNCHERS(MultimemOneShotLaunchers, multimem_one_shot);
ARFIT_ALGORITHM_LAUNCHERS(MultimemTwoShotLaunchers, multimem_two_shot);
#undef ARFIT_ALGORITHM_LAUNCHERS

template <typename Launchers>
void launch_for_dtype(DType dtype, FusionOp fusion, const TeamPointers& table, const AllReduceLaunch& args, int grid,
                      cudaStream_t s) {
  switch (dtype) {
    case DType::BF16: Launchers::bf16(fusion, table, args, grid, s); break;
    case DType::FP16: Launchers::fp16(fusion, table, args, grid, s); break;
    case DType::FP32: Launchers::fp32(fusion, table, args, grid, s); break;
  }
}

}  // namespace

void all_reduce(AllReduceAlgorithm algorithm, Team& team, const AllReduceParams& p, void* stream) {
  validate_all_reduce(algorithm, team.shape(), p);
  const AllReduceLaunch args = make_all_reduce_launch(p);
  const int blocks =
      all_reduce_blocks_per_rank(algorithm, p, device::kCudaThreadsPerBlock, team.max_blocks_per_rank());
  if (is_multimem(algorithm)) validate_multicast_team(algorithm, team);
  // The multimem kernels publish into and read through the multicast-bound staging; the others use the workspace's.
  const TeamPointers table = is_multimem(algorithm) ? team.multimem_pointers(blocks) : team.pointers(blocks);
  const int grid = blocks * team.local_ranks();
  auto s = static_cast<cudaStream_t>(stream);
  ARFIT_CUDA_CHECK(cudaSetDevice(team.device()));
  switch (algorithm) {
    case AllReduceAlgorithm::OneShot: launch_for_dtype<OneShotLaunchers>(p.dtype, p.fusion, table, args, grid, s); break;
    case AllReduceAlgorithm::TwoShot: launch_for_dtype<TwoShotLaunchers>(p.dtype, p.fusion, table, args, grid, s); break;
    case AllReduceAlgorithm::LowPrecision:
      launch_for_dtype<LowPrecisionLaunchers>(p.dtype, p.fusion, table, args, grid, s);
      break;
    case AllReduceAlgorithm::MultimemOneShot:
      launch_for_dtype<MultimemOneShotLaunchers>(p.dtype, p.fusion, table, args, grid, s);
      break;
    case AllReduceAlgorithm::MultimemTwoShot:
      launch_for_dtype<MultimemTwoShotLaunchers>(p.dtype, p.fusion, table, args, grid, s);
      break;
  }
  ARFIT_CUDA_CHECK(cudaGetLastError());
}

bool device_supports_multicast(int device) {
  int major = 0;
  ARFIT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major < 9) return false;
  // CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED has no runtime-API twin: the driver's entry point, found at run time.
  using GetAttribute = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  void* entry = cuda_driver_entry_point("cuDeviceGetAttribute", 12000);
  if (!entry) return false;
  int supported = 0;
  if (reinterpret_cast<GetAttribute>(entry)(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, device) != CUDA_SUCCESS) return false;
  return supported != 0;
}

void validate_multicast_team(AllReduceAlgorithm algorithm, const Team& team) {
  const std::string who = to_string(algorithm);
  if (!device_supports_multicast(team.device())) {
    throw KernelError(who + ": GPU " + std::to_string(team.device()) + " has no multicast (NVLS) support: multimem "
                            "needs sm_90 or newer with CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED (an NVSwitch fabric); "
                            "use ONESHOT or TWOSHOT",
                      KernelParam::Device);
  }
  if (!team.multimem_pointers(1).multicast_staging) {
    throw KernelError(who + ": the team has no multicast object bound to its staging buffers: " +
                          team.multicast_refusal() + "; use ONESHOT or TWOSHOT",
                      KernelParam::Device);
  }
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
                         device::active_blocks_per_sm_two_shot_fp32(fusion, n),
                         // NONE only: the others answer 1 << 30 (no kernel, no constraint)
                         device::active_blocks_per_sm_multimem_one_shot_bf16(fusion, n),
                         device::active_blocks_per_sm_multimem_one_shot_fp16(fusion, n),
                         device::active_blocks_per_sm_multimem_one_shot_fp32(fusion, n),
                         device::active_blocks_per_sm_multimem_two_shot_bf16(fusion, n),
                         device::active_blocks_per_sm_multimem_two_shot_fp16(fusion, n),
                         device::active_blocks_per_sm_multimem_two_shot_fp32(fusion, n)}) {
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

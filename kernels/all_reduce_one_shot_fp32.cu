// one-shot all-reduce kernels for fp32 (2, 4, 8 ranks x NONE / RESIDUAL_RMS_NORM / RESIDUAL_RMS_NORM_QUANT_FP8).
// One translation unit per (algorithm, dtype) keeps each nvcc invocation small and lets them build in parallel.
#include "kernels/device/all_reduce_device.cuh"
#include "kernels/device/launchers.h"

namespace arfit::kernels::device {

static_assert(kLaunchThreadsPerBlock == kThreadsPerBlock, "host and device agree on the block size");

void launch_one_shot_fp32(FusionOp fusion, const TeamPointers& team, const AllReduceLaunch& args, int grid,
                        cudaStream_t stream) {
  launch_one_shot_typed<float>(fusion, team, args, grid, stream);
}

}  // namespace arfit::kernels::device

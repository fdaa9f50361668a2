// The GPU backends of arbench: `custom` (kernels/ ONESHOT, TWOSHOT with fused epilogues, over a Team of
// IPC-registered or virtual-rank workspaces) and `nccl` (kernels/ NCCL wrappers). Both adapt the
// kernels' StrategyDescriptors (one file per strategy in kernels/strategy_*.cpp) into bench Descriptors,
// so every strategy kernels/ adds is measurable without a change here. Compiled only with CUDA.
#pragma once

#include <memory>
#include <vector>

#include "bench/backend.h"

namespace arfit::bench::gpu {

// Bench descriptors for every kernels/ strategy in this build (backend "custom" or "nccl").
std::vector<const Descriptor*> gpu_descriptors();
// Throws GridError naming --backend when no CUDA device is usable.
std::unique_ptr<Backend> make_gpu_backend(const std::string& kind, const BackendOptions& options);

}  // namespace arfit::bench::gpu

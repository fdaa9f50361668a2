// LOWPRECISION all-reduce (TensorRT-LLM's AllReduceStrategy.LOWPRECISION = 6, for PCIe machines without NVLink):
// every rank quantises its contribution to e4m3 with one fp32 multiplier per group of 64 elements, a two-shot
// exchange moves the quantised groups (reduce-scatter, the owner sums in fp32 and quantises the sum again,
// all-gather), and every rank dequantises to the dtype. About 1.06 bytes per element on the wire instead of 2 (bf16,
// fp16) or 4 (fp32). Not exact: check() holds every element within the bound of reference_low_precision_all_reduce
// (kernels/reference/reference.h), and samples record the strategy as LOWPRECISION so models never pool it with the
// exact strategies. NONE only; any other fusion is refused with a KernelError naming Fusion.
#include <algorithm>

#include "kernels/device/low_precision_layout.h"
#include "kernels/strategies/custom_all_reduce_strategy.h"

namespace arfit::kernels {
namespace {

StrategyDescriptor low_precision_descriptor() {
  StrategyDescriptor d = detail::custom_all_reduce_descriptor(AllReduceAlgorithm::LowPrecision);
  d.fusions = {FusionOp::None};
  d.exact = false;
  // The staging buffer holds the quantised tensor (68 bytes at least), and the team's max_bytes also bounds the
  // message itself (validate_all_reduce_shape): the larger of the two.
  d.workspace = [](const StrategyCase& c) {
    return std::max(detail::custom_all_reduce_workspace(c), low_precision::workspace_bytes(c.count));
  };
  return d;
}

}  // namespace

extern const StrategyDescriptor low_precision_all_reduce_strategy;
const StrategyDescriptor low_precision_all_reduce_strategy = low_precision_descriptor();

}  // namespace arfit::kernels

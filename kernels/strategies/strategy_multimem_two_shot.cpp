// Multimem two-shot all-reduce (NVLS; PyTorch symmetric memory's multimem_all_reduce_, which vLLM runs above its
// custom all-reduce bound): publish, barrier, rank r multimem.ld_reduce's the vectors of its slice and multimem.st's
// each sum into every rank's staging (reduce-scatter and all-gather in one pass through the switch), barrier, every
// rank copies its staging to its output. sm_90+ with multicast only (refused with KernelError naming Device
// elsewhere); NONE only.
#include "kernels/strategies/custom_all_reduce_strategy.h"

namespace arfit::kernels {

extern const StrategyDescriptor multimem_two_shot_all_reduce_strategy;
const StrategyDescriptor multimem_two_shot_all_reduce_strategy =
    detail::custom_all_reduce_descriptor(AllReduceAlgorithm::MultimemTwoShot);

}  // namespace arfit::kernels

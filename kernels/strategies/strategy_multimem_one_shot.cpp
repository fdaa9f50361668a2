// Multimem one-shot all-reduce (NVLS; PyTorch symmetric memory's multimem_one_shot_all_reduce): every rank publishes
// its input into its staging buffer, a barrier, then one multimem.ld_reduce per 16-byte vector through the staging
// buffers' multicast address returns the sum over all ranks (the NVSwitch reduces), a barrier. One read per element
// per rank instead of N. sm_90+ with multicast only (refused with KernelError naming Device elsewhere); NONE only.
#include "kernels/strategies/custom_all_reduce_strategy.h"

namespace arfit::kernels {

extern const StrategyDescriptor multimem_one_shot_all_reduce_strategy;
const StrategyDescriptor multimem_one_shot_all_reduce_strategy =
    detail::custom_all_reduce_descriptor(AllReduceAlgorithm::MultimemOneShot);

}  // namespace arfit::kernels

// Two-shot all-reduce: reduce-scatter of slices into each rank's scratch, a cross-rank barrier, then
// an all-gather of the reduced slices; fused epilogues run on the slice owner. Bandwidth regime: each rank
// reads 2 (N-1)/N of the tensor from peers instead of (N-1).
#include "kernels/strategies/custom_all_reduce_strategy.h"

namespace arfit::kernels {

extern const StrategyDescriptor two_shot_all_reduce_strategy;
const StrategyDescriptor two_shot_all_reduce_strategy = detail::custom_all_reduce_descriptor(AllReduceAlgorithm::TwoShot);

}  // namespace arfit::kernels

// Two-shot all-reduce: reduce-scatter of slices into each rank's scratch, a cross-rank barrier, then
// an all-gather of the reduced slices; fused epilogues run on the slice owner. Bandwidth regime: each rank
// reads 2 (N-1)/N of the tensor from peers instead of (N-1).
#include "kernels/custom_all_reduce_strategy.h"
#include "kernels/strategy_support.h"
#include "model/bus_factor.h"

namespace arfit::kernels {

extern const StrategyDescriptor two_shot_all_reduce_strategy;

const StrategyDescriptor two_shot_all_reduce_strategy{
    strategy::kTwoShot,
    Collective::AllReduce,
    {DType::BF16, DType::FP16, DType::FP32},
    {2, 4, 8},
    {FusionOp::None, FusionOp::ResidualRmsNorm, FusionOp::ResidualRmsNormQuantFp8},
    /*needs_team=*/true,
    /*needs_nccl=*/false,
    [](const StrategyContext& ctx, const StrategyCase& c) {
      detail::validate_custom_all_reduce(AllReduceAlgorithm::TwoShot, ctx, c);
    },
    // The staging buffer holds the whole message (the team's max_bytes must be at least this).
    [](const StrategyCase& c) { return detail::custom_all_reduce_message_bytes(c); },
    [](const StrategyCase& c) { return detail::custom_all_reduce_message_bytes(c); },
    [](int nranks) { return bus_factor(Collective::AllReduce, nranks); },
    [](const StrategyContext& ctx, const StrategyCase& c) {
      return detail::init_custom_all_reduce(AllReduceAlgorithm::TwoShot, ctx, c);
    },
    [](StrategyState& state, void* stream) { detail::run_custom_all_reduce(state, stream); },
    [](StrategyState& state) { return detail::check_custom_all_reduce(state); },
};

}  // namespace arfit::kernels

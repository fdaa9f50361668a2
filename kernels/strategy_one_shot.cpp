// One-shot all-reduce: every rank reads all peers' staged inputs through IPC-mapped pointers and reduces
// the whole tensor in rank order 0..N-1 (bitwise-identical results everywhere); one barrier before, one after.
// Latency-bound regime: one round trip, N reads per element per rank.
#include "kernels/custom_all_reduce_strategy.h"
#include "kernels/strategy_support.h"
#include "model/bus_factor.h"

namespace arfit::kernels {

extern const StrategyDescriptor one_shot_all_reduce_strategy;

const StrategyDescriptor one_shot_all_reduce_strategy{
    strategy::kOneShot,
    Collective::AllReduce,
    {DType::BF16, DType::FP16, DType::FP32},
    {2, 4, 8},
    {FusionOp::None, FusionOp::ResidualRmsNorm, FusionOp::ResidualRmsNormQuantFp8},
    /*needs_team=*/true,
    /*needs_nccl=*/false,
    [](const StrategyContext& ctx, const StrategyCase& c) {
      detail::validate_custom_all_reduce(AllReduceAlgorithm::OneShot, ctx, c);
    },
    // The staging buffer holds the whole message (the team's max_bytes must be at least this).
    [](const StrategyCase& c) { return detail::custom_all_reduce_message_bytes(c); },
    [](const StrategyCase& c) { return detail::custom_all_reduce_message_bytes(c); },
    [](int nranks) { return bus_factor(Collective::AllReduce, nranks); },
    [](const StrategyContext& ctx, const StrategyCase& c) {
      return detail::init_custom_all_reduce(AllReduceAlgorithm::OneShot, ctx, c);
    },
    [](StrategyState& state, void* stream) { detail::run_custom_all_reduce(state, stream); },
    [](StrategyState& state) { return detail::check_custom_all_reduce(state); },
};

}  // namespace arfit::kernels

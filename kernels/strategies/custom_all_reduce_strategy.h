// validate/init/run/check shared by the ONESHOT and TWOSHOT descriptors (strategy_one_shot.cpp,
// strategy_two_shot.cpp); each binds its algorithm.
#pragma once

#include <memory>

#include "kernels/all_reduce.h"
#include "kernels/strategy.h"

namespace arfit::kernels::detail {

void validate_custom_all_reduce_case(AllReduceAlgorithm algorithm, const StrategyCase& c, const StrategyLimits& limits);
void validate_custom_all_reduce(AllReduceAlgorithm algorithm, const StrategyContext& ctx, const StrategyCase& c);
std::int64_t custom_all_reduce_workspace(const StrategyCase& c);
std::unique_ptr<StrategyState> init_custom_all_reduce(AllReduceAlgorithm algorithm, const StrategyContext& ctx,
                                                      const StrategyCase& c);
void run_custom_all_reduce(StrategyState& state, void* stream);
CheckResult check_custom_all_reduce(StrategyState& state);

// The descriptor of a custom all-reduce algorithm: "custom" backend, bf16/fp16/fp32, 2/4/8 ranks, the fusion ops
// its kernels are instantiated for (all_reduce_fusions), a registered workspace of the message size.
StrategyDescriptor custom_all_reduce_descriptor(AllReduceAlgorithm algorithm);

}  // namespace arfit::kernels::detail

// init/run/check shared by the ONESHOT and TWOSHOT descriptors (strategy_one_shot.cpp, strategy_two_shot.cpp).
#pragma once

#include <memory>

#include "kernels/all_reduce.h"
#include "kernels/strategy.h"

namespace arfit::kernels::detail {

void validate_custom_all_reduce(AllReduceAlgorithm algorithm, const StrategyContext& ctx, const StrategyCase& c);
std::int64_t custom_all_reduce_message_bytes(const StrategyCase& c);
std::unique_ptr<StrategyState> init_custom_all_reduce(AllReduceAlgorithm algorithm, const StrategyContext& ctx,
                                                      const StrategyCase& c);
void run_custom_all_reduce(StrategyState& state, void* stream);
CheckResult check_custom_all_reduce(StrategyState& state);

}  // namespace arfit::kernels::detail

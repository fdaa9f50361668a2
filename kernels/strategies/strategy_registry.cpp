// The list of strategies compiled into this build (NCCL ones only when NCCL was found).
#include "kernels/strategy.h"

namespace arfit::kernels {

extern const StrategyDescriptor one_shot_all_reduce_strategy;
extern const StrategyDescriptor two_shot_all_reduce_strategy;
extern const StrategyDescriptor multimem_one_shot_all_reduce_strategy;
extern const StrategyDescriptor multimem_two_shot_all_reduce_strategy;
extern const StrategyDescriptor low_precision_all_reduce_strategy;
#ifdef ARFIT_HAVE_NCCL
extern const StrategyDescriptor nccl_all_reduce_strategy;
extern const StrategyDescriptor nccl_symmetric_all_reduce_strategy;
extern const StrategyDescriptor nccl_all_gather_strategy;
extern const StrategyDescriptor nccl_reduce_scatter_strategy;
extern const StrategyDescriptor nccl_all_to_all_strategy;
extern const StrategyDescriptor nccl_all_to_allv_strategy;
#endif

const std::vector<const StrategyDescriptor*>& all_strategies() {
  static const std::vector<const StrategyDescriptor*> strategies{
      &one_shot_all_reduce_strategy,
      &two_shot_all_reduce_strategy,
      &multimem_one_shot_all_reduce_strategy,
      &multimem_two_shot_all_reduce_strategy,
      &low_precision_all_reduce_strategy,
#ifdef ARFIT_HAVE_NCCL
      &nccl_all_reduce_strategy,
      &nccl_symmetric_all_reduce_strategy,
      &nccl_all_gather_strategy,
      &nccl_reduce_scatter_strategy,
      &nccl_all_to_all_strategy,
      &nccl_all_to_allv_strategy,
#endif
  };
  return strategies;
}

const StrategyDescriptor* find_strategy(const std::string& name, Collective collective) {
  for (const StrategyDescriptor* s : all_strategies()) {
    if (s->collective == collective && name == s->strategy) return s;
  }
  return nullptr;
}

}  // namespace arfit::kernels

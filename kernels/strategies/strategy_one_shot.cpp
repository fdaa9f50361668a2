// One-shot all-reduce: every rank reads all peers' staged inputs through IPC-mapped pointers and reduces
// the whole tensor in rank order 0..N-1 (bitwise-identical results everywhere); one barrier before, one after.
// Latency-bound regime: one round trip, N reads per element per rank.
#include "kernels/strategies/custom_all_reduce_strategy.h"

namespace arfit::kernels {

extern const StrategyDescriptor one_shot_all_reduce_strategy;
const StrategyDescriptor one_shot_all_reduce_strategy = detail::custom_all_reduce_descriptor(AllReduceAlgorithm::OneShot);

}  // namespace arfit::kernels

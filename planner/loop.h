// The adaptive loop's decision for one round: what to measure next, or why to stop. A pure function of the target
// table, the measurements of the earlier rounds and the options, so that arbench (bench/adaptive.h), a resumed run
// and the simulation (planner/simulate.h) reach the same decisions from the same measurements.
//
//   round 0   the seed: per curve, its smallest size and the size three quarters of the way up its distinct sizes
//             (in ln size, the sweeps being geometric). The α-β picture of a collective (a latency and a bandwidth)
//             needs one size where the latency dominates and one where the bandwidth does; on a doubling sweep the
//             top quarter of the sizes holds nearly all of a curve's measuring time (a geometric series: the size
//             three quarters up costs about 1/2^(n/4) of the largest), so that point is the highest that stays cheap
//             whatever the per-case overhead. It is also the random walk's choice (planner/choose.h's picture of
//             model error): with the first size at the smallest, a second at fraction b of the ln-size range leaves
//             an integrated error variance of b²/6 + (1 − b)²/2, least at b = 3/4. Smallest sizes first, so a budget
//             that ends inside the seed has one size of every curve. The same seed with priors: their shapes are
//             carried through both sizes.
//   round 1   the seed's second stage: the largest size of each curve whose decisions per predicted second there
//             (the cells it is a candidate in per its predicted cost) are at least a seed anchor's. Above its largest
//             measured size a curve is known only within the physical bounds, flat to linear in the size; a curve
//             many cells lean on (a pair table's NCCL curve, compared with every custom curve) is worth its top
//             where the per-case overhead makes that top about as cheap as an anchor. None such: as round r.
//   round r   fit, assess, stop or choose a batch (planner/choose.h) of at most
//             max(1, ⌊growth × cases measured so far⌋) cases: the loop refits after a quarter more data, so the
//             number of rounds grows with the logarithm of the cases measured and the fits stay small next to
//             measuring.
//
// Stop rules (checked in this order before a batch is chosen):
//   exhausted   every case is measured;
//   budget      the seconds spent measuring reached --budget, or no case with value fits what is left of it;
//   regret      the table's geometric-mean regret is below --until-regret with 90 % probability
//               (Assessment::geomean_regret_bound). The mean over cells, not every cell: the promise is about the
//               table's geometric-mean regret, which is what the select protocol and engines' users measure, and the
//               mean of the cells' expected log regrets is exactly the expectation of its logarithm; a bound on
//               every cell would spend the budget on the few cells whose candidates are within noise of each other,
//               where measuring changes little. The 90 % bound, not the expectation: a promise kept on average is
//               broken about half the time. The cells' regrets include the risk that an unmeasured choice is a
//               single-size spike (planner/estimate.h's SpikeRisk, from the spikes the measurements show): the
//               models set measured spikes aside, so only this term stands for the ones not yet measured;
//   settled     no measurement can change a choice (every value is zero).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "planner/choose.h"
#include "planner/estimate.h"

namespace arfit::planner {

struct LoopOptions {
  double until_regret = 0;  // the geometric-mean regret to promise, a fraction (0.01 = 1 %); 0: none
  double budget_s = std::numeric_limits<double>::infinity();  // seconds of measuring
  CostModel cost;
  EstimateOptions estimate;
  double growth = 0.25;     // a round measures at most this fraction of the cases measured before it (at least 1)
  const std::vector<bool>* excluded = nullptr;  // cases not to choose (BatchOptions::excluded)
  // arbench: the per-case overhead of `cost` is what the measurements so far show (measured_overhead_s); the
  // simulation gives it.
  bool measure_overhead = false;
};

enum class StopReason { None, Exhausted, Budget, Regret, Settled };
std::string to_string(StopReason reason);

struct RoundPlan {
  int round = 0;
  std::vector<int> batch;  // the cases to measure, ascending case index (the grid's order)
  StopReason stop = StopReason::None;
  double predicted_s = 0;  // the batch's predicted cost (round >= 1)
  bool assessed = false;   // round >= 1: the estimates and the assessment below are set
  bool seed_tops = false;  // round 1's batch is the seed's second stage (the tops worth an anchor)
  std::vector<CaseEstimate> estimates;
  Assessment assessment;
};

// The seed of round 0, in the order to measure them.
std::vector<int> seed_cases(const TargetTable& table);

// Round `round`'s decision from `measured` (the rounds before it; later ones are ignored).
RoundPlan plan_round(const TargetTable& table, const Measurements& measured, const LoopOptions& options, int round);

// What the seed took of the measured cases and what the loop chose by their value. The seed is round 0 (the
// anchors) and round 1 when that round was its second stage (RoundPlan::seed_tops); every later case was chosen by
// the value of measuring it. When the budget ends inside the seed, or right after it, the table is what a fixed
// plan of two sizes per curve gives, and the loop had no room to measure where the models are unsure: the stop
// report says so.
struct SeedShare {
  std::size_t anchors = 0;  // round 0's planned cases (seed_cases)
  std::size_t seed = 0;     // measured in the seed's rounds
  double seed_s = 0;        // their measuring seconds
  std::size_t chosen = 0;   // measured in later rounds
};
SeedShare seed_share(const TargetTable& table, const Measurements& measured, bool second_stage);

// Whether round 1 of `measured` was the seed's second stage, decided again from round 0's rows as a resumed run
// decides it (false when nothing was measured in round 1).
bool round_one_was_second_stage(const TargetTable& table, const Measurements& measured, const LoopOptions& options);

// The state a table is left in: its estimates and assessment after everything measured so far (for the stop
// report), and the exhaustive grid's estimated measuring time (measured cases at what they took, the rest at their
// predicted cost).
struct TableState {
  std::vector<CaseEstimate> estimates;
  Assessment assessment;
  double exhaustive_s = 0;
};
TableState table_state(const TargetTable& table, const Measurements& measured, const LoopOptions& options);

}  // namespace arfit::planner

// Which cases to measure next: the expected regret a measurement removes, per second it costs.
//
// Value. For a cell whose choice c and alternative o differ by d = ln t_o − ln t_c ~ N(m, s²) (m >= 0), learning
// something that moves the estimate of m by a Gaussian step of standard deviation τ lets the cell choose again
// afterwards; the regret it expects falls by exactly expected_shortfall(m, τ) (codegen/table.h), whatever s is: the
// expected regret before, E[max(0, −d)], minus the expected minimum of the two choices after, which averages to
// E[max(0, −m')] over the new mean m' ~ N(m, τ²). Measuring a case removes its own uncertainty (τ = its σ) and
// part of its neighbours' on the same curve, ρ²·σ_q² at size q (choose.cpp's CurveState says how ρ follows from the
// curve's estimate: a random walk in ln size pinned at the measured sizes for a fitted curve, the physical bounds
// for a curve read from its measured sizes alone). The value of a case is the sum of these over every cell it or a
// neighbour competes in (each pair of the choice and another candidate).
//
// Cost. CostModel::seconds of the case's predicted time (the current models'), so a case the models put at a
// millisecond per iteration needs a correspondingly larger value than one at a microsecond. A case is chosen when
// its predicted cost fits in what is left of the budget.
//
// Batch. Greedily by value per second, each pick treated as measured when the next is valued (its sizes pinned),
// so a batch spreads over the table instead of crowding one uncertain stretch. A pick brings the other candidates of
// its cells at that size: a cell is decided by their difference, which only measuring them all there gives exactly.
// The batch's predicted cost stays within what is left of the budget.
#pragma once

#include <limits>
#include <vector>

#include "planner/estimate.h"

namespace arfit::planner {

struct BatchOptions {
  CostModel cost;
  double budget_left_s = std::numeric_limits<double>::infinity();
  std::size_t max_cases = 1;
  FallbackRule fallback;  // the estimates' (EstimateOptions::fallback)
  // Cases not to choose (the simulation's: known not to fit in what is left of the budget); null: none.
  const std::vector<bool>* excluded = nullptr;
};

struct Batch {
  std::vector<int> cases;          // in the order chosen (best value per second first)
  double predicted_s = 0;          // their predicted cost
  bool valuable_left = false;      // some unmeasured case still had value but did not fit the budget
};

// The value (expected regret removed, summed over cells, ln time) of measuring each case, 0 for measured ones.
std::vector<double> measurement_values(const TargetTable& table, const std::vector<CaseEstimate>& estimates,
                                       const Assessment& assessment, const FallbackRule& fallback = {});

Batch choose_batch(const TargetTable& table, const std::vector<CaseEstimate>& estimates, const Assessment& assessment,
                   const BatchOptions& options);

}  // namespace arfit::planner

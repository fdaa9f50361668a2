// The target table of an adaptive measurement: the cases that can be measured, which of them compete for each
// cell of the strategy table, and what has been measured so far. Pure data (no MPI, no fitting): arbench builds
// it from its planned grid (bench/adaptive.h), the simulation from fully measured tables (planner/simulate.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/model_set.h"

namespace arfit::planner {

// One measurable case: a point of one strategy's curve.
struct PlanCase {
  GroupKey curve;  // system, collective, strategy, fusion, dtype, nranks, nnodes
  double bytes = 0;
  std::int64_t tokens = 0, hidden = 0;  // 0 for byte-size grids
};

class TargetTable {
 public:
  TargetTable() = default;
  // `cells`: each cell's competing cases (indices into `cases`, at least one each). Throws std::invalid_argument
  // for an index out of range, an empty cell or a case of no positive size.
  TargetTable(std::vector<PlanCase> cases, std::vector<std::vector<int>> cells);

  const std::vector<PlanCase>& cases() const { return cases_; }
  const std::vector<std::vector<int>>& cells() const { return cells_; }
  std::size_t size() const { return cases_.size(); }
  // The curves (distinct PlanCase::curve), each case's curve, a curve's cases sorted by size (ties in case
  // order), and the cells a case competes in.
  std::size_t curves() const { return curve_cases_.size(); }
  int curve_of(int k) const { return curve_of_[static_cast<std::size_t>(k)]; }
  const std::vector<int>& curve_cases(int c) const { return curve_cases_[static_cast<std::size_t>(c)]; }
  const std::vector<int>& cells_of(int k) const { return cells_of_[static_cast<std::size_t>(k)]; }

 private:
  std::vector<PlanCase> cases_;
  std::vector<std::vector<int>> cells_;
  std::vector<int> curve_of_;
  std::vector<std::vector<int>> curve_cases_;
  std::vector<std::vector<int>> cells_of_;
};

// What has been measured, case by case.
struct Measurements {
  explicit Measurements(std::size_t cases = 0) : time_us(cases, 0.0), seconds(cases, 0.0), round(cases, -1) {}
  std::vector<double> time_us;  // the measured time; 0 when not measured or the case failed
  std::vector<double> seconds;  // wall seconds its measurement took (a failed case's too)
  std::vector<int> round;       // the round that measured it; -1: not measured

  bool measured(int k) const { return round[static_cast<std::size_t>(k)] >= 0; }
  bool failed(int k) const { return measured(k) && !(time_us[static_cast<std::size_t>(k)] > 0); }
  std::size_t count() const;
  double spent_s() const;
  // The measurements of the rounds before `round`: what that round's decision was made from.
  Measurements before_round(int round) const;
};

// What a case costs to measure, as arbench runs it: `warmup` eager iterations and `iters` timed ones of the
// case's time, plus a per-case overhead (buffers, setup, the correctness check, the ranks' agreements).
struct CostModel {
  int warmup = 5, iters = 20;
  int collectives_per_iteration = 1;  // --cuda-graph K: a timed iteration is a replay of K collectives
  double overhead_s = 0;
  double iterations_s(double time_us) const {
    return (warmup + static_cast<double>(iters) * collectives_per_iteration) * time_us * 1e-6;
  }
  double seconds(double time_us) const { return overhead_s + iterations_s(time_us); }
};

// The per-case overhead the measurements show: the median over the measured cases of what a case took beyond its
// iterations (0 before any). What arbench's cost model adds to each case's iterations.
double measured_overhead_s(const Measurements& measured, const CostModel& cost);

}  // namespace arfit::planner

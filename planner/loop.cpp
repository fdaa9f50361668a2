#include "planner/loop.h"

#include <algorithm>
#include <cmath>
#include <map>


namespace arfit::planner {

std::string to_string(StopReason reason) {
  switch (reason) {
    case StopReason::None: return "none";
    case StopReason::Exhausted: return "exhausted";
    case StopReason::Budget: return "budget";
    case StopReason::Regret: return "regret";
    case StopReason::Settled: return "settled";
  }
  return "?";
}

std::vector<int> seed_cases(const TargetTable& table) {
  // Per curve: its distinct sizes, then the anchors kept (smallest, middle), each with every case at that size.
  std::vector<std::pair<double, int>> seed;  // (size rank: 0 smallest, 1 middle; case) for the order below
  for (std::size_t c = 0; c < table.curves(); ++c) {
    const std::vector<int>& members = table.curve_cases(static_cast<int>(c));
    std::vector<double> sizes;
    for (int k : members) {
      const double b = table.cases()[static_cast<std::size_t>(k)].bytes;
      if (sizes.empty() || sizes.back() != b) sizes.push_back(b);
    }
    std::vector<std::size_t> anchors = {0};
    const auto upper = static_cast<std::size_t>(std::lround(0.75 * static_cast<double>(sizes.size() - 1)));
    if (upper > 0) anchors.push_back(upper);
    for (std::size_t r = 0; r < anchors.size(); ++r) {
      // The first case of the curve at that size (a shape grid has several shapes of one size).
      for (int k : members)
        if (table.cases()[static_cast<std::size_t>(k)].bytes == sizes[anchors[r]]) {
          seed.emplace_back(static_cast<double>(r), k);
          break;
        }
    }
  }
  std::stable_sort(seed.begin(), seed.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second < b.second;
  });
  std::vector<int> out;
  for (const auto& s : seed) out.push_back(s.second);
  return out;
}

namespace {

std::size_t round_size(std::size_t measured, double growth) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(growth * static_cast<double>(measured))));
}

}  // namespace

namespace {

LoopOptions with_overhead(const LoopOptions& options, const Measurements& m) {
  LoopOptions o = options;
  if (o.measure_overhead) o.cost.overhead_s = measured_overhead_s(m, o.cost);
  return o;
}

}  // namespace

RoundPlan plan_round(const TargetTable& table, const Measurements& all, const LoopOptions& given, int round) {
  RoundPlan plan;
  plan.round = round;
  const Measurements m = all.before_round(round);
  const LoopOptions options = with_overhead(given, m);
  const std::size_t measured = m.count();
  if (measured == table.size()) {
    plan.stop = StopReason::Exhausted;
    return plan;
  }
  const double spent = m.spent_s();
  if (spent >= options.budget_s) {
    plan.stop = StopReason::Budget;
    return plan;
  }
  if (round == 0) {
    for (int k : seed_cases(table))
      if (!m.measured(k)) plan.batch.push_back(k);
    // Seeds are measured in their own order (smallest sizes first): a budget that ends inside the seed has one size of
    // every curve rather than all of a few.
    if (!plan.batch.empty()) return plan;
  }
  plan.estimates = estimate_cases(table, m, options.estimate);
  plan.assessment = assess(table, plan.estimates, spike_risk(table, m));
  plan.assessed = true;
  if (options.until_regret > 0 && plan.assessment.geomean_regret_bound() <= options.until_regret) {
    plan.stop = StopReason::Regret;
    return plan;
  }
  BatchOptions bo;
  bo.cost = options.cost;
  bo.budget_left_s = options.budget_s - spent;
  bo.max_cases = round_size(measured, options.growth);
  bo.excluded = options.excluded;
  bo.fallback = options.estimate.fallback;
  const Batch b = choose_batch(table, plan.estimates, plan.assessment, bo);
  if (b.cases.empty()) {
    plan.stop = b.valuable_left ? StopReason::Budget : StopReason::Settled;
    return plan;
  }
  plan.batch = b.cases;
  std::sort(plan.batch.begin(), plan.batch.end());
  plan.predicted_s = b.predicted_s;
  return plan;
}

TableState table_state(const TargetTable& table, const Measurements& m, const LoopOptions& given) {
  const LoopOptions options = with_overhead(given, m);
  TableState s;
  s.estimates = estimate_cases(table, m, options.estimate);
  s.assessment = assess(table, s.estimates, spike_risk(table, m));
  for (std::size_t k = 0; k < table.size(); ++k)
    s.exhaustive_s += m.measured(static_cast<int>(k)) ? m.seconds[k] : options.cost.seconds(std::exp(s.estimates[k].log_us));
  return s;
}

}  // namespace arfit::planner

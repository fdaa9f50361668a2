#include "planner/loop.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/metrics.h"

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

namespace {

// How many cells each curve is a candidate in (a case in two cells counts twice).
std::vector<std::size_t> cells_per_curve(const TargetTable& table) {
  std::vector<std::size_t> n(table.curves(), 0);
  for (std::size_t c = 0; c < table.curves(); ++c)
    for (int k : table.curve_cases(static_cast<int>(c))) n[c] += table.cells_of(k).size();
  return n;
}

// A curve's distinct sizes, ascending (its cases are in size order).
std::vector<double> distinct_sizes(const TargetTable& table, int curve) {
  std::vector<double> sizes;
  for (int k : table.curve_cases(curve)) {
    const double b = table.cases()[static_cast<std::size_t>(k)].bytes;
    if (sizes.empty() || sizes.back() != b) sizes.push_back(b);
  }
  return sizes;
}

// A curve's first case at `bytes` (a shape grid has several shapes of one size); the curve has one there.
int first_case_at(const TargetTable& table, int curve, double bytes) {
  const std::vector<int>& members = table.curve_cases(curve);
  return *std::find_if(members.begin(), members.end(),
                       [&](int k) { return table.cases()[static_cast<std::size_t>(k)].bytes == bytes; });
}

}  // namespace

std::vector<int> seed_cases(const TargetTable& table) {
  // Per curve: its anchors (smallest, three quarters up), each with the first case at that size (a shape grid has
  // several shapes of one size).
  std::vector<std::pair<int, int>> seed;  // (anchor rank: 0 smallest, 1 three quarters up; case)
  for (std::size_t c = 0; c < table.curves(); ++c) {
    const std::vector<double> sizes = distinct_sizes(table, static_cast<int>(c));
    std::vector<std::size_t> anchors = {0};
    const auto upper = static_cast<std::size_t>(std::lround(0.75 * static_cast<double>(sizes.size() - 1)));
    if (upper > 0) anchors.push_back(upper);
    for (std::size_t r = 0; r < anchors.size(); ++r)
      seed.emplace_back(static_cast<int>(r), first_case_at(table, static_cast<int>(c), sizes[anchors[r]]));
  }
  std::stable_sort(seed.begin(), seed.end());
  std::vector<int> out;
  for (const auto& s : seed) out.push_back(s.second);
  return out;
}

namespace {

// Round 1, the seed's second stage: the largest size of each curve whose decisions per predicted second there are
// at least a seed anchor's (the median curve's cells per the median measured case's predicted seconds). Above its
// largest measured size a curve is known only within the physical bounds (flat to linear in the size), the widest
// interval of any, and every cell above its anchor three quarters up leans on that guess; a curve many cells depend
// on (a pair table's NCCL curve, which every custom curve is compared with) removes it from that many decisions
// with one case. Where a top is dear (a small per-case overhead: the top of a doubling sweep costs tens of seed
// anchors), or a curve is a candidate in no more cells than most, it is left to the loop's value per second; on a
// grid where every strategy is a candidate in every cell only a top as cheap as a typical anchor qualifies. Highest
// rate first, while the predicted costs fit in `budget_left_s`; never an `excluded` case.
Batch seed_tops(const TargetTable& table, const Measurements& m, const std::vector<CaseEstimate>& estimates,
                const CostModel& cost, double budget_left_s, const std::vector<bool>* excluded) {
  const std::vector<std::size_t> decisions = cells_per_curve(table);
  std::vector<std::size_t> sorted = decisions;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0.0 : static_cast<double>(sorted[(sorted.size() - 1) / 2]);
  // The measured cases' costs as the cost model puts them, so that both sides of the comparison are predictions.
  std::vector<double> anchor_s;
  for (std::size_t k = 0; k < table.size(); ++k)
    if (m.measured(static_cast<int>(k)) && !m.failed(static_cast<int>(k))) anchor_s.push_back(cost.seconds(m.time_us[k]));
  if (!(median > 0) || anchor_s.empty()) return Batch{};
  const double anchor_rate = median / size_median(anchor_s);  // a seed anchor's decisions per second
  std::vector<std::pair<double, int>> tops;                // (−decisions per second, case)
  for (std::size_t c = 0; c < table.curves(); ++c) {
    const int top_size_case = table.curve_cases(static_cast<int>(c)).back();  // cases in size order
    const int top = first_case_at(table, static_cast<int>(c), table.cases()[static_cast<std::size_t>(top_size_case)].bytes);
    if (m.measured(top) || (excluded && (*excluded)[static_cast<std::size_t>(top)])) continue;
    const double rate = static_cast<double>(decisions[c]) / cost.seconds(std::exp(estimates[static_cast<std::size_t>(top)].log_us));
    if (rate >= anchor_rate) tops.emplace_back(-rate, top);
  }
  std::sort(tops.begin(), tops.end());
  Batch out;
  for (const auto& [neg_rate, k] : tops) {
    const double s = cost.seconds(std::exp(estimates[static_cast<std::size_t>(k)].log_us));
    if (out.predicted_s + s <= budget_left_s) out.cases.push_back(k), out.predicted_s += s;
  }
  return out;
}

// The plan measuring `b`, in the grid's order (ascending case index).
RoundPlan with_batch(RoundPlan plan, const Batch& b) {
  plan.batch = b.cases;
  std::sort(plan.batch.begin(), plan.batch.end());
  plan.predicted_s = b.predicted_s;
  return plan;
}

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
  if (round == 1) {
    const Batch tops = seed_tops(table, m, plan.estimates, options.cost, options.budget_s - spent, options.excluded);
    if (!tops.cases.empty()) {
      plan.seed_tops = true;
      return with_batch(std::move(plan), tops);
    }
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
  return with_batch(std::move(plan), b);
}

SeedShare seed_share(const TargetTable& table, const Measurements& m, bool second_stage) {
  SeedShare share;
  share.anchors = seed_cases(table).size();
  for (std::size_t k = 0; k < table.size(); ++k) {
    if (!m.measured(static_cast<int>(k))) continue;
    if (m.round[k] == 0 || (second_stage && m.round[k] == 1)) {
      ++share.seed;
      share.seed_s += m.seconds[k];
    } else {
      ++share.chosen;
    }
  }
  return share;
}

bool round_one_was_second_stage(const TargetTable& table, const Measurements& m, const LoopOptions& options) {
  bool any = false;
  for (std::size_t k = 0; k < table.size() && !any; ++k) any = m.measured(static_cast<int>(k)) && m.round[k] == 1;
  return any && plan_round(table, m, options, 1).seed_tops;
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

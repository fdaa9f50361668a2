// planner/ on synthetic tables: two strategies' α-β curves that cross, every size a cell.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "codegen/table.h"
#include "fit/fit.h"
#include "fit/prior_check.h"
#include "fit/transfer.h"
#include "ingest/ingest.h"
#include "io/input_file.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "planner/choose.h"
#include "planner/estimate.h"
#include "planner/loop.h"
#include "planner/priors.h"
#include "test_support.h"

using namespace arfit;
using namespace arfit::planner;

namespace {

// t = α + bytes / β (µs, bytes per µs).
struct AlphaBeta {
  std::string strategy;
  double alpha_us, bytes_per_us;
  double at(double bytes) const { return alpha_us + bytes / bytes_per_us; }
};

// NCCL: 20 µs + 100 GB/s; ONESHOT: 4 µs + 40 GB/s. They cross at 16 µs / (1/40000 − 1/100000) µs/B ≈ 1.07 MB.
const AlphaBeta kNccl{"NCCL", 20, 100000}, kOneShot{"ONESHOT", 4, 40000};

struct Synthetic {
  TargetTable table;
  std::vector<double> truth;  // per case
};

// Sizes 256 B .. 256 MiB doubling (21), one cell per size with both strategies; case 2i is NCCL, 2i + 1 ONESHOT.
Synthetic synthetic(const std::vector<AlphaBeta>& curves = {kNccl, kOneShot}, int sizes = 21) {
  Synthetic s;
  std::vector<PlanCase> cases;
  std::vector<std::vector<int>> cells;
  for (int i = 0; i < sizes; ++i) {
    const double bytes = std::ldexp(256.0, i);
    std::vector<int> cell;
    for (const AlphaBeta& c : curves) {
      PlanCase pc;
      pc.curve.system = "synthetic";
      pc.curve.strategy = c.strategy;
      pc.curve.nranks = 8;
      pc.bytes = bytes;
      cell.push_back(static_cast<int>(cases.size()));
      cases.push_back(pc);
      s.truth.push_back(c.at(bytes));
    }
    cells.push_back(cell);
  }
  s.table = TargetTable(std::move(cases), std::move(cells));
  return s;
}

void measure(Measurements& m, const Synthetic& s, int k, int round, double seconds = 0.001) {
  m.time_us[static_cast<std::size_t>(k)] = s.truth[static_cast<std::size_t>(k)];
  m.seconds[static_cast<std::size_t>(k)] = seconds;
  m.round[static_cast<std::size_t>(k)] = round;
}

}  // namespace

TEST(PlannerTable, IndexesCurvesAndCellsAndRefusesBadCells) {
  const Synthetic s = synthetic();
  EXPECT_EQ(s.table.size(), 42u);
  EXPECT_EQ(s.table.curves(), 2u);
  EXPECT_EQ(s.table.curve_of(0), s.table.curve_of(2));
  EXPECT_NE(s.table.curve_of(0), s.table.curve_of(1));
  EXPECT_EQ(s.table.curve_cases(s.table.curve_of(1)).size(), 21u);
  EXPECT_EQ(s.table.cells_of(3), std::vector<int>{1});
  std::vector<PlanCase> one(1);
  one[0].bytes = 8;
  EXPECT_THROW(TargetTable(one, {{1}}), std::invalid_argument);
  EXPECT_THROW(TargetTable(one, {{}}), std::invalid_argument);
  one[0].bytes = 0;
  EXPECT_THROW(TargetTable(one, {{0}}), std::invalid_argument);
}

TEST(PlannerTable, OverheadIsWhatCasesTookBeyondTheirIterations) {
  Measurements m(3);
  CostModel cost;  // 5 + 20 iterations
  m.time_us = {100, 1000, 0};
  m.seconds = {0.0525, 0.075, 9.0};  // 2.5 ms + 50 ms; 25 ms + 50 ms; a failed case (no time) is not counted
  m.round = {0, 0, 0};
  EXPECT_NEAR(measured_overhead_s(m, cost), 0.05, 1e-12);
  EXPECT_EQ(measured_overhead_s(Measurements(2), cost), 0.0);
  Measurements later = m;
  later.round[1] = 3;
  EXPECT_EQ(later.before_round(3).count(), 2u);
  EXPECT_NEAR(later.before_round(3).spent_s(), 9.0525, 1e-12);
}

TEST(PlannerEstimate, FallbackPassesThroughItsSizesWithinThePhysicalBounds) {
  // Two measured sizes of an α-β curve: the line through them is the curve itself.
  const std::vector<double> x = {std::log(1024.0), std::log(1048576.0)};
  const std::vector<double> y = {std::log(kNccl.at(1024)), std::log(kNccl.at(1048576))};
  for (double bytes : {1024.0, 32768.0, 1048576.0, 67108864.0}) {
    const CaseEstimate e = fallback_estimate(x, y, std::log(bytes), FallbackRule{});
    EXPECT_NEAR(std::exp(e.log_us), kNccl.at(bytes), 1e-6 * kNccl.at(bytes)) << bytes;
    // Above the largest size: between its time and its time grown with the size (the interval's 90 % ends).
    if (bytes > 1048576) {
      EXPECT_NEAR(e.sigma, 0.5 * std::log(bytes / 1048576.0) / 1.6448536269514722, 1e-9);
    }
  }
  // One size: slope 1/2, the middle of [t, t·s/s0].
  const CaseEstimate one = fallback_estimate({std::log(1024.0)}, {std::log(10.0)}, std::log(4096.0), FallbackRule{});
  EXPECT_NEAR(std::exp(one.log_us), 20.0, 1e-9);
}

TEST(PlannerEstimate, MeasuredCasesAreCertainAndTheOthersPredicted) {
  const Synthetic s = synthetic();
  Measurements m(s.table.size());
  for (int i : {0, 5, 10, 15, 20}) {
    measure(m, s, 2 * i, 0);
    measure(m, s, 2 * i + 1, 0);
  }
  const std::vector<CaseEstimate> e = estimate_cases(s.table, m);
  EXPECT_TRUE(e[0].measured);
  EXPECT_EQ(e[0].sigma, 0.0);
  EXPECT_NEAR(std::exp(e[0].log_us), s.truth[0], 1e-12);
  // Five sizes of a smooth curve: fitted, and close in between.
  EXPECT_TRUE(e[2 * 7].fitted);
  EXPECT_GT(e[2 * 7].sigma, 0.0);
  EXPECT_NEAR(std::exp(e[2 * 7].log_us) / s.truth[2 * 7], 1.0, 0.1);
}

TEST(PlannerEstimate, ASpikeIsItsOwnMeasurementAndLeavesItsCurvesModelAlone) {
  const Synthetic s = synthetic();
  // Both strategies at sizes 0, 3, ..., 18: fitted. Then the same with size 6's ONESHOT (odd cases; 4.4 µs, in the
  // latency range) three times slower, above both its measured neighbours.
  Measurements clean(s.table.size());
  for (int i = 0; i <= 18; i += 3) {
    measure(clean, s, 2 * i, 0);
    measure(clean, s, 2 * i + 1, 0);
  }
  Measurements spiked = clean;
  spiked.time_us[2 * 6 + 1] *= 3;
  Measurements without = clean;  // size 6 of ONESHOT never measured
  without.round[2 * 6 + 1] = -1;
  without.time_us[2 * 6 + 1] = 0;
  const std::vector<CaseEstimate> e = estimate_cases(s.table, spiked), w = estimate_cases(s.table, without);
  EXPECT_TRUE(e[2 * 6 + 1].spike);
  EXPECT_TRUE(e[2 * 6 + 1].measured);
  EXPECT_NEAR(std::exp(e[2 * 6 + 1].log_us), 3 * s.truth[2 * 6 + 1], 1e-9);
  EXPECT_FALSE(e[2 * 9 + 1].spike);
  EXPECT_FALSE(estimate_cases(s.table, clean)[2 * 6 + 1].spike);
  for (int i : {4, 5, 7, 8, 10}) {
    EXPECT_NEAR(e[2 * i + 1].log_us, w[2 * i + 1].log_us, 1e-12) << i;
    EXPECT_NEAR(e[2 * i + 1].sigma, w[2 * i + 1].sigma, 1e-12) << i;
  }
  // A curve read from its sizes alone (three of them, one a spike): the fallback goes through the other two.
  Measurements few(s.table.size());
  for (int i : {0, 6, 9}) measure(few, s, 2 * i + 1, 0);
  few.time_us[2 * 6 + 1] *= 3;
  const std::vector<CaseEstimate> f = estimate_cases(s.table, few);
  const CaseEstimate line = fallback_estimate({std::log(256.0), std::log(std::ldexp(256.0, 9))},
                                              {std::log(s.truth[1]), std::log(s.truth[2 * 9 + 1])},
                                              std::log(std::ldexp(256.0, 5)), FallbackRule{});
  EXPECT_TRUE(f[2 * 6 + 1].spike);
  EXPECT_NEAR(f[2 * 5 + 1].log_us, line.log_us, 1e-12);
}

TEST(PlannerAssess, SpikeRiskIsMeasuredOnNeighboursAndRaisesUnmeasuredChoicesOnly) {
  const Synthetic s = synthetic();
  Measurements m(s.table.size());
  // NCCL at sizes 0..6 (adjacent: 5 inner sizes and the smallest tested), size 3 10 % above both neighbours; ONESHOT
  // at sizes 0, 10, 20 (no two adjacent: nothing to test).
  for (int i = 0; i <= 6; ++i) measure(m, s, 2 * i, 0);
  m.time_us[2 * 3] = 1.1 * std::max(s.truth[2 * 2], s.truth[2 * 4]);
  for (int i : {0, 10, 20}) measure(m, s, 2 * i + 1, 0);
  const SpikeRisk r = spike_risk(s.table, m);
  EXPECT_EQ(r.tested, 6);
  EXPECT_EQ(r.spikes, 1);
  EXPECT_NEAR(r.rate, 2.0 / 8.0, 1e-12);
  ASSERT_EQ(r.rises.size(), 1u);
  EXPECT_NEAR(r.rises[0], std::log(1.1), 1e-9);
  // Nothing seen, no risk.
  Measurements smooth(s.table.size());
  for (int i = 0; i <= 6; ++i) measure(smooth, s, 2 * i, 0);
  EXPECT_EQ(spike_risk(s.table, smooth).rate, 0.0);
  EXPECT_TRUE(spike_risk(s.table, smooth).rises.empty());
  EXPECT_EQ(spike_risk(s.table, smooth).tested, 6);

  const Synthetic two = synthetic({kNccl, kOneShot}, 2);
  std::vector<CaseEstimate> e(4);
  e[0].log_us = std::log(10.0), e[0].sigma = 0.05;  // cell 0: an unmeasured choice, 5 % ahead
  e[1].log_us = std::log(10.5), e[1].sigma = 0.05;
  e[2].log_us = std::log(40.0), e[2].measured = true;  // cell 1: a measured choice
  e[3].log_us = std::log(42.0), e[3].sigma = 0.05;
  const Assessment plain = assess(two.table, e), risky = assess(two.table, e, r);
  EXPECT_GT(risky.cells[0].expected_regret, plain.cells[0].expected_regret);
  const double gap = std::log(1.05), sd = std::hypot(0.05, 0.05);
  EXPECT_NEAR(risky.cells[0].expected_regret,
              0.75 * codegen::expected_shortfall(gap, sd) + 0.25 * codegen::expected_shortfall(gap - std::log(1.1), sd), 1e-12);
  EXPECT_EQ(risky.cells[1].expected_regret, plain.cells[1].expected_regret);
  EXPECT_GT(risky.geomean_regret_bound(), plain.geomean_regret_bound());
}

TEST(PlannerAssess, ExpectedRegretIsTheTablesShortfallAndZeroWhenMeasured) {
  const Synthetic s = synthetic({kNccl, kOneShot}, 2);
  std::vector<CaseEstimate> e(4);
  e[0].log_us = std::log(10.0), e[0].sigma = 0.1;   // cell 0: NCCL 10 µs ± 0.1
  e[1].log_us = std::log(11.0), e[1].sigma = 0.2;   // ONESHOT 11 µs ± 0.2
  e[2].log_us = std::log(50.0), e[2].measured = true;  // cell 1: both measured
  e[3].log_us = std::log(40.0), e[3].measured = true;
  const Assessment a = assess(s.table, e);
  EXPECT_EQ(a.cells[0].choice, 0);
  EXPECT_NEAR(a.cells[0].expected_regret, codegen::expected_shortfall(std::log(1.1), std::hypot(0.1, 0.2)), 1e-12);
  EXPECT_TRUE(a.cells[0].uncertain);
  EXPECT_EQ(a.cells[1].choice, 3);
  EXPECT_EQ(a.cells[1].expected_regret, 0.0);
  EXPECT_FALSE(a.cells[1].uncertain);
  EXPECT_NEAR(a.mean_expected_regret, a.cells[0].expected_regret / 2, 1e-12);
  EXPECT_GT(a.geomean_regret_bound(), a.expected_geomean_regret());
  EXPECT_EQ(a.worst_cell(), 0);
  // A failed candidate is no candidate.
  e[0].failed = e[0].measured = true;
  EXPECT_EQ(assess(s.table, e).cells[0].choice, 1);
}

TEST(PlannerChoose, ValueFollowsTheUncertainDecisionsAndTheBatchKeepsItsBudget) {
  const Synthetic s = synthetic();
  Measurements m(s.table.size());
  for (int k : {0, 1, 30, 31}) measure(m, s, k, 0);  // sizes 0 and 15, both strategies
  const std::vector<CaseEstimate> e = estimate_cases(s.table, m);
  const Assessment a = assess(s.table, e);
  const std::vector<double> v = measurement_values(s.table, e, a);
  EXPECT_EQ(v[0], 0.0);   // measured
  EXPECT_EQ(v[31], 0.0);
  // The crossover (~1 MB, size index 12) is where the choice is in doubt; the smallest sizes are settled.
  EXPECT_GT(v[2 * 12 + 1], v[2 * 1 + 1]);
  BatchOptions bo;
  bo.cost.overhead_s = 0.01;
  bo.max_cases = 40;
  bo.budget_left_s = 0.035;  // three cases' overhead and a little
  const Batch b = choose_batch(s.table, e, a, bo);
  ASSERT_FALSE(b.cases.empty());
  EXPECT_LE(b.predicted_s, 0.035);
  EXPECT_TRUE(b.valuable_left);
  std::set<int> chosen(b.cases.begin(), b.cases.end());
  EXPECT_EQ(chosen.size(), b.cases.size());
  for (int k : b.cases) EXPECT_FALSE(m.measured(k));
  // A case comes with the other candidate of its cell when it fits: the first pick and its mate, then one more pick
  // whose mate would pass the budget.
  ASSERT_EQ(b.cases.size(), 3u);
  EXPECT_EQ(b.cases[1], b.cases[0] ^ 1);
}

TEST(PlannerLoop, SeedIsTheSmallestAndThreeQuartersUpOfEveryCurve) {
  const Synthetic s = synthetic();
  const std::vector<int> seed = seed_cases(s.table);
  EXPECT_EQ(seed, (std::vector<int>{0, 1, 30, 31}));  // sizes 0 and round(0.75 · 20) = 15, smallest first
  const RoundPlan r0 = plan_round(s.table, Measurements(s.table.size()), LoopOptions{}, 0);
  EXPECT_EQ(r0.batch, (std::vector<int>{0, 1, 30, 31}));
  EXPECT_FALSE(r0.assessed);
}

// A pair table: one NCCL curve compared with each of four custom curves (cell 21·j + i: custom j against NCCL at size
// i); case 0..20 are NCCL's, then each custom curve's 21.
Synthetic shared_nccl_pairs() {
  Synthetic s;
  std::vector<PlanCase> cases;
  const auto add = [&](const AlphaBeta& c, double bytes) {
    PlanCase pc;
    pc.curve.system = "synthetic";
    pc.curve.strategy = c.strategy;
    pc.curve.nranks = 8;
    pc.bytes = bytes;
    cases.push_back(pc);
    s.truth.push_back(c.at(bytes));
  };
  for (int i = 0; i < 21; ++i) add(kNccl, std::ldexp(256.0, i));
  std::vector<std::vector<int>> cells;
  for (int j = 0; j < 4; ++j) {
    const AlphaBeta custom{"CUSTOM" + std::to_string(j), 3.0 + j, 30000.0 + 5000.0 * j};
    for (int i = 0; i < 21; ++i) {
      cells.push_back({i, static_cast<int>(cases.size())});
      add(custom, std::ldexp(256.0, i));
    }
  }
  s.table = TargetTable(std::move(cases), std::move(cells));
  return s;
}

TEST(PlannerLoop, SecondStageMeasuresTheTopOfACurveManyCellsShareWhereItIsCheap) {
  const Synthetic pairs = shared_nccl_pairs();
  Measurements m(pairs.table.size());
  for (int k : seed_cases(pairs.table)) measure(m, pairs, k, 0);
  ASSERT_EQ(m.count(), 10u);
  LoopOptions overhead_bound;  // 100 ms a case: NCCL's top costs about what an anchor does, for four times the cells
  overhead_bound.cost.overhead_s = 0.1;
  overhead_bound.until_regret = 1e-6;
  const RoundPlan second = plan_round(pairs.table, m, overhead_bound, 1);
  EXPECT_EQ(second.batch, std::vector<int>{20});
  EXPECT_TRUE(second.assessed);
  EXPECT_NEAR(second.predicted_s, overhead_bound.cost.seconds(std::exp(second.estimates[20].log_us)), 1e-12);
  // Later rounds choose by value per second alone (round 1 of the same measurements less what only round 1 does).
  EXPECT_NE(plan_round(pairs.table, m, overhead_bound, 2).batch, second.batch);
  // No budget left for it: the loop chooses by value as in any round.
  LoopOptions short_budget = overhead_bound;
  short_budget.budget_s = m.spent_s() + 0.05;
  EXPECT_EQ(plan_round(pairs.table, m, short_budget, 1).batch, plan_round(pairs.table, m, short_budget, 2).batch);
  // 1 ms a case: the top of a doubling sweep costs tens of anchors, more than its cells are worth at an anchor's rate.
  LoopOptions iteration_bound = overhead_bound;
  iteration_bound.cost.overhead_s = 0.001;
  EXPECT_EQ(plan_round(pairs.table, m, iteration_bound, 1).batch, plan_round(pairs.table, m, iteration_bound, 2).batch);
  // Every curve a candidate in every cell: no top is worth more than an anchor, whatever the overhead.
  const Synthetic grid = synthetic();
  Measurements g(grid.table.size());
  for (int k : seed_cases(grid.table)) measure(g, grid, k, 0);
  EXPECT_EQ(plan_round(grid.table, g, overhead_bound, 1).batch, plan_round(grid.table, g, overhead_bound, 2).batch);
}

TEST(PlannerLoop, SeedShareCountsTheSeedsRoundsAndWhatTheLoopChose) {
  const Synthetic pairs = shared_nccl_pairs();
  Measurements m(pairs.table.size());
  for (int k : seed_cases(pairs.table)) measure(m, pairs, k, 0, 0.5);
  LoopOptions overhead_bound;  // round 1 is the seed's second stage: NCCL's top (the test above)
  overhead_bound.cost.overhead_s = 0.1;
  overhead_bound.until_regret = 1e-6;
  EXPECT_FALSE(round_one_was_second_stage(pairs.table, m, overhead_bound));  // nothing measured in round 1 yet
  const RoundPlan second = plan_round(pairs.table, m, overhead_bound, 1);
  ASSERT_TRUE(second.seed_tops);
  for (int k : second.batch) measure(m, pairs, k, 1, 0.25);
  measure(m, pairs, 30, 2, 0.125);
  // Decided again from round 0's rows, as a resumed run decides.
  EXPECT_TRUE(round_one_was_second_stage(pairs.table, m, overhead_bound));
  const SeedShare share = seed_share(pairs.table, m, true);
  EXPECT_EQ(share.anchors, 10u);
  EXPECT_EQ(share.seed, 10u + second.batch.size());
  EXPECT_DOUBLE_EQ(share.seed_s, 10 * 0.5 + 0.25 * static_cast<double>(second.batch.size()));
  EXPECT_EQ(share.chosen, 1u);
  // Where round 1 chose by value (1 ms a case: the top is dear), its cases were the loop's choice.
  LoopOptions iteration_bound = overhead_bound;
  iteration_bound.cost.overhead_s = 0.001;
  EXPECT_FALSE(round_one_was_second_stage(pairs.table, m, iteration_bound));
  EXPECT_EQ(seed_share(pairs.table, m, false).chosen, 1u + second.batch.size());
  EXPECT_EQ(seed_share(pairs.table, Measurements(pairs.table.size()), false).seed, 0u);
}

TEST(PlannerLoop, StopRules) {
  const Synthetic s = synthetic();
  Measurements all(s.table.size());
  for (std::size_t k = 0; k < s.table.size(); ++k) measure(all, s, static_cast<int>(k), 0);
  EXPECT_EQ(plan_round(s.table, all, LoopOptions{}, 1).stop, StopReason::Exhausted);
  Measurements seed(s.table.size());
  for (int k : seed_cases(s.table)) measure(seed, s, k, 0, 1.0);
  LoopOptions spent;
  spent.budget_s = 4.0;
  EXPECT_EQ(plan_round(s.table, seed, spent, 1).stop, StopReason::Budget);
  LoopOptions lax;
  lax.until_regret = 0.99;
  EXPECT_EQ(plan_round(s.table, seed, lax, 1).stop, StopReason::Regret);
  LoopOptions strict;
  strict.until_regret = 1e-6;
  const RoundPlan go = plan_round(s.table, seed, strict, 1);
  EXPECT_EQ(go.stop, StopReason::None);
  EXPECT_TRUE(go.assessed);
  EXPECT_EQ(go.batch.size(), 2u);  // a quarter of 4 measured: one case, and the other candidate of its cell
}

TEST(PlannerLoop, ARoundIsDecidedFromTheRoundsBeforeItAlone) {
  const Synthetic s = synthetic();
  LoopOptions o;
  o.until_regret = 1e-6;
  Measurements m(s.table.size());
  for (int k : seed_cases(s.table)) measure(m, s, k, 0);
  const RoundPlan first = plan_round(s.table, m, o, 1);
  ASSERT_FALSE(first.batch.empty());
  // Round 1 measured (part of) its batch, and a later round more: round 1's decision is unchanged, as a resumed run
  // decides it again.
  measure(m, s, first.batch.front(), 1);
  measure(m, s, 40, 2);
  const RoundPlan again = plan_round(s.table, m, o, 1);
  EXPECT_EQ(again.batch, first.batch);
  EXPECT_EQ(again.assessment.mean_expected_regret, first.assessment.mean_expected_regret);
  // Round 2 sees round 1's measurement.
  EXPECT_NE(plan_round(s.table, m, o, 2).assessment.mean_expected_regret, first.assessment.mean_expected_regret);
}

TEST(PlannerLoop, LoopReachesItsPromiseOnASmoothTable) {
  const Synthetic s = synthetic();
  LoopOptions o;
  o.until_regret = 0.005;
  o.cost.overhead_s = 0.001;
  Measurements m(s.table.size());
  int round = 0;
  for (StopReason why = StopReason::None; why == StopReason::None; ++round) {
    const RoundPlan p = plan_round(s.table, m, o, round);
    why = p.stop;
    for (int k : p.batch) measure(m, s, k, round);
    ASSERT_LT(round, 100);
  }
  const TableState st = table_state(s.table, m, o);
  EXPECT_LE(st.assessment.geomean_regret_bound(), 0.005);
  // The table the estimates choose, against the truth: within the promise, and without measuring everything.
  double log_sum = 0;
  for (std::size_t i = 0; i < s.table.cells().size(); ++i) {
    const int c = st.assessment.cells[i].choice;
    const double best = std::min(s.truth[2 * i], s.truth[2 * i + 1]);
    log_sum += std::log(s.truth[static_cast<std::size_t>(c)] / best);
  }
  EXPECT_LE(std::expm1(log_sum / 21), 0.005);
  EXPECT_LT(m.count(), s.table.size());
}

namespace {

// An all-reduce curve of the machine `system` at 8 GPUs, 1 KiB to 64 MiB, α-β with `alpha_us`.
SampleFile curve_file(const std::string& system, double alpha_us) {
  SampleFile f;
  for (int e = 10; e <= 26; ++e) {
    Sample s;
    s.nranks = 8;
    s.bytes = std::int64_t{1} << e;
    s.time_us = alpha_us + std::ldexp(1.0, e) / 2e5;
    s.source = system;
    s.extra["system"] = system;
    f.samples.push_back(s);
  }
  return f;
}

// The message fit::PriorOfOwnMeasurements carries when load_prior_library refuses `paths`, else "".
std::string refusal_of(const std::vector<std::string>& paths, const fit::OwnMeasurements& own) {
  try {
    load_prior_library(paths, own);
  } catch (const fit::PriorOfOwnMeasurements& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// `arbench --plan adaptive --prior`: a prior is another machine, as for arfit fit and predict (fit/prior_check.h). The
// run's own output (the file a --resume continues), a renamed copy of it, a models file fitted from a copy and a file
// holding some of the rows a --resume continues are refused; another machine's file lends.
TEST(PriorLibrary, TheRunsOwnOutputIsNoPrior) {
  arfit::testing::TempDir d;
  const std::string out = d.file("out.csv"), copy = d.file("copy.csv"), other = d.file("other.csv"), models = d.file("copy.json");
  write_samples_csv(out, curve_file("box", 10));
  write_samples_csv(copy, curve_file("box", 10));
  write_samples_csv(other, curve_file("cluster", 14));
  fit::fit_model_set(ingest::load_samples({copy}), fit::FitOptions{}, {copy}).save(models);
  const fit::OwnMeasurements own =
      fit::own_measurements_of_samples("this run", "the output of this run", {{out, input_fingerprint(out)}}, {});
  EXPECT_EQ(refusal_of({out}, own), out + " is also the output of this run; a prior is another machine's file");
  EXPECT_EQ(refusal_of({copy}, own), copy + " is the same file as " + out + ", the output of this run; a prior is another machine's file");
  EXPECT_EQ(refusal_of({other, models}, own),
            models + " was fitted from " + copy + ", the same file as " + out + ", the output of this run; a prior is another machine's file");
  EXPECT_EQ(refusal_of({other}, own), "");
  EXPECT_FALSE(load_prior_library({other}, own)->sources().empty());
  // The rows a --resume continues: a prior holding some of them in another file (cut: another fingerprint) is refused.
  SampleFile part = curve_file("box", 10);
  part.samples.erase(part.samples.begin(), part.samples.begin() + 3);
  const std::string part_path = d.file("part.csv");
  write_samples_csv(part_path, part);
  const fit::OwnMeasurements resumed =
      fit::own_measurements_of_samples("this run", "the output of this run", {{out, input_fingerprint(out)}}, ingest::load_samples({out}));
  EXPECT_NE(refusal_of({part_path}, resumed).find(part_path + " holds 14 measurement(s) of box/allreduce/NCCL"), std::string::npos);
  EXPECT_EQ(refusal_of({other}, resumed), "");
}

// --plan adaptive without MPI: its options, the target table of a planned grid, and a journal's rows read back.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "bench/adaptive.h"
#include "bench/options.h"
#include "bench/plan.h"
#include "bench/reporter.h"
#include "bench_options_helpers.h"
#include "model/errors.h"

using namespace arfit;
using namespace arfit::bench;
using arfit::bench::testing::offending_option;
using arfit::bench::testing::parse;

namespace {

const std::vector<std::string> kGrid = {"--backend", "host", "--tokens", "1:16", "--hidden", "256,1024", "--fusion",
                                        "NONE,RESIDUAL_RMS_NORM", "-o", "x.csv"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> args = kGrid;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

PlannedGrid planned(const Options& o) {
  GridSpec spec = o.spec;
  PlanOptions po;
  po.limits.world = 2;
  po.limits.workspace = o.workspace;
  return plan_cases(spec, po, nullptr);
}

}  // namespace

TEST(BenchAdaptive, OptionsAreReadStrictlyAndOnlyWithTheAdaptivePlan) {
  Options o = parse(with({"--plan", "adaptive", "--budget", "90s", "--until-regret", "0.5%"}));
  EXPECT_EQ(o.spec.plan.kind, Plan::Kind::Adaptive);
  EXPECT_EQ(o.spec.plan.to_string(), "adaptive");
  EXPECT_EQ(o.adaptive.budget_s, 90.0);
  EXPECT_DOUBLE_EQ(o.adaptive.until_regret, 0.005);
  // No stop rule given: the default promise of 1 %.
  EXPECT_DOUBLE_EQ(parse(with({"--plan", "adaptive"})).adaptive.until_regret, kDefaultUntilRegret);
  // A budget alone: no regret rule.
  Options b = parse(with({"--plan", "adaptive", "--budget", "2min"}));
  EXPECT_EQ(b.adaptive.until_regret, 0.0);
  EXPECT_EQ(b.adaptive.budget_s, 120.0);
  for (const auto& [args, option] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--plan", "adaptive", "--budget", "60"}, "--budget"},        // no unit
           {{"--plan", "adaptive", "--budget", "0s"}, "--budget"},        // no time
           {{"--plan", "adaptive", "--budget", "1e2s"}, "--budget"},
           {{"--plan", "adaptive", "--until-regret", "0"}, "--until-regret"},
           {{"--plan", "adaptive", "--until-regret", "100"}, "--until-regret"},
           {{"--plan", "adaptive", "--until-regret", "-1"}, "--until-regret"},
           {{"--plan", "adaptive", "--prior", "/nonexistent/models.json"}, "--prior"},
           {{"--plan", "adaptive:2"}, "--plan"},
           {{"--budget", "60s"}, "--budget"},  // read by --plan adaptive only
           {{"--plan", "lattice:2", "--until-regret", "1"}, "--until-regret"},
       })
    EXPECT_EQ(offending_option(with(args)), option) << args[args.size() - 1];
}

TEST(BenchAdaptive, TheTableHasOneCellPerGridPointAndOneCurvePerStrategy) {
  // The three strategies that have both fusions (the multimem ones are NONE only: their cells would be smaller).
  const Options o = parse(with({"--plan", "adaptive", "--strategy", "MPI,ONESHOT,TWOSHOT"}));
  const PlannedGrid g = planned(o);
  ASSERT_EQ(g.cases.size(), 5u * 2u * 2u * 3u);  // tokens 1..16 x hidden 2 x fusions 2 x MPI/ONESHOT/TWOSHOT
  const planner::TargetTable t = target_table(g, "host", 1);
  EXPECT_EQ(t.size(), g.cases.size());
  EXPECT_EQ(t.cells().size(), 20u);
  EXPECT_EQ(t.curves(), 6u);  // strategy x fusion
  for (const auto& cell : t.cells()) {
    ASSERT_EQ(cell.size(), 3u);
    const Case& first = g.cases[static_cast<std::size_t>(cell[0])];
    for (int k : cell) {
      const Case& c = g.cases[static_cast<std::size_t>(k)];
      EXPECT_EQ(c.tokens, first.tokens);
      EXPECT_EQ(c.hidden, first.hidden);
      EXPECT_EQ(c.fusion, first.fusion);
    }
  }
}

TEST(BenchAdaptive, JournalRowsAreReadBackExactly) {
  const PlannedGrid g = planned(parse(with({"--plan", "adaptive"})));
  Sample a = sample_of_case(g.cases[3]);
  a.time_us = 12.345;
  a.extra["round"] = "2";
  a.extra["wall_s"] = "0.001234";
  Sample failed = sample_of_case(g.cases[5]);
  failed.status = SampleStatus::Failed;
  failed.extra["round"] = "0";
  failed.extra["wall_s"] = "60.000000";
  const planner::Measurements m = journal_measurements(g, {a, failed});
  EXPECT_EQ(m.count(), 2u);
  EXPECT_EQ(m.round[3], 2);
  EXPECT_EQ(m.time_us[3], 12.345);
  EXPECT_EQ(m.seconds[3], std::round(0.001234 * 1e6) / 1e6);  // what the runner recorded, to the bit
  EXPECT_TRUE(m.failed(5));
  // A row without its round is bad data naming the column.
  a.extra.erase("round");
  EXPECT_THROW(journal_measurements(g, {a}), InputError);
}

TEST(BenchAdaptive, ARoundLineSaysWhichStageOfTheSeedItIs) {
  const auto line = [](bool assessed, bool seed_tops, bool quiet = false) {
    std::ostringstream out;
    ConsoleRoundReporter reporter(out, quiet);
    RoundProgress p;
    p.round = seed_tops ? 1 : (assessed ? 2 : 0);
    p.batch = 3;
    p.planned = 40;
    p.budget_s = std::numeric_limits<double>::infinity();
    p.assessed = assessed;
    p.seed_tops = seed_tops;
    p.cells = 20;
    reporter.round(p);
    return out.str();
  };
  const std::string seed = line(false, false), tops = line(true, true), later = line(true, false);
  EXPECT_NE(seed.find("# round 0: 3 cases to measure (0 of 40 measured so far"), std::string::npos) << seed;
  EXPECT_NE(seed.find("the seed: the smallest size"), std::string::npos) << seed;
  EXPECT_NE(tops.find("cells uncertain"), std::string::npos) << tops;
  EXPECT_NE(tops.find("the seed's second stage"), std::string::npos) << tops;
  EXPECT_EQ(tops.find("the seed: "), std::string::npos) << tops;
  EXPECT_NE(later.find("cells uncertain"), std::string::npos) << later;
  EXPECT_EQ(later.find("seed"), std::string::npos) << later;
  EXPECT_EQ(line(true, true, true), "");
}

TEST(BenchAdaptive, TheStopReportSaysWhatTheSeedTookAndWhenTheBudgetLeftTheLoopNoChoice) {
  const auto report = [](std::size_t seed, std::size_t chosen, const std::string& reason) {
    std::ostringstream out;
    ConsoleRoundReporter reporter(out, true);  // quiet: the stop report still
    StopReport r;
    r.rounds = 2;
    r.why = "the measuring budget (--budget 1 s) is spent";
    r.measured = seed + chosen;
    r.planned = 40;
    r.seed_anchors = 12;
    r.seed_cases = seed;
    r.seed_s = 0.25;
    r.chosen_cases = chosen;
    r.reason = reason;
    reporter.stop(r);
    return out.str();
  };
  const std::string chose = report(12, 5, "budget"), seed_only = report(12, 0, "budget"), inside = report(7, 0, "budget"),
                    settled = report(12, 0, "settled");
  EXPECT_NE(chose.find("took 12 of the measured cases in 250 ms; the loop chose 5 by their value"), std::string::npos) << chose;
  EXPECT_EQ(chose.find("the budget ended"), std::string::npos) << chose;
  EXPECT_NE(seed_only.find("the budget ended before the loop could choose a case: the table is the seed's"),
            std::string::npos) << seed_only;
  EXPECT_NE(seed_only.find("well beyond the seed's 250 ms"), std::string::npos) << seed_only;
  EXPECT_NE(inside.find("the budget ended inside the seed (7 of its 12 anchors measured)"), std::string::npos) << inside;
  EXPECT_EQ(inside.find("before the loop could choose"), std::string::npos) << inside;
  // Stopped on a promise or with nothing left to change, a seed that sufficed is no warning.
  EXPECT_EQ(settled.find("the budget ended"), std::string::npos) << settled;
}

// The adaptive protocol on the public aiconfigurator tables (skips when the data folder is absent): every system's
// custom-vs-NCCL pairs as one arbench run, the adaptive plan against lattice, random and sparse plans at the same
// time budget, at 1 ms and 100 ms of per-case overhead; with the other systems as priors at 5 %; and the
// --until-regret promise. The figures these bounds guard are in docs/bench.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "ingest/ingest.h"
#include "planner/simulate.h"
#include "test_support.h"

using namespace arfit;
using namespace arfit::planner;

namespace {

const std::vector<Sample>* public_samples() {
  static const std::vector<Sample>* samples = [] () -> const std::vector<Sample>* {
    const std::string root = arfit::testing::public_data_dir();
    if (root.empty()) return nullptr;
    const std::filesystem::path dir = std::filesystem::path(root) / "aiconfigurator";
    if (!std::filesystem::is_directory(dir)) return nullptr;
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".txt") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    return new std::vector<Sample>(ingest::load_samples(files));
  }();
  return samples;
}

SimulationReport simulate(double budget, bool prior, double until_regret = 0, double noise = 0, int replicates = 1) {
  SimulationOptions o;
  o.budget_fraction = budget;
  o.prior = prior;
  o.until_regret = until_regret;
  o.noise = noise;
  o.replicates = replicates;
  o.threads = 2;
  const SimulationReport r = simulate_adaptive(*public_samples(), o);
  std::cout << format_simulation_report(r);
  return r;
}

// Adaptive against the fixed plans on every system: lower geometric-mean regret than `rivals`.
void expect_adaptive_ahead_on_every_system(const SimulationRun& run, const std::vector<std::string>& rivals, bool p95) {
  for (const auto& [system, plans] : run.systems)
    for (const std::string& rival : rivals) {
      EXPECT_LT(plans.at("adaptive").regret.geomean_regret, plans.at(rival).regret.geomean_regret)
          << system << " vs " << rival << " at " << run.overhead_s << " s";
      if (p95) {
        EXPECT_LT(plans.at("adaptive").regret.p95_regret, plans.at(rival).regret.p95_regret)
            << system << " vs " << rival << " at " << run.overhead_s << " s";
      }
    }
}

}  // namespace

TEST(AdaptiveData, TenPercentOfTheTimeAtBothOverheads) {
  if (!public_samples()) GTEST_SKIP() << "public data folder absent (ARFIT_PUBLIC_DATA_DIR)";
  const SimulationReport r = simulate(0.10, false);
  EXPECT_EQ(r.tables, 9);
  EXPECT_EQ(r.pairs, 191);
  EXPECT_EQ(r.cells, 4011);
  ASSERT_EQ(r.runs.size(), 2u);
  for (const SimulationRun& run : r.runs)
    for (const std::string& plan : r.plan_order) EXPECT_LE(run.plans.at(plan).time_fraction(), 0.10 + 1e-9) << plan;
  // 1 ms per case: the targets, and ahead of lattice and random on every system (measured when this test was
  // last changed: 1.0037 / p95 1.0057).
  const PlanScore& fast = r.runs[0].plans.at("adaptive");
  EXPECT_LE(fast.regret.geomean_regret, 1.01);
  EXPECT_LE(fast.regret.p95_regret, 1.03);
  expect_adaptive_ahead_on_every_system(r.runs[0], {"lattice", "random"}, true);
  // 100 ms per case: about two cases per curve for every plan. Both targets hold (1.0079 / p95 1.0284 when this test
  // was last changed) and both figures are below lattice's (1.0083 / 1.037) and random's; per system lattice is ahead
  // or equal on four (docs/bench.md says why), random on none.
  const PlanScore& slow = r.runs[1].plans.at("adaptive");
  EXPECT_LE(slow.regret.geomean_regret, 1.01);
  EXPECT_LE(slow.regret.p95_regret, 1.03);
  for (const char* rival : {"lattice", "random"}) {
    EXPECT_LT(slow.regret.geomean_regret, r.runs[1].plans.at(rival).regret.geomean_regret) << rival;
    EXPECT_LT(slow.regret.p95_regret, r.runs[1].plans.at(rival).regret.p95_regret) << rival;
  }
  expect_adaptive_ahead_on_every_system(r.runs[1], {"random"}, true);
}

TEST(AdaptiveData, FivePercentWithTheOtherSystemsAsPriors) {
  if (!public_samples()) GTEST_SKIP() << "public data folder absent (ARFIT_PUBLIC_DATA_DIR)";
  const SimulationReport r = simulate(0.05, true);
  ASSERT_EQ(r.runs.size(), 2u);
  // Measured when this test was last changed: 1.0039 / 1.0071 at 1 ms, 1.0089 / 1.0174 at 100 ms (lattice 1.0055 /
  // 1.011 and 1.0135 / 1.043); per system lattice is ahead on some (docs/bench.md), random on none.
  for (const SimulationRun& run : r.runs) {
    const PlanScore& a = run.plans.at("adaptive");
    EXPECT_LE(a.regret.geomean_regret, 1.01) << run.overhead_s;
    EXPECT_LE(a.regret.p95_regret, 1.03) << run.overhead_s;
    EXPECT_LE(a.time_fraction(), 0.05 + 1e-9);
    for (const char* rival : {"lattice", "random"}) {
      EXPECT_LT(a.regret.geomean_regret, run.plans.at(rival).regret.geomean_regret) << rival << " " << run.overhead_s;
      EXPECT_LT(a.regret.p95_regret, run.plans.at(rival).regret.p95_regret) << rival << " " << run.overhead_s;
    }
    expect_adaptive_ahead_on_every_system(run, {"random"}, true);
  }
}

// The promise, in every setting the docs report (R = 0.5, 1 and 2 %, and 1 % with priors; 1 ms and 100 ms): every
// system stops on the rule or measures everything, and of those that stop on it at least 90 % keep it, per run.
TEST(AdaptiveData, UntilRegretKeepsItsPromiseOnNineSystemsInTen) {
  if (!public_samples()) GTEST_SKIP() << "public data folder absent (ARFIT_PUBLIC_DATA_DIR)";
  for (const auto& [until, prior] : std::vector<std::pair<double, bool>>{{0.005, false}, {0.01, false}, {0.02, false}, {0.01, true}}) {
    const SimulationReport r = simulate(1.0, prior, until);
    for (const SimulationRun& run : r.runs) {
      const auto count = [&](const char* why) { return run.stops.count(why) ? run.stops.at(why) : 0; };
      EXPECT_EQ(count("regret") + count("exhausted"), r.tables) << until << " " << prior << " " << run.overhead_s;
      EXPECT_EQ(run.promise.stopped, count("regret"));
      EXPECT_GE(run.promise.kept, 0.9 * run.promise.stopped)
          << run.promise.kept << " of " << run.promise.stopped << " at R " << until << (prior ? " with priors" : "") << ", "
          << run.overhead_s << " s";
    }
  }
}

// The same under measurement noise: each plan sees every time off by 1 % (σ of ln t: the fit's floor, a measurement's
// repeatability), five draws pooled. At 1 ms the loop's lead holds (1.0042 / p95 1.008 against lattice 1.0078 /
// 1.028 over ten draws when this test was written); at 100 ms adaptive and lattice are level (1.0083 / 1.031 and
// 1.0087 / 1.041), both ahead of random; an exhaustive run's floor is 1.0003. The promise still holds for R = 1 %.
TEST(AdaptiveData, UnderOnePercentOfMeasurementNoise) {
  if (!public_samples()) GTEST_SKIP() << "public data folder absent (ARFIT_PUBLIC_DATA_DIR)";
  const SimulationReport r = simulate(0.10, false, 0, 0.01, 5);
  ASSERT_EQ(r.runs.size(), 2u);
  for (const SimulationRun& run : r.runs) {
    const PlanScore& a = run.plans.at("adaptive");
    EXPECT_EQ(a.regret.cells, 5 * r.cells);
    EXPECT_LE(a.regret.geomean_regret, 1.01) << run.overhead_s;
    EXPECT_LT(run.plans.at("exhaustive").regret.geomean_regret, a.regret.geomean_regret) << run.overhead_s;
    EXPECT_LT(a.regret.geomean_regret, run.plans.at("random").regret.geomean_regret) << run.overhead_s;
    EXPECT_LT(a.regret.p95_regret, run.plans.at("random").regret.p95_regret) << run.overhead_s;
  }
  const PlanScore& fast = r.runs[0].plans.at("adaptive");
  EXPECT_LE(fast.regret.p95_regret, 1.03);
  EXPECT_LT(fast.regret.geomean_regret, r.runs[0].plans.at("lattice").regret.geomean_regret);
  EXPECT_LT(fast.regret.p95_regret, r.runs[0].plans.at("lattice").regret.p95_regret);

  const SimulationReport promise = simulate(1.0, false, 0.01, 0.01, 3);
  for (const SimulationRun& run : promise.runs) {
    EXPECT_GT(run.promise.stopped, 0) << run.overhead_s;
    EXPECT_GE(run.promise.kept, 0.9 * run.promise.stopped) << run.promise.kept << " of " << run.promise.stopped << ", "
                                                            << run.overhead_s << " s";
  }
}

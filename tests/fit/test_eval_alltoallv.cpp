// `arfit eval --protocol alltoallv` (fit/eval_alltoallv.h): on synthetic all-to-allv whose latency is set by the
// busiest rank's bytes the protocol finds the true mode; groups without a uniform curve are reported; the CLI
// writes its table and JSON and fails with exit 1 when nothing can be predicted.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "fit/eval_alltoallv.h"
#include "model/alltoallv.h"
#include "model/errors.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

constexpr int kRanks = 4;

// The uniform all-to-all of 4 ranks: a latency floor and a bandwidth term with a gentle knee (µs, bytes).
double uniform_time(double bytes) { return 4.0 + bytes / 3000.0 + 2.0 * std::sqrt(bytes / 65536.0); }

Sample sample(Collective c, const std::string& system, double bytes, double time_us, const std::string& splits = "") {
  Sample s;
  s.collective = c;
  s.strategy = "MPI";
  s.dtype = "fp32";
  s.nranks = kRanks;
  s.bytes = static_cast<std::int64_t>(bytes);
  s.time_us = time_us;
  s.splits = splits;
  s.source = system + ".csv";
  s.extra["system"] = system;
  return s;
}

// Splits of 4 ranks whose modes differ: DLRM tables (uneven senders) and byte matrices where one or a few ranks
// receive most (uneven receivers), at sizes from 16 K to 512 K per rank.
std::vector<std::string> synthetic_splits() {
  std::vector<std::string> out;
  const std::vector<std::vector<int>> tables = {{1, 3, 5, 7}, {2, 2, 2, 10}, {4, 4, 4, 4}, {0, 6, 6, 4}, {9, 1, 3, 3}};
  for (int batch : {64, 256, 1024})
    for (const auto& t : tables)
      out.push_back(std::to_string(batch) + "," + std::to_string(t[0]) + "-" + std::to_string(t[1]) + "-" +
                    std::to_string(t[2]) + "-" + std::to_string(t[3]) + ",64");
  const std::vector<std::vector<double>> weights = {{0.7, 0.1, 0.1, 0.1}, {0.48, 0.24, 0.16, 0.12}, {0.4, 0.4, 0.1, 0.1}};
  for (double per_rank : {16384.0, 65536.0, 262144.0, 524288.0})
    for (const auto& w : weights) {
      std::vector<std::vector<std::int64_t>> m(kRanks);
      for (auto& row : m)
        for (double x : w) row.push_back(static_cast<std::int64_t>(per_rank * x));
      out.push_back(format_alltoallv_matrix(m));
    }
  return out;
}

// A system measured with the uniform curve (4 K .. 4 M) and all-to-allv timed by `truth`'s effective size.
std::vector<Sample> synthetic_system(const std::string& system, EffectiveMode truth) {
  std::vector<Sample> v;
  for (int e = 12; e <= 22; ++e) v.push_back(sample(Collective::AllToAll, system, std::ldexp(1.0, e), uniform_time(std::ldexp(1.0, e))));
  for (const std::string& s : synthetic_splits()) {
    const AllToAllvSplit sp = parse_alltoallv_split(s);
    v.push_back(sample(Collective::AllToAllV, system, effective_alltoall_bytes(sp, EffectiveMode::Sum),
                       uniform_time(effective_alltoall_bytes(sp, truth)), s));
  }
  return v;
}

fit::EvalOptions options() {
  fit::EvalOptions o;
  o.methods = fit::alltoallv_default_methods();
  o.keep_points = true;
  return o;
}

double gmae_percent(const fit::AllToAllvEval& r, const std::string& row) {
  const fit::EvalMethodResult* m = r.result.method(row);
  if (!m) throw std::runtime_error("no row " + row);
  return m->errors.gmae * 100;
}

}  // namespace

TEST(EvalAllToAllv, FindsTheBusiestRankModeWhenItSetsTheLatency) {
  for (EffectiveMode truth : {EffectiveMode::MaxOfSum, EffectiveMode::MaxOfMax}) {
    const std::string mode = to_string(truth);
    const fit::AllToAllvEval r = fit::eval_alltoallv(synthetic_system("box", truth), options());
    ASSERT_EQ(r.groups.size(), 1u);
    EXPECT_TRUE(r.groups[0].problem.empty()) << r.groups[0].problem;
    EXPECT_EQ(r.chosen_mode.at("box"), mode);
    // The true mode is predicted almost exactly by arfit's all-to-all model, the others miss.
    EXPECT_LT(gmae_percent(r, "auto:" + mode), 1.0) << mode;
    for (EffectiveMode other : all_effective_modes()) {
      if (other == truth) continue;
      EXPECT_GT(gmae_percent(r, "auto:" + to_string(other)), 3 * gmae_percent(r, "auto:" + mode)) << mode;
    }
    // arfit's automatic choice, over all samples and leaving each one out, picks the true mode for every sample.
    for (const char* row : {"auto", "auto-loo"}) {
      const fit::EvalMethodResult* chosen = r.result.method(row);
      ASSERT_NE(chosen, nullptr) << row;
      EXPECT_LT(chosen->errors.gmae * 100, 1.0) << mode << " " << row;
      EXPECT_EQ(chosen->errors.points, static_cast<int>(synthetic_splits().size()));
      for (const auto& p : chosen->points)
        EXPECT_NE(p.predicted.how.find("(mode " + mode + ")"), std::string::npos) << row << ": " << p.predicted.how;
      // Its interval carries the chosen mode's own scatter, so it covers the measured times.
      EXPECT_GE(chosen->coverage, 0.9) << mode << " " << row;
    }
    // Every mode of every method is reported.
    for (const char* method : {"auto", "seed", "seed-paper"})
      for (EffectiveMode m : all_effective_modes()) EXPECT_NE(r.result.method(std::string(method) + ":" + to_string(m)), nullptr);
  }
}

TEST(EvalAllToAllv, GroupsWithoutAUniformCurveAreReportedAndNothingPredictableFails) {
  std::vector<Sample> v = synthetic_system("box", EffectiveMode::MaxOfMax);
  // A second machine measured all-to-allv only.
  for (const std::string& s : synthetic_splits()) {
    const AllToAllvSplit sp = parse_alltoallv_split(s);
    v.push_back(sample(Collective::AllToAllV, "lonely", effective_alltoall_bytes(sp, EffectiveMode::Sum), 10.0, s));
  }
  const fit::AllToAllvEval r = fit::eval_alltoallv(v, options());
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.result.curves, 1);
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["protocol"], "alltoallv");
  bool saw_lonely = false;
  for (const auto& g : j["groups"])
    if (g["group"].get<std::string>().rfind("lonely/", 0) == 0) {
      saw_lonely = true;
      EXPECT_NE(g["status"].get<std::string>().find("no uniform all-to-all curve"), std::string::npos) << g.dump();
    } else {
      EXPECT_EQ(g["status"], "predicted");
      EXPECT_EQ(g["curve"], "box/alltoall/MPI/NONE/fp32/n4/N1");
    }
  EXPECT_TRUE(saw_lonely);
  EXPECT_NE(r.to_table().find("left out: no uniform all-to-all curve"), std::string::npos);
  EXPECT_EQ(j["chosen_mode"]["box"], "max_of_max");
  // Only the lonely machine: nothing qualifies, the error names its group.
  std::vector<Sample> lonely(v.end() - static_cast<std::ptrdiff_t>(synthetic_splits().size()), v.end());
  try {
    fit::eval_alltoallv(lonely, options());
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("lonely/alltoallv/MPI/NONE/fp32/n4/N1"), std::string::npos) << e.what();
  }
  // A split that does not parse, or that names another rank count, is bad data naming the column.
  std::vector<Sample> bad = synthetic_system("box", EffectiveMode::Sum);
  bad.back().splits = "12-x/3-4";
  EXPECT_THROW(fit::eval_alltoallv(bad, options()), InputError);
  bad.back().splits = "100-200";
  try {
    fit::eval_alltoallv(bad, options());
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "splits");
    EXPECT_NE(std::string(e.what()).find("2 ranks"), std::string::npos) << e.what();
  }
  fit::EvalOptions unknown = options();
  unknown.methods = {"auto", "nonsense"};
  EXPECT_THROW(fit::eval_alltoallv(synthetic_system("box", EffectiveMode::Sum), unknown), std::invalid_argument);
}

TEST(EvalAllToAllv, CommandLineWritesTheTableAndJsonAndFailsWhenNothingQualifies) {
  TempDir d;
  SampleFile f;
  f.samples = synthetic_system("box", EffectiveMode::MaxOfSum);
  write_samples_csv(d.file("a2av.csv"), f);
  auto r = run_command(arfit::testing::arfit_bin() + " eval " + d.file("a2av.csv") + " --protocol alltoallv --json " +
                       d.file("e.json") + " --points " + d.file("p.csv"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("auto:max_of_sum"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("seed-paper:max_of_max"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("chosen mode (lowest auto GMAE over all samples) for box: max_of_sum"), std::string::npos) << r.output;
  const nlohmann::json j = nlohmann::json::parse(arfit::testing::slurp(d.file("e.json")));
  EXPECT_LT(j["methods"]["auto"]["gmae"].get<double>(), 1.0);
  EXPECT_NE(arfit::testing::slurp(d.file("p.csv")).find("auto:max_of_sum,box/alltoallv"), std::string::npos);
  // --methods picks the predictors; unknown ones are a usage error.
  r = run_command(arfit::testing::arfit_bin() + " eval " + d.file("a2av.csv") + " --protocol alltoallv --methods loglog");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("loglog:sum"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("seed:sum"), std::string::npos) << r.output;
  r = run_command(arfit::testing::arfit_bin() + " eval " + d.file("a2av.csv") + " --protocol alltoallv --methods bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // All-to-allv without the uniform all-to-all: exit 1, saying why per group.
  SampleFile only;
  for (const Sample& s : f.samples)
    if (s.collective == Collective::AllToAllV) only.samples.push_back(s);
  write_samples_csv(d.file("only.csv"), only);
  r = run_command(arfit::testing::arfit_bin() + " eval " + d.file("only.csv") + " --protocol alltoallv");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("no uniform all-to-all curve of box MPI on 4 ranks"), std::string::npos) << r.output;
}

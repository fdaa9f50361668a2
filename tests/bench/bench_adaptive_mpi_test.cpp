// --plan adaptive end to end: `mpirun -np 2 arbench --backend host --plan adaptive`, killed mid-round and resumed.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/grid.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::CommandResult;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

std::string mpirun(const std::string& args) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=0 " +
         std::string(ARFIT_MPIEXEC) + " -np 2 " + ARBENCH_BIN + " " + args;
}

const std::string kAdaptive =
    "--backend host --tokens 1:1024:x4 --hidden 256 --fusion NONE,RESIDUAL_RMS_NORM -w 2 -n 8 --plan adaptive "
    "--until-regret 0.1";

// Each row's case -> its round; every case at most once.
std::map<std::string, int> rounds_by_case(const std::string& csv) {
  std::map<std::string, int> out;
  for (const Sample& s : read_samples_csv(csv).samples) {
    EXPECT_TRUE(out.emplace(bench::sample_key(s), std::stoi(s.extra.at("round"))).second) << "measured twice: " << bench::sample_key(s);
  }
  return out;
}

}  // namespace

TEST(BenchMpiAdaptive, KilledMidRoundAndResumedDecidesAsAnUninterruptedRun) {
  TempDir d;
  // An uninterrupted run: its rows are "the samples" the second run is given back (--test-replay).
  const std::string a = d.file("a.csv");
  const CommandResult whole = run_command(mpirun(kAdaptive + " -o " + a));
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  EXPECT_NE(whole.output.find("# round 0: "), std::string::npos) << whole.output;
  EXPECT_NE(whole.output.find("# round 1: "), std::string::npos) << whole.output;
  EXPECT_NE(whole.output.find("# adaptive plan stopped after"), std::string::npos) << whole.output;
  const std::map<std::string, int> reference = rounds_by_case(a);
  // Killed one case into the first later round of two cases or more: mid-round.
  std::map<int, int> per_round;
  for (const auto& [key, round] : reference) ++per_round[round];
  int crash_after = -1, counted = 0;
  for (const auto& [round, n] : per_round) {
    if (round >= 1 && n >= 2) {
      crash_after = counted + 1;
      break;
    }
    counted += n;
  }
  ASSERT_GT(crash_after, 0) << "no round of two cases to kill in:\n" << whole.output;
  const std::string b = d.file("b.csv");
  const std::string replay = " --test-replay " + a + " -o " + b;
  const CommandResult killed = run_command(mpirun(kAdaptive + replay + " -q --test-crash-after " + std::to_string(crash_after)));
  EXPECT_NE(killed.exit_code, 0);
  ASSERT_EQ(read_samples_csv(b + ".partial").samples.size(), static_cast<std::size_t>(crash_after));
  // Resumed (quietly: no round lines, the stop report still): the same cases in the same rounds, each once, and this
  // session measured only what the journal lacked.
  const CommandResult resumed = run_command(mpirun(kAdaptive + replay + " -q --resume --json " + d.file("b.json")));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(resumed.output.find("# round "), std::string::npos) << resumed.output;
  EXPECT_NE(resumed.output.find("# adaptive plan stopped after"), std::string::npos) << resumed.output;
  EXPECT_EQ(rounds_by_case(b), reference);
  const nlohmann::json summary = nlohmann::json::parse(arfit::testing::slurp(d.file("b.json")))["summary"];
  EXPECT_EQ(summary["measured"].get<std::size_t>(), reference.size() - static_cast<std::size_t>(crash_after));
  EXPECT_EQ(summary["resumed"].get<std::size_t>(), static_cast<std::size_t>(crash_after));
  // The timings are the replayed ones: the same table follows.
  const SampleFile fa = read_samples_csv(a), fb = read_samples_csv(b);
  std::map<std::string, double> times;
  for (const Sample& s : fa.samples) times[bench::sample_key(s)] = s.time_us;
  for (const Sample& s : fb.samples) EXPECT_EQ(s.time_us, times.at(bench::sample_key(s))) << bench::sample_key(s);
}

TEST(BenchMpiAdaptive, ABudgetStopsTheRunAndAResumeWithItsRowsFindsItSpent) {
  TempDir d;
  const std::string out = d.file("s.csv");
  const std::string grid = "--backend host --tokens 1:1024:x4 --hidden 256,1024 -w 2 -n 8 -q --plan adaptive";
  const CommandResult r = run_command(mpirun(grid + " --budget 50ms -o " + out + " --json " + d.file("s.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the measuring budget (--budget 50 ms) is spent"), std::string::npos) << r.output;
  const std::size_t rows = read_samples_csv(out).samples.size();
  EXPECT_LT(rows, 36u);
  // The JSON holds the rounds and the stop report: why, and what the seed took against what the loop chose.
  const nlohmann::json adaptive = nlohmann::json::parse(arfit::testing::slurp(d.file("s.json")))["adaptive"];
  EXPECT_EQ(adaptive["stop"]["reason"], "budget") << adaptive.dump();
  EXPECT_TRUE(adaptive["stop"]["budget_ended"].get<bool>());
  EXPECT_EQ(adaptive["stop"]["measured"].get<std::size_t>(), rows);
  EXPECT_EQ(adaptive["stop"]["seed"]["cases"].get<std::size_t>() + adaptive["stop"]["chosen_by_value"].get<std::size_t>(), rows);
  // 5 curves (the host strategies MPI, ONESHOT, TWOSHOT, MULTIMEM_ONESHOT, MULTIMEM_TWOSHOT), 2 sizes each
  EXPECT_EQ(adaptive["stop"]["seed"]["anchors"].get<std::size_t>(), 10u);
  ASSERT_FALSE(adaptive["rounds"].empty());
  EXPECT_EQ(adaptive["rounds"][0]["round"], 0);
  EXPECT_EQ(adaptive["rounds"][0]["budget_s"].get<double>(), 0.05);
  EXPECT_NE(r.output.find("the loop chose"), std::string::npos) << r.output;
  // The header says what the run was asked for; a resume with the same budget measures nothing more.
  EXPECT_NE(arfit::testing::slurp(out).find("# adaptive: budget 50 ms"), std::string::npos);
  const CommandResult again = run_command(mpirun(grid + " --budget 50ms -o " + out + " --resume"));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(read_samples_csv(out).samples.size(), rows);
  // A fixed plan's file cannot be resumed adaptively (its columns lack the rounds), and the other way round.
  const std::string fixed = d.file("fixed.csv");
  ASSERT_EQ(run_command(mpirun("--backend host --tokens 1:1024:x4 --hidden 256,1024 -w 2 -n 8 -q -o " + fixed)).exit_code, 0);
  const CommandResult refused = run_command(mpirun(grid + " --budget 50ms -o " + fixed + " --resume"));
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
}

// A prior is another machine (fit/prior_check.h), for arbench as for arfit: a copy of the output a --resume continues
// is refused (exit 2, the option and both files named), the output as it was and no journal left behind; so is a
// prior that is not measurements, before any journal is made. Another run's output lends.
TEST(BenchMpiAdaptive, APriorHoldingTheRunsOwnOutputIsRefusedLeavingNothing) {
  TempDir d;
  const std::string grid = "--backend host --tokens 1:256:x4 --hidden 256 -w 1 -n 2 -q --plan adaptive --until-regret 0.1";
  const std::string a = d.file("a.csv");
  ASSERT_EQ(run_command(mpirun(grid + " -o " + a)).exit_code, 0);
  const std::string before = arfit::testing::slurp(a);
  const std::string copy = d.write("copy.csv", before);
  const CommandResult resumed = run_command(mpirun(grid + " -o " + a + " --resume --prior " + copy));
  EXPECT_EQ(resumed.exit_code, 2) << resumed.output;
  EXPECT_NE(resumed.output.find("option --prior: " + copy + " is the same file as " + a + ", the output of this run"), std::string::npos)
      << resumed.output;
  EXPECT_EQ(arfit::testing::slurp(a), before);
  const std::string junk = d.write("junk.txt", "not measurements\n");
  EXPECT_EQ(run_command(mpirun(grid + " -o " + d.file("c.csv") + " --prior " + junk)).exit_code, 1);
  for (const auto& entry : std::filesystem::directory_iterator(d.path()))
    EXPECT_TRUE(entry.path().extension() != ".partial" && entry.path().filename() != "c.csv") << entry.path();
  const CommandResult lent = run_command(mpirun(grid + " -o " + d.file("b.csv") + " --prior " + a));
  EXPECT_EQ(lent.exit_code, 0) << lent.output;
}

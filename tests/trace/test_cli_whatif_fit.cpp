// arfit whatif end to end with a real model set: synthetic all-reduce curves at 8 ranks are fitted through
// fit::fit_model_set, saved as models.json, and the CLI must re-predict the profile's collectives with them.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "fit/fit.h"

#include "trace_test_util.h"

using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::TempDir;

namespace {

// Synthetic truth (alpha + bytes / bandwidth) for the two strategies the profile uses.
double nccl_us(double bytes) { return 8.0 + bytes / 50000.0; }
double oneshot_us(double bytes) { return 4.0 + bytes / 30000.0; }

std::vector<arfit::Sample> synthetic_samples() {
  std::vector<arfit::Sample> out;
  for (const char* strategy : {"NCCL", "ONESHOT"})
    for (int k = 10; k <= 26; ++k) {
      arfit::Sample s;
      s.collective = arfit::Collective::AllReduce;
      s.strategy = strategy;
      s.dtype = "bf16";
      s.nranks = 8;
      s.device = "synthetic-h100";
      s.sm = 90;
      s.bytes = std::int64_t{1} << k;
      s.time_us = std::string(strategy) == "NCCL" ? nccl_us(static_cast<double>(s.bytes)) : oneshot_us(static_cast<double>(s.bytes));
      s.iterations = 20;
      s.source = "synthetic";
      out.push_back(s);
    }
  return out;
}

std::vector<std::string> csv_row(const std::string& csv, const std::string& phase) {
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(phase + ",", 0) == 0) {
      std::vector<std::string> cells;
      std::stringstream ss(line);
      std::string c;
      while (std::getline(ss, c, ',')) cells.push_back(c);
      return cells;
    }
  return {};
}

}  // namespace

TEST(TraceWhatIfFit, RepredictsWithFittedModels) {
  TempDir dir;
  arfit::ModelSet models = arfit::fit::fit_model_set(synthetic_samples());
  std::string models_path = dir.file("models.json");
  models.save(models_path);
  std::string csv = dir.file("whatif.csv");
  // The LogitsProcessor's all-gather has no model in this set: fold it away.
  auto r = run_command(arfit::testing::arfit_bin() + " whatif " + trace_data("vllm_tp2_small.json") + " --models " + models_path +
                       " --tp 8 --hidden 2048 --fold LogitsProcessor -o " + csv);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("6 collective kernel entries recognised, 6 re-predicted"), std::string::npos) << r.output;

  // prefill: 512 tokens x 2048 x 2 bytes; two ONESHOT and two NCCL calls.
  double bytes = 512.0 * 2048 * 2;
  double expect = 2 * oneshot_us(bytes) + 2 * nccl_us(bytes);
  auto row = csv_row(slurp(csv), "prefill");
  ASSERT_EQ(row.size(), 11u) << slurp(csv);
  double measured_total = std::stod(row[2]), predicted = std::stod(row[4]), lo = std::stod(row[5]), hi = std::stod(row[6]);
  EXPECT_DOUBLE_EQ(measured_total, 684.0 - 9.0 + 9.0);  // folding keeps the time
  EXPECT_NEAR(predicted, expect, 0.05 * expect);
  EXPECT_LE(lo, predicted);
  EXPECT_GE(hi, predicted);
  EXPECT_NEAR(std::stod(row[8]), 100.0 * predicted / (684.0 - 90.0 + predicted), 0.02);

  // decode_2 records its NCCL all-reduce's shape [4, 2048]: 16 KiB per call.
  auto d2 = csv_row(slurp(csv), "decode_2");
  ASSERT_EQ(d2.size(), 11u);
  double d2_expect = 2 * oneshot_us(4.0 * 2048 * 2) + 2 * nccl_us(4.0 * 2048 * 2);
  EXPECT_NEAR(std::stod(d2[4]), d2_expect, 0.05 * d2_expect);

  // A collective the set has no model for (the all-gather) keeps its measured time; the run goes on.
  auto partial = run_command(arfit::testing::arfit_bin() + " whatif " + trace_data("vllm_tp2_small.json") + " --models " + models_path +
                             " --tp 8 --hidden 2048");
  EXPECT_EQ(partial.exit_code, 0) << partial.output;
  EXPECT_NE(partial.output.find("7 collective kernel entries recognised, 6 re-predicted"), std::string::npos) << partial.output;
  EXPECT_NE(partial.output.find("kept as measured: 1 without a model in the set"), std::string::npos) << partial.output;
  EXPECT_NE(partial.output.find("no curve for allgather/NCCL/NONE/bf16 n=8"), std::string::npos) << partial.output;
}

// The GUI export of a real-layout nsys summary (vLLM, Mixtral, expert parallel): --tokens alone sizes the
// collectives of its single phase; the u32 all-reduce is synchronisation, expert all-gather / reduce-scatter have
// no model in this set (nor has the custom two-stage all-reduce): all kept as measured.
TEST(TraceWhatIfFit, NsysGuiSummaryFromTokensAlone) {
  TempDir dir;
  std::string models_path = dir.file("models.json");
  arfit::fit::fit_model_set(synthetic_samples()).save(models_path);
  auto r = run_command(arfit::testing::arfit_bin() + " whatif " + trace_data("vllm_mixtral_ep4_a100_gui_kern_sum.csv") + " --models " +
                       models_path + " --tp 8 --hidden 4096 --tokens 256");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("5 collective kernel entries recognised, 1 re-predicted"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 synchronisation (not TP traffic)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 without a model in the set"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("uint32 all-reduce (an integer counter or flag)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allreduce/ONESHOT/NONE/bf16 n=8 bytes=2097152"), std::string::npos) << r.output;  // 256 x 4096 x 2
}

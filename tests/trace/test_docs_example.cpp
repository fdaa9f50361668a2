// The end-to-end example of docs/trace.md on the real public tables: a GUI-exported nsys kernel summary, models
// fitted on aiconfigurator's A100 NCCL (fp16) and vLLM custom all-reduce tables, what-if at TP=8. Skips when the
// public data folder is absent.
#include <gtest/gtest.h>

#include "trace_test_util.h"

using arfit::testing::run_command;

TEST(TraceDocsExample, GuiSummaryWhatIfWithAiconfiguratorA100Models) {
  const std::string data = arfit::testing::public_data_dir();
  if (data.empty()) GTEST_SKIP() << "public data folder absent";
  arfit::testing::TempDir dir;
  const std::string arfit = arfit::testing::arfit_bin(), models = dir.file("a100_models.json");
  auto fit = run_command(arfit + " fit " + data + "/aiconfigurator/aic_a100_sxm_nccl_2.27.3_nccl_perf.txt " + data +
                         "/aiconfigurator/aic_a100_sxm_vllm_0.14.0_custom_allreduce_perf.txt -o " + models);
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  const std::string whatif = arfit + " whatif " + trace_data("vllm_mixtral_ep4_a100_gui_kern_sum.csv") + " --models " + models +
                             " --tp 8 --hidden 4096 --tokens 256";
  auto r = run_command(whatif);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* line : {"5 collective kernel entries recognised, 2 re-predicted",
                           "kept as measured: 1 synchronisation (not TP traffic), 2 without a model in the set",
                           "no bf16 model: used fp16 (same element size)",
                           "reducescatter/NCCL/NONE/bf16 n=8 bytes=2097152",
                           "no curve for allreduce/ONESHOT/NONE/bf16 n=8",
                           "uint32 all-reduce (an integer counter or flag)"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\n" << r.output;
  auto nccl = run_command(whatif + " --strategy NCCL");
  ASSERT_EQ(nccl.exit_code, 0) << nccl.output;
  EXPECT_NE(nccl.output.find("5 collective kernel entries recognised, 4 re-predicted"), std::string::npos) << nccl.output;
  EXPECT_NE(nccl.output.find("24.9 [23.7, 26.2]"), std::string::npos) << nccl.output;  // the share the docs quote
}

// End-to-end: the arfit executable's breakdown and whatif commands on the hand-written inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "io/staging_folder.h"
#include "plots/gnuplot_runner.h"
#include "trace_test_util.h"

namespace fs = std::filesystem;
using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::TempDir;

namespace {

const char* kNoCollective = R"J({"context": {"model": "tiny", "batch_size": 1, "prompt_len": 8, "output_len": 1, "tensor_parallel_size": 1},
  "prefill": {"summary_stats": [
    {"entry": {"name": "Layer", "cuda_time_us": 30, "invocations": 1}, "children": [
      {"entry": {"name": "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "cuda_time_us": 20, "invocations": 1}},
      {"entry": {"name": "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)", "cuda_time_us": 10, "invocations": 1}}]}]},
  "decode_1": {"summary_stats": [
    {"entry": {"name": "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "cuda_time_us": 2, "invocations": 1}}]}})J";

// A models file fitted by `arfit fit` from a synthetic all-reduce curve (NCCL, 8 ranks), written into `dir`: whatif
// refuses one that holds no model, and the tests using this one ask nothing of it.
std::string fitted_models(const TempDir& dir) {
  std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (long b = 1024; b <= (1L << 24); b *= 2)
    csv += "allreduce,NCCL,NONE,bf16,8," + std::to_string(b) + "," + std::to_string(8 + static_cast<double>(b) / 5e4) + "\n";
  const std::string models = dir.file("models.json");
  const auto fit = run_command(arfit_cmd("fit " + dir.write("samples.csv", csv) + " -o " + models + " -q"));
  EXPECT_EQ(fit.exit_code, 0) << fit.output;
  return models;
}

}  // namespace

TEST(TraceCli, BreakdownWritesTablesAndFigures) {
  TempDir dir;
  std::string out = dir.file("out");
  bool figures = !arfit::plots::find_gnuplot().empty();
  auto r = run_command(arfit_cmd("breakdown " + trace_data("vllm_tp2_small.json") + " -o " + out + " --top 5 --decode-steps 1" +
                             (figures ? "" : " --no-figures")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string classes = slurp(out + "/breakdown_classes.csv");
  EXPECT_NE(classes.find("prefill,prefill,0,custom_ar_1stage,Custom AR 1-stage,1,30.000,4.39,2"), std::string::npos) << classes;
  EXPECT_NE(slurp(out + "/comm_share.csv").find("decode_1,decode,1,24.000,11.000,45.83"), std::string::npos);
  EXPECT_NE(slurp(out + "/unmatched_kernels.csv").find("sample_tokens_kernel"), std::string::npos);
  EXPECT_NE(r.output.find("1 kernel name(s) matched no classification rule"), std::string::npos) << r.output;
  std::string entries = slurp(out + "/breakdown_entries.csv");
  EXPECT_NE(entries.find(",others,"), std::string::npos);
  if (figures) {
    for (const char* f : {"breakdown_classes_prefill", "breakdown_classes_decode", "breakdown_entries_prefill",
                          "breakdown_entries_decode", "comm_share"}) {
      EXPECT_GT(fs::file_size(out + "/" + f + ".png"), 1000u) << f;
      EXPECT_TRUE(fs::exists(out + "/" + f + ".gp")) << f;
    }
    // --decode-steps 1: only the last decode step is drawn.
    std::string gp = slurp(out + "/breakdown_classes_decode.gp");
    EXPECT_NE(gp.find("decode 2"), std::string::npos);
    EXPECT_EQ(gp.find("decode 1"), std::string::npos);
  }
  // No staging leftovers.
  for (const auto& e : fs::directory_iterator(out)) EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
}

// Two runs writing into one folder at the same instant: the second waits for the folder's lock (held here, as the
// first run's commit holds it), moves nothing while it waits, then replaces the folder's files with its complete set.
TEST(TraceCli, BreakdownCommitsUnderTheFolderLock) {
  TempDir dir;
  const std::string out = dir.file("out");
  fs::create_directories(out);
  const std::vector<std::string> tables = {"breakdown_classes.csv", "breakdown_entries.csv", "comm_share.csv",
                                           "unmatched_kernels.csv"};
  for (const auto& t : tables) dir.write("out/" + t, "an earlier run\n");
  auto held = std::make_unique<arfit::OutputFolderLock>(out);
  const pid_t pid = arfit::testing::start_command(
      arfit_cmd("breakdown " + trace_data("vllm_tp2_small.json") + " -o " + out + " --no-figures"), dir.file("log"));
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(arfit::testing::wait_until_blocked_on_flock(pid)) << slurp(dir.file("log"));
  // Staged in full, committed not at all.
  const fs::path staging = fs::path(out) / (".arfit-breakdown.tmp." + std::to_string(pid));
  for (const auto& t : tables) {
    EXPECT_TRUE(fs::exists(staging / t)) << t;
    EXPECT_EQ(slurp(out + "/" + t), "an earlier run\n") << t;
  }
  held.reset();
  ASSERT_EQ(arfit::testing::exit_code_of(pid), 0) << slurp(dir.file("log"));
  for (const auto& t : tables) EXPECT_NE(slurp(out + "/" + t).find(','), std::string::npos) << t;
  EXPECT_NE(slurp(out + "/comm_share.csv").find("decode_1,decode,1,24.000,11.000,45.83"), std::string::npos);
  EXPECT_FALSE(fs::exists(staging));
}

TEST(TraceCli, ModuleLevelFoldAndUserRules) {
  TempDir dir;
  std::string rules = dir.write("rules.json", R"({"classes": [{"id": "sampling", "label": "Sampling"}],
                                                  "rules": [{"class": "sampling", "regex": "sample_tokens"}]})");
  auto r = run_command(arfit_cmd("breakdown " + trace_data("vllm_tp2_small.json") + " -o " + dir.file("o") +
                             " --no-figures --level module --top 0 --fold LogitsProcessor --rules " + rules));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string classes = slurp(dir.file("o/breakdown_classes.csv"));
  EXPECT_NE(classes.find("prefill,prefill,0,sampling,Sampling,0,3.000"), std::string::npos) << classes;
  EXPECT_NE(classes.find("folded:LogitsProcessor,LogitsProcessor,0,34.000"), std::string::npos) << classes;
  EXPECT_EQ(classes.find("unmatched"), std::string::npos);
  std::string entries = slurp(dir.file("o/breakdown_entries.csv"));
  // Module level: the two RMSNorm modules share a name and are told apart by their parents; the folded
  // LogitsProcessor is one entry with its own class.
  EXPECT_NE(entries.find("prefill,prefill,0,LlamaDecoderLayer/RMSNorm(weight=bfloat16[2048]),RMSNorm(weight=bfloat16[2048]),,8.000"),
            std::string::npos) << entries;
  EXPECT_NE(entries.find("prefill,prefill,0,LlamaForCausalLM/RMSNorm(weight=bfloat16[2048]),RMSNorm(weight=bfloat16[2048]),,2.000"),
            std::string::npos) << entries;
  EXPECT_NE(entries.find("prefill,prefill,0,LogitsProcessor,LogitsProcessor,folded:LogitsProcessor,34.000"), std::string::npos);
  EXPECT_EQ(slurp(dir.file("o/unmatched_kernels.csv")), "kernel,time_us,invocations,phases\n");
}

TEST(TraceCli, NsysTraceWithNvtxPhases) {
  TempDir dir;
  auto r = run_command(arfit_cmd("breakdown " + trace_data("nsys_gpu_trace.csv") + " --nvtx " + trace_data("nsys_nvtx_gpu_proj.csv") +
                             " -o " + dir.file("o") + " --no-figures --phase prefill decode_2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string comm = slurp(dir.file("o/comm_share.csv"));
  EXPECT_EQ(comm, "phase,kind,step,total_us,comm_us,comm_share_pct\nprefill,prefill,0,110.000,30.000,27.27\n"
                  "decode_2,decode,2,9.000,3.000,33.33\n");
}

TEST(TraceCli, MalformedProfilesFailCleanly) {
  TempDir dir;
  struct Case {
    std::string name, content, expect;
  };
  std::vector<Case> cases = {
      {"noctx.json", R"({"prefill": {"summary_stats": []}})", "missing top-level 'context'"},
      {"noprefill.json", R"({"context": {}, "decode_1": {"summary_stats": []}})", "no prefill step"},
      {"nonnum.json", "{\"context\": {},\n \"prefill\": {\"summary_stats\": [\n {\"entry\": {\"name\": \"k\", \"cuda_time_us\": \"fast\"}}]}}",
       "nonnum.json:3: at prefill.summary_stats[0].entry.cuda_time_us: 'cuda_time_us' must be a number"},
      {"cyclic.json", R"({"context": {}, "prefill": {"summary_stats": [{"entry": {"name": "A", "cuda_time_us": 1}, "children": [
         {"entry": {"name": "A", "cuda_time_us": 1}, "children": [{"entry": {"name": "k", "cuda_time_us": 1}}]}]}]}})", "cyclic"},
      // No kernel at all: these gave tables of zeros and exit 0.
      {"empty.json", R"({"context": {}, "prefill": {"summary_stats": []}, "decode_1": {"summary_stats": []}})",
       "no kernel in any phase of the profile (vllm-layerwise)"},
      {"empty_kern_sum.csv", "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\r\n",
       "no kernel in any phase of the profile (nsys-kern-sum)"},
  };
  for (const auto& c : cases) {
    std::string path = dir.write(c.name, c.content);
    std::string out = dir.file("out_" + c.name);
    auto r = run_command(arfit_cmd("breakdown " + path + " -o " + out));
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find(c.name), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << r.output;
    EXPECT_EQ(files_in(out), 0u) << c.name;  // nothing written
    // The profile is read before the models: its error is named whatever the models file holds.
    auto w = run_command(arfit_cmd("whatif " + path + " --models " + dir.write("models.json", "{}") + " --tp 8"));
    EXPECT_EQ(w.exit_code, 1) << w.output;
    EXPECT_NE(w.output.find(c.expect), std::string::npos) << w.output;
  }
}

TEST(TraceCli, FailedRenderLeavesNoPartialOutput) {
  TempDir dir;
  std::string out = dir.file("o");
  auto r = run_command("ARFIT_GNUPLOT=/bin/false " + arfit_cmd("breakdown " + trace_data("vllm_tp2_small.json") + " -o " + out));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(files_in(out), 0u);
}

TEST(TraceCli, UsageErrors) {
  TempDir dir;
  auto r = run_command(arfit_cmd("breakdown " + trace_data("vllm_tp2_small.json") + " -o " + dir.file("o") + " --phase decode_9"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("phases are: prefill decode_1 decode_2"), std::string::npos) << r.output;
  r = run_command(arfit_cmd("breakdown " + trace_data("vllm_tp2_small.json") + " -o " + dir.file("o") + " --level layer"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // A path naming no file is a usage error, as in ingest, fit, eval, predict and codegen (these read it and said
  // exit 1, "cannot read the profile").
  r = run_command(arfit_cmd("breakdown " + dir.file("missing.json") + " -o " + dir.file("o")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("missing.json"), std::string::npos) << r.output;
  r = run_command(arfit_cmd("whatif " + dir.file("missing.json") + " --models " + dir.write("models.json", "{}") + " --tp 8"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(arfit_cmd("whatif " + trace_data("vllm_tp2_small.json") + " --models " + dir.file("missing.json") + " --tp 8"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--models"), std::string::npos) << r.output;
  EXPECT_EQ(files_in(dir.file("o")), 0u);
}

TEST(TraceCli, NoCollectiveStillBreaksDownAndWhatifSaysSo) {
  TempDir dir;
  std::string prof = dir.write("tp1.json", kNoCollective);
  auto r = run_command(arfit_cmd("breakdown " + prof + " -o " + dir.file("o") + " --no-figures"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(slurp(dir.file("o/comm_share.csv")).find("prefill,prefill,0,30.000,0.000,0.00"), std::string::npos);
  EXPECT_NE(slurp(dir.file("o/breakdown_classes.csv")).find("prefill,prefill,0,rms_norm,RMSNorm,0,10.000"), std::string::npos);
  // Nothing needs predicting, whatever the models.
  const std::string models = fitted_models(dir);
  auto w = run_command(arfit_cmd("whatif " + prof + " --models " + models + " --tp 8"));
  EXPECT_EQ(w.exit_code, 0) << w.output;
  EXPECT_NE(w.output.find("no recognised collective kernel in " + prof + ": nothing to re-predict"), std::string::npos) << w.output;
}

// A --fold name no node of the profile has folds nothing (a typo, most likely): breakdown warned, whatif said
// nothing and answered as if folded. Both warn now, and a name that matches is not warned about.
TEST(TraceCli, FoldMatchingNoNodeIsWarnedByBreakdownAndWhatif) {
  TempDir dir;
  const std::string prof = trace_data("vllm_tp2_small.json");
  auto b = run_command(arfit_cmd("breakdown " + prof + " -o " + dir.file("o") + " --no-figures --fold LogitsProcesor --fold LogitsProcessor"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("arfit breakdown: warning: --fold 'LogitsProcesor' matches no node of"), std::string::npos) << b.output;
  EXPECT_EQ(b.output.find("--fold 'LogitsProcessor' matches no node"), std::string::npos) << b.output;
  const std::string models = fitted_models(dir);
  auto w = run_command(arfit_cmd("whatif " + prof + " --models " + models + " --tp 8 --hidden 4096 --fold LogitsProcesor"));
  EXPECT_NE(w.output.find("arfit whatif: warning: --fold 'LogitsProcesor' matches no node of"), std::string::npos) << w.output;
}

TEST(TraceCli, WhatifUnknownSystemIsAUsageError) {
  TempDir dir;
  const std::string models = fitted_models(dir);
  auto w = run_command(arfit_cmd("whatif " + trace_data("nsys_kern_sum.csv") + " --models " + models + " --tp 8 --hidden 4096 --tokens 16 --system h100_typo"));
  EXPECT_EQ(w.exit_code, 2) << w.output;
  EXPECT_NE(w.output.find("--system: 'h100_typo' is not in the models file"), std::string::npos) << w.output;
}

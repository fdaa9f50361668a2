// Kernel-name rules must not crash or run away on long or hostile names: `arfit breakdown` on a 40,000-character
// kernel name with the built-in rules (vLLM JSON and nsys CSV), and with a user rule like (a|b)*c on a
// 20,000-character name. std::regex overflowed the stack on both; RE2 matches in linear time.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "model/errors.h"
#include "trace/classify.h"
#include "trace_test_util.h"

using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::TempDir;

namespace {

// A name that starts like an NCCL kernel and goes on for `n` characters: every ".*" of the built-in rules
// (nccl.*all_?reduce, one_?shot.*lamport, ...) scans all of it.
std::string hostile_name(std::size_t n) {
  std::string s = "ncclDevKernel_one_shot_";
  while (s.size() < n) s += "ab";
  return s;
}

struct BreakdownRun {
  arfit::testing::CommandResult result;
  bool input_unchanged = false;
};

// Runs `arfit breakdown` on `input` (and `rules`, when given) and checks the inputs are byte-for-byte unchanged.
BreakdownRun breakdown(const TempDir& dir, const std::string& input, const std::string& rules = "") {
  std::string before = slurp(input), rules_before = rules.empty() ? "" : slurp(rules);
  BreakdownRun r;
  r.result = run_command(arfit_cmd("breakdown " + input + " -o " + dir.file("out") + " --no-figures" +
                                   (rules.empty() ? "" : " --rules " + rules)));
  r.input_unchanged = slurp(input) == before && (rules.empty() || slurp(rules) == rules_before);
  return r;
}

// Exit 0, inputs unchanged; the output (which quotes a 40,000-character name) cut for the failure message.
void expect_success(const BreakdownRun& r) {
  ASSERT_EQ(r.result.exit_code, 0) << r.result.output.substr(0, 2000);
  EXPECT_TRUE(r.input_unchanged);
}

}  // namespace

TEST(RuleRobustness, LongNamesClassifyWithTheBuiltInRules) {
  const auto& rules = arfit::trace::RuleTable::defaults();
  std::string name = hostile_name(40000);
  const arfit::trace::OpClass* c = rules.classify(name);
  ASSERT_NE(c, nullptr);  // "nccl..." with no collective word: NCCL other
  EXPECT_EQ(c->id, "nccl_other");
  EXPECT_EQ(rules.classify(std::string(1 << 20, 'x')), nullptr);  // a megabyte of nothing: unmatched, quickly
}

TEST(RuleRobustness, BreakdownOfVllmJsonWithA40kCharacterKernelName) {
  TempDir dir;
  std::string name = hostile_name(40000);
  std::string input = dir.write("long.json", R"J({"context": {"model": "m", "batch_size": 1, "prompt_len": 4, "output_len": 1},
    "prefill": {"summary_stats": [{"entry": {"name": ")J" + name + R"J(", "cuda_time_us": 5, "invocations": 1}},
      {"entry": {"name": "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)", "cuda_time_us": 1, "invocations": 1}}]}})J");
  BreakdownRun r = breakdown(dir, input);
  expect_success(r);
  EXPECT_NE(slurp(dir.file("out/breakdown_classes.csv")).find("prefill,prefill,0,nccl_other,NCCL other,1,5.000"), std::string::npos);
}

TEST(RuleRobustness, BreakdownOfNsysCsvWithA40kCharacterKernelName) {
  TempDir dir;
  std::string input = dir.write("long_kern_sum.csv",
                                "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
                                "80.0,4000,1,4000,4000,4000,4000,0,\"" + hostile_name(40000) + "\"\n"
                                "20.0,1000,1,1000,1000,1000,1000,0,my_kernel\n");
  BreakdownRun r = breakdown(dir, input);
  expect_success(r);
  EXPECT_NE(slurp(dir.file("out/comm_share.csv")).find("all,other,0,5.000,4.000,80.00"), std::string::npos);
}

TEST(RuleRobustness, UserRuleWithNestedRepetitionOnA20kCharacterName) {
  TempDir dir;
  std::string name;
  while (name.size() < 20000) name += "ab";
  std::string input = dir.write("ab.csv", "Total Time (ns),Instances,Name\n3000,1," + name + "c\n1000,1," + name + "\n");
  std::string rules = dir.write("rules.json", R"J({"classes": [{"id": "abc", "label": "ABC"}],
                                                  "rules": [{"class": "abc", "regex": "(a|b)*c"},
                                                            {"class": "abc", "regex": "^((a|b)+)+$"}]})J");
  BreakdownRun r = breakdown(dir, input, rules);
  expect_success(r);
  // Both names match (the first through (a|b)*c, the second through the catastrophic-backtracking classic).
  EXPECT_NE(slurp(dir.file("out/breakdown_classes.csv")).find("all,other,0,abc,ABC,0,4.000"), std::string::npos);
}

TEST(RuleRobustness, RuleRe2RefusesIsAnErrorNamingTheRule) {
  TempDir dir;
  std::string input = dir.write("k.csv", "Total Time (ns),Instances,Name\n1000,1,aa_kernel\n");
  std::string rules = dir.write("rules.json", R"J({"classes": [{"id": "x"}],
    "rules": [{"class": "x", "regex": "ok_kernel"},
              {"class": "x", "regex": "(a)\\1"}]})J");
  BreakdownRun r = breakdown(dir, input, rules);
  EXPECT_EQ(r.result.exit_code, 1) << r.result.output;
  EXPECT_TRUE(r.input_unchanged);
  EXPECT_NE(r.result.output.find("rules.json:3: at rules[1].regex: rule 1 (class 'x'): invalid regex '(a)\\1'"), std::string::npos)
      << r.result.output;
  EXPECT_NE(r.result.output.find("no backreferences or lookaround"), std::string::npos) << r.result.output;
  EXPECT_EQ(files_in(dir.file("out")), 0u);
  // Lookahead, and an all_of pattern, are refused the same way.
  rules = dir.write("rules2.json", R"J({"classes": [{"id": "x"}],
    "rules": [{"class": "x", "regex": "kernel", "all_of": ["ok", "(?=a)"]}]})J");
  r = breakdown(dir, input, rules);
  EXPECT_EQ(r.result.exit_code, 1) << r.result.output;
  EXPECT_NE(r.result.output.find("at rules[0].all_of[1]: rule 0 (class 'x'): invalid regex '(?=a)'"), std::string::npos)
      << r.result.output;
}

TEST(RuleRobustness, BreakdownOfVllmJsonWithA40kDigitStepKey) {
  // Not a kernel name but the same recursive matcher: step keys "decode_N" are read without std::regex.
  TempDir dir;
  std::string input = dir.write("key.json", R"J({"context": {}, "prefill": {"summary_stats": [
      {"entry": {"name": "my_kernel", "cuda_time_us": 2, "invocations": 1}}]},
    "decode_)J" + std::string(40000, '7') + R"J(": {"summary_stats": []},
    "decode_3": {"summary_stats": [{"entry": {"name": "my_kernel", "cuda_time_us": 1, "invocations": 1}}]}})J");
  BreakdownRun r = breakdown(dir, input);
  expect_success(r);
  EXPECT_EQ(slurp(dir.file("out/comm_share.csv")),
            "phase,kind,step,total_us,comm_us,comm_share_pct\nprefill,prefill,0,2.000,0.000,0.00\ndecode_3,decode,3,1.000,0.000,0.00\n");
}

// nsys CSV rows must have the header's cells (issue 43): an NVTX report with a truncated last row lost a phase
// (its kernels counted outside any), two concatenated reports made phantom phases, and a kernel row with an
// unquoted comma in its name was read with the name cut short. Each is refused naming file:line, exit 1,
// inputs unchanged, no output folder left.
TEST(NsysRobustness, RaggedRowsAndRepeatedHeadersAreRefusedWithTheirLine) {
  const std::string nvtx = slurp(trace_data("nsys_nvtx_gpu_proj.csv")), trace = slurp(trace_data("nsys_gpu_trace.csv"));
  const std::string nvtx_header = nvtx.substr(0, nvtx.find('\n') + 1);
  std::string truncated = nvtx;
  while (!truncated.empty() && truncated.back() == '\n') truncated.pop_back();
  truncated = truncated.substr(0, truncated.rfind(',')) + "\n";  // the last row cut off in its last cell
  const auto lines = [](const std::string& s) { return static_cast<long>(std::count(s.begin(), s.end(), '\n')); };
  const struct {
    std::string what, nvtx_text, trace_text, says;
    long line;
  } cases[] = {
      {"truncated NVTX row", truncated, trace, "a truncated row", lines(truncated)},
      {"repeated NVTX header", nvtx + nvtx_header + nvtx.substr(nvtx_header.size()), trace, "repeated", lines(nvtx) + 1},
      {"unquoted comma in a kernel name", nvtx,
       trace + "3000000,1000,999,1,1,1,1,1,1,1,0,0,,,,,NVIDIA H100 80GB HBM3 (0),1,,7,void foo<int, float>(int)\n",
       "an unquoted comma", lines(trace) + 1},
  };
  for (const auto& c : cases) {
    TempDir dir;
    const std::string nvtx_path = dir.write("nvtx.csv", c.nvtx_text), trace_path = dir.write("trace.csv", c.trace_text);
    const auto r = run_command(arfit_cmd("breakdown " + trace_path + " --nvtx " + nvtx_path + " -o " + dir.file("out") +
                                         " --no-figures"));
    EXPECT_EQ(r.exit_code, 1) << c.what << "\n" << r.output;
    const std::string file = c.what.find("NVTX") != std::string::npos ? nvtx_path : trace_path;
    EXPECT_NE(r.output.find(file + ":" + std::to_string(c.line)), std::string::npos) << c.what << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.what << "\n" << r.output;
    EXPECT_EQ(slurp(nvtx_path), c.nvtx_text);
    EXPECT_EQ(slurp(trace_path), c.trace_text);
    EXPECT_FALSE(std::filesystem::exists(dir.file("out"))) << c.what;
  }
  // Quoted, the comma is part of the name: read.
  TempDir dir;
  const std::string quoted = dir.write(
      "trace.csv", trace + "3000000,1000,999,1,1,1,1,1,1,1,0,0,,,,,NVIDIA H100 80GB HBM3 (0),1,,7,\"void foo<int, float>(int)\"\n");
  const auto ok = run_command(arfit_cmd("breakdown " + quoted + " -o " + dir.file("out") + " --no-figures"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

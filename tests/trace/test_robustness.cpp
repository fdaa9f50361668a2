// Kernel-name rules must not crash or run away on long or hostile names: `arfit breakdown` on a 40,000-character
// kernel name with the built-in rules (vLLM JSON and nsys CSV), and with a user rule like (a|b)*c on a
// 20,000-character name. std::regex overflowed the stack on both; RE2 matches in linear time.
// nsys reports with ragged rows or a repeated header are refused naming file:line, and `--top 0` figures stay bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "model/errors.h"
#include "robustness_support.h"
#include "trace/classify.h"
#include "trace_test_util.h"
#ifdef ARFIT_TRACE_HAVE_PLOTS
#include "plots/gnuplot_runner.h"
#include "trace/figures.h"
#endif

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
// unquoted comma in its name was read with the name cut short. Each class is refused naming file:line, exit 1, with
// the folder as it was (inputs byte-identical, no output folder, nothing left behind).
namespace {

struct NsysInputs {
  std::string nvtx = slurp(trace_data("nsys_nvtx_gpu_proj.csv"));
  std::string trace = slurp(trace_data("nsys_gpu_trace.csv"));
  std::string summary = slurp(trace_data("nsys_kern_sum.csv"));
};

long line_count(const std::string& s) { return static_cast<long>(std::count(s.begin(), s.end(), '\n')); }

// `arfit breakdown trace.csv [--nvtx nvtx.csv]` in a folder holding the given files, refused with exit 1 naming
// `where` (file:line) and saying `why`.
void expect_breakdown_refused(const std::map<std::string, std::string>& files, const std::string& profile, bool nvtx,
                              const std::string& where, const std::string& why) {
  TempDir dir;
  for (const auto& [name, text] : files) dir.write(name, text);
  arfit::testing::expect_refused_in(dir, "breakdown " + profile + (nvtx ? " --nvtx nvtx.csv" : "") + " -o out --no-figures",
                                    1, {where + ":", why});
}

}  // namespace

TEST(NsysRobustness, TruncatedNvtxRowIsRefusedWithItsLine) {
  const NsysInputs in;
  std::string truncated = in.nvtx;
  while (!truncated.empty() && truncated.back() == '\n') truncated.pop_back();
  truncated = truncated.substr(0, truncated.rfind(',')) + "\n";  // the last row cut off before its last cell
  expect_breakdown_refused({{"nvtx.csv", truncated}, {"trace.csv", in.trace}}, "trace.csv", true,
                           "nvtx.csv:" + std::to_string(line_count(truncated)), "a truncated row");
}

TEST(NsysRobustness, RepeatedNvtxHeaderIsRefusedWithItsLine) {
  const NsysInputs in;  // the report twice: its header again on the line after its last row
  expect_breakdown_refused({{"nvtx.csv", in.nvtx + in.nvtx}, {"trace.csv", in.trace}}, "trace.csv", true,
                           "nvtx.csv:" + std::to_string(line_count(in.nvtx) + 1), "repeated");
}

// More cells than the header, in each report: the kernel trace, the kernel summary and the NVTX report.
TEST(NsysRobustness, RowsWithExtraCellsAreRefusedWithTheirLine) {
  const NsysInputs in;
  const std::string comma_name = "void foo<int, float>(int)";
  const std::string trace_row = "3000000,1000,999,1,1,1,1,1,1,1,0,0,,,,,NVIDIA H100 80GB HBM3 (0),1,,7,";
  expect_breakdown_refused({{"nvtx.csv", in.nvtx}, {"trace.csv", in.trace + trace_row + comma_name + "\n"}}, "trace.csv",
                           true, "trace.csv:" + std::to_string(line_count(in.trace) + 1), "an unquoted comma");
  const std::string summary_row = "0.1,1000,1,1000,1000,1000,1000,0,";
  expect_breakdown_refused({{"sum.csv", in.summary + summary_row + comma_name + "\n"}}, "sum.csv", false,
                           "sum.csv:" + std::to_string(line_count(in.summary) + 1), "an unquoted comma");
  const std::string nvtx_row = "execute_model decode, step 3,3100000,400000,3090000,20000,PushPop,4242,4242,2,0,0,5,,:5\n";
  expect_breakdown_refused({{"nvtx.csv", in.nvtx + nvtx_row}, {"trace.csv", in.trace}}, "trace.csv", true,
                           "nvtx.csv:" + std::to_string(line_count(in.nvtx) + 1), "an unquoted comma");
  // Quoted, the comma is part of the name: read whole.
  TempDir dir;
  dir.write("trace.csv", in.trace + trace_row + "\"" + comma_name + "\"\n");
  const auto ok = arfit::testing::arfit_in(dir, "breakdown trace.csv -o out --no-figures --top 0");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(slurp(dir.file("out/breakdown_entries.csv")).find(comma_name), std::string::npos);
}

#ifdef ARFIT_TRACE_HAVE_PLOTS
// `--top 0` keeps every entry in the table, but the entry figure draws at most kMaxFigureEntries series and says what
// it folded (issue 43: gnuplot drew one series per kernel, 10^5 names took minutes). 3000 names, with figures.
TEST(BreakdownRobustness, TopZeroFiguresAreBoundedAndSayWhatTheyFolded) {
  if (arfit::plots::find_gnuplot().empty()) GTEST_SKIP() << "gnuplot not installed";
  constexpr int kNames = 3000;
  std::string summary = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n";
  for (int i = 0; i < kNames; ++i) {
    const std::string t = std::to_string(1000 + i);
    summary += "0.0," + t + ",1," + t + "," + t + "," + t + "," + t + ",0,kernel_" + std::to_string(i) + "\n";
  }
  TempDir dir;
  dir.write("sum.csv", summary);
  const auto started = std::chrono::steady_clock::now();
  const auto r = arfit::testing::arfit_in(dir, "breakdown sum.csv -o out --top 0");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(seconds, 30.0);
  const std::string folded = std::to_string(kNames - static_cast<int>(arfit::trace::kMaxFigureEntries - 1));
  EXPECT_NE(r.output.find("fold " + folded + " more into 'others'"), std::string::npos) << r.output;
  // The table keeps every entry: a header and one row per kernel.
  EXPECT_EQ(line_count(slurp(dir.file("out/breakdown_entries.csv"))), kNames + 1);
  // The figure's script: its title says what was folded, and it plots kMaxFigureEntries series, "others" last.
  const std::string script = slurp(dir.file("out/breakdown_entries_all.gp"));
  EXPECT_NE(script.find(folded + " more entries folded"), std::string::npos);
  const std::size_t plot = script.find("\nplot ");
  ASSERT_NE(plot, std::string::npos) << script;
  std::size_t series = 0, last = 0;
  for (std::size_t at = script.find(" title '", plot); at != std::string::npos; at = script.find(" title '", at + 1)) ++series, last = at;
  EXPECT_EQ(series, arfit::trace::kMaxFigureEntries);
  const std::string others = " title 'others'";
  EXPECT_EQ(script.compare(last, others.size(), others), 0) << script.substr(last, 40);
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/breakdown_entries_all.png")));
}
#endif  // ARFIT_TRACE_HAVE_PLOTS

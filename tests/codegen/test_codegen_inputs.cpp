// `arfit codegen`'s consumer options against the built arfit (robustness label): a bad --base file is bad input
// (exit 1, naming the file, the line and what is wrong), a --consumer-version arfit has not read and an option a
// format does not take are usage errors (exit 2, naming the option); the output never replaces the --base file; a
// refused run leaves the folder as it was. And the good path: --base written in place, exit 0.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "robustness_support.h"
#include "test_support.h"
#include "trtllm_layout.h"

using arfit::testing::arfit_bin;
using arfit::testing::CommandResult;
using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::TempDir;

namespace {

// NCCL, ONESHOT and TWOSHOT on 2, 4 and 8 ranks (tokens x hidden, NONE), vLLM's custom all-reduce and its
// symmetric memory: enough for every format but nccl-tuner.
std::string samples() {
  std::string s = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (int tp : {2, 4, 8})
    for (const auto& [strategy, alpha, gbps] :
         {std::tuple<const char*, double, double>{"NCCL", 15, 200}, {"ONESHOT", 3, 20}, {"TWOSHOT", 6, 75},
          {"vLLM_custom_graph", 3, 30}, {"vLLM_symm_mem", 8, 90}})
      for (long b = 1024; b <= (256L << 20); b *= 2)
        s += std::string("allreduce,") + strategy + ",NONE,bf16," + std::to_string(tp) + "," + std::to_string(b) + "," +
             std::to_string(alpha + static_cast<double>(b) * tp / (gbps * 1e3)) + "\n";
  return s;
}

class CodegenInputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixture_ = new TempDir;
    fixture_->write("samples.csv", samples());
    const CommandResult r = run_command(arfit_bin() + " fit " + fixture_->file("samples.csv") + " -o " + fixture_->file("models.json") + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete fixture_;
    fixture_ = nullptr;
  }
  void SetUp() override {
    dir.write("models.json", slurp(fixture_->file("models.json")));
    dir.write("customAllReduceUtils.h", arfit::trtllm_layout::file(arfit::trtllm_layout::Era::Gate64MiB, arfit::trtllm_layout::typical_value));
  }
  CommandResult arfit_here(const std::string& args) const { return arfit::testing::arfit_in(dir, args); }
  CommandResult expect_refused(const std::string& args, int exit_code, const std::vector<std::string>& needles) {
    return arfit::testing::expect_refused_in(dir, args, exit_code, needles);
  }
  static TempDir* fixture_;
  TempDir dir;
};

TempDir* CodegenInputs::fixture_ = nullptr;

const std::string kMap = " --map vLLM_custom_graph=ignore --map vLLM_symm_mem=ignore";

}  // namespace

TEST_F(CodegenInputs, BadBaseFilesAreBadInputNamingFileAndLine) {
  const std::string base = slurp(dir.file("customAllReduceUtils.h"));
  std::string nine = base;
  nine.replace(nine.find("{4,", nine.find("AllReduceBestStrategyTableSM90\n")) + 1, 1, "9");
  dir.write("nine.h", nine);
  expect_refused("codegen models.json --format trtllm" + kMap + " --base nine.h -o t.h", 1,
                 {"nine.h:", "column 'AllReduceBestStrategyTableSM90[0][0][0][0]': 9 is not an AllReduceStrategyType number"});
  dir.write("empty.h", "// nothing here\n");
  expect_refused("codegen models.json --format trtllm" + kMap + " --base empty.h -o t.h", 1,
                 {"empty.h: ", "no definition of AllReduceBestStrategyTableSM90"});
  dir.write("bad_ar.py", "CUSTOM_ALL_REDUCE_MAX_SIZES = {\n    \"9.0\": {2: lots},\n}\nSYMM_MEM_ALL_REDUCE_MAX_SIZES = {}\n");
  expect_refused("codegen models.json --format vllm --base bad_ar.py -o v.py", 1,
                 {"bad_ar.py:2: column 'CUSTOM_ALL_REDUCE_MAX_SIZES': 'lots' is not a module-level constant"});
  dir.write("bad_fi.py", "_use_oneshot_heuristics = {2: 512, 2: 64}\n");
  expect_refused("codegen models.json --format flashinfer --base bad_fi.py -o f.py", 1,
                 {"bad_fi.py:1: column '_use_oneshot_heuristics': key '2' is given twice"});
  // A --base that names no file is a usage error, as every input path.
  expect_refused("codegen models.json --format trtllm" + kMap + " --base missing.h -o t.h", 2, {"--base", "missing.h"});
}

TEST_F(CodegenInputs, VersionsAndOptionsAFormatDoesNotTakeAreUsageErrors) {
  expect_refused("codegen models.json --format vllm --consumer-version 0.9.0 -o v.py", 2,
                 {"--consumer-version 0.9.0: arfit knows the rules of vLLM 0.10.2 to 0.33.0"});
  expect_refused("codegen models.json --format flashinfer --consumer-version 1.0.0 -o f.py", 2, {"--consumer-version 1.0.0:"});
  expect_refused("codegen models.json --format trtllm" + kMap + " --consumer-version cafebabe -o t.h", 2,
                 {"--consumer-version cafebabe: arfit knows the rules of TensorRT-LLM at 10a94126, 01e2c361, 005b299b"});
  expect_refused("codegen models.json --format sglang --consumer-version s9 -o s.py", 2, {"--consumer-version s9:"});
  expect_refused("codegen models.json --format header --base customAllReduceUtils.h -o h.h", 2, {"--base: the header format"});
  expect_refused("codegen models.json --format header --consumer-version 0.33.0 -o h.h", 2, {"--consumer-version: the header format"});
  // The --base file is an input: the output may not replace it.
  expect_refused("codegen models.json --format trtllm" + kMap + " --base customAllReduceUtils.h -o customAllReduceUtils.h", 2,
                 {"customAllReduceUtils.h: ", "is an input of this run"});
}

TEST_F(CodegenInputs, BaseIsWrittenInPlace) {
  const CommandResult r = arfit_here("codegen models.json --format trtllm" + kMap + " --base customAllReduceUtils.h -o out.h");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kept from customAllReduceUtils.h"), std::string::npos) << r.output;
  const std::string base = slurp(dir.file("customAllReduceUtils.h")), out = slurp(dir.file("out.h"));
  EXPECT_EQ(out.substr(0, 200), base.substr(0, 200)) << "the file's own header stays";
  EXPECT_NE(out.find("Input: customAllReduceUtils.h (fnv1a64 "), std::string::npos);
  EXPECT_NE(out.find("inline const std::unordered_map<int, AllReduceBestStrategyTableType> AllReduceBestStrategyTable"),
            std::string::npos);
}

// Size ranges whose doubling would overflow int64 (--hidden 1:4611686018427387904 once looped for ever and ate
// memory in `codegen`, `suggest` and `plot heatmap`): one parser (codegen/axes.h) refuses any value above 2^40,
// and each command exits 2 naming the option without writing its output. So does a grid of more cells than a table
// holds (codegen::kMaxGridCells).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "codegen/axes.h"
#include "fit/fit.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

// A small models file: NCCL at TP 2 over a few shapes.
std::string write_models(const TempDir& dir) {
  std::vector<Sample> v;
  for (int k = 0; k <= 14; ++k) {
    Sample s;
    s.nranks = 2;
    s.device = "synthetic";
    s.tokens = std::int64_t{1} << k;
    s.hidden = 1024;
    s.bytes = s.tokens * s.hidden * 2;
    s.time_us = 10.0 + double(s.bytes) / 1e5;
    v.push_back(s);
  }
  const std::string path = dir.file("models.json");
  fit::fit_model_set(v).save(path);
  return path;
}

// Runs arfit under a time limit, so a regression fails instead of hanging.
arfit::testing::CommandResult arfit_cmd(const std::string& args) {
  return run_command("timeout 120 " + arfit::testing::arfit_bin() + " " + args);
}

bool empty_or_absent(const std::filesystem::path& p) {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return true;
  return std::filesystem::is_directory(p) && std::filesystem::is_empty(p);
}

const char* kHuge = "4611686018427387904";  // 2^62: doubling it overflows int64

}  // namespace

TEST(CodegenRanges, ParserRefusesValuesAboveTheBoundAndExpandsUpToIt) {
  try {
    codegen::parse_pow2_axis(std::string("1:") + kHuge, "--hidden");
    FAIL() << "a range to 2^62 must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--hidden:", 0), 0u) << e.what();
  }
  EXPECT_THROW(codegen::parse_pow2_axis(std::string("8,") + kHuge, "--tokens"), std::invalid_argument);
  EXPECT_THROW(codegen::parse_pow2_axis("9223372036854775807:9223372036854775807", "--bytes"), std::invalid_argument);
  EXPECT_THROW(codegen::parse_pow2_axis("1:99999999999999999999999", "--bytes"), std::invalid_argument);
  const auto widest = codegen::parse_pow2_axis("1:1099511627776", "--bytes");
  ASSERT_EQ(widest.size(), 41u);
  EXPECT_EQ(widest.back(), codegen::kMaxAxisValue);
  EXPECT_THROW(codegen::parse_pow2_axis("1:2199023255552", "--bytes"), std::invalid_argument);
}

TEST(CodegenRanges, CodegenSuggestAndPlotExitTwoNamingTheOptionWithoutOutput) {
  TempDir dir;
  const std::string models = write_models(dir);
  const std::string range = std::string("1:") + kHuge;
  std::string many_tps = "2";
  for (int tp = 3; tp <= 4001; ++tp) many_tps += "," + std::to_string(tp);
  struct Case {
    std::string args, option, output;
  };
  const std::vector<Case> cases{
      {"codegen " + models + " --format json --hidden " + range + " -o " + dir.file("table.json"), "--hidden", dir.file("table.json")},
      {"codegen " + models + " --format header --tokens " + range + " -o " + dir.file("select.h"), "--tokens", dir.file("select.h")},
      {"codegen " + models + " --format vllm --bytes " + range + " -o " + dir.file("vllm.py"), "--bytes", dir.file("vllm.py")},
      {"suggest " + models + " --hidden " + range + " --json " + dir.file("suggest.json"), "--hidden", dir.file("suggest.json")},
      {"plot heatmap " + models + " --hidden " + range + " -o " + dir.file("figures"), "--hidden", dir.file("figures")},
      // Every axis within its bounds but a grid of 1.68e6 cells: 4,000 TP sizes took 5.9 GB of memory for an 830 MB
      // json table, and a longer --tp list ran out of memory.
      {"codegen " + models + " --format json --tp " + many_tps + " -o " + dir.file("table.json"), "--tp x --fusion x --hidden x --tokens: 4000 x 4 x 7 x 15 = 1680000 cells", dir.file("table.json")},
      {"suggest " + models + " --tp " + many_tps + " --json " + dir.file("suggest.json"), "more than 1000000", dir.file("suggest.json")},
      // plot's grids from models are built by codegen's table builder too: same cap (it had none).
      {"plot heatmap " + models + " --fusion NONE,RESIDUAL_RMS_NORM,RESIDUAL_RMS_NORM_QUANT_FP8 --tp " + many_tps + " -o " + dir.file("figures"),
       "--tp x --fusion x --hidden x --tokens: 4000 x 3 x 7 x 15 = 1260000 cells", dir.file("figures")},
  };
  for (const auto& c : cases) {
    const auto r = arfit_cmd(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.option), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_TRUE(empty_or_absent(c.output)) << c.output;
  }
}

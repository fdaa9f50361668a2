// The arfit command as a user meets it: --help everywhere, --version, and usage errors with exit code 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/input_file.h"
#include "test_support.h"

using arfit::testing::arfit_bin;
using arfit::testing::run_command;

namespace {

// Subcommand names listed under "Subcommands:" in `arfit --help`.
std::set<std::string> listed_subcommands() {
  auto r = run_command(arfit_bin() + " --help");
  std::set<std::string> names;
  auto pos = r.output.find("Subcommands:");
  if (pos == std::string::npos) return names;
  std::regex line_re("\\n  ([a-z][a-z0-9-]*) ");
  std::string rest = r.output.substr(pos);
  for (std::sregex_iterator it(rest.begin(), rest.end(), line_re), end; it != end; ++it) names.insert((*it)[1]);
  return names;
}

}  // namespace

TEST(Cli, HelpListsSubcommandsAndExitsZero) {
  auto r = run_command(arfit_bin() + " --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Usage:"), std::string::npos) << r.output;
  EXPECT_TRUE(listed_subcommands().count("version")) << r.output;
}

TEST(Cli, EverySubcommandHasHelp) {
  auto names = listed_subcommands();
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) {
    auto r = run_command(arfit_bin() + " " + n + " --help");
    EXPECT_EQ(r.exit_code, 0) << n << ": " << r.output;
    EXPECT_NE(r.output.find("Usage:"), std::string::npos) << n << ": " << r.output;
  }
}

TEST(Cli, VersionFlagAndCommandPrintTheVersion) {
  auto a = run_command(arfit_bin() + " --version");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_NE(a.output.find(std::string("arfit ") + ARFIT_VERSION), std::string::npos) << a.output;
  auto b = run_command(arfit_bin() + " version");
  EXPECT_EQ(b.exit_code, 0);
  EXPECT_NE(b.output.find(ARFIT_VERSION), std::string::npos) << b.output;
}

TEST(Cli, UnknownOptionIsAUsageError) {
  auto r = run_command(arfit_bin() + " --no-such-option");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  auto s = run_command(arfit_bin() + " version --no-such-option");
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("no-such-option"), std::string::npos) << s.output;
}

TEST(Cli, MissingSubcommandIsAUsageError) {
  auto r = run_command(arfit_bin());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("subcommand"), std::string::npos) << r.output;
}

namespace {

// A models file fitted here: NCCL and ONESHOT all-reduce on 2 GPUs, 1 KiB .. 64 MiB.
std::string fit_small_models(const arfit::testing::TempDir& dir) {
  std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (int k = 10; k <= 26; ++k) {
    const double b = static_cast<double>(1LL << k);
    csv += "allreduce,NCCL,NONE,bf16,2," + std::to_string(1LL << k) + "," + std::to_string(15 + b / 4e5) + "\n";
    csv += "allreduce,ONESHOT,NONE,bf16,2," + std::to_string(1LL << k) + "," + std::to_string(3 + b / 5e4) + "\n";
  }
  const std::string samples = dir.write("s.csv", csv);
  const auto r = run_command(arfit_bin() + " fit " + samples + " -o " + dir.file("m.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return dir.file("m.json");
}

}  // namespace

// suggest --json: a path the output rule refuses (a device, a folder, the models file) is a usage error before
// the table is built or printed.
TEST(Cli, SuggestRefusesItsJsonPathBeforePrinting) {
  arfit::testing::TempDir dir;
  const std::string models = fit_small_models(dir);
  for (const std::string& out : {std::string("/dev/null"), dir.path().string(), models}) {
    const auto r = run_command(arfit_bin() + " suggest " + models + " --tp 2 --json " + out);
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.output;
    EXPECT_NE(r.output.find(out + ": "), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("cells are uncertain"), std::string::npos) << "printed before refusing: " << r.output;
  }
}

// codegen and suggest take the --sm values predict takes (the SMs arfit knows).
TEST(Cli, CodegenSmIsAKnownSm) {
  arfit::testing::TempDir dir;
  const std::string models = fit_small_models(dir);
  for (const std::string& cmd : {" codegen " + models + " --format json -o " + dir.file("t.json"), " suggest " + models}) {
    const auto r = run_command(arfit_bin() + cmd + " --tp 2 --sm 1000000");
    EXPECT_EQ(r.exit_code, 2) << cmd << r.output;
    EXPECT_NE(r.output.find("--sm: 1000000 not in"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.json")));
  const auto ok = run_command(arfit_bin() + " codegen " + models + " --format json --tp 2 --sm 100 -o " + dir.file("t.json"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// codegen and suggest refuse --tp above 2^20 GPUs and a grid whose largest cell (tokens x hidden x dtype size) is
// above 1e18 bytes, the bounds of a model (model/sample.h), as usage errors naming the option and the bound.
TEST(Cli, CodegenAndSuggestRefuseRanksAndCellsAboveTheModelBounds) {
  arfit::testing::TempDir dir;
  const std::string models = fit_small_models(dir);
  for (const std::string& cmd : {" codegen " + models + " --format json -o " + dir.file("t.json"), " suggest " + models}) {
    auto r = run_command(arfit_bin() + cmd + " --tp 2,2097152");
    EXPECT_EQ(r.exit_code, 2) << cmd << r.output;
    EXPECT_NE(r.output.find("--tp: 2097152 is above 1048576 (2^20)"), std::string::npos) << r.output;
    // 2^40 x 2^40 x 2 bytes: each axis is within its own bound, their product is not.
    r = run_command(arfit_bin() + cmd + " --tp 2 --tokens 1:1099511627776 --hidden 1099511627776");
    EXPECT_EQ(r.exit_code, 2) << cmd << r.output;
    EXPECT_NE(r.output.find("--tokens x --hidden: 1099511627776 x 1099511627776 x bf16"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("above 1e+18"), std::string::npos) << r.output;
    // The same at the bound's side: 2^20 GPUs and 2^29 x 2^30 x 2 bytes (about 1.15e18 > 1e18) vs 2^29 x 2^29 x 2.
    r = run_command(arfit_bin() + cmd + " --tp 2 --tokens 536870912 --hidden 536870912");
    EXPECT_EQ(r.exit_code, 0) << cmd << r.output;
  }
  EXPECT_TRUE(std::filesystem::exists(dir.file("t.json")));
}

// suggest's table: every column as wide as its widest entry and two spaces apart, so long strategy and fusion
// names stay separate columns (fixed widths ran a 16+ character choice into the runner-up).
TEST(Cli, SuggestColumnsStaySeparatedWithLongNames) {
  arfit::testing::TempDir dir;
  const std::string a = "A_strategy_with_a_name_longer_than_sixteen", b = "B_another_strategy_with_a_long_name";
  std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (int k = 10; k <= 26; ++k) {
    const double bytes = static_cast<double>(1LL << k);
    // Two strategies within 1 % of each other (with some wiggle): their intervals overlap, every cell is uncertain.
    const double wiggle = (k % 3 - 1) * 0.02;
    csv += "allreduce," + a + ",NONE,bf16,2," + std::to_string(1LL << k) + "," + std::to_string((15 + bytes / 4e5) * (1 + wiggle)) + "\n";
    csv += "allreduce," + b + ",NONE,bf16,2," + std::to_string(1LL << k) + "," + std::to_string((15 + bytes / 4e5) * (1.01 - wiggle)) + "\n";
  }
  const std::string samples = dir.write("s.csv", csv);
  auto r = run_command(arfit_bin() + " fit " + samples + " -o " + dir.file("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(arfit_bin() + " suggest " + dir.file("m.json") + " --tp 2 --fusion NONE --top 5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::regex sep(" {2,}");
  int rows = 0;
  std::size_t header_fields = 0;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    std::string trimmed = line.substr(line.find_first_not_of(' ') == std::string::npos ? 0 : line.find_first_not_of(' '));
    std::vector<std::string> fields(std::sregex_token_iterator(trimmed.begin(), trimmed.end(), sep, -1), std::sregex_token_iterator());
    if (trimmed.rfind("#", 0) == 0) {
      header_fields = fields.size();
      EXPECT_EQ(header_fields, 11u) << line;
      continue;
    }
    if (!header_fields || trimmed.empty()) continue;
    ++rows;
    ASSERT_EQ(fields.size(), header_fields) << "columns run together: " << line << "\n" << r.output;
    EXPECT_TRUE((fields[6] == a && fields[7] == b) || (fields[6] == b && fields[7] == a)) << line;
  }
  EXPECT_GT(rows, 0) << r.output;
}

// One rule for a --dtype the models hold no model of: codegen's (and suggest's, plot's) table answers NCCL from
// the fp16 tables in a bf16 grid, so `arfit predict --dtype bf16` gives that cell the same number, and says from
// which type (it answered "no model" while the table held a number for the same cell).
TEST(Cli, PredictAnswersACellWithTheNumbersOfTheTableOfTheSameDtype) {
  arfit::testing::TempDir dir;
  std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (int k = 10; k <= 26; ++k)
    for (const auto& [strategy, dtype, alpha] : std::vector<std::tuple<std::string, std::string, double>>{
             {"NCCL", "fp16", 15}, {"custom", "bf16", 3}})
      csv += "allreduce," + strategy + ",NONE," + dtype + ",2," + std::to_string(1LL << k) + "," +
             std::to_string(alpha + static_cast<double>(1LL << k) / 4e5) + "\n";
  auto r = run_command(arfit_bin() + " fit " + dir.write("s.csv", csv) + " -o " + dir.file("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(arfit_bin() + " codegen " + dir.file("m.json") + " --format json --tp 2 --fusion NONE --hidden 512 " +
                  "--tokens 1024 --dtype bf16 -o " + dir.file("t.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto table = nlohmann::json::parse(arfit::read_file(dir.file("t.json")));
  const auto& nccl = table["cells"][0]["predicted"]["NCCL"];
  r = run_command(arfit_bin() + " predict " + dir.file("m.json") + " --collective allreduce --strategy NCCL --nranks 2 " +
                  "--tokens 1024 --hidden 512 --dtype bf16 --json > " + dir.file("p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto predicted = nlohmann::json::parse(arfit::read_file(dir.file("p.json")));
  ASSERT_EQ(predicted.size(), 1u) << predicted.dump();
  ASSERT_TRUE(predicted[0].contains("time_us")) << predicted.dump();
  EXPECT_EQ(predicted[0]["bytes"].get<double>(), table["cells"][0]["bytes"].get<double>());
  for (const char* f : {"time_us", "lo_us", "hi_us"}) EXPECT_EQ(predicted[0][f].get<double>(), nccl[f].get<double>()) << f;
  EXPECT_NE(predicted[0]["how"].get<std::string>().find("no bf16 model: used fp16 (same element size)"), std::string::npos)
      << predicted.dump();
  // Without --nranks the GPU counts are those of the type that answers (one here), not "none of bf16".
  r = run_command(arfit_bin() + " predict " + dir.file("m.json") + " --collective allreduce --strategy NCCL --bytes 1M --dtype bf16");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// --transfer-sm from a machine whose SM arfit has no datasheet figures for (unknown, or SM 75) says so, naming the
// system and the SM, in codegen (a table format and a size format) and suggest; a known SM transfers. A grid whose
// cells no model answers names what it asked against what the models hold (here: the element type).
TEST(Cli, TransferSmAndEmptyGridsSayTheExactReason) {
  arfit::testing::TempDir dir;
  auto models_with = [&](const std::string& name, const std::string& sm, const std::string& dtype) {
    std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us,sm\n";
    for (int k = 10; k <= 26; ++k)
      for (const auto& [strategy, alpha] : std::vector<std::pair<std::string, double>>{{"NCCL", 15}, {"custom", 3}})
        csv += "allreduce," + strategy + ",NONE," + dtype + ",2," + std::to_string(1LL << k) + "," +
               std::to_string(alpha + static_cast<double>(1LL << k) / 4e5) + "," + sm + "\n";
    const auto r = run_command(arfit_bin() + " fit " + dir.write(name + ".csv", csv) + " -o " + dir.file(name + ".json"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return dir.file(name + ".json");
  };
  const std::string unknown = models_with("unknown", "", "bf16"), turing = models_with("turing", "75", "bf16");
  for (const auto& [models, says] : std::vector<std::pair<std::string, std::string>>{
           {unknown, "--transfer-sm: system 'default' was measured on an SM arfit cannot tell"},
           {turing, "--transfer-sm: system 'default' was measured on SM 75, which has no datasheet figures"}})
    for (const std::string& cmd : {" codegen " + models + " --format json -o " + dir.file("t.json"),
                                   " codegen " + models + " --format vllm -o " + dir.file("t.json"), " suggest " + models}) {
      const auto r = run_command(arfit_bin() + cmd + " --tp 2 --transfer-sm --sm 100");
      EXPECT_EQ(r.exit_code, 2) << cmd << r.output;
      EXPECT_NE(r.output.find(says), std::string::npos) << cmd << r.output;
      EXPECT_NE(r.output.find("cannot be carried to --sm 100"), std::string::npos) << r.output;
    }
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.json")));
  const std::string hopper = models_with("hopper", "90", "bf16");
  auto r = run_command(arfit_bin() + " codegen " + hopper + " --format json --tp 2 --transfer-sm --sm 100 -o " + dir.file("t.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string fp32 = models_with("fp32", "90", "fp32");
  r = run_command(arfit_bin() + " suggest " + fp32 + " --tp 2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the grid asks --tp 2, --fusion all, --dtype bf16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("its all-reduce models are at TP 2, fusion NONE, dtype fp32"), std::string::npos) << r.output;
  r = run_command(arfit_bin() + " suggest " + fp32 + " --tp 2 --dtype fp32");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// --rules: a JSON document that is not a kernel rule file ({}, another version, a models file) is refused
// naming the file (and the key), not read as a file with no rules.
TEST(Cli, RulesFileMustBeARulesFile) {
  arfit::testing::TempDir dir;
  const std::string profile = std::string(ARFIT_SOURCE_DIR) + "/tests/trace/data/vllm_tp2_small.json";
  const std::string models = fit_small_models(dir);
  const std::string empty = dir.write("empty.json", "{}");
  const std::string v99 = dir.write("v99.json", "{\"arfit_kernel_rules\": 99}");
  for (const auto& [rules, says] : std::vector<std::pair<std::string, std::string>>{
           {empty, empty + ":1: not a kernel rule file"}, {v99, v99 + ":1: at arfit_kernel_rules: unsupported"},
           {models, models + ":1: not a kernel rule file"}}) {
    const auto r = run_command(arfit_bin() + " breakdown " + profile + " --no-figures --rules " + rules + " -o " + dir.file("bd"));
    EXPECT_EQ(r.exit_code, 1) << rules << ": " << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
  }
  const std::string fine = dir.write("fine.json", R"({"classes": [{"id": "x"}], "rules": [{"class": "x", "regex": "sample_tokens"}]})");
  const auto r = run_command(arfit_bin() + " breakdown " + profile + " --no-figures --rules " + fine + " -o " + dir.file("bd"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A custom all-reduce measured on one node only gets no answer on two (peer GPU memory ends at the node): predict
// says which strategy and why, and fails as for a query no model answers (exit code 1); NCCL is answered across
// nodes as before, and the custom kernel too once a --prior machine measured it on two nodes (an NVL72 rack).
TEST(Cli, PredictRefusesACustomAllReduceNoMachineMeasuredAcrossNodes) {
  arfit::testing::TempDir dir;
  // Each machine under its own label: a prior with the target's label and its very measurements is refused (the
  // prior would be the target itself).
  const auto samples = [](const std::vector<std::pair<int, int>>& counts, const std::string& system) {
    std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,nnodes,bytes,time_us,system\n";
    for (const auto& [nranks, nnodes] : counts)
      for (const char* strategy : {"NCCL", "vLLM_custom_graph"})
        for (int k = 10; k <= 26; ++k)
          csv += std::string("allreduce,") + strategy + ",NONE,bf16," + std::to_string(nranks) + "," + std::to_string(nnodes) + "," +
                 std::to_string(1LL << k) + "," + std::to_string(5.0 * nnodes + static_cast<double>(1LL << k) / (4e5 / nnodes)) +
                 "," + system + "\n";
    return csv;
  };
  auto r = run_command(arfit_bin() + " fit " + dir.write("h100.csv", samples({{8, 1}}, "h100")) + " -o " + dir.file("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string ask = arfit_bin() + " predict " + dir.file("m.json") + " --collective allreduce --nranks 16 --nnodes 2 --bytes 1M,16M";
  r = run_command(ask + " --strategy vLLM_custom_graph");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("vLLM_custom_graph: no machine in the models measured it (allreduce) on more than one node"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("peer-memory domain"), std::string::npos) << r.output;
  r = run_command(ask + " --strategy NCCL");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_command(arfit_bin() + " fit " + dir.write("nvl72.csv", samples({{8, 1}, {16, 2}}, "nvl72")) + " -o " + dir.file("nvl72.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(ask + " --strategy vLLM_custom_graph --prior " + dir.file("nvl72.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("peer-memory domain"), std::string::npos) << r.output;
}

// Without --nranks predict answers from the file's one GPU count, and its busbw column is that count's bus
// bandwidth: on an 8-GPU file it printed the algorithm bandwidth (2(n-1)/n = 1.75 times too small) under the name
// busbw, while --nranks 8 printed the bus bandwidth of the same answer. A split's count is its ranks'.
TEST(Cli, PredictWithoutNranksUsesTheFilesOneCountOrTheSplits) {
  arfit::testing::TempDir dir;
  std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (int k = 10; k <= 26; ++k)
    for (const char* coll : {"allreduce", "alltoall"})
      csv += std::string(coll) + ",NCCL,NONE,fp32,8," + std::to_string(1LL << k) + "," +
             std::to_string(10 + static_cast<double>(1LL << k) / 1e5) + "\n";
  auto r = run_command(arfit_bin() + " fit " + dir.write("s.csv", csv) + " -o " + dir.file("m.json") + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto busbw = [&](const std::string& args) {
    const auto out = run_command(arfit_bin() + " predict " + dir.file("m.json") + " " + args + " --json");
    EXPECT_EQ(out.exit_code, 0) << args << "\n" << out.output;
    const auto p = nlohmann::json::parse(out.output);
    return std::pair{p.at(0).at("busbw_gbps").get<double>(), p.at(0).at("time_us").get<double>()};
  };
  const auto [without, t] = busbw("--collective allreduce --bytes 1M");
  EXPECT_EQ(without, busbw("--collective allreduce --bytes 1M --nranks 8").first);
  EXPECT_NEAR(without, 1048576.0 / t / 1e3 * 1.75, 1e-9 * without);
  EXPECT_EQ(busbw("--collective allreduce --tokens 1024 --hidden 256").first,
            busbw("--collective allreduce --tokens 1024 --hidden 256 --nranks 8").first);
  const auto [split, ts] = busbw("--collective alltoallv --splits 8192-8192-8192-8192-8192-8192-8192-8192");
  EXPECT_EQ(split, busbw("--collective alltoallv --nranks 8 --splits 8192-8192-8192-8192-8192-8192-8192-8192").first);
  (void)ts;
  // A split names its ranks: without --nranks a 4-rank split is asked at 4 ranks, which this 8-rank file does not
  // model (it was answered from the 8-rank curve, exit 0; --nranks 8 refuses the mismatch).
  r = run_command(arfit_bin() + " predict " + dir.file("m.json") + " --collective alltoallv --splits 8192-8192-8192-8192 --json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("time_us"), std::string::npos) << r.output;
}

// codegen/: tables built against synthetic predictors, the generated files compiled and run, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/codegen.h"
#include "codegen/safe_text.h"
#include "codegen/table.h"
#include "codegen/writers.h"
#include "test_support.h"

using namespace arfit;
using namespace arfit::codegen;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

// Synthetic all-reduce times (us) with known crossovers: ONESHOT has the lowest latency, TWOSHOT is in
// between, NCCL has the highest bandwidth. Fusion adds a per-byte cost to the custom kernels only.
double synthetic_time(const std::string& s, int tp, FusionOp f, double bytes) {
  const double fuse = (f == FusionOp::None ? 0.0 : 0.2 * static_cast<int>(f)) * bytes / 1e5;
  if (s == "ONESHOT") return 3.0 + (tp - 1) * bytes / 5e4 + fuse;
  if (s == "TWOSHOT") return 6.0 + 2.0 * bytes / 1.5e5 + fuse;
  return 15.0 + 2.0 * bytes / 4e5;  // NCCL
}

Predictor synthetic_predictor(double rel_halfwidth = 0.02) {
  return [rel_halfwidth](const PredictQuery& q) -> std::optional<Prediction> {
    Prediction p;
    p.time_us = synthetic_time(q.strategy, q.nranks, q.fusion, q.bytes);
    p.lo_us = p.time_us * (1 - rel_halfwidth);
    p.hi_us = p.time_us * (1 + rel_halfwidth);
    return p;
  };
}

CandidateLister three_strategies() {
  return [](int, FusionOp) { return std::vector<std::string>{"NCCL", "ONESHOT", "TWOSHOT"}; };
}

std::string expected_choice(int tp, FusionOp f, double bytes) {
  std::string best;
  double bt = 0;
  for (const char* s : {"NCCL", "ONESHOT", "TWOSHOT"}) {
    const double t = synthetic_time(s, tp, f, bytes);
    if (best.empty() || t < bt) {
      best = s;
      bt = t;
    }
  }
  return best;
}

Banner test_banner() {
  Banner b;
  b.version = ARFIT_VERSION;
  b.inputs.push_back({"models.json", fnv1a64_hex("synthetic")});
  b.date = "2026-01-02";
  b.command = "test";
  return b;
}

std::string cxx() { return ARFIT_TEST_CXX; }

}  // namespace

TEST(CodegenParse, Axes) {
  EXPECT_EQ(parse_pow2_axis("128:8192", "--hidden"), (std::vector<std::int64_t>{128, 256, 512, 1024, 2048, 4096, 8192}));
  EXPECT_EQ(parse_pow2_axis("1:1", "--tokens"), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(parse_pow2_axis("4096,128", "--hidden"), (std::vector<std::int64_t>{128, 4096}));
  EXPECT_THROW(parse_pow2_axis("100:8192", "--hidden"), std::invalid_argument);
  EXPECT_THROW(parse_pow2_axis("8192:128", "--hidden"), std::invalid_argument);
  EXPECT_THROW(parse_pow2_axis("0:8", "--tokens"), std::invalid_argument);
  EXPECT_THROW(parse_pow2_axis("12", "--tokens"), std::invalid_argument);
  EXPECT_THROW(parse_pow2_axis("a:b", "--tokens"), std::invalid_argument);
  // Units as predict's and arbench's sizes take them (parse_size_text): powers of 1024.
  EXPECT_EQ(parse_pow2_axis("4K:8K", "--hidden"), (std::vector<std::int64_t>{4096, 8192}));
  EXPECT_EQ(parse_pow2_axis("8:4G", "--bytes").back(), std::int64_t{1} << 32);
  EXPECT_THROW(parse_pow2_axis("1.5K", "--hidden"), std::invalid_argument);  // 1536: not a power of two
  EXPECT_THROW(parse_pow2_axis("0.5", "--tokens"), std::invalid_argument);   // not a whole number
  EXPECT_THROW(parse_pow2_axis("8MB", "--bytes"), std::invalid_argument);    // ambiguous unit
  EXPECT_EQ(parse_int_list("8,2,4", "--tp"), (std::vector<int>{2, 4, 8}));
  EXPECT_THROW(parse_int_list("2,,4", "--tp"), std::invalid_argument);
  EXPECT_THROW(parse_int_list("2,2", "--tp"), std::invalid_argument);
  EXPECT_EQ(parse_fusion_list("RESIDUAL_RMS_NORM,NONE", "--fusion"),
            (std::vector<FusionOp>{FusionOp::None, FusionOp::ResidualRmsNorm}));
  EXPECT_EQ(parse_fusion_list("all", "--fusion").size(), 4u);
  EXPECT_THROW(parse_fusion_list("BOGUS", "--fusion"), std::invalid_argument);
  EXPECT_EQ(trtllm_strategy_number("NCCL"), 0);
  EXPECT_EQ(trtllm_strategy_number("oneshot"), 4);
  EXPECT_EQ(trtllm_strategy_number("TWOSHOT"), 5);
  EXPECT_EQ(trtllm_strategy_number("NCCL_SYMMETRIC"), 8);
  EXPECT_FALSE(trtllm_strategy_number("vLLM_custom_graph").has_value());
}

TEST(CodegenTable, ChoosesArgminAndFlagsUncertainCells) {
  const Grid g;
  const StrategyTable t = build_table(g, three_strategies(), synthetic_predictor());
  ASSERT_EQ(t.cells.size(), 3u * 4 * 7 * 15);
  EXPECT_EQ(t.strategies, (std::vector<std::string>{"NCCL", "ONESHOT", "TWOSHOT"}));
  std::map<std::string, int> seen;
  int uncertain = 0;
  for (const auto& c : t.cells) {
    ASSERT_EQ(c.bytes, double(c.tokens) * double(c.hidden) * 2);
    EXPECT_EQ(c.choice, expected_choice(c.tp, c.fusion, c.bytes)) << c.tp << " " << c.hidden << " " << c.tokens;
    ++seen[c.choice];
    ASSERT_EQ(c.candidates.size(), 3u);
    EXPECT_GE(c.margin, 0.0);
    // 2 % half-width intervals overlap exactly when the runner-up is within (1.02/0.98 - 1) of the best.
    EXPECT_EQ(c.uncertain, c.margin <= 1.02 / 0.98 - 1 + 1e-12) << c.margin;
    EXPECT_GT(c.margin_sigma, 0.0);
    uncertain += c.uncertain;
    if (c.uncertain) {
      EXPECT_GT(c.expected_regret, 0.0);
    }
  }
  EXPECT_EQ(uncertain, t.uncertain_cells());
  EXPECT_GT(uncertain, 0);
  EXPECT_LT(uncertain, static_cast<int>(t.cells.size()) / 4);
  // All three strategies win somewhere: the grid spans their crossovers.
  EXPECT_EQ(seen.size(), 3u);
}

TEST(CodegenTable, FallbackAndRemap) {
  Grid g;
  g.tps = {2, 4};
  g.fusions = {FusionOp::None};
  g.hiddens = {1024};
  g.tokens = {1, 16384};
  // TP 4 has no model at all -> fallback; TWOSHOT left out by the remap.
  Predictor p = [](const PredictQuery& q) -> std::optional<Prediction> {
    if (q.nranks == 4) return std::nullopt;
    Prediction r;
    r.time_us = synthetic_time(q.strategy, q.nranks, q.fusion, q.bytes);
    return r;
  };
  const StrategyTable all = build_table(g, three_strategies(), p);
  // Renamed candidates: NCCL stays NCCL, ONESHOT stands for FAST, TWOSHOT is dropped.
  const StrategyTable t = remap_table(all, {{"NCCL", {"NCCL"}}, {"FAST", {"ONESHOT"}}}, "NCCL_SYMMETRIC");
  EXPECT_EQ(t.fallback_cells(), 2);
  EXPECT_EQ(t.strategies, (std::vector<std::string>{"FAST", "NCCL"}));
  EXPECT_EQ(t.at(1, 0, 0, 0).choice, "NCCL_SYMMETRIC");
  EXPECT_TRUE(t.at(1, 0, 0, 0).fallback);
  for (const auto& c : t.cells)
    for (const auto& cand : c.candidates) EXPECT_NE(cand.strategy, "TWOSHOT");
  // Without intervals nothing is uncertain and there is no expected regret.
  EXPECT_FALSE(t.at(0, 0, 0, 0).uncertain);
  EXPECT_EQ(t.at(0, 0, 0, 0).choice, "FAST");
  EXPECT_EQ(t.at(0, 0, 0, 1).choice, "NCCL");
  // The same choices as predicting the renamed candidates (mapped_predictor), cell for cell.
  const StrategySources sources{{"NCCL", {"NCCL"}}, {"FAST", {"ONESHOT", "TWOSHOT"}}};
  const StrategyTable remapped = remap_table(all, sources, "NCCL");
  const StrategyTable predicted =
      build_table(g, [](int, FusionOp) { return std::vector<std::string>{"FAST", "NCCL"}; }, mapped_predictor(p, sources));
  for (std::size_t i = 0; i < remapped.cells.size(); ++i) {
    EXPECT_EQ(remapped.cells[i].choice, predicted.cells[i].choice);
    EXPECT_EQ(remapped.cells[i].runner_up, predicted.cells[i].runner_up);
    EXPECT_DOUBLE_EQ(remapped.cells[i].margin, predicted.cells[i].margin);
  }
}

TEST(CodegenTable, ExpectedShortfall) {
  EXPECT_DOUBLE_EQ(expected_shortfall(0.1, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(expected_shortfall(-0.1, 0.0), 0.1);
  EXPECT_NEAR(expected_shortfall(0.0, 1.0), 1.0 / std::sqrt(2 * M_PI), 1e-12);
  EXPECT_LT(expected_shortfall(0.2, 0.1), expected_shortfall(0.1, 0.1));
  Prediction p;
  p.time_us = 10;
  p.lo_us = 10 / std::exp(1.6448536269514722);
  p.hi_us = 10 * std::exp(1.6448536269514722);
  EXPECT_NEAR(log_sigma(p), 1.0, 1e-12);
}

TEST(CodegenWriters, TrtllmTableCompilesAndHoldsKnownCells) {
  const StrategyTable t = build_table(Grid{}, three_strategies(), synthetic_predictor());
  const std::string code = write_trtllm(trtllm_codes(t, 90), test_banner());
  EXPECT_NE(code.find("DO NOT EDIT"), std::string::npos);
  EXPECT_NE(code.find("fnv1a64 " + fnv1a64_hex("synthetic")), std::string::npos);
  EXPECT_NE(code.find("Date: 2026-01-02"), std::string::npos);
  EXPECT_NE(code.find("inline AllReduceBestStrategyTableType AllReduceBestStrategyTableSM90 = {"), std::string::npos);
  EXPECT_NE(code.find("// Fusion:['NONE', 'RESIDUAL_RMS_NORM', 'RESIDUAL_RMS_NORM_QUANT_FP8', 'RESIDUAL_RMS_NORM_QUANT_NVFP4']"),
            std::string::npos);
  TempDir dir;
  dir.write("table.inc", code);
  // Print every cell as TensorRT-LLM indexes it: [tp][fusion][hidden][tokens].
  dir.write("main.cpp", R"(#include <cstdio>
#include "table.inc"
int main() {
  const auto& t = AllReduceBestStrategyTableSM90;
  std::printf("%zu %zu %zu %zu\n", t.size(), t[0].size(), t[0][0].size(), t[0][0][0].size());
  for (const auto& a : t) for (const auto& b : a) for (const auto& c : b) for (int v : c) std::printf("%d ", v);
  std::printf("\n");
}
)");
  const auto build = run_command(cxx() + " -std=c++17 -Wall -Werror -o " + dir.file("prog") + " " + dir.file("main.cpp"));
  ASSERT_EQ(build.exit_code, 0) << build.output;
  const auto run = run_command(dir.file("prog"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::istringstream in(run.output);
  std::size_t a, b, c, d;
  in >> a >> b >> c >> d;
  EXPECT_EQ(a, 3u);
  EXPECT_EQ(b, 4u);
  EXPECT_EQ(c, 7u);
  EXPECT_EQ(d, 15u);
  const std::map<std::string, int> code_of{{"NCCL", 0}, {"ONESHOT", 4}, {"TWOSHOT", 5}};
  for (const auto& cell : t.cells) {
    int v = -1;
    in >> v;
    // TensorRT-LLM runs NCCL above its workspace size (64 MiB) before reading the table, and its SM90 table keeps
    // NCCL in every NVFP4 cell; the others hold the models' choice among what TensorRT-LLM can run there (TWOSHOT
    // needs tokens >= tp).
    std::string choice = expected_choice(cell.tp, cell.fusion, cell.bytes);
    if (choice == "TWOSHOT" && cell.tokens < cell.tp) {
      double best = std::numeric_limits<double>::infinity();
      for (const auto& c : cell.candidates)
        if (c.strategy != "TWOSHOT" && c.prediction.time_us < best) best = c.prediction.time_us, choice = c.strategy;
    }
    const bool gated = cell.bytes > 67108864.0;
    const int want = gated || cell.fusion == FusionOp::ResidualRmsNormQuantNvfp4 ? 0 : code_of.at(choice);
    ASSERT_EQ(v, want) << cell.tp << " " << cell.tokens << " " << cell.hidden;
  }
  // Known cells of the synthetic models: the smallest message is ONESHOT, the largest NCCL.
  EXPECT_EQ(t.at(0, 0, 0, 0).choice, "ONESHOT");
  EXPECT_EQ(t.at(2, 3, 6, 14).choice, "NCCL");
}

TEST(CodegenWriters, TrtllmRejectsUnnumberedStrategy) {
  Grid g;
  g.tps = {2};
  g.fusions = {FusionOp::None};
  g.hiddens = {128};
  g.tokens = {1};
  const StrategyTable t = build_table(g, [](int, FusionOp) { return std::vector<std::string>{"vLLM_custom_graph"}; },
                                      synthetic_predictor());
  EXPECT_THROW(trtllm_codes(t, 90), std::invalid_argument);
  // A table of another grid would be misread by TensorRT-LLM's positional lookup.
  const StrategyTable small = build_table(g, three_strategies(), synthetic_predictor());
  EXPECT_THROW(write_trtllm(trtllm_codes(small, 90), test_banner()), std::invalid_argument);
}

TEST(CodegenWriters, HeaderAgreesWithJsonOnGridAndIsDefinedOffGrid) {
  Grid g;  // default grid, plus a strategy TensorRT-LLM has no number for
  CandidateLister four = [](int, FusionOp) { return std::vector<std::string>{"NCCL", "ONESHOT", "TWOSHOT", "my-kernel"}; };
  Predictor p = [](const PredictQuery& q) -> std::optional<Prediction> {
    Prediction r;
    r.time_us = q.strategy == "my-kernel" ? 4.0 + q.bytes / 2e4 : synthetic_time(q.strategy, q.nranks, q.fusion, q.bytes);
    r.lo_us = r.time_us * 0.97;
    r.hi_us = r.time_us * 1.03;
    return r;
  };
  const StrategyTable t = build_table(g, four, p);
  const nlohmann::json j = nlohmann::json::parse(write_json(t, test_banner(), 90));
  EXPECT_EQ(j["note"], "generated file, do not edit");
  EXPECT_EQ(j["summary"]["cells"], 1260);
  EXPECT_EQ(j["summary"]["uncertain"], t.uncertain_cells());
  ASSERT_EQ(j["cells"].size(), 1260u);
  const std::string header = write_header(t, test_banner(), 90);
  EXPECT_NE(header.find("DO NOT EDIT"), std::string::npos);
  EXPECT_NE(header.find("my_kernel = 100"), std::string::npos);
  TempDir dir;
  dir.write("arfit_select.h", header);
  // Every grid cell, then documented off-grid queries.
  std::ostringstream main;
  main << R"(#include <cstdio>
#include "arfit_select.h"
using namespace arfit_select;
int main() {
  for (int tp : kTp) for (Fusion f : kFusion) for (auto h : kHidden) for (auto k : kTokens)
    std::printf("%d ", static_cast<int>(select(tp, f, k, h)));
  std::printf("\n");
  // off grid: hidden below/above, tp not in table, tokens 0 / negative / too many, a fusion without a row
  // (TensorRT-LLM's RESIDUAL_RMS_PREPOST_NORM = 3)
  std::printf("%d %d %d %d %d %d %d %d\n",
    static_cast<int>(select(2, Fusion::NONE, 1, 64)), static_cast<int>(select(2, Fusion::NONE, 1, 16384)),
    static_cast<int>(select(3, Fusion::NONE, 1, 1024)), static_cast<int>(select(16, Fusion::NONE, 1, 1024)),
    static_cast<int>(select(2, Fusion::NONE, 0, 1024)), static_cast<int>(select(2, Fusion::NONE, -5, 1024)),
    static_cast<int>(select(2, Fusion::NONE, 16385, 1024)), static_cast<int>(select(2, static_cast<Fusion>(3), 1, 1024)));
  // between grid points: floor(log2) bucket
  std::printf("%d %d %d %d\n",
    static_cast<int>(select(8, Fusion::NONE, 3, 1024)) == static_cast<int>(select(8, Fusion::NONE, 2, 1024)),
    static_cast<int>(select(8, Fusion::NONE, 1000, 5000)) == static_cast<int>(select(8, Fusion::NONE, 512, 4096)),
    static_cast<int>(select(4, Fusion::RESIDUAL_RMS_NORM, 16383, 8191)) == static_cast<int>(select(4, Fusion::RESIDUAL_RMS_NORM, 8192, 4096)),
    static_cast<int>(kOutOfRange));
}
)";
  dir.write("main.cpp", main.str());
  const auto build = run_command(cxx() + " -std=c++17 -Wall -Wextra -Werror -pedantic -o " + dir.file("prog") + " " + dir.file("main.cpp"));
  ASSERT_EQ(build.exit_code, 0) << build.output;
  const auto run = run_command(dir.file("prog"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::istringstream in(run.output);
  std::map<std::string, int> value{{"NCCL", 0}, {"ONESHOT", 4}, {"TWOSHOT", 5}, {"my-kernel", 100}};
  int my_kernel_cells = 0;
  for (const auto& cell : j["cells"]) {
    int v = -1;
    in >> v;
    ASSERT_EQ(v, value.at(cell["choice"].get<std::string>())) << cell.dump();
    my_kernel_cells += cell["choice"] == "my-kernel";
  }
  EXPECT_GT(my_kernel_cells, 0);
  for (int i = 0; i < 8; ++i) {
    int v = -1;
    in >> v;
    EXPECT_EQ(v, 0) << "off-grid query " << i << " must give kOutOfRange (NCCL)";
  }
  for (int i = 0; i < 3; ++i) {
    int same = -1;
    in >> same;
    EXPECT_EQ(same, 1) << "bucket check " << i;
  }
  int fallback = -1;
  in >> fallback;
  EXPECT_EQ(fallback, 0);
}

TEST(CodegenWriters, JsonCellsCarryPredictionsAndMargins) {
  Grid g;
  g.tps = {8};
  g.fusions = {FusionOp::ResidualRmsNorm};
  g.hiddens = {4096};
  g.tokens = {1, 64, 4096};
  const StrategyTable t = build_table(g, three_strategies(), synthetic_predictor(0.05));
  const nlohmann::json j = table_to_json(t, test_banner(), 90);
  ASSERT_EQ(j["cells"].size(), 3u);
  for (const auto& c : j["cells"]) {
    EXPECT_EQ(c["predicted"].size(), 3u);
    const double best = c["predicted"][c["choice"].get<std::string>()]["time_us"];
    const double runner = c["predicted"][c["runner_up"].get<std::string>()]["time_us"];
    EXPECT_NEAR(c["margin"].get<double>(), runner / best - 1, 1e-12);
    for (const auto& [name, p] : c["predicted"].items()) EXPECT_GE(p["time_us"].get<double>(), best);
    EXPECT_EQ(c["uncertain"].get<bool>(), best * 1.05 >= runner * 0.95);
  }
  EXPECT_EQ(j["axes"]["fusion"][0], "RESIDUAL_RMS_NORM");
  EXPECT_EQ(j["inputs"][0]["fnv1a64"], fnv1a64_hex("synthetic"));
}

// A prediction from curves carried from other machines (`arfit fit --prior`) is marked where the format can say
// so: each json prediction and cell, the json summary, the header's and the trtllm table's Cells line, and the
// summary codegen prints; a table without such a prediction says nothing of it.
TEST(CodegenWriters, TransferredPredictionsAreMarked) {
  const Predictor oneshot_transferred = [](const PredictQuery& q) -> std::optional<Prediction> {
    auto p = synthetic_predictor()(q);
    p->transferred = q.strategy == "ONESHOT";
    return p;
  };
  const StrategyTable t = build_table(Grid{}, three_strategies(), oneshot_transferred);
  int oneshot = 0;
  for (const Cell& c : t.cells) oneshot += c.choice == "ONESHOT";
  ASSERT_GT(oneshot, 0);
  ASSERT_LT(oneshot, static_cast<int>(t.cells.size()));
  EXPECT_EQ(t.transferred_cells(), oneshot);
  const nlohmann::json j = table_to_json(t, test_banner(), 100);
  EXPECT_EQ(j["summary"]["transferred"], oneshot);
  for (const auto& c : j["cells"]) {
    EXPECT_EQ(c["transferred"].get<bool>(), c["choice"] == "ONESHOT");
    for (const auto& [name, p] : c["predicted"].items()) EXPECT_EQ(p["transferred"].get<bool>(), name == "ONESHOT");
  }
  const std::string line = ", chosen from curves transferred from other machines: " + std::to_string(oneshot);
  EXPECT_NE(t.summary().find(line.substr(0, 2) + std::to_string(oneshot) + " chosen from curves transferred"), std::string::npos)
      << t.summary();
  EXPECT_NE(write_header(t, test_banner(), 100).find(line + "\n"), std::string::npos);
  const TrtllmTable tt = trtllm_codes(t, 100);
  EXPECT_GT(tt.transferred(), 0);
  // The Cells line, its continuation lines joined.
  const std::string written = std::regex_replace(write_trtllm(tt, test_banner()), std::regex("\n//   "), " ");
  EXPECT_NE(written.find("; chosen from curves transferred from other machines: " + std::to_string(tt.transferred())),
            std::string::npos);

  const StrategyTable measured = build_table(Grid{}, three_strategies(), synthetic_predictor());
  EXPECT_EQ(measured.transferred_cells(), 0);
  EXPECT_EQ(measured.summary().find("transferred"), std::string::npos);
  EXPECT_EQ(write_header(measured, test_banner(), 100).find("transferred"), std::string::npos);
  EXPECT_EQ(table_to_json(measured, test_banner(), 100)["summary"]["transferred"], 0);
}

TEST(CodegenWriters, DeterministicOutput) {
  const StrategyTable a = build_table(Grid{}, three_strategies(), synthetic_predictor());
  const StrategyTable b = build_table(Grid{}, three_strategies(), synthetic_predictor());
  EXPECT_EQ(write_trtllm(trtllm_codes(a, 100), test_banner()), write_trtllm(trtllm_codes(b, 100), test_banner()));
  EXPECT_EQ(write_header(a, test_banner(), 100), write_header(b, test_banner(), 100));
  EXPECT_EQ(write_json(a, test_banner(), 100), write_json(b, test_banner(), 100));
}

TEST(CodegenDate, NeverTheWallClock) {
  nlohmann::json models = {{"date", "2025-03-04T10:00:00Z"}};
  ::unsetenv("SOURCE_DATE_EPOCH");
  EXPECT_EQ(resolve_date("2024-12-31", models, ""), "2024-12-31");
  EXPECT_THROW(resolve_date("2024-13-01", models, ""), std::invalid_argument);
  EXPECT_EQ(resolve_date("", models, ""), "2025-03-04");
  EXPECT_EQ(resolve_date("", nlohmann::json::object(), ""), "unknown");
  ::setenv("SOURCE_DATE_EPOCH", "86400", 1);
  EXPECT_EQ(resolve_date("", models, ""), "1970-01-02");
  // Seconds as decimal digits (model/text.h's whole numbers): strtoll read " 86400" and "+86400" too.
  for (const char* bad : {"yesterday", " 86400", "+86400", "86400s", "253402300800"}) {
    ::setenv("SOURCE_DATE_EPOCH", bad, 1);
    EXPECT_THROW(resolve_date("", models, ""), std::invalid_argument) << bad;
  }
  ::setenv("SOURCE_DATE_EPOCH", "253402300799", 1);
  EXPECT_EQ(resolve_date("", models, ""), "9999-12-31");
  ::unsetenv("SOURCE_DATE_EPOCH");
}

TEST(CodegenNcclTuner, MergesArgminRanges) {
  const auto v1 = parse_nccl_variant("NCCL_RING_LL");
  const auto v2 = parse_nccl_variant("nccl-tree-simple");
  const auto v3 = parse_nccl_variant("NCCL_NVLS_TREE_LL128");
  ASSERT_TRUE(v1 && v2 && v3);
  EXPECT_EQ(v1->algorithm, "ring");
  EXPECT_EQ(v1->protocol, "ll");
  EXPECT_EQ(v2->algorithm, "tree");
  EXPECT_EQ(v2->protocol, "simple");
  EXPECT_EQ(v3->algorithm, "nvls_tree");
  EXPECT_EQ(v3->protocol, "ll128");
  EXPECT_FALSE(parse_nccl_variant("NCCL").has_value());
  EXPECT_FALSE(parse_nccl_variant("NCCL_RING_FAST").has_value());
  // LL: 5 us + bytes/2e3; SIMPLE: 20 us + bytes/2e4 -> crossover at 33,333 bytes (LL at 32 KiB, SIMPLE from 64 KiB).
  Predictor p = [](const PredictQuery& q) -> std::optional<Prediction> {
    Prediction r;
    r.time_us = q.strategy == "NCCL_RING_LL" ? 5 + q.bytes / 2e3 : 20 + q.bytes / 2e4;
    if (q.nranks == 8) r.time_us = q.strategy == "NCCL_RING_LL" ? 1e9 : 1.0;  // SIMPLE everywhere at 8 ranks
    return r;
  };
  std::vector<double> sizes;
  for (double s = 1024; s <= 1 << 24; s *= 2) sizes.push_back(s);
  PredictQuery base;
  base.system = "sys";
  const auto rules = tuner_rules({2, 8}, sizes, {*v1, *v2}, p, base, 4294967295ull);
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].protocol, "ll");
  EXPECT_EQ(rules[0].min_bytes, 0u);
  EXPECT_EQ(rules[0].max_bytes, static_cast<std::uint64_t>(std::floor(std::sqrt(32768.0 * 65536.0))));
  EXPECT_EQ(rules[1].protocol, "simple");
  EXPECT_EQ(rules[1].min_bytes, rules[0].max_bytes + 1);
  EXPECT_EQ(rules[1].max_bytes, 4294967295ull);
  EXPECT_EQ(rules[2].nranks, 8);
  EXPECT_EQ(rules[2].min_bytes, 0u);
  const std::string csv = write_nccl_tuner(rules, test_banner(), 0);
  EXPECT_NE(csv.find("# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n"),
            std::string::npos);
  EXPECT_NE(csv.find("\nallreduce,0,46340,ring,ll,0,1,2,-1,-1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nallreduce,0,4294967295,tree,simple,0,1,8,-1,-1\n"), std::string::npos) << csv;
}

TEST(CodegenTable, SameElementSizeModelsAnswerForEachOther) {
  Grid g;
  g.tps = {2};
  g.fusions = {FusionOp::None};
  g.hiddens = {1024};
  g.tokens = {1, 16384};
  // NCCL measured in fp16 (and int8), the custom kernel in bf16: the table is for bf16.
  Predictor p = [](const PredictQuery& q) -> std::optional<Prediction> {
    const bool nccl = q.strategy == "NCCL";
    if (nccl && q.dtype != "fp16") return std::nullopt;
    if (!nccl && q.dtype != "bf16") return std::nullopt;
    Prediction r;
    r.time_us = synthetic_time(q.strategy, q.nranks, q.fusion, q.bytes);
    return r;
  };
  CandidateLister two = [](int, FusionOp) { return std::vector<std::string>{"NCCL", "ONESHOT"}; };
  const StrategyTable t = build_table(g, two, p);
  EXPECT_EQ(t.at(0, 0, 0, 0).candidates.size(), 2u);
  EXPECT_EQ(t.at(0, 0, 0, 1).choice, "NCCL");
  TableOptions fp32;
  fp32.dtype = "fp32";  // 4-byte elements: neither the fp16 nor the bf16 model answers
  EXPECT_EQ(build_table(g, two, p, fp32).fallback_cells(), 2);
}

// The same-element-size rule is model/'s one rule, in one order, whoever asks: the table (codegen, suggest,
// plot) takes for uint8 the type `arfit predict` and whatif take (fp8_e4m3 before int8; codegen's own list
// took int8 while whatif's took fp8_e4m3), and for uint32 the type predict_same_element_size names.
TEST(CodegenTable, SameElementSizeRuleIsModelsOneRule) {
  EXPECT_EQ(same_size_dtypes("uint8"), (std::vector<std::string>{"fp8_e4m3", "fp8_e5m2", "int8"}));
  EXPECT_EQ(same_size_dtypes("half"), (std::vector<std::string>{"bf16", "int16", "uint16"}));
  EXPECT_EQ(same_size_dtypes("uint32"), (std::vector<std::string>{"fp32", "int32"}));
  EXPECT_TRUE(same_size_dtypes("bogus").empty());
  // Models of int8 (10 us) and fp8_e4m3 (20 us), and of int32 only.
  Predictor p = [](const PredictQuery& q) -> std::optional<Prediction> {
    Prediction r;
    if (q.dtype == "int8") r.time_us = 10;
    else if (q.dtype == "fp8_e4m3") r.time_us = 20;
    else if (q.dtype == "int32") r.time_us = 30;
    else return std::nullopt;
    return r;
  };
  for (const auto& [dtype, used, time] : std::vector<std::tuple<std::string, std::string, double>>{
           {"uint8", "fp8_e4m3", 20}, {"int8", "int8", 10}, {"uint32", "int32", 30}, {"fp32", "int32", 30}}) {
    PredictQuery q;
    q.dtype = dtype;
    std::string answered;
    const auto direct = predict_same_element_size(p, q, &answered);
    const auto table = with_same_size_dtypes(p)(q);
    ASSERT_TRUE(direct && table) << dtype;
    EXPECT_EQ(answered, used) << dtype;
    EXPECT_EQ(direct->time_us, time) << dtype;
    EXPECT_EQ(table->time_us, time) << dtype;
    EXPECT_EQ(direct->how, used == dtype ? "" : "no " + dtype + " model: used " + used + " (same element size)");
  }
  PredictQuery none;
  none.dtype = "bf16";
  EXPECT_FALSE(predict_same_element_size(p, none));
}

// Names are rendered into generated code through codegen/safe_text.h: a strategy or system name cannot end a
// comment (a line break, a C++ line-splicing backslash, "*/") or give an invalid or reserved C++ identifier.
TEST(CodegenSafeText, CommentsAndIdentifiers) {
  EXPECT_EQ(comment_text("a\nimport os\r", CommentSyntax::Hash), "a?import os?");
  EXPECT_EQ(comment_text("x*/ y /* z\\", CommentSyntax::Cpp), "x* / y / * z/");
  EXPECT_EQ(comment_text("x*/ \\", CommentSyntax::Hash), "x*/ \\");
  EXPECT_EQ(comment_text("bad \xff utf8 \xc3\xa9", CommentSyntax::Hash), "bad ? utf8 \xc3\xa9");
  EXPECT_EQ(cpp_identifier("my-kernel"), "my_kernel");
  EXPECT_EQ(cpp_identifier("int"), "S_int");
  EXPECT_EQ(cpp_identifier("EOF"), "S_EOF");
  EXPECT_EQ(cpp_identifier("__x"), "S_x");
  EXPECT_EQ(cpp_identifier("9x"), "S_9x");
  EXPECT_EQ(cpp_identifier(""), "S_");
}

TEST(CodegenSafeText, DangerousNamesCannotBreakOutOfGeneratedCode) {
  // Legal in a models file, dangerous in the targets: a C++ comment's line splice, a block-comment end, names
  // that are keywords, standard macros or reserved identifiers, and two names giving the same identifier.
  const std::vector<std::string> names{"NCCL", "splice\\", "x*/ int y; /*", "int", "EOF", "__reserved", "a-b", "a_b"};
  CandidateLister all = [names](int, FusionOp) { return names; };
  Predictor p = [names](const PredictQuery& q) -> std::optional<Prediction> {
    const auto k = static_cast<double>(std::find(names.begin(), names.end(), q.strategy) - names.begin());
    Prediction r;  // each name wins somewhere: the cheapest per-byte cost grows with the index
    r.time_us = 1.0 + 3.0 * k + q.bytes / (1e3 * std::pow(4.0, k));
    r.lo_us = r.time_us * 0.99;
    r.hi_us = r.time_us * 1.01;
    return r;
  };
  Banner banner = test_banner();
  banner.command = "arfit codegen --system evil\\";  // a banner line ending in a backslash
  const StrategyTable t = build_table(Grid{}, all, p);
  const std::string header = write_header(t, banner, 90);
  TempDir dir;
  dir.write("arfit_select.h", header);
  // <cstdio> first: EOF is a macro there.
  dir.write("main.cpp", R"(#include <cstdio>
#include "arfit_select.h"
int main() {
  std::printf("%d %d %d\n", static_cast<int>(arfit_select::Strategy::NCCL), static_cast<int>(arfit_select::Strategy::S_int),
              static_cast<int>(arfit_select::select(2, arfit_select::Fusion::NONE, 1, 128)));
}
)");
  const auto build =
      run_command(cxx() + " -std=c++17 -Wall -Wextra -Werror -pedantic -o " + dir.file("prog") + " " + dir.file("main.cpp"));
  ASSERT_EQ(build.exit_code, 0) << build.output << "\n" << header.substr(0, 3000);
  EXPECT_EQ(run_command(dir.file("prog")).exit_code, 0);
  // One enumerator line per name, each a comment after its enumerator.
  for (const auto& n : names) EXPECT_NE(header.find(",  // " + comment_text(n, CommentSyntax::Cpp) + "\n"), std::string::npos) << n;
  EXPECT_EQ(header.find("*/"), std::string::npos);

  // Python: a role's model strategy with a line break stays inside the "# Strategies:" comment.
  VllmConfig v;
  v.roles["custom"] = {"x\nimport os; os.system('id')\r"};
  const std::string py = write_vllm(v, banner);
  std::istringstream lines(py);
  for (std::string line; std::getline(lines, line);)
    if (line.find("import os") != std::string::npos) {
      EXPECT_EQ(line.rfind("# ", 0), 0u) << line;
    }
  EXPECT_EQ(py.find('\r'), std::string::npos);
}

// Every output format read the way its consumer reads it (tests/codegen/consumers.h), on fitted fixtures with
// known crossovers (tests/codegen/fixtures.h): the consumer's choice is arfit's -- the JSON of the same request --
// on every cell, and requests a format cannot express are refused naming the option.
#include <gtest/gtest.h>

#include <string>

#include "consumer_checks.h"
#include "fixtures.h"

using namespace arfit;
using namespace arfit::consumer_checks;
using codegen::Request;

namespace {

std::string refusal_of(const Request& r, const std::string& format) {
  return message_of<std::invalid_argument>([&] { generate(fixtures::fitted(), r, format); });
}

}  // namespace

TEST(ConsumerTrtllm, FixtureTableReadByTensorRtLlmsLookupAgreesWithJson) {
  for (int sm : {90, 100, 80, 103}) {
    Request r = fixture("fx_trtllm");
    r.sm = sm;
    const int checked = check_trtllm(fixtures::fitted(), r);
    EXPECT_GT(checked, 1260 * 3) << "sm " << sm;
  }
}

TEST(ConsumerTrtllm, SmMapsToTheTableTensorRtLlmReadsAndSaysSo) {
  Request r = fixture("fx_trtllm");
  r.sm = 80;
  std::string summary;
  const std::string table = generate(fixtures::fitted(), r, "trtllm", &summary);
  EXPECT_NE(table.find("AllReduceBestStrategyTableSM90 = {"), std::string::npos);
  EXPECT_EQ(table.find("SM80"), std::string::npos);
  EXPECT_NE(summary.find("--sm 80 -> AllReduceBestStrategyTableSM90"), std::string::npos) << summary;
  EXPECT_NE(table.find("// --sm 80 -> AllReduceBestStrategyTableSM90"), std::string::npos);
  r.sm = 120;
  EXPECT_NE(generate(fixtures::fitted(), r, "trtllm").find("AllReduceBestStrategyTableSM100 = {"), std::string::npos);
  r.sm = 0;
  for (const char* format : {"trtllm", "vllm", "json"}) EXPECT_EQ(refusal_of(r, format).rfind("--sm:", 0), 0u) << format;
}

TEST(ConsumerTrtllm, Nvfp4BelowSm100FollowsTensorRtLlmsRule) {
  Request r = fixture("fx_trtllm");
  for (int sm : {90, 100}) {
    r.sm = sm;
    const auto j = generate_json(fixtures::fitted(), r);
    int nvfp4 = 0, custom = 0;
    int gated = 0;
    for (const auto& c : j["cells"]) {
      if (c["fusion"] != "RESIDUAL_RMS_NORM_QUANT_NVFP4") continue;
      ++nvfp4;
      custom += c["trtllm_code"] != 0;
      // TensorRT-LLM's size gate comes first: it runs NCCL there before reading the table.
      if (c["trtllm"]["rule"] == "engine-size-gate") {
        ++gated;
        continue;
      }
      EXPECT_EQ(c["trtllm"]["rule"], sm == 90 ? "nvfp4-below-sm100" : "model");
    }
    EXPECT_EQ(nvfp4, 315);
    EXPECT_GT(gated, 0);
    // The models choose the custom kernels in NVFP4 cells; TensorRT-LLM's SM90 table keeps NCCL there.
    if (sm == 90) {
      EXPECT_EQ(custom, 0);
    } else {
      EXPECT_GT(custom, 100);
    }
    EXPECT_EQ(j["trtllm"]["cells"]["nvfp4-below-sm100"], sm == 90 ? 315 - gated : 0);
  }
}

TEST(ConsumerTrtllm, OptionsThatWouldChangeTheAxesAreRefusedNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--tp", "4,8"}, {"--fusion", "NONE,RESIDUAL_RMS_NORM_QUANT_FP8"}, {"--hidden", "1024:8192"}, {"--tokens", "2:16384"}};
  for (const auto& [option, value] : cases) {
    Request r = fixture("fx_trtllm");
    if (option == "--tp") r.tp = value;
    if (option == "--fusion") r.fusion = value;
    if (option == "--hidden") r.hidden = value;
    if (option == "--tokens") r.tokens = value;
    const std::string why = refusal_of(r, "trtllm");
    EXPECT_EQ(why.rfind(option + ":", 0), 0u) << option << ": " << why;
    // The same request is fine for the formats that carry their axes.
    EXPECT_EQ(refusal_of(r, "json"), "") << option;
    EXPECT_EQ(refusal_of(r, "header"), "") << option;
  }
  Request same = fixture("fx_trtllm");
  same.tp = "8,2,4";
  same.fusion = "RESIDUAL_RMS_NORM,NONE,RESIDUAL_RMS_NORM_QUANT_NVFP4,RESIDUAL_RMS_NORM_QUANT_FP8";
  EXPECT_EQ(refusal_of(same, "trtllm"), "") << "the same axes in another order";
}

TEST(ConsumerTrtllm, StrategiesWithoutANumberAreRefusedUnlessMapped) {
  Request r = fixture("fx_engines");
  r.sm = 100;  // no NVFP4 rule: every fused cell is a fallback cell
  const std::string why = refusal_of(r, "trtllm");
  for (const char* s : {"SGLang_CustomAllReduce_eager", "SGLang_CustomAllReduce_graph", "vLLM_custom_graph"})
    EXPECT_NE(why.find(s), std::string::npos) << why;
  EXPECT_EQ(why.rfind("--map:", 0), 0u) << why;
  r.map = {"vLLM_custom_graph=ONESHOT", "vLLM_symm_mem=ignore", "SGLang_CustomAllReduce_graph=ignore",
           "SGLang_CustomAllReduce_eager=ignore"};
  // ONESHOT is modelled too: it and vLLM_custom_graph both stand for TensorRT-LLM's ONESHOT (the faster of them).
  const auto j = generate_json(fixtures::fitted(), r);
  EXPECT_EQ(j["trtllm"]["sources"]["ONESHOT"], (std::vector<std::string>{"ONESHOT", "vLLM_custom_graph"}));
  EXPECT_TRUE(j["trtllm"]["unmapped"].empty());
  // Only NONE is modelled: the other fusions get the named fallback, and the JSON says so.
  // (or TensorRT-LLM's own: its size gate runs NCCL before the table).
  int fused = 0;
  for (const auto& c : j["cells"])
    if (c["fusion"] != "NONE") {
      ++fused;
      if (c["trtllm"]["rule"] != "engine-size-gate") {
        EXPECT_EQ(c["trtllm"]["rule"], "fallback");
      }
    }
  EXPECT_EQ(fused, 945);
  EXPECT_GT(j["trtllm"]["cells"]["fallback"].get<int>(), 800);
  EXPECT_GT(check_trtllm(fixtures::fitted(), r), 1260);
  for (const auto& bad : {"vLLM_custom_graph=FASTEST", "nope=ONESHOT", "vLLM_custom_graph", "vLLM_custom_graph=ONESHOT,"}) {
    Request b = r;
    b.map = {bad};
    EXPECT_EQ(refusal_of(b, "trtllm").rfind("--map:", 0), 0u) << bad;
  }
}

TEST(ConsumerHeader, FixtureHeaderAgreesWithJsonInBothBucketings) {
  for (int sm : {90, 100}) {
    Request r = fixture("fx_trtllm");
    r.sm = sm;
    EXPECT_GT(check_header(fixtures::fitted(), r), 1260 * 3);
  }
  // Another fallback is what the header returns off the table.
  Request r = fixture("fx_trtllm");
  r.fallback = "NCCL_SYMMETRIC";
  EXPECT_GT(check_header(fixtures::fitted(), r), 1260);
}

// The header's TensorRT-LLM bucketing and TensorRT-LLM's own lookup, compiled into one program, answer the same for
// every input TensorRT-LLM defines: on and between the grid points, above the last point, for TP 3..15.
TEST(ConsumerHeader, TensorRtLlmBucketingIsTensorRtLlmsLookup) {
  Request r = fixture("fx_trtllm");
  r.sm = 100;  // the header has no SM rules: compare where TensorRT-LLM applies none either
  r.fallback = "NCCL_SYMMETRIC";
  r.consumer_version = "005b299b";  // off its table this TensorRT-LLM returns NCCL_SYMMETRIC, as the header's fallback
  arfit::testing::TempDir dir;
  dir.write("table.inc", generate(fixtures::fitted(), r, "trtllm"));
  Request header = r;
  header.consumer_version.clear();  // the header is arfit's own selector, of no engine version
  dir.write("arfit_select.h", generate(fixtures::fitted(), header, "header"));
  dir.write("main.cpp", consumers::trtllm_lookup_program(100, true, 8));
  std::ostringstream q;
  int n = 0;
  for (int tp = 2; tp <= 20; ++tp)
    for (int op : {0, 1, 4, 5, 6, 7})
      for (long long h : {65LL, 100LL, 127LL, 128LL, 129LL, 1000LL, 4096LL, 8191LL, 8192LL, 12000LL, 16383LL, 16384LL, 70000LL})
        for (long long t : {1LL, 2LL, 3LL, 7LL, 100LL, 16383LL, 16384LL, 20000LL, 32767LL, 32768LL, 1000000LL}) {
          // Messages above TensorRT-LLM's workspace size run NCCL before its lookup: it never asks the table there.
          if (static_cast<double>(t) * h * 2 > (tp <= 2 ? 16e6 : 8e6)) continue;
          q << 100 << " " << tp << " " << op << " " << h << " " << t << "\n";
          ++n;
        }
  const auto run = compile_and_run(dir, q.str());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::istringstream in(run.output);
  int compared = 0, off_table = 0;
  for (int i = 0; i < n; ++i) {
    int trt = -1, header_trt = -1, header_strict = -1;
    in >> trt >> header_trt >> header_strict;
    ASSERT_EQ(header_trt, trt) << "query " << i;
    off_table += trt == 8;
    ++compared;
  }
  EXPECT_EQ(compared, n);
  EXPECT_GT(off_table, 0);
  EXPECT_LT(off_table, n);
}

TEST(ConsumerHeader, CommentStatesTheOffGridBehaviour) {
  const std::string header = generate(fixtures::fitted(), fixture("fx_trtllm"), "header");
  EXPECT_EQ(header.find("as TensorRT-LLM's lookup does"), std::string::npos);
  EXPECT_NE(header.find("hidden 65..127 -> 128, tp 3 -> 2, tp 6 -> 4, tokens 16385..32767 -> 16384"), std::string::npos);
  EXPECT_NE(header.find("TensorRT-LLM itself returns NCCL there (NCCL_SYMMETRIC before its commit"), std::string::npos);
  EXPECT_NE(header.find("TWOSHOT is never returned for a cell whose first token count is below tp"), std::string::npos);
  EXPECT_NE(header.find("RESIDUAL_RMS_NORM_QUANT_FP8 = 4,"), std::string::npos);
  EXPECT_NE(header.find("RESIDUAL_RMS_NORM_QUANT_NVFP4 = 5,"), std::string::npos);
  // Axes that are not every power of two between their ends: no TensorRT-LLM bucketing, and the comment says why.
  Request r = fixture("fx_trtllm");
  r.hidden = "128,4096";
  const std::string sparse = generate(fixtures::fitted(), r, "header");
  EXPECT_NE(sparse.find("Bucketing::kTensorRtLlm is not offered"), std::string::npos);
  EXPECT_EQ(sparse.find("kTensorRtLlm }"), std::string::npos);
}

TEST(ConsumerTuner, RulesReadByTheExamplePluginPickTheFastestVariant) {
  Request r = fixture("fx_tuner");
  EXPECT_GT(check_tuner(fixtures::fitted(), r, {"NCCL_RING_LL", "NCCL_RING_LL128", "NCCL_RING_SIMPLE", "NCCL_TREE_SIMPLE"}), 3 * 30 - 1);
  // Multi-node: rules for the 16 ranks on 2 nodes.
  r.nnodes = 2;
  r.tp = "16";
  EXPECT_GE(check_tuner(fixtures::fitted(), r, {"NCCL_RING_LL", "NCCL_RING_LL128", "NCCL_RING_SIMPLE", "NCCL_TREE_SIMPLE"}), 30);
  const std::string csv = generate(fixtures::fitted(), r, "nccl-tuner");
  EXPECT_NE(csv.find(",0,2,16,-1,-1\n"), std::string::npos) << csv;  // channels 0, nNodes 2, nRanks 16
}

TEST(ConsumerTuner, MultiNodeWithoutModelsAndBadChannelsAreRefused) {
  Request r = fixture("fx_tuner");
  r.nnodes = 3;
  EXPECT_EQ(refusal_of(r, "nccl-tuner").rfind("--nnodes:", 0), 0u) << refusal_of(r, "nccl-tuner");
  r.nnodes = 2;  // 2 nodes are modelled, but only at 16 ranks
  EXPECT_EQ(refusal_of(r, "nccl-tuner").rfind("--tp:", 0), 0u) << refusal_of(r, "nccl-tuner");
  Request c = fixture("fx_tuner");
  c.channels = -1;
  EXPECT_EQ(refusal_of(c, "nccl-tuner").rfind("--channels:", 0), 0u);
  c.channels = 8;
  const std::string csv = generate(fixtures::fitted(), c, "nccl-tuner");
  for (const auto& rule : consumers::load_tuner_config(csv)) EXPECT_EQ(rule.channels, 8);
  EXPECT_NE(refusal_of(fixture("fx_trtllm"), "nccl-tuner").find("no NCCL algorithm/protocol variants"), std::string::npos);
}

TEST(ConsumerTuner, LongModelsPathKeepsEveryLineInThePluginsBuffer) {
  Request r = fixture("fx_tuner");
  r.models_path = "/" + std::string(300, 'm') + "/models.json";
  r.command = "arfit codegen " + r.models_path + " --format nccl-tuner " + std::string(400, 'x');
  std::string summary;
  const std::string csv = codegen::generate(fixtures::fitted(), r, "nccl-tuner", "models", &summary);
  std::istringstream in(csv);
  std::string line;
  int rules_written = 0;
  while (std::getline(in, line)) {
    EXPECT_LE(line.size(), codegen::kTunerMaxLine);
    rules_written += !line.empty() && line[0] != '#';
  }
  EXPECT_NE(csv.find(std::string(100, 'm')), std::string::npos) << "the path is kept, on continuation lines";
  const auto loaded = consumers::load_tuner_config(csv);
  EXPECT_EQ(static_cast<int>(loaded.size()), rules_written);
  for (const auto& rule : loaded) EXPECT_EQ(rule.coll, "allreduce");
}

TEST(ConsumerEngines, VllmFileReadByShouldCustomArFollowsArfitOnEveryCell) {
  Request r = fixture("fx_engines");
  // 15 sizes per TP below vLLM's 8 MiB cap (256 B .. 4 MiB).
  EXPECT_GE(check_vllm(fixtures::fitted(), r, "vLLM_custom_graph", "vLLM_symm_mem", "NCCL"), 3 * 15);
  // Monotone crossovers: one threshold follows every cell.
  Request none = r;
  none.fusion = "NONE";
  const auto j = generate_json(fixtures::fitted(), none);
  const std::string file = generate(fixtures::fitted(), engine_request(r, j), "vllm");
  EXPECT_NE(file.find("Every size follows arfit's choice (size threshold)"), std::string::npos) << file;
  // ONESHOT/TWOSHOT are modelled: the switch size is written too, and read the same way (`bytes < value`).
  const auto oneshot = consumers::python_tp_entries(file.substr(file.find("ONESHOT_MAX_SIZES = ")), "\"9.0\": ");
  ASSERT_TRUE(oneshot.has_value()) << file;
  EXPECT_GT(check_threshold(j, file, {"size switch", "ONESHOT", "TWOSHOT", *oneshot, &below_exclusive}), 3 * 21 - 1);
  r.sm = 100;
  EXPECT_NE(generate(fixtures::fitted(), r, "vllm").find("\"10.0\": {"), std::string::npos);
}

TEST(ConsumerEngines, SglangCrossoversThroughApplyFollowArfitOnEveryCell) {
  EXPECT_GT(check_sglang(fixtures::fitted(), fixture("fx_engines"), "SGLang_CustomAllReduce_graph", "SGLang_CustomAllReduce_eager", "NCCL"),
            2 * 3 * 21 - 1);
}

TEST(ConsumerEngines, FlashinferThresholdsFollowArfitOnEveryCell) {
  EXPECT_GT(check_flashinfer(fixtures::fitted(), fixture("fx_engines"), "ONESHOT", "TWOSHOT"), 3 * 21 - 1);
}

TEST(ConsumerEngines, RolesComeFromTheNamesOrFromMap) {
  // fx_trtllm has neither vLLM's nor SGLang's custom all-reduce: refused, naming --map.
  EXPECT_EQ(refusal_of(fixture("fx_trtllm"), "vllm").rfind("--map:", 0), 0u);
  EXPECT_EQ(refusal_of(fixture("fx_trtllm"), "sglang").rfind("--map:", 0), 0u);
  EXPECT_EQ(refusal_of(fixture("fx_tuner"), "flashinfer").rfind("--map:", 0), 0u);
  // ... unless a strategy is mapped onto the role.
  Request r = fixture("fx_trtllm");
  r.map = {"ONESHOT=custom"};
  r.fusion = "all";
  // vLLM runs symmetric memory above its bound: without a model of it, nothing to compare the custom all-reduce with.
  EXPECT_NE(refusal_of(r, "vllm").find("--map NAME=symm_mem"), std::string::npos) << refusal_of(r, "vllm");
  r.map = {"ONESHOT=custom", "TWOSHOT=symm_mem"};
  const std::string file = generate(fixtures::fitted(), r, "vllm");
  EXPECT_NE(file.find("custom = ONESHOT"), std::string::npos);
  EXPECT_NE(file.find("symm_mem = TWOSHOT"), std::string::npos);
  r.map = {"ONESHOT=custom_graph"};
  EXPECT_NE(generate(fixtures::fitted(), r, "sglang").find("\"eager\": None"), std::string::npos);
  // Grid options these formats do not have are refused, naming them.
  Request g = fixture("fx_engines");
  g.hidden = "1024:8192";
  EXPECT_EQ(refusal_of(g, "vllm").rfind("--hidden:", 0), 0u);
  g = fixture("fx_engines");
  g.map = {"NCCL=ignore"};
  EXPECT_EQ(refusal_of(g, "header").rfind("--map:", 0), 0u);
}

// The select protocol on synthetic sample sets with known crossovers, and the CLI end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/select_eval.h"
#include "codegen/table.h"
#include "fit/fit.h"
#include "io/atomic_output.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using namespace arfit::codegen;
using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::TempDir;

namespace {

// Deterministic +-1 % "noise" so that the measured best is not a smooth function.
double jitter(std::int64_t i, int salt) { return 1.0 + 0.01 * std::sin(1.7 * static_cast<double>(i) + 0.9 * salt); }

Sample make(const std::string& strategy, const std::string& source, const std::string& dtype, int n, std::int64_t bytes,
            double t) {
  Sample s;
  s.strategy = strategy;
  s.source = source;
  s.dtype = dtype;
  s.nranks = n;
  s.bytes = bytes;
  s.time_us = t;
  s.extra["system"] = "synth";
  return s;
}

// aiconfigurator-like: an NCCL table (two versions, fp16) and a custom table (bf16, graph + eager variants).
std::vector<Sample> byte_size_set() {
  std::vector<Sample> v;
  for (int n : {2, 4, 8}) {
    std::int64_t i = 0;
    for (std::int64_t b = 512; b <= (std::int64_t(1) << 29); b *= 2, ++i) {
      const double nccl = (12.0 + n) + 2.0 * (n - 1) / n * b / 3e5;
      const double custom = 4.0 + (n - 1) * b / 4e4;
      v.push_back(make("NCCL", "synth_nccl_2.9_perf", "fp16", n, b, nccl * jitter(i, n)));
      v.push_back(make("NCCL", "synth_nccl_2.27_perf", "fp16", n, b, nccl * jitter(i, n + 1)));
      v.push_back(make("NCCL", "synth_nccl_2.27_perf", "int8", n, b, 1000.0));  // other element size: never paired
      v.push_back(make("custom_graph", "synth_custom_perf", "bf16", n, b, custom * jitter(i, 3 * n)));
      v.push_back(make("custom_eager", "synth_custom_perf", "bf16", n, b, custom * 0.5));  // eager: dropped
    }
  }
  return v;
}

}  // namespace

TEST(SelectEval, PairsCustomWithNewestNcclAndBeatsBaselines) {
  const SelectReport r = evaluate_select(byte_size_set());
  ASSERT_EQ(r.cases.size(), 3u);
  for (const auto& c : r.cases) {
    ASSERT_EQ(c.candidates.size(), 2u);
    EXPECT_EQ(c.candidates[0], "NCCL@synth_nccl_2.27_perf");  // 2.27 is newer than 2.9 in version order
    EXPECT_EQ(c.candidates[1], "custom_graph@synth_custom_perf");
    EXPECT_EQ(c.cells, 21);
    EXPECT_EQ(c.measured, 6);  // sizes 0,4,...,20 (the largest is one of them)
  }
  EXPECT_EQ(r.cells, 63);
  EXPECT_NEAR(r.measured_fraction, 18.0 / 63.0, 1e-12);
  const auto& a = r.methods.at("auto");
  const auto& nccl = r.methods.at("always-nccl");
  EXPECT_EQ(a.cells, 63);
  EXPECT_GT(nccl.geomean_regret, 1.5);  // the custom kernel wins small sizes by a wide margin
  EXPECT_LT(a.geomean_regret, nccl.geomean_regret);
  for (const char* m : {"nearest", "threshold", "loglog"}) EXPECT_LE(a.geomean_regret, r.methods.at(m).geomean_regret + 1e-12) << m;
  EXPECT_GE(a.exact, 85.0);
  EXPECT_LE(a.max_regret, r.methods.at("nearest").max_regret + 1e-12);
  for (const auto& [name, s] : r.methods) {
    EXPECT_GE(s.geomean_regret, 1.0) << name;
    EXPECT_LE(s.geomean_regret, s.max_regret) << name;
    EXPECT_LE(s.p95_regret, s.max_regret) << name;
  }
  const nlohmann::json j = select_report_json(r);
  EXPECT_EQ(j["protocol"], "select");
  for (const char* m : {"auto", "always-nccl", "nearest", "threshold", "loglog"}) {
    ASSERT_TRUE(j["methods"].contains(m)) << m;
    for (const char* k : {"geomean_regret", "p95_regret", "max_regret", "exact", "cells"})
      EXPECT_TRUE(j["methods"][m].contains(k)) << m << " " << k;
  }
  EXPECT_TRUE(j["systems"].contains("synth"));
  EXPECT_NE(format_select_report(r).find("per system"), std::string::npos);
}

TEST(SelectEval, RegretStatsMatchNumpyDefinitions) {
  const MethodStats s = regret_stats({1.0, 1.0, 1.0, 2.0, 4.0});
  EXPECT_NEAR(s.geomean_regret, std::pow(8.0, 0.2), 1e-12);
  EXPECT_NEAR(s.p95_regret, 2.0 + 0.8 * 2.0, 1e-12);  // position 0.95*4 = 3.8 between 2 and 4
  EXPECT_DOUBLE_EQ(s.max_regret, 4.0);
  EXPECT_DOUBLE_EQ(s.exact, 60.0);
  EXPECT_EQ(s.cells, 5);
}

TEST(SelectEval, LoglogInterpolationExtrapolatesEndSegments) {
  const auto v = loglog_interpolate({10, 100, 1000}, {1, 10, 10}, {1, 10, 31.6227766, 100, 10000});
  EXPECT_NEAR(v[0], 0.1, 1e-9);
  EXPECT_NEAR(v[1], 1, 1e-12);
  EXPECT_NEAR(v[2], std::sqrt(10.0), 1e-6);
  EXPECT_NEAR(v[3], 10, 1e-12);
  EXPECT_NEAR(v[4], 10, 1e-9);
}

TEST(SelectEval, TokenHiddenGridUsesLattice) {
  // TensorRT-LLM-benchmark-like: one source, three strategies over tokens x hidden.
  std::vector<Sample> v;
  std::int64_t i = 0;
  for (std::int64_t tok = 1; tok <= 16384; tok *= 2)
    for (std::int64_t h = 128; h <= 8192; h *= 2, ++i) {
      const double b = double(tok) * h * 2;
      for (const char* s : {"NCCL", "ONESHOT", "TWOSHOT"}) {
        Sample x = make(s, "benchmark.tp4.sm90.csv", "bf16", 4, static_cast<std::int64_t>(b), 0);
        x.tokens = tok;
        x.hidden = h;
        const double t = std::string(s) == "ONESHOT" ? 3 + 3 * b / 5e4 : std::string(s) == "TWOSHOT" ? 6 + 2 * b / 1.5e5 : 15 + 2 * b / 4e5;
        x.time_us = t * jitter(i, s[0]);
        v.push_back(x);
      }
    }
  const SelectReport r = evaluate_select(v);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].candidates.size(), 3u);
  EXPECT_EQ(r.cases[0].cells, 105);
  EXPECT_EQ(r.cases[0].measured, 8 * 4);  // lattice:2 keeps tokens 1,4,...,16384 and hidden 128,512,2048,8192
  EXPECT_LT(r.methods.at("auto").geomean_regret, r.methods.at("always-nccl").geomean_regret);
  EXPECT_LT(r.methods.at("auto").geomean_regret, 1.05);
  const SelectReport r4 = evaluate_select(v, SelectOptions{"lattice:4", 12, {}});
  EXPECT_EQ(r4.cases[0].measured, 5 * 3);
  EXPECT_THROW(evaluate_select(v, SelectOptions{"lattice:1", 12, {}}), std::invalid_argument);
  EXPECT_THROW(evaluate_select(v, SelectOptions{"lattice:04", 12, {}}), std::invalid_argument);  // C would read octal
  EXPECT_THROW(evaluate_select(v, SelectOptions{"every-other", 12, {}}), std::invalid_argument);
}

TEST(SelectEval, NoComparableStrategiesIsAnError) {
  std::vector<Sample> v;
  for (std::int64_t b = 512; b <= 1 << 20; b *= 2) v.push_back(make("NCCL", "only_nccl", "fp16", 2, b, 10));
  EXPECT_THROW(evaluate_select(v), std::runtime_error);
}

// End to end through the CLI: fit synthetic measurements, generate every format twice, compare bytes.
TEST(CodegenCli, DeterministicFilesAndSuggest) {
  std::vector<Sample> samples;
  for (int tp : {2, 4, 8})
    for (std::int64_t tok = 1; tok <= 16384; tok *= 4)
      for (std::int64_t h : {128, 1024, 8192})
        for (const char* s : {"NCCL", "ONESHOT", "TWOSHOT"}) {
          Sample x;
          x.strategy = s;
          x.nranks = tp;
          x.tokens = tok;
          x.hidden = h;
          x.bytes = tok * h * 2;
          x.device = "synthetic";
          x.source = "synthetic.csv";
          const double b = double(x.bytes);
          x.time_us = std::string(s) == "ONESHOT" ? 3 + (tp - 1) * b / 5e4 : std::string(s) == "TWOSHOT" ? 6 + 2 * b / 1.5e5 : 15 + 2 * b / 4e5;
          x.time_us *= jitter(tok * h, tp);
          samples.push_back(x);
        }
  TempDir dir;
  fit::fit_model_set(samples).save(dir.file("models.json"));
  const std::string bin = arfit::testing::arfit_bin();
  for (const char* fmt : {"trtllm", "header", "json"}) {
    std::string outs[2];
    for (int k = 0; k < 2; ++k) {
      const std::string out = dir.file(std::string(fmt) + std::to_string(k));
      // The trtllm table always has all four fusions (only NONE is modelled here: the others fall back).
      const std::string fusion = std::string(fmt) == "trtllm" ? "" : " --fusion NONE";
      const auto r = run_command("SOURCE_DATE_EPOCH=1700000000 " + bin + " codegen " + dir.file("models.json") + " --format " + fmt +
                                 fusion + " -o " + out);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      outs[k] = slurp(out);
    }
    EXPECT_EQ(outs[0], outs[1]) << fmt;
    EXPECT_NE(outs[0].find("2023-11-14"), std::string::npos) << fmt;
    if (std::string(fmt) == "json") {
      const auto j = nlohmann::json::parse(outs[0]);
      EXPECT_EQ(j["cells"].size(), 3u * 1 * 7 * 15);
      EXPECT_EQ(j["cells"][0]["choice"], "ONESHOT");  // tp 2, 1 token x 128: 256 bytes
    }
  }
  // Bad options: usage errors (exit 2), naming the option; no output file.
  auto bad = run_command(bin + " codegen " + dir.file("models.json") + " --format trtllm --hidden 100:8192 -o " + dir.file("bad"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--hidden"), std::string::npos) << bad.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad")));
  // Options that would change TensorRT-LLM's axes, and an SM other than 90/100 that is fine (it maps).
  for (const std::string opt : {"--tp 4,8", "--fusion NONE,RESIDUAL_RMS_NORM_QUANT_FP8", "--hidden 1024:8192", "--tokens 2:16384"}) {
    bad = run_command(bin + " codegen " + dir.file("models.json") + " --format trtllm " + opt + " -o " + dir.file("bad"));
    EXPECT_EQ(bad.exit_code, 2) << opt << "\n" << bad.output;
    EXPECT_NE(bad.output.find(opt.substr(0, opt.find(' ')) + ":"), std::string::npos) << bad.output;
    EXPECT_FALSE(std::filesystem::exists(dir.file("bad")));
  }
  const auto sm80 = run_command(bin + " codegen " + dir.file("models.json") + " --format trtllm --sm 80 -o " + dir.file("sm80"));
  EXPECT_EQ(sm80.exit_code, 0) << sm80.output;
  EXPECT_NE(sm80.output.find("--sm 80 -> AllReduceBestStrategyTableSM90"), std::string::npos) << sm80.output;
  bad = run_command(bin + " codegen " + dir.file("models.json") + " --format trtllm --map NCCL=FAST -o " + dir.file("bad"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--map"), std::string::npos) << bad.output;
  bad = run_command(bin + " codegen " + dir.file("models.json") + " --format csv -o " + dir.file("bad"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  bad = run_command(bin + " codegen " + dir.file("models.json") + " --format nccl-tuner -o " + dir.file("bad"));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("NCCL algorithm/protocol variants"), std::string::npos) << bad.output;
  // suggest lists uncertain cells, highest expected regret first.
  const auto s = run_command(bin + " suggest " + dir.file("models.json") + " --top 5 --json " + dir.file("s.json"));
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("uncertain"), std::string::npos) << s.output;
  const auto sj = nlohmann::json::parse(slurp(dir.file("s.json")));
  ASSERT_LE(sj["suggestions"].size(), 5u);
  for (std::size_t i = 1; i < sj["suggestions"].size(); ++i)
    EXPECT_GE(sj["suggestions"][i - 1]["expected_regret"].get<double>(), sj["suggestions"][i]["expected_regret"].get<double>());
}

// The table's ModelSet adapter answers exactly as ModelSet::predict (direct groups, the joint-n fit,
// unknown strategies, SM transfer).
TEST(CodegenModelSet, PredictorAdapterAgreesWithModelSetPredict) {
  std::vector<Sample> samples;
  for (int tp : {2, 4, 8})
    for (const char* s : {"NCCL", "ONESHOT"})
      for (std::int64_t b = 256; b <= (std::int64_t(1) << 26); b *= 2) {
        Sample x;
        x.strategy = s;
        x.nranks = tp;
        x.bytes = b;
        x.sm = 90;
        x.device = "synthetic";
        x.time_us = (std::string(s) == "NCCL" ? 15 + 2.0 * b / 4e5 : 3 + (tp - 1) * b / 5e4) * jitter(b, tp);
        samples.push_back(x);
      }
  const ModelSet m = fit::fit_model_set(samples);
  const codegen::Predictor cached = codegen::model_set_predictor(m);
  int compared = 0;
  for (int tp : {2, 4, 8, 16})
    for (const char* s : {"NCCL", "ONESHOT", "TWOSHOT"})
      for (int sm : {0, 100})
        for (const char* dtype : {"", "bf16", "fp32"})
          for (double b : {100.0, 4096.0, 3e5, 1e9}) {
            PredictQuery q;
            q.system = "synthetic";
            q.strategy = s;
            q.nranks = tp;
            q.sm = sm;
            q.dtype = dtype;
            q.bytes = b;
            const auto a = m.predict(q), c = cached(q);
            ASSERT_EQ(a.has_value(), c.has_value()) << s << " tp" << tp << " sm" << sm << " " << dtype << " " << b;
            if (!a) continue;
            EXPECT_EQ(a->time_us, c->time_us) << s << " tp" << tp << " sm" << sm << " dtype=" << dtype << " bytes=" << b;
            EXPECT_EQ(a->lo_us, c->lo_us);
            EXPECT_EQ(a->hi_us, c->hi_us);
            EXPECT_EQ(a->extrapolated, c->extrapolated);
            ++compared;
          }
  EXPECT_GT(compared, 50);
}

// A models file holding only joint-n entries (no per-count groups) still answers every GPU count, so codegen
// offers its strategies: to --map (the error lists them, a map naming one is taken) and to the tables.
TEST(CodegenModelSet, JointOnlyFileOffersItsStrategies) {
  std::vector<Sample> samples;
  for (int tp : {2, 4, 8})
    for (const char* s : {"NCCL", "ONESHOT"})
      for (std::int64_t b = 256; b <= (std::int64_t(1) << 24); b *= 4)
        samples.push_back(make(s, "t", "bf16", tp, b, (std::string(s) == "NCCL" ? 15 + b / 2e5 : 3 + tp * b / 5e4) * jitter(b, tp)));
  nlohmann::json j = fit::fit_model_set(samples).to_json();
  ASSERT_FALSE(j["joint"].empty());
  j["groups"] = nlohmann::json::array();
  const ModelSet joint_only = ModelSet::from_json(j);
  EXPECT_TRUE(joint_only.groups().empty());
  EXPECT_EQ(system_strategies(joint_only, "synth"), (std::vector<std::string>{"NCCL", "ONESHOT"}));

  TempDir dir;
  write_string_atomically(dir.file("joint.json"), j.dump());
  const std::string bin = arfit::testing::arfit_bin() + " codegen " + dir.file("joint.json") + " --format json -o " +
                          dir.file("t.json") + " --tp 2,16 --hidden 1024 --tokens 1:64";
  const auto bad = run_command(bin + " --map NOPE=ONESHOT");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("(strategies: NCCL, ONESHOT)"), std::string::npos) << bad.output;
  const auto ok = run_command(bin + " --map ONESHOT=TWOSHOT");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(slurp(dir.file("t.json")).find("TWOSHOT"), std::string::npos);
}

// `arfit eval --protocol select --json FILE` through the CLI, on arfit's own sample CSV.
TEST(SelectCli, EvalProtocolSelectWritesJson) {
  TempDir dir;
  SampleFile f;
  f.samples = byte_size_set();
  write_samples_csv(dir.file("samples.csv"), f);
  const std::string bin = arfit::testing::arfit_bin();
  const auto r = run_command(bin + " eval " + dir.file("samples.csv") + " --protocol select --json " + dir.file("sel.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("per system"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(slurp(dir.file("sel.json")));
  EXPECT_EQ(j["protocol"], "select");
  EXPECT_NEAR(j["measured_fraction"].get<double>(), 18.0 / 63.0, 1e-12);
  const SelectReport direct = evaluate_select(f.samples);
  EXPECT_DOUBLE_EQ(j["methods"]["auto"]["geomean_regret"].get<double>(), direct.methods.at("auto").geomean_regret);
  EXPECT_EQ(j["methods"]["loglog"]["cells"], 63);
  const auto bad = run_command(bin + " eval " + dir.file("samples.csv") + " --protocol select --plan lattice:0");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--plan"), std::string::npos) << bad.output;
}

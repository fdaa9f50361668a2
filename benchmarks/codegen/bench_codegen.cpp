// Codegen of the full default grid: 3 TP x 4 fusions x 7 hidden x 15 tokens = 1,260 cells x 4 strategies
// (NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC). Goal: under 100 ms per table, models file to generated text.
//   BM_TableSynthetic  the table logic alone (closed-form predictor)
//   BM_CodegenModelSet a real ModelSet fitted to synthetic measurements (fit/), predict + choose + write, in every
//                      output format (nccl-tuner from NCCL algorithm/protocol variants of a second system; vllm and
//                      sglang with ONESHOT/TWOSHOT mapped onto their custom all-reduce)
#include <benchmark/benchmark.h>

#include <cmath>

#include "codegen/codegen.h"
#include "fit/fit.h"

using namespace arfit;
using namespace arfit::codegen;

namespace {

const char* kStrategies[] = {"NCCL", "ONESHOT", "TWOSHOT", "NCCL_SYMMETRIC"};

double synthetic(const std::string& s, int tp, int fusion, double b) {
  const double fuse = 0.2 * fusion * b / 1e5;
  if (s == "ONESHOT") return 3.0 + (tp - 1) * b / 5e4 + fuse;
  if (s == "TWOSHOT") return 6.0 + 2.0 * b / 1.5e5 + fuse;
  if (s == "NCCL_SYMMETRIC") return 9.0 + 2.0 * b / 3.5e5;
  return 15.0 + 2.0 * b / 4e5;
}

void BM_TableSynthetic(benchmark::State& state) {
  CandidateLister all = [](int, FusionOp) { return std::vector<std::string>(std::begin(kStrategies), std::end(kStrategies)); };
  Predictor p = [](const PredictQuery& q) -> std::optional<Prediction> {
    Prediction r;
    r.time_us = synthetic(q.strategy, q.nranks, static_cast<int>(q.fusion), q.bytes);
    r.lo_us = r.time_us * 0.97;
    r.hi_us = r.time_us * 1.03;
    return r;
  };
  for (auto _ : state) {
    StrategyTable t = build_table(Grid{}, all, p);
    benchmark::DoNotOptimize(t.cells.data());
  }
  state.SetItemsProcessed(state.iterations() * 1260 * 4);
}
BENCHMARK(BM_TableSynthetic)->Unit(benchmark::kMillisecond);

const ModelSet& fitted_models() {
  static const ModelSet m = [] {
    std::vector<Sample> v;
    for (int tp : {2, 4, 8})
      for (FusionOp f : all_fusions())
        for (const char* s : kStrategies)
          for (std::int64_t tok = 1; tok <= 16384; tok *= 4)
            for (std::int64_t h : {128, 1024, 8192}) {
              Sample x;
              x.strategy = s;
              x.fusion = f;
              x.nranks = tp;
              x.tokens = tok;
              x.hidden = h;
              x.bytes = tok * h * 2;
              x.device = "synthetic";
              x.time_us = synthetic(s, tp, static_cast<int>(f), double(x.bytes)) * (1 + 0.01 * std::sin(double(tok * h)));
              v.push_back(x);
            }
    for (int tp : {2, 4, 8})
      for (const char* s : {"NCCL_RING_LL", "NCCL_RING_SIMPLE", "NCCL_TREE_SIMPLE"})
        for (int k = 3; k <= 32; ++k) {
          Sample x;
          x.strategy = s;
          x.nranks = tp;
          x.bytes = std::int64_t{1} << k;
          x.device = "synthetic";
          x.extra["system"] = "synthetic_nccl";
          const double b = double(x.bytes);
          x.time_us = std::string(s) == "NCCL_RING_LL" ? 5 + b / 2e3 : std::string(s) == "NCCL_TREE_SIMPLE" ? 14 + b / 2.5e4 : 20 + b / 4e4;
          v.push_back(x);
        }
    fit::FitOptions o;
    o.threads = 2;
    return fit::fit_model_set(v, o);
  }();
  return m;
}

void BM_CodegenModelSet(benchmark::State& state) {
  const ModelSet& m = fitted_models();
  const std::string text = m.to_json().dump();
  const FormatSpec& format = output_formats().at(static_cast<std::size_t>(state.range(0)));
  Request r;
  r.models_path = "models.json";
  r.date = "2026-01-01";
  r.system = format.name == "nccl-tuner" ? "synthetic_nccl" : "synthetic";
  if (format.name == "vllm") r.map = {"ONESHOT=custom"};
  if (format.name == "sglang") r.map = {"ONESHOT=custom_graph", "TWOSHOT=custom_eager"};
  for (auto _ : state) {
    std::string out = generate(m, r, format.name, text);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(format.name);
}
BENCHMARK(BM_CodegenModelSet)->DenseRange(0, static_cast<int>(output_formats().size()) - 1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

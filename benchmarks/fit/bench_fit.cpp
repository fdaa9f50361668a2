// Speed of fitting one group, model selection included (goal: median < 5 ms per group), and of prediction.
// Curves: synthetic ones shaped like the public measurements (22 sizes, 1 KiB .. 2 GiB, two NCCL-like
// regimes with 1 % noise), and — when the public data folder exists — the real curves of its files.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "fit/eval.h"
#include "fit/family_fit.h"
#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/anchors.h"
#include "ingest/ingest.h"
#include "model/group_model.h"
#include "model/sm_targets.h"

using namespace arfit;

namespace {

fit::Curve synthetic_curve(unsigned seed) {
  fit::Curve c;
  c.key.system = "bench";
  c.key.nranks = 8;
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0, 0.01);
  for (int e = 10; e <= 31; ++e) {
    const double s = std::ldexp(1.0, e);
    const double t1 = 6 + 1.75 * s / 20e3, t2 = 40 + 1.75 * s / 400e3;
    c.bytes.push_back(s);
    c.time_us.push_back(std::min(t1, t2) * std::exp(nd(rng)));
  }
  return c;
}

// Every curve of the public data folder as the protocols define them (empty when the folder is absent).
const std::vector<fit::Curve>& all_public_curves() {
  static const std::vector<fit::Curve> curves = [] {
    const char* env = std::getenv("ARFIT_PUBLIC_DATA_DIR");
    const std::filesystem::path dir = env ? env : ARFIT_BENCH_PUBLIC_DATA_DIR;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return std::vector<fit::Curve>{};
    std::vector<Sample> samples;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".txt") {
        try {
          auto v = ingest::ingest_file(e.path().string()).samples;
          samples.insert(samples.end(), v.begin(), v.end());
        } catch (const std::exception&) {
        }
      }
    return fit::eval_curves(samples, 12);
  }();
  return curves;
}

std::vector<fit::Curve> public_curves() {
  const std::vector<fit::Curve>& out = all_public_curves();
  // every 8th curve keeps the run short while spanning all files
  std::vector<fit::Curve> some;
  for (size_t i = 0; i < out.size(); i += 8) some.push_back(out[i]);
  return some;
}

void BM_FitGroupAutoSynthetic(benchmark::State& state) {
  const fit::Curve c = synthetic_curve(1);
  for (auto _ : state) benchmark::DoNotOptimize(fit::fit_curve(c));
  state.SetLabel("22 sizes, family auto (3 candidates, CV) + residual correction + covariance");
}
BENCHMARK(BM_FitGroupAutoSynthetic)->Unit(benchmark::kMillisecond);

void BM_FitGroupAutoPublic(benchmark::State& state) {
  static const std::vector<fit::Curve> curves = public_curves();
  if (curves.empty()) {
    state.SkipWithError("public data folder absent");
    return;
  }
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(fit::fit_curve(curves[i % curves.size()]));
    ++i;
  }
  state.SetLabel(std::to_string(curves.size()) + " public curves, one per iteration");
}
// Repetitions report the median over repeated passes; each iteration is one group.
BENCHMARK(BM_FitGroupAutoPublic)->Unit(benchmark::kMillisecond)->Iterations(100)->Repetitions(5)->ReportAggregatesOnly(true);

// Times `work` on each item, one by one, and reports the median and p90 over items (counters median_ms,
// p90_ms, groups): the goals are per group, not per pass.
template <typename Item, typename Work>
void time_each(benchmark::State& state, const std::vector<Item>& items, const Work& work) {
  std::vector<double> ms;
  for (auto _ : state) {
    ms.clear();
    for (const Item& item : items) {
      const auto t0 = std::chrono::steady_clock::now();
      work(item);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::sort(ms.begin(), ms.end());
  state.counters["median_ms"] = ms[ms.size() / 2];
  state.counters["p90_ms"] = ms[ms.size() * 9 / 10];
  state.counters["groups"] = static_cast<double>(ms.size());
}

// The goal's own statistic: every public curve (every 8th) fitted once per pass, timed one by one; the
// counter median_ms is the median over curves of the time of one group's fit including model selection.
void BM_FitGroupAutoPublicMedian(benchmark::State& state) {
  static const std::vector<fit::Curve> curves = public_curves();
  if (curves.empty()) {
    state.SkipWithError("public data folder absent");
    return;
  }
  time_each(state, curves, [](const fit::Curve& c) { benchmark::DoNotOptimize(fit::fit_curve(c)); });
}
BENCHMARK(BM_FitGroupAutoPublicMedian)->Unit(benchmark::kMillisecond)->Iterations(1);

// Fitting with priors (`arfit fit --prior`): a new machine measured at 3 sizes per curve (anchors:3), each
// curve transferred from the matching curves of the other machines and written as a models-file group —
// what fit_model_set does per curve. The machine is the public data's h200_sxm (120 curves); the priors
// are every other machine's curves, fitted once outside the timing. Counter median_ms: the median over
// curves of one group's time (goal: <= 5 ms).
void BM_FitGroupWithPriorPublicMedian(benchmark::State& state) {
  const std::vector<fit::Curve>& curves = all_public_curves();
  if (curves.empty()) {
    state.SkipWithError("public data folder absent");
    return;
  }
  const std::string machine = "h200_sxm";
  static const std::shared_ptr<fit::TransferLibrary> library = [&] {
    nlohmann::json groups = nlohmann::json::array();
    for (const fit::Curve& c : curves)
      if (c.hardware != machine) groups.push_back(fit::fit_curve(c).model);
    const nlohmann::json set = {{"schema", "arfit-models"}, {"schema_version", 1}, {"groups", groups}};
    return std::make_shared<fit::TransferLibrary>(std::vector<ModelSet>{ModelSet::from_json(set)});
  }();
  std::vector<fit::TransferTarget> targets;
  for (const fit::Curve& c : curves) {
    if (c.hardware != machine) continue;
    fit::TransferTarget t;
    t.key = c.key;
    t.sm = datasheet_sm(c.sm, c.device, c.hardware);
    for (size_t i : anchor_indices(c.bytes.size(), 3)) {
      t.bytes.push_back(c.bytes[i]);
      t.time_us.push_back(c.time_us[i]);
    }
    targets.push_back(t);
  }
  time_each(state, targets, [&](const fit::TransferTarget& t) {
    const fit::Transfer tr = fit::transfer_curve(t, library->matching(t.key));
    benchmark::DoNotOptimize(fit::transferred_group(t, tr, tr.min_bytes(), tr.max_bytes()));
  });
}
BENCHMARK(BM_FitGroupWithPriorPublicMedian)->Unit(benchmark::kMillisecond)->Iterations(1);

// What fit_model_set adds per group to the fits above: the group's JSON read back by the models file's reader
// (GroupModel::from_json), so that no group the reader refuses is written as fitted. The groups are fitted once
// outside the timing; counter median_ms: the median over public curves of one read-back.
void BM_ReadBackGroupPublicMedian(benchmark::State& state) {
  static const std::vector<fit::Curve> curves = public_curves();
  if (curves.empty()) {
    state.SkipWithError("public data folder absent");
    return;
  }
  std::vector<nlohmann::json> groups;
  for (const fit::Curve& c : curves) groups.push_back(fit::fit_curve(c).model);
  time_each(state, groups, [](const nlohmann::json& g) { benchmark::DoNotOptimize(GroupModel::from_json(g)); });
}
BENCHMARK(BM_ReadBackGroupPublicMedian)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_FitFamily(benchmark::State& state, const char* family) {
  const fit::Curve c = synthetic_curve(2);
  const FamilySpec spec = parse_family(family);
  for (auto _ : state) benchmark::DoNotOptimize(fit::fit_family(spec, c.bytes, c.time_us, 1.75));
}
BENCHMARK_CAPTURE(BM_FitFamily, alphabeta, "alphabeta")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FitFamily, sigmoid, "sigmoid")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_FitFamily, regimes3, "regimes3")->Unit(benchmark::kMicrosecond);

void BM_PredictGroup(benchmark::State& state) {
  const fit::GroupFit g = fit::fit_curve(synthetic_curve(3));
  const GroupModel m = GroupModel::from_json(g.model);
  double s = 1e5;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.predict(s));
    s = s * 1.01;
    if (s > 1e9) s = 1e5;
  }
}
BENCHMARK(BM_PredictGroup);

}  // namespace

BENCHMARK_MAIN();

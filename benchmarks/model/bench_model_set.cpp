// ModelSet::predict against the number of curves in the set. Every prediction scanned every group, so a caller that
// predicts each strategy at each cell (codegen, suggest, plot heatmaps) was quadratic in the number of curves: 4,800
// groups took codegen json 12.8 s and suggest 10.9 s. The set is indexed by curve kind (model/model_set.cpp).
//   BM_PredictOneQuery     one query, N strategies x 3 GPU counts in the set: flat in N (BigO o(1) expected)
//   BM_PredictEveryCurve   every strategy at one size and count, what a table cell asks: linear in N
//   BM_ParseAllToAllvSplit an all-to-allv split of N per-rank sizes ("S0-S1-..."), what predict --splits and every
//                          all-to-allv sample parse: linear in N (an N x N byte matrix took 0.8 GB at N = 10,000)
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "model/alltoallv.h"
#include "model/model_set.h"

using namespace arfit;

namespace {

// An alphabeta group without correction: the cheapest valid group, so the benchmark times the lookup.
nlohmann::json group(const std::string& strategy, int nranks) {
  return {{"key", {{"system", "s"}, {"collective", "allreduce"}, {"strategy", strategy}, {"fusion", "NONE"}, {"dtype", "bf16"},
                   {"nranks", nranks}, {"nnodes", 1}}},
          {"ok", true},
          {"family", "alphabeta"},
          {"params", {std::log(5.0 + nranks), std::log(100.0)}},
          {"bus_factor", 2.0 * (nranks - 1) / nranks},
          {"range", {{"min_bytes", 1024}, {"max_bytes", 1 << 26}, {"points", 17}}}};
}

ModelSet set_of(int strategies) {
  nlohmann::json groups = nlohmann::json::array();
  for (int s = 0; s < strategies; ++s)
    for (int n : {2, 4, 8}) groups.push_back(group("S" + std::to_string(s), n));
  return ModelSet::from_json({{"schema", "arfit-models"}, {"schema_version", 1}, {"groups", groups}});
}

void BM_PredictOneQuery(benchmark::State& state) {
  const ModelSet set = set_of(static_cast<int>(state.range(0)));
  PredictQuery q;
  q.strategy = "S1";
  q.nranks = 8;
  q.bytes = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(set.predict(q));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_PredictOneQuery)->RangeMultiplier(4)->Range(16, 4096)->Complexity();

void BM_PredictEveryCurve(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const ModelSet set = set_of(n);
  std::vector<PredictQuery> queries(n);
  for (int s = 0; s < n; ++s) {
    queries[s].strategy = "S" + std::to_string(s);
    queries[s].nranks = 8;
    queries[s].bytes = 1 << 20;
  }
  for (auto _ : state)
    for (const PredictQuery& q : queries) benchmark::DoNotOptimize(set.predict(q));
  state.SetComplexityN(n);
}
BENCHMARK(BM_PredictEveryCurve)->RangeMultiplier(4)->Range(16, 4096)->Complexity()->Unit(benchmark::kMicrosecond);

void BM_ParseAllToAllvSplit(benchmark::State& state) {
  std::string text = "1000";
  for (int r = 1; r < state.range(0); ++r) text += "-" + std::to_string(1000 + r % 7);
  for (auto _ : state) {
    const AllToAllvSplit split = parse_alltoallv_split(text);
    benchmark::DoNotOptimize(effective_alltoall_bytes(split, EffectiveMode::MaxOfSum));
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_ParseAllToAllvSplit)->RangeMultiplier(4)->Range(64, 65536)->Complexity()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

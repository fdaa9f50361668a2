// The C++ loop the Python package's Models.predict is measured against (docs/python.md): 10^6 sizes answered as
// `arfit predict` answers each (model/predict_answer.h), results kept in arrays as the package returns them.
// The models file is $ARFIT_BENCH_MODELS (benchmarks/python/predict_points.py fits one and runs both); the query
// is an all-reduce of its first strategy at its first GPU count, as the script asks.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "model/model_set.h"
#include "model/predict_answer.h"

namespace {

void BM_PredictPoints(benchmark::State& state) {
  const char* path = std::getenv("ARFIT_BENCH_MODELS");
  if (!path) {
    state.SkipWithError("set ARFIT_BENCH_MODELS to a models file (benchmarks/python/predict_points.py does)");
    return;
  }
  const arfit::ModelSet set = arfit::ModelSet::load(path);
  arfit::PredictRequest request;
  request.models_name = path;
  request.strategy = std::getenv("ARFIT_BENCH_STRATEGY") ? std::getenv("ARFIT_BENCH_STRATEGY") : "NCCL";
  request.dtype = std::getenv("ARFIT_BENCH_DTYPE") ? std::getenv("ARFIT_BENCH_DTYPE") : "";
  request.nranks = std::getenv("ARFIT_BENCH_NRANKS") ? std::atoi(std::getenv("ARFIT_BENCH_NRANKS")) : 0;
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  std::vector<double> sizes(n);
  for (std::size_t i = 0; i < n; ++i) sizes[i] = std::pow(2.0, 3 + 27.0 * i / (n - 1));  // 8 B .. 1 GiB, log-spaced
  for (auto _ : state) {
    const arfit::ResolvedPredict resolved = arfit::resolve_predict_request(set, request);
    std::vector<double> time(n), lo(n), hi(n), busbw(n);
    std::vector<std::string> how(n);
    for (std::size_t i = 0; i < n; ++i) {
      arfit::PredictQuery q = resolved.base;
      q.bytes = sizes[i];
      const arfit::PredictAnswer a = arfit::answer_predict_query(set, {}, q, resolved.busbw_nranks);
      if (!a.prediction) continue;
      time[i] = a.prediction->time_us, lo[i] = a.prediction->lo_us, hi[i] = a.prediction->hi_us;
      busbw[i] = a.busbw_gbps, how[i] = a.prediction->how;
    }
    benchmark::DoNotOptimize(time.data());
    benchmark::DoNotOptimize(how.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_PredictPoints)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();

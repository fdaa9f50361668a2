// One call of the tuner plugin's cost update (TunerCosts::apply, what getCollInfo runs): NCCL's 7 x 3 cost table for
// an all-reduce on 8 ranks, from
//   BM_ModelsFirstCall  a models file of four NCCL algorithm/protocol variants fitted by fit/: four predictions, for
//                       a size not seen before (four predictions)
//   BM_ModelsCall       the same, sizes cycling through 21 powers of two (a job repeats its sizes: cached)
//   BM_RulesCall        the rules file codegen writes from it (first matching rule)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "fit/fit.h"
#include "tuner/tuner_costs.h"

using namespace arfit;

namespace {

std::string models_file() {
  static const std::string path = [] {
    std::vector<Sample> v;
    for (const char* s : {"NCCL_RING_LL", "NCCL_RING_LL128", "NCCL_RING_SIMPLE", "NCCL_TREE_SIMPLE"})
      for (int k = 10; k <= 30; ++k) {
        Sample x;
        x.strategy = s;
        x.nranks = 8;
        x.dtype = "fp32";
        x.bytes = std::int64_t{1} << k;
        const double b = static_cast<double>(x.bytes);
        x.time_us = s[10] == 'L' && s[12] == '\0' ? 8 + b / 2e3 : s[5] == 'T' ? 14 + b / 2.5e4 : s[12] == '1' ? 12 + b / 1.2e4 : 28 + b / 4e4;
        v.push_back(x);
      }
    fit::FitOptions o;
    o.threads = 1;
    const std::string p = "/tmp/arfit_bench_tuner_models.json";
    fit::fit_model_set(v, o).save(p);
    return p;
  }();
  return path;
}

void run(benchmark::State& state, const tuner::TunerCosts& costs, bool new_sizes = false) {
  float table[21];
  int k = 10, nchannels = 0;
  std::size_t fresh = 1000;
  tuner::CollCall call;
  call.nranks = 8;
  for (auto _ : state) {
    for (int i = 0; i < 21; ++i) table[i] = 100.0f + i;
    call.bytes = new_sizes ? (fresh += 4096) : std::size_t{1} << k;
    k = k == 30 ? 10 : k + 1;
    benchmark::DoNotOptimize(costs.apply(call, table, 7, 3, &nchannels));
    benchmark::ClobberMemory();
  }
}

void BM_ModelsFirstCall(benchmark::State& state) { run(state, tuner::TunerCosts::load(models_file(), ""), true); }
void BM_ModelsCall(benchmark::State& state) { run(state, tuner::TunerCosts::load(models_file(), "")); }

void BM_RulesCall(benchmark::State& state) {
  const std::string path = "/tmp/arfit_bench_tuner_rules.conf";
  std::ofstream(path) << "allreduce,0,11585,ring,ll,0,1,8\nallreduce,11586,46340,ring,ll128,0,1,8\n"
                         "allreduce,46341,741455,tree,simple,0,1,8\nallreduce,741456,18446744073709551615,ring,simple,0,1,8\n";
  run(state, tuner::TunerCosts::load(path, ""));
}

}  // namespace

BENCHMARK(BM_ModelsFirstCall);
BENCHMARK(BM_ModelsCall);
BENCHMARK(BM_RulesCall);
BENCHMARK_MAIN();

// Ingest speed on the public measurements: goal < 1 s for the whole folder (nccl-tests/ + aiconfigurator/),
// files read from disk and parsed, as `arfit fit` does through load_samples().
//   build-*/benchmarks/ingest/bench_ingest [--benchmark_repetitions=5]
// Set ARFIT_PUBLIC_DATA_DIR to point elsewhere; without the folder the benchmarks report an error and skip.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ingest/ingest.h"
#include "io/input_file.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> public_files(const char* sub = nullptr) {
  std::string dir = ARFIT_PUBLIC_DATA_DIR;
  if (const char* env = std::getenv("ARFIT_PUBLIC_DATA_DIR")) dir = env;
  std::vector<std::string> out;
  std::error_code ec;
  for (const char* s : {"nccl-tests", "aiconfigurator"}) {
    if (sub && std::string(sub) != s) continue;
    fs::path p = fs::path(dir) / s;
    if (!fs::is_directory(p, ec)) continue;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_regular_file()) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The acceptance measurement: every file, read + detected + parsed, samples concatenated.
void BM_LoadWholePublicFolder(benchmark::State& state) {
  const auto files = public_files();
  if (files.empty()) {
    state.SkipWithError("public data folder absent (set ARFIT_PUBLIC_DATA_DIR)");
    return;
  }
  std::size_t samples = 0, bytes = 0;
  for (const auto& f : files) bytes += fs::file_size(f);
  for (auto _ : state) {
    auto s = arfit::ingest::load_samples(files);
    samples = s.size();
    benchmark::DoNotOptimize(s.data());
  }
  state.counters["files"] = static_cast<double>(files.size());
  state.counters["samples"] = static_cast<double>(samples);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_LoadWholePublicFolder)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Parsing alone (text already in memory), per reader family.
void BM_ParseOnly(benchmark::State& state, const char* sub) {
  const auto files = public_files(sub);
  if (files.empty()) {
    state.SkipWithError("public data folder absent (set ARFIT_PUBLIC_DATA_DIR)");
    return;
  }
  std::vector<std::pair<std::string, std::string>> texts;
  std::size_t bytes = 0;
  for (const auto& f : files) {
    texts.emplace_back(f, arfit::read_file(f));
    bytes += texts.back().second.size();
  }
  std::size_t rows = 0;
  for (auto _ : state) {
    rows = 0;
    for (const auto& [name, text] : texts) rows += arfit::ingest::ingest_text(text, name).rows;
    benchmark::DoNotOptimize(rows);
  }
  state.counters["rows"] = static_cast<double>(rows);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}
BENCHMARK_CAPTURE(BM_ParseOnly, nccl_tests, "nccl-tests")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ParseOnly, aiconfigurator, "aiconfigurator")->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// One round of the adaptive loop on the full TensorRT-LLM grid (codegen's default Grid: TP 2/4/8, its four fusion
// ops, hidden 128..8192, tokens 1..16384) with NCCL, ONESHOT and TWOSHOT: 3,780 cases, 1,260 cells. The times are
// synthetic α-β curves (one-shot ahead at small messages, two-shot in the middle, NCCL at large ones); the round is
// timed at two points of a run: right after the seed, and with a tenth of the grid measured (a lattice of it).
#include <benchmark/benchmark.h>

#include <cmath>

#include "codegen/table.h"
#include "planner/loop.h"

using namespace arfit;
using namespace arfit::planner;

namespace {

struct Grid {
  TargetTable table;
  std::vector<double> truth;
};

double synthetic_us(const std::string& strategy, int tp, int fusion, double bytes) {
  const double epilogue = 1.0 + 0.15 * fusion;
  if (strategy == "ONESHOT") return epilogue * (3.0 + bytes * (tp - 1) / 150000.0);
  if (strategy == "TWOSHOT") return epilogue * (6.0 + bytes * 2.0 * (tp - 1) / tp / 120000.0);
  return epilogue * 14.0 + bytes * 2.0 * (tp - 1) / tp / 300000.0;
}

Grid trtllm_grid() {
  const codegen::Grid g;  // TensorRT-LLM's lookup grid
  const std::vector<std::string> strategies = {"NCCL", "ONESHOT", "TWOSHOT"};
  Grid out;
  std::vector<PlanCase> cases;
  std::vector<std::vector<int>> cells;
  for (int tp : g.tps)
    for (std::size_t f = 0; f < g.fusions.size(); ++f)
      for (std::int64_t hidden : g.hiddens)
        for (std::int64_t tokens : g.tokens) {
          std::vector<int> cell;
          for (const std::string& s : strategies) {
            PlanCase pc;
            pc.curve.system = "synthetic";
            pc.curve.strategy = s;
            pc.curve.fusion = g.fusions[f];
            pc.curve.nranks = tp;
            pc.tokens = tokens;
            pc.hidden = hidden;
            pc.bytes = static_cast<double>(tokens * hidden * 2);
            cell.push_back(static_cast<int>(cases.size()));
            cases.push_back(pc);
            out.truth.push_back(synthetic_us(s, tp, static_cast<int>(f), pc.bytes));
          }
          cells.push_back(cell);
        }
  out.table = TargetTable(std::move(cases), std::move(cells));
  return out;
}

void measure(Measurements& m, const Grid& g, int k) {
  m.time_us[static_cast<std::size_t>(k)] = g.truth[static_cast<std::size_t>(k)];
  m.seconds[static_cast<std::size_t>(k)] = 0.001 + 25e-6 * g.truth[static_cast<std::size_t>(k)];
  m.round[static_cast<std::size_t>(k)] = 0;
}

// state.range(0): 0 = the seed measured; 1 = the seed and every tenth case of the grid.
void BM_AdaptiveRoundTrtllmGrid(benchmark::State& state) {
  const Grid g = trtllm_grid();
  Measurements m(g.table.size());
  for (int k : seed_cases(g.table)) measure(m, g, k);
  if (state.range(0) == 1)
    for (std::size_t k = 0; k < g.table.size(); ++k)
      if (k % 10 == 3) measure(m, g, static_cast<int>(k));
  LoopOptions o;
  o.until_regret = 1e-9;  // never stop: the whole round is timed
  o.measure_overhead = true;
  std::size_t batch = 0;
  for (auto _ : state) {
    const RoundPlan p = plan_round(g.table, m, o, 1);
    batch = p.batch.size();
    benchmark::DoNotOptimize(p.batch.data());
  }
  state.SetLabel(std::to_string(m.count()) + " of " + std::to_string(g.table.size()) + " measured, batch of " +
                 std::to_string(batch));
}
BENCHMARK(BM_AdaptiveRoundTrtllmGrid)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

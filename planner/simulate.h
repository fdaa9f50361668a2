// The `adaptive` evaluation protocol (`arfit eval SAMPLES... --protocol adaptive[:BUDGET]`): arbench's adaptive
// loop replayed on fully measured tables, against fixed plans at the same time budget.
//
// Tables. The select protocol's custom-vs-NCCL pairs (codegen/select_eval.h: select_pairs), each system's together
// as one target table, as one arbench run on that machine measures one grid: a curve is one strategy of one source
// (so a NCCL table paired with several custom ones is one curve, measured once), a cell is one pair at one size. A
// case's answer is its measured time, its cost arbench's (planner/table.h CostModel: the warm-up and timed
// iterations of that time, plus the per-case overhead given). The budget is BUDGET (a fraction) of the system's
// exhaustive measuring time. Every plan measures a case only when it fits in what is left of the budget, so none
// exceeds it (the fixed plans get that knowledge of the true cost for free; the adaptive loop chooses by predicted
// cost, and a case it chose that does not fit is left out and not chosen again). Every plan's table is chosen by the
// same rule, the one arbench's table would be: the measured time where measured, else the fitted models
// (planner/estimate.h), fastest wins. Regret = t(choice) / t(measured best) over all cells, reported per system and
// over all.
//
// Plans:
//   adaptive  planner/loop.h (seed, rounds, value per second); stops on the budget or --until-regret
//   lattice   each pair's size points coarse to fine (every 2^k-th point from the largest power of two below the
//             number of points down, and the last): the densest lattice the budget affords
//   random    each pair's size points in a seeded random order (splitmix64)
//   sparse    the select protocol's sparse4 points (every 4th size and the largest), smallest first
//   The fixed plans take their points level by level across the pairs (every pair's first point, then every
//   pair's second, ...), each point with all its candidates, so a budget that ends early covers every pair alike.
//
// With priors (leave one system out, as crosshw:K): each pair's curves are transferred from the other systems'
// curves (fit_model_set of their samples, `arfit fit --prior`) while they have few sizes, in every plan.
//
// Measurement noise (`noise` > 0): a plan sees each case's time multiplied by exp(noise · z), z a standard normal
// drawn per case and replicate (unit_normal, keyed so every plan of a replicate sees the same draw), as a repeated
// run of the same machine would measure it; its cost is that time's. Regret is still scored against the published
// times (the truth the plans estimate), so a cell whose candidates are closer than the noise can be chosen wrongly
// even when measured. Each of `replicates` runs draws anew (and reorders the random plan); the figures pool the
// replicates' cells, and per system the report counts the replicates in which adaptive's geometric-mean and p95
// regret were both lower than each fixed plan's: whether a system's comparison holds beyond one draw.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/select_eval.h"
#include "model/sample.h"

namespace arfit::planner {

struct SimulationOptions {
  double budget_fraction = 0.10;                 // of each table's exhaustive measuring time
  std::vector<double> overheads_s = {1e-3, 0.1};  // per-case overhead; one run each
  bool prior = false;                            // leave one system out
  double until_regret = 0;                       // the adaptive loop's --until-regret (fraction); 0: none
  int warmup = 5, iters = 20;                    // arbench's defaults
  double noise = 0;                              // σ of ln t of one measurement; 0: the published times exactly
  int replicates = 1;                            // noisy runs per overhead (more than one needs noise)
  std::uint64_t random_seed = 1;                 // the random plan's order; replicate r uses random_seed + r
  int min_cells = 12;
  int threads = 1;                               // tables simulated in parallel (results identical)
};

// One plan over some tables.
struct PlanScore {
  codegen::MethodStats regret;
  long cases = 0, measured = 0;    // cases of the tables; measured by the plan
  long chosen = 0;                 // adaptive: of those, chosen by their value after the seed (planner/loop.h)
  double exhaustive_s = 0, spent_s = 0;
  double case_fraction() const { return cases ? double(measured) / double(cases) : 0; }
  double time_fraction() const { return exhaustive_s > 0 ? spent_s / exhaustive_s : 0; }
};

// The --until-regret promise: adaptive runs (systems) that stopped on it, and whether their tables' realised
// geometric-mean regret is within it.
struct PromiseCheck {
  int stopped = 0, kept = 0;  // systems that stopped on the regret rule; of which realised <= the promise
  std::vector<std::pair<std::string, double>> realised;  // each one's realised geometric-mean regret (fraction)
};

struct SimulationRun {
  double overhead_s = 0;
  std::map<std::string, PlanScore> plans;                                    // over every table
  std::vector<std::pair<std::string, std::map<std::string, PlanScore>>> systems;  // per system, sorted
  PromiseCheck promise;
  std::map<std::string, int> stops;  // the adaptive loop's stop reasons (planner/loop.h) and how many tables each
  // Per system and fixed plan: the replicates in which adaptive's geometric-mean and p95 regret were both lower.
  std::map<std::string, std::map<std::string, int>> adaptive_ahead;
};

struct SimulationReport {
  SimulationOptions options;
  int tables = 0;  // systems: one arbench run each
  int pairs = 0;
  long cells = 0;
  std::vector<std::string> plan_order;  // adaptive, lattice, random, sparse
  std::vector<SimulationRun> runs;      // one per overhead
  std::vector<std::string> notes;
};

// Throws std::invalid_argument for bad options and std::runtime_error when no table can be formed.
SimulationReport simulate_adaptive(const std::vector<Sample>& samples, const SimulationOptions& options = {});
void check_simulation_options(const SimulationOptions& options);

nlohmann::json simulation_report_json(const SimulationReport& report);
std::string format_simulation_report(const SimulationReport& report);

}  // namespace arfit::planner

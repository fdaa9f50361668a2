#include "bench/adaptive.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <iostream>
#include <stdexcept>

#include "bench/agreement.h"
#include "model/errors.h"
#include "model/text.h"

namespace arfit::bench {

planner::TargetTable target_table(const PlannedGrid& grid, const std::string& system, int nnodes) {
  std::vector<planner::PlanCase> cases;
  std::map<std::string, int> cell_of;  // a case's key without its strategy -> its cell
  std::vector<std::vector<int>> cells;
  for (const Case& c : grid.cases) {
    planner::PlanCase pc;
    pc.curve.system = system;
    pc.curve.collective = c.collective;
    pc.curve.strategy = c.strategy;
    pc.curve.fusion = c.fusion;
    pc.curve.dtype = c.dtype;
    pc.curve.nranks = c.tp;
    pc.curve.nnodes = nnodes;
    pc.bytes = static_cast<double>(c.bytes);
    pc.tokens = c.tokens;
    pc.hidden = c.hidden;
    Case cell = c;
    cell.strategy.clear();
    const auto [it, fresh] = cell_of.emplace(cell.key(), static_cast<int>(cells.size()));
    if (fresh) cells.emplace_back();
    cells[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(cases.size()));
    cases.push_back(pc);
  }
  return planner::TargetTable(std::move(cases), std::move(cells));
}

planner::Measurements journal_measurements(const PlannedGrid& grid, const std::vector<Sample>& rows) {
  std::map<std::string, int> index;
  for (const Case& c : grid.cases) index.emplace(c.key(), c.index);
  planner::Measurements m(grid.cases.size());
  for (const Sample& s : rows) {
    const auto it = index.find(sample_key(s));
    if (it == index.end()) continue;
    const auto k = static_cast<std::size_t>(it->second);
    const auto number = [&](const char* column) {
      const auto v = s.extra.find(column);
      return v == s.extra.end() ? std::string() : v->second;
    };
    std::string why;
    const std::optional<std::uint64_t> round = parse_whole_number(number("round"), 0, 1u << 30, &why);
    if (!round) throw InputError(s.source, s.line, "round", "--resume: the round of an adaptive run's row: " + why);
    const std::optional<double> wall = parse_decimal(number("wall_s"), 0, 1e9, &why);
    if (!wall) throw InputError(s.source, s.line, "wall_s", "--resume: the seconds an adaptive run's case took: " + why);
    m.time_us[k] = s.ok() ? s.time_us : 0;
    m.seconds[k] = *wall;
    m.round[k] = static_cast<int>(*round);
  }
  return m;
}

namespace {

// Rank 0's copy of what has been measured, filled from the records as the runner reports them.
class MeasurementCollector : public Reporter {
 public:
  explicit MeasurementCollector(planner::Measurements& m) : m_(m) {}
  void report(const Record& r) override {
    const auto k = static_cast<std::size_t>(r.c.index);
    m_.time_us[k] = r.sample.ok() ? r.sample.time_us : 0;
    m_.seconds[k] = r.wall_s;
    m_.round[k] = r.round;
  }

 private:
  planner::Measurements& m_;
};

// Rank 0's decision for one round: the cases still to measure in it (a resumed round's measured ones left out).
struct Decision {
  planner::RoundPlan plan;
  std::vector<int> batch;
};

Decision decide(const planner::TargetTable& table, const planner::Measurements& m, const planner::LoopOptions& loop, int round) {
  Decision d;
  d.plan = planner::plan_round(table, m, loop, round);
  for (int k : d.plan.batch)
    if (!m.measured(k)) d.batch.push_back(k);
  // A resumed round that had spent the budget when the run was stopped: the rounds before it did not know, the
  // journal does (an uninterrupted run would have stopped at the case that spent it).
  if (d.plan.stop == planner::StopReason::None && m.spent_s() >= loop.budget_s) d.plan.stop = planner::StopReason::Budget;
  return d;
}

RoundProgress progress_of(const Decision& d, const planner::TargetTable& table, const planner::Measurements& m,
                          const planner::LoopOptions& loop) {
  RoundProgress p;
  p.round = d.plan.round;
  p.batch = d.batch.size();
  p.measured = m.count();
  p.planned = table.size();
  p.spent_s = m.spent_s();
  p.budget_s = loop.budget_s;
  p.assessed = d.plan.assessed;
  p.seed_tops = d.plan.seed_tops;
  p.cells = static_cast<int>(table.cells().size());
  p.uncertain_cells = d.plan.assessment.uncertain_cells;
  p.expected_regret = d.plan.assessment.expected_geomean_regret();
  p.regret_bound = d.plan.assessment.geomean_regret_bound();
  return p;
}

std::string stop_words(planner::StopReason why, const planner::LoopOptions& loop, double spent_s, bool stopped_by_timeout) {
  if (stopped_by_timeout) return "a case timed out (--on-timeout stop)";
  switch (why) {
    case planner::StopReason::Exhausted: return "every case of the grid is measured";
    case planner::StopReason::Budget:
      if (spent_s >= loop.budget_s) return "the measuring budget (--budget " + format_duration(loop.budget_s) + ") is spent";
      return "no case that could change a choice fits in the " + format_duration(loop.budget_s - spent_s) +
             " left of the measuring budget (--budget " + format_duration(loop.budget_s) + ")";
    case planner::StopReason::Regret:
      return "the table's geometric-mean regret is below " + format_number(100 * loop.until_regret, "%g") +
             " % with 90 % probability (--until-regret)";
    case planner::StopReason::Settled: return "no measurement can change a choice";
    case planner::StopReason::None: break;
  }
  return "?";
}

StopReport stop_report(const PlannedGrid& grid, const planner::TargetTable& table, const planner::Measurements& m,
                       const planner::LoopOptions& loop, int rounds, planner::StopReason reason, bool timed_out,
                       bool second_stage) {
  StopReport r;
  r.rounds = rounds;
  r.why = stop_words(reason, loop, m.spent_s(), timed_out);
  r.reason = timed_out ? "timeout" : planner::to_string(reason);
  r.seed_tops = second_stage;
  const planner::SeedShare share = planner::seed_share(table, m, second_stage);
  r.seed_anchors = share.anchors;
  r.seed_cases = share.seed;
  r.seed_s = share.seed_s;
  r.chosen_cases = share.chosen;
  const planner::TableState state = planner::table_state(table, m, loop);
  r.measured = m.count();
  r.planned = table.size();
  r.spent_s = m.spent_s();
  r.exhaustive_s = state.exhaustive_s;
  r.cells = static_cast<int>(table.cells().size());
  r.uncertain_cells = state.assessment.uncertain_cells;
  r.expected_regret = state.assessment.expected_geomean_regret();
  r.regret_bound = state.assessment.geomean_regret_bound();
  const int worst = state.assessment.worst_cell();
  if (worst >= 0 && state.assessment.cells[static_cast<std::size_t>(worst)].expected_regret > 0) {
    const planner::CellAssessment& w = state.assessment.cells[static_cast<std::size_t>(worst)];
    r.worst_cell = grid.cases[static_cast<std::size_t>(w.choice)].describe() + " chosen";
    r.worst_regret = std::expm1(w.expected_regret);
  }
  return r;
}

// Rank 0's decision to every rank: a stop flag, then the batch's case indices.
void share_decision(MPI_Comm world, std::vector<int>& batch, int& stop) {
  int message[2] = {stop, static_cast<int>(batch.size())};
  MPI_Bcast(message, 2, MPI_INT, 0, world);
  stop = message[0];
  batch.resize(static_cast<std::size_t>(message[1]));
  MPI_Bcast(batch.data(), message[1], MPI_INT, 0, world);
}

}  // namespace

AdaptiveResult run_adaptive(MPI_Comm world, Runner& runner, const PlannedGrid& grid, const planner::TargetTable& table,
                            planner::Measurements m, const planner::LoopOptions& loop, const RunHeader& header,
                            std::size_t resumed_cases, const std::vector<Reporter*>& reporters,
                            const std::vector<RoundReporter*>& rounds) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  MeasurementCollector collector(m);
  std::vector<Reporter*> all = reporters;
  if (rank == 0) all.push_back(&collector);
  runner.start(header, grid.cases.size(), resumed_cases, all);
  // A resumed run decides its journal's last round again: the same batch, less what it measured already.
  int round = 0;
  for (int r : m.round) round = std::max(round, r);
  const int first_round = round;
  bool second_stage = false;  // round 1's decision was the seed's second stage (rank 0's)
  planner::StopReason why = planner::StopReason::None;
  for (;; ++round) {
    Decision d;
    int status = 0;
    std::string error;
    if (rank == 0) {
      try {
        d = decide(table, m, loop, round);
        if (round == 1) second_stage = d.plan.seed_tops;
        if (d.plan.stop == planner::StopReason::None && !d.batch.empty())
          for (RoundReporter* r : rounds) r->round(progress_of(d, table, m, loop));
      } catch (const std::exception& e) {
        status = 1;
        error = std::string("--plan adaptive: deciding round ") + std::to_string(round) + " failed: " + e.what();
      }
    }
    const StepOutcome step = agree_on_step(world, status, error);
    if (step.say_own_error) std::cerr << "arbench: error: " << error << "\n" << std::flush;
    if (step.status != 0) throw std::runtime_error("--plan adaptive stopped: rank 0 could not decide the next round");
    int stop = d.plan.stop != planner::StopReason::None;
    share_decision(world, d.batch, stop);
    if (stop) {
      why = d.plan.stop;
      break;
    }
    std::vector<Case> cases;
    for (int k : d.batch) cases.push_back(grid.cases[static_cast<std::size_t>(k)]);
    // The budget is rank 0's to watch (its collector holds the seconds spent): the batch ends once it is spent.
    runner.measure(cases, round, [&] { return m.spent_s() < loop.budget_s; });
    if (runner.summary().stopped_early) break;
  }
  AdaptiveResult result;
  const bool timed_out = runner.summary().stopped_early;
  if (rank == 0) {
    // A run resumed past round 1 did not decide it: decided again from round 0's rows, as a resume decides.
    if (first_round > 1) second_stage = planner::round_one_was_second_stage(table, m, loop);
    result.stop = stop_report(grid, table, m, loop, timed_out ? round + 1 : round, why, timed_out, second_stage);
    for (RoundReporter* r : rounds) r->stop(result.stop);
  }
  result.summary = runner.finish();
  return result;
}

}  // namespace arfit::bench

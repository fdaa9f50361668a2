#include "planner/simulate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <functional>
#include <set>
#include <tuple>
#include <sstream>
#include <stdexcept>

#include "fit/fit.h"
#include "fit/parallel_for.h"
#include "fit/transfer.h"
#include "model/splitmix64.h"
#include "model/text.h"
#include "planner/loop.h"

namespace arfit::planner {
namespace {

// The plans compared; with noise also `exhaustive`, every case measured once: the floor the noise leaves.
std::vector<std::string> plans_of(const SimulationOptions& o) {
  std::vector<std::string> plans = {"adaptive", "lattice", "random", "sparse"};
  if (o.noise > 0) plans.push_back("exhaustive");
  return plans;
}

// One system's pairs as one target table: what one arbench run on that machine would decide. A curve is one
// strategy of one source (its own measurements), so a NCCL table paired with several custom ones is one curve, measured
// once; a cell is one pair at one size. Case k's answer is its measured time.
struct SimTable {
  std::string system;
  TargetTable table;
  std::vector<double> truth_us;                  // per case
  std::vector<std::vector<int>> pair_cells;      // per pair: its cells, ascending size
};

SimTable make_table(const std::string& system, const std::vector<const codegen::SelectPair*>& pairs) {
  SimTable t;
  t.system = system;
  std::vector<PlanCase> cases;
  std::map<std::tuple<std::string, double, std::int64_t, std::int64_t>, int> case_of;
  std::vector<std::vector<int>> cells;
  for (const codegen::SelectPair* p : pairs) {
    std::vector<int> mine;
    for (std::size_t i = 0; i < p->tokens.size(); ++i) {
      std::vector<int> cell;
      for (const codegen::MeasuredCurve& c : p->curves) {
        PlanCase pc;
        pc.curve = c.key;
        pc.curve.system = system + "/" + c.source;  // one curve per source: its own measurements
        pc.bytes = c.bytes[i];
        pc.tokens = p->tokens[i];
        pc.hidden = p->hidden[i];
        const auto [it, fresh] = case_of.emplace(std::make_tuple(pc.curve.id(), pc.bytes, pc.tokens, pc.hidden),
                                                 static_cast<int>(cases.size()));
        if (fresh) {
          cases.push_back(pc);
          t.truth_us.push_back(c.time_us[i]);
        }
        cell.push_back(it->second);
      }
      mine.push_back(static_cast<int>(cells.size()));
      cells.push_back(std::move(cell));
    }
    t.pair_cells.push_back(std::move(mine));
  }
  t.table = TargetTable(std::move(cases), std::move(cells));
  return t;
}

// The fixed plans' order of the size points (cells, ascending size).
std::vector<std::size_t> lattice_order(std::size_t n) {
  std::vector<std::size_t> order;
  std::vector<bool> added(n, false);
  std::size_t stride = 1;
  while (n > 1 && stride * 2 <= n - 1) stride *= 2;
  for (; stride >= 1; stride /= 2) {
    for (std::size_t i = 0; i < n; i += stride)
      if (!added[i]) added[i] = true, order.push_back(i);
    if (n && !added[n - 1]) added[n - 1] = true, order.push_back(n - 1);
  }
  return order;
}

std::vector<std::size_t> random_order(std::size_t n, std::uint64_t seed) {
  std::vector<std::pair<std::uint64_t, std::size_t>> keyed;
  for (std::size_t i = 0; i < n; ++i) keyed.emplace_back(splitmix64(seed ^ splitmix64(i)), i);
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::size_t> order;
  for (const auto& k : keyed) order.push_back(k.second);
  return order;
}

std::vector<std::size_t> sparse_order(std::size_t n) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < n; i += 4) order.push_back(i);
  if (n && order.back() != n - 1) order.push_back(n - 1);
  return order;
}

// What one plan left on one table.
struct Outcome {
  std::vector<double> regrets;  // per cell
  long measured = 0;
  long chosen = 0;  // adaptive: measured after the seed, chosen by their value (planner/loop.h SeedShare)
  double spent_s = 0, exhaustive_s = 0;
  StopReason stop = StopReason::None;
};

// What a plan sees of each case in one replicate: its published time, times exp(noise · z) with z a standard normal
// keyed by the replicate, the table and the case (the same draw for every plan of the replicate).
std::vector<double> observed_times(const SimTable& t, double noise, std::uint64_t replicate_key, std::size_t table) {
  std::vector<double> out = t.truth_us;
  if (!(noise > 0)) return out;
  const std::uint64_t table_key = splitmix64(replicate_key ^ splitmix64(table));
  for (std::size_t k = 0; k < out.size(); ++k) out[k] *= std::exp(noise * unit_normal(table_key ^ splitmix64(~k)));
  return out;
}

// One system's table measured under one budget, its answers looked up in `observed` (what a measurement returns):
// a case is measured when its cost fits in what is left. The budget is a fraction of the published times'
// exhaustive cost.
class Replay {
 public:
  Replay(const SimTable& t, const std::vector<double>& observed, const CostModel& cost, double budget_fraction)
      : t_(t), observed_(observed), cost_(cost), m_(t.table.size()) {
    for (double us : t.truth_us) exhaustive_s_ += cost.seconds(us);
    budget_s_ = budget_fraction * exhaustive_s_;
  }
  double budget_s() const { return budget_s_; }
  const Measurements& measurements() const { return m_; }
  bool measure(int k, int round) {
    const double s = cost_.seconds(observed_[static_cast<std::size_t>(k)]);
    if (m_.measured(k) || m_.spent_s() + s > budget_s_) return false;
    m_.time_us[static_cast<std::size_t>(k)] = observed_[static_cast<std::size_t>(k)];
    m_.seconds[static_cast<std::size_t>(k)] = s;
    m_.round[static_cast<std::size_t>(k)] = round;
    return true;
  }
  // The table the measurements make (planner/estimate.h's choice), scored against every published time.
  Outcome score(const EstimateOptions& est) const {
    Outcome o;
    const std::vector<CaseEstimate> e = estimate_cases(t_.table, m_, est);
    const Assessment a = assess(t_.table, e);
    for (std::size_t i = 0; i < t_.table.cells().size(); ++i) {
      double best = 0;
      for (int k : t_.table.cells()[i]) best = best > 0 ? std::min(best, t_.truth_us[static_cast<std::size_t>(k)]) : t_.truth_us[static_cast<std::size_t>(k)];
      o.regrets.push_back(t_.truth_us[static_cast<std::size_t>(a.cells[i].choice)] / best);
    }
    o.measured = static_cast<long>(m_.count());
    o.spent_s = m_.spent_s();
    o.exhaustive_s = exhaustive_s_;
    return o;
  }

 private:
  const SimTable& t_;
  const std::vector<double>& observed_;
  CostModel cost_;
  Measurements m_;
  double exhaustive_s_ = 0, budget_s_ = 0;
};

// A fixed plan over a system's table: each pair's size points in the plan's order (indices into the pair's cells),
// taken level by level across the pairs (the first point of every pair, then the second, ...), so a budget that ends
// early covers every pair alike; every candidate of a point is measured (plans thin the sizes only).
Outcome run_fixed(const SimTable& t, const std::vector<double>& observed,
                  const std::function<std::vector<std::size_t>(std::size_t pair, std::size_t n)>& order,
                  const CostModel& cost, double fraction, const EstimateOptions& est) {
  Replay b(t, observed, cost, fraction);
  std::vector<std::vector<std::size_t>> orders;
  std::size_t longest = 0;
  for (std::size_t p = 0; p < t.pair_cells.size(); ++p) {
    orders.push_back(order(p, t.pair_cells[p].size()));
    longest = std::max(longest, orders.back().size());
  }
  for (std::size_t level = 0; level < longest; ++level)
    for (std::size_t p = 0; p < orders.size(); ++p)
      if (level < orders[p].size())
        for (int k : t.table.cells()[static_cast<std::size_t>(t.pair_cells[p][orders[p][level]])]) b.measure(k, 0);
  return b.score(est);
}

Outcome run_adaptive(const SimTable& t, const std::vector<double>& observed, const LoopOptions& loop, double fraction) {
  Replay b(t, observed, loop.cost, fraction);
  LoopOptions o = loop;
  o.budget_s = b.budget_s();
  // Cases found not to fit in what was left (the simulation knows their time): no later round chooses them, as no
  // fixed plan measures them.
  std::vector<bool> too_long(t.table.size(), false);
  o.excluded = &too_long;
  StopReason stop = StopReason::None;
  bool second_stage = false;
  for (int round = 0; stop == StopReason::None; ++round) {
    const RoundPlan plan = plan_round(t.table, b.measurements(), o, round);
    stop = plan.stop;
    second_stage = second_stage || plan.seed_tops;
    for (int k : plan.batch)
      if (!b.measure(k, round)) too_long[static_cast<std::size_t>(k)] = true;
  }
  Outcome out = b.score(o.estimate);
  out.stop = stop;
  out.chosen = static_cast<long>(seed_share(t.table, b.measurements(), second_stage).chosen);
  return out;
}

// Leave one system out: per system, the other systems' fitted curves of the tables' collectives.
std::map<std::string, std::shared_ptr<const fit::TransferLibrary>> leave_one_out_priors(
    const std::vector<Sample>& samples, const std::vector<SimTable>& tables) {
  std::set<Collective> collectives;
  std::set<std::string> systems;
  for (const SimTable& t : tables) {
    systems.insert(t.system);
    for (const PlanCase& c : t.table.cases()) collectives.insert(c.curve.collective);
  }
  std::vector<Sample> kept;
  for (const Sample& s : samples)
    if (collectives.count(s.collective)) kept.push_back(s);
  fit::FitOptions fo;
  fo.joint_n = false;
  const nlohmann::json all = fit::fit_model_set(kept, fo).to_json();
  std::map<std::string, std::shared_ptr<const fit::TransferLibrary>> out;
  for (const std::string& system : systems) {
    nlohmann::json others = all;
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& g : all.at("groups"))
      if (g.at("key").at("system").get<std::string>() != system) groups.push_back(g);
    others["groups"] = std::move(groups);
    out[system] = std::make_shared<const fit::TransferLibrary>(std::vector<ModelSet>{ModelSet::from_json(others)});
  }
  return out;
}

double log_geomean(const std::vector<double>& r) {
  double sum = 0;
  for (double x : r) sum += std::log(x);
  return r.empty() ? 0 : sum / static_cast<double>(r.size());
}

// Every plan on one table in one replicate (`r`: its draw of the noise and of the random plan's order).
std::map<std::string, Outcome> run_plans(const SimTable& t, std::size_t ti, int r, const SimulationOptions& options,
                                         const CostModel& cost, const EstimateOptions& est) {
  const std::uint64_t seed = options.random_seed + static_cast<std::uint64_t>(r);
  const std::vector<double> observed = observed_times(t, options.noise, splitmix64(seed), ti);
  LoopOptions loop;
  loop.cost = cost;
  loop.estimate = est;
  loop.until_regret = options.until_regret;
  std::map<std::string, Outcome> o;
  o["adaptive"] = run_adaptive(t, observed, loop, options.budget_fraction);
  o["lattice"] = run_fixed(t, observed, [](std::size_t, std::size_t n) { return lattice_order(n); }, cost,
                           options.budget_fraction, est);
  o["random"] = run_fixed(
      t, observed, [&](std::size_t p, std::size_t n) { return random_order(n, seed ^ splitmix64(ti) ^ splitmix64(~p)); },
      cost, options.budget_fraction, est);
  o["sparse"] = run_fixed(t, observed, [](std::size_t, std::size_t n) { return sparse_order(n); }, cost,
                          options.budget_fraction, est);
  if (options.noise > 0)  // every case fits an unbounded budget, so the order does not matter
    o["exhaustive"] = run_fixed(t, observed, [](std::size_t, std::size_t n) { return lattice_order(n); },
                                cost, std::numeric_limits<double>::infinity(), est);
  return o;
}

// Whether adaptive's geometric-mean and p95 regret on one table (`adaptive`: its regret_stats) are both below
// `other`'s.
bool ahead_of(const codegen::MethodStats& adaptive, const Outcome& other) {
  const codegen::MethodStats o = codegen::regret_stats(other.regrets);
  return adaptive.geomean_regret < o.geomean_regret && adaptive.p95_regret < o.p95_regret;
}

SimulationRun simulate_overhead(const std::vector<SimTable>& tables, const SimulationOptions& options, double overhead_s,
                                const std::map<std::string, std::shared_ptr<const fit::TransferLibrary>>& priors) {
  CostModel cost;
  cost.warmup = options.warmup;
  cost.iters = options.iters;
  cost.overhead_s = overhead_s;
  // Every plan of every table and replicate, in parallel; each task writes its own slot.
  const auto replicates = static_cast<std::size_t>(options.replicates);
  std::vector<std::map<std::string, Outcome>> outcomes(tables.size() * replicates);
  fit::detail::parallel_for(outcomes.size(), options.threads, [&](std::size_t task) {
    const std::size_t ti = task / replicates;
    EstimateOptions est;
    if (options.prior) est.prior = priors.at(tables[ti].system);
    outcomes[task] = run_plans(tables[ti], ti, static_cast<int>(task % replicates), options, cost, est);
  });

  SimulationRun run;
  run.overhead_s = overhead_s;
  const std::vector<std::string> plans = plans_of(options);
  std::map<std::string, std::vector<double>> pool;
  std::map<std::string, std::map<std::string, std::vector<double>>> system_pool;
  std::map<std::string, std::map<std::string, PlanScore>> per_system;
  for (std::size_t task = 0; task < outcomes.size(); ++task) {
    const SimTable& t = tables[task / replicates];
    for (const std::string& plan : plans) {
      const Outcome& o = outcomes[task].at(plan);
      for (PlanScore* s : {&run.plans[plan], &per_system[t.system][plan]}) {
        s->cases += static_cast<long>(t.table.size());
        s->measured += o.measured;
        s->chosen += o.chosen;
        s->exhaustive_s += o.exhaustive_s;
        s->spent_s += o.spent_s;
      }
      pool[plan].insert(pool[plan].end(), o.regrets.begin(), o.regrets.end());
      auto& sp = system_pool[t.system][plan];
      sp.insert(sp.end(), o.regrets.begin(), o.regrets.end());
    }
    const Outcome& a = outcomes[task].at("adaptive");
    const codegen::MethodStats a_stats = codegen::regret_stats(a.regrets);
    for (const char* plan : {"lattice", "random", "sparse"})
      run.adaptive_ahead[t.system][plan] += ahead_of(a_stats, outcomes[task].at(plan));
    ++run.stops[to_string(a.stop)];
    if (a.stop == StopReason::Regret) {
      const double realised = std::expm1(log_geomean(a.regrets));
      ++run.promise.stopped;
      run.promise.kept += realised <= options.until_regret;
      run.promise.realised.emplace_back(t.system, realised);
    }
  }
  for (const std::string& plan : plans) run.plans[plan].regret = codegen::regret_stats(pool[plan]);
  for (auto& [system, by_plan] : per_system) {
    for (const std::string& plan : plans) by_plan[plan].regret = codegen::regret_stats(system_pool[system][plan]);
    run.systems.emplace_back(system, by_plan);
  }
  return run;
}

}  // namespace

void check_simulation_options(const SimulationOptions& o) {
  if (!(o.budget_fraction > 0 && o.budget_fraction <= 1))
    throw std::invalid_argument("--protocol adaptive:BUDGET: the budget is a percentage of the exhaustive time in (0, 100]");
  if (o.overheads_s.empty()) throw std::invalid_argument("--overhead: no duration given");
  for (double s : o.overheads_s)
    if (!(s >= 0 && std::isfinite(s))) throw std::invalid_argument("--overhead: a duration of 0 or more");
  if (!(o.until_regret >= 0 && o.until_regret < 1)) throw std::invalid_argument("--until-regret: a percentage in [0, 100)");
  if (!(o.noise >= 0 && o.noise < 1)) throw std::invalid_argument("--noise: a percentage in [0, 100)");
  if (!(o.replicates >= 1 && o.replicates <= 1000)) throw std::invalid_argument("--replicates: from 1 to 1000");
  if (o.replicates > 1 && !(o.noise > 0))
    throw std::invalid_argument("--replicates: more than one replicate needs --noise above 0 (without noise every "
                                "replicate is the same run)");
}

SimulationReport simulate_adaptive(const std::vector<Sample>& samples, const SimulationOptions& options) {
  check_simulation_options(options);
  SimulationReport report;
  report.options = options;
  report.plan_order = plans_of(options);
  const std::vector<codegen::SelectPair> pairs = codegen::select_pairs(samples, options.min_cells, &report.notes);
  std::map<std::string, std::vector<const codegen::SelectPair*>> by_system;
  for (const codegen::SelectPair& p : pairs) by_system[p.system].push_back(&p);
  std::vector<SimTable> tables;
  for (const auto& [system, mine] : by_system) tables.push_back(make_table(system, mine));
  if (tables.empty())
    throw std::runtime_error("adaptive: no case with two or more strategies measured over at least " +
                             std::to_string(options.min_cells) + " shared cells (NCCL among them)");
  report.tables = static_cast<int>(tables.size());
  report.pairs = static_cast<int>(pairs.size());
  for (const SimTable& t : tables) report.cells += static_cast<long>(t.table.cells().size());
  std::map<std::string, std::shared_ptr<const fit::TransferLibrary>> priors;
  if (options.prior) priors = leave_one_out_priors(samples, tables);
  for (double overhead : options.overheads_s) report.runs.push_back(simulate_overhead(tables, options, overhead, priors));
  return report;
}

namespace {

nlohmann::json score_json(const PlanScore& s) {
  return {{"geomean_regret", s.regret.geomean_regret}, {"p95_regret", s.regret.p95_regret},
          {"max_regret", s.regret.max_regret},         {"exact", s.regret.exact},
          {"cells", s.regret.cells},                   {"cases", s.cases},
          {"measured", s.measured},                    {"case_fraction", s.case_fraction()},
          {"time_fraction", s.time_fraction()}};
}

}  // namespace

namespace {

// The header's account of the noise: nothing without it.
std::string noise_text(const SimulationOptions& o) {
  return o.noise > 0 ? ", measurement noise " + format_number(100.0 * o.noise, "%g") + " % (σ of ln t)" : "";
}

std::string runs_text(int replicates) {
  return replicates == 1 ? "one run each" : std::to_string(replicates) + " replicates each, cells pooled";
}

}  // namespace

nlohmann::json simulation_report_json(const SimulationReport& r) {
  using nlohmann::json;
  json j;
  j["protocol"] = "adaptive";
  j["budget_fraction"] = r.options.budget_fraction;
  j["prior"] = r.options.prior;
  j["until_regret"] = r.options.until_regret;
  j["noise"] = r.options.noise;
  j["replicates"] = r.options.replicates;
  j["tables"] = r.tables;
  j["cells"] = r.cells;
  j["runs"] = json::array();
  for (const SimulationRun& run : r.runs) {
    json jr;
    jr["overhead_s"] = run.overhead_s;
    for (const std::string& plan : r.plan_order) jr["plans"][plan] = score_json(run.plans.at(plan));
    jr["plans"]["adaptive"]["chosen_by_value"] = run.plans.at("adaptive").chosen;
    jr["systems"] = json::object();
    for (const auto& [system, plans] : run.systems) {
      for (const std::string& plan : r.plan_order) jr["systems"][system][plan] = score_json(plans.at(plan));
      jr["systems"][system]["adaptive"]["chosen_by_value"] = plans.at("adaptive").chosen;
    }
    jr["adaptive_ahead"] = run.adaptive_ahead;
    jr["stops"] = run.stops;
    if (r.options.until_regret > 0)
      jr["promise"] = {{"stopped", run.promise.stopped}, {"kept", run.promise.kept},
                       {"realised_geomean_regret", run.promise.realised}};
    j["runs"].push_back(jr);
  }
  j["notes"] = r.notes;
  return j;
}

std::string format_simulation_report(const SimulationReport& r) {
  std::ostringstream s;
  auto pct = [](double f) { return format_number(100.0 * f, "%.1f"); };
  for (const SimulationRun& run : r.runs) {
    s << "adaptive protocol: budget " << format_number(100.0 * r.options.budget_fraction, "%g")
      << " % of the exhaustive measuring time, per-case overhead " << format_duration(run.overhead_s)
      << (r.options.prior ? ", other systems' curves as priors" : "") << noise_text(r.options) << ": " << r.tables
      << " systems (" << runs_text(r.options.replicates) << "), " << r.pairs << " custom-vs-NCCL pairs, " << r.cells
      << " cells\n";
    std::vector<std::vector<std::string>> rows = {{"plan", "geomean", "p95", "max", "exact%", "cases%", "time%"}};
    for (const std::string& plan : r.plan_order) {
      const PlanScore& p = run.plans.at(plan);
      rows.push_back({plan, format_number(p.regret.geomean_regret, "%.4f"), format_number(p.regret.p95_regret, "%.3f"),
                      format_number(p.regret.max_regret, "%.3f"), format_number(p.regret.exact, "%.1f"),
                      pct(p.case_fraction()), pct(p.time_fraction())});
    }
    s << aligned_columns(rows, {false, true, true, true, true, true, true});
    const PlanScore& adaptive = run.plans.at("adaptive");
    s << "adaptive chose " << adaptive.chosen << " of its " << adaptive.measured << " cases by their value ("
      << pct(adaptive.measured ? double(adaptive.chosen) / double(adaptive.measured) : 0)
      << " %); the seed took the rest\n";
    s << "\nper system (geomean / p95 regret; adaptive's cases% / time%, and its cases chosen by value of those "
         "measured; the runs in which adaptive's geomean and p95 were both below lattice's / random's):\n";
    std::vector<std::vector<std::string>> sys = {{"system", "cells"}};
    for (const std::string& plan : r.plan_order) sys[0].push_back(plan);
    sys[0].push_back("adaptive cases% / time%");
    sys[0].push_back("chosen");
    sys[0].push_back("ahead of lattice / random");
    for (const auto& [system, plans] : run.systems) {
      std::vector<std::string> row = {system, std::to_string(plans.at("adaptive").regret.cells)};
      for (const std::string& plan : r.plan_order)
        row.push_back(format_number(plans.at(plan).regret.geomean_regret, "%.4f") + " / " +
                      format_number(plans.at(plan).regret.p95_regret, "%.3f"));
      row.push_back(pct(plans.at("adaptive").case_fraction()) + " / " + pct(plans.at("adaptive").time_fraction()));
      row.push_back(std::to_string(plans.at("adaptive").chosen) + " of " + std::to_string(plans.at("adaptive").measured));
      const std::map<std::string, int>& ahead = run.adaptive_ahead.at(system);
      const std::string of = "/" + std::to_string(r.options.replicates);
      row.push_back(std::to_string(ahead.at("lattice")) + of + " / " + std::to_string(ahead.at("random")) + of);
      sys.push_back(row);
    }
    std::vector<bool> right(sys[0].size(), true);
    right[0] = false;
    s << aligned_columns(sys, right);
    s << "adaptive stops:";
    for (const auto& [why, n] : run.stops) s << " " << why << " " << n;
    s << "\n";
    if (r.options.until_regret > 0) {
      const PromiseCheck& p = run.promise;
      s << "--until-regret " << format_number(100.0 * r.options.until_regret, "%g") << " %: " << p.stopped
        << " systems stopped on it; realised geometric-mean regret within it on " << p.kept << " ("
        << pct(p.stopped ? double(p.kept) / p.stopped : 0) << " %):";
      for (const auto& [system, realised] : p.realised) s << " " << system << " " << format_number(100.0 * realised, "%.2f") << " %";
      s << "\n";
    }
    s << "\n";
  }
  if (!r.notes.empty()) {
    s << "notes:\n";
    for (const auto& n : r.notes) s << "  " << n << "\n";
  }
  return s.str();
}

}  // namespace arfit::planner

#include "codegen/table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

#include "model/text.h"

namespace arfit::codegen {

std::optional<int> trtllm_strategy_number(const std::string& strategy) {
  const std::string s = upper(strategy);
  if (s == "NCCL") return 0;
  if (s == "ONESHOT") return 4;
  if (s == "TWOSHOT") return 5;
  if (s == "LOWPRECISION") return 6;  // numbered, but never run from the table (rules_trtllm.h, trtllm_table_value_runs)
  if (s == "NCCL_SYMMETRIC") return 8;
  return std::nullopt;
}

double log_sigma(const Prediction& p) {
  if (!(p.lo_us > 0) || !(p.hi_us > 0) || !(p.hi_us > p.lo_us)) return 0.0;
  return 0.5 * std::log(p.hi_us / p.lo_us) / 1.6448536269514722;
}

double expected_shortfall(double mean, double sigma) {
  // E[max(0, -d)], d ~ N(mean, sigma^2) = sigma * phi(mean/sigma) - mean * Phi(-mean/sigma).
  if (!(sigma > 0)) return std::max(0.0, -mean);
  const double z = mean / sigma;
  const double phi = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
  const double Phi_neg = 0.5 * std::erfc(z / std::sqrt(2.0));
  return std::max(0.0, sigma * phi - mean * Phi_neg);
}

int StrategyTable::uncertain_cells() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const Cell& c) { return c.uncertain; }));
}

int StrategyTable::fallback_cells() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const Cell& c) { return c.fallback; }));
}

int StrategyTable::transferred_cells() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const Cell& c) { return c.transferred; }));
}

std::string StrategyTable::summary() const {
  const int transferred = transferred_cells();
  return std::to_string(cells.size()) + " cells, " + std::to_string(uncertain_cells()) +
         " uncertain (best and runner-up 90 % intervals overlap), " + std::to_string(fallback_cells()) +
         " without a model (fallback " + options.fallback + ")" +
         (transferred > 0 ? ", " + std::to_string(transferred) + " " + kTransferredCellsNote : "");
}

std::pair<std::size_t, std::size_t> fastest_two(const std::vector<CandidateTime>& candidates) {
  // Strict '<' keeps the earlier candidate on an exact tie (deterministic).
  const std::size_t none = candidates.size();
  std::size_t best = none, second = none;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (best == none || candidates[i].prediction.time_us < candidates[best].prediction.time_us) best = i;
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (i != best && (second == none || candidates[i].prediction.time_us < candidates[second].prediction.time_us)) second = i;
  return {best, second};
}

namespace {

// Best and runner-up of a cell's candidates (fastest_two), and how sure the choice is.
void choose(Cell& c) {
  const auto [best, second] = fastest_two(c.candidates);
  const Prediction& pb = c.candidates[best].prediction;
  c.choice = c.candidates[best].strategy;
  c.extrapolated = pb.extrapolated;
  c.transferred = pb.transferred;
  if (second == c.candidates.size()) return;
  const Prediction& pr = c.candidates[second].prediction;
  c.runner_up = c.candidates[second].strategy;
  c.margin = pr.time_us / pb.time_us - 1.0;
  const double sb = log_sigma(pb), sr = log_sigma(pr);
  c.margin_sigma = std::sqrt(sb * sb + sr * sr);
  // Overlapping 90 % intervals: the measurements do not settle which one is faster.
  const double b_hi = pb.hi_us > 0 ? pb.hi_us : pb.time_us;
  const double r_lo = pr.lo_us > 0 ? pr.lo_us : pr.time_us;
  c.uncertain = b_hi >= r_lo;
  c.expected_regret = expected_shortfall(std::log(pr.time_us / pb.time_us), c.margin_sigma);
}

bool usable(const std::optional<Prediction>& p) { return p && std::isfinite(p->time_us) && p->time_us > 0; }

// A predicted candidate joins the choice, or Cell::excluded when the consumer cannot run it in this cell.
void add_candidate(Cell& c, const std::string& name, const Prediction& p, const TableOptions& options) {
  const std::string why = options.precondition ? options.precondition(c, name) : std::string();
  if (why.empty()) c.candidates.push_back({name, p});
  else c.excluded.push_back({name, p, why});
}

void choose_or_fall_back(Cell& c, const std::string& fallback) {
  if (c.candidates.empty()) {
    c.choice = fallback;
    c.fallback = true;
  } else {
    choose(c);
  }
}

}  // namespace

StrategyTable build_table(const Grid& grid, const CandidateLister& candidates, const Predictor& predict,
                          const TableOptions& options) {
  StrategyTable table;
  table.grid = grid;
  table.options = options;
  table.cells.resize(grid.size());
  const int esize = dtype_size(options.dtype);
  if (esize <= 0) throw std::invalid_argument("unknown dtype '" + options.dtype + "'");
  const Predictor any_dtype = with_same_size_dtypes(predict);
  std::set<std::string> seen;
  PredictQuery q;
  q.system = options.system;
  q.collective = Collective::AllReduce;
  q.dtype = options.dtype;
  q.sm = options.sm;
  q.nnodes = 1;
  for (std::size_t ti = 0; ti < grid.tps.size(); ++ti) {
    for (std::size_t fi = 0; fi < grid.fusions.size(); ++fi) {
      const std::vector<std::string> names = candidates(grid.tps[ti], grid.fusions[fi]);
      q.nranks = grid.tps[ti];
      q.fusion = grid.fusions[fi];
      for (std::size_t hi = 0; hi < grid.hiddens.size(); ++hi) {
        for (std::size_t ki = 0; ki < grid.tokens.size(); ++ki) {
          Cell& c = table.cells[grid.index(ti, fi, hi, ki)];
          c.tp = grid.tps[ti];
          c.fusion = grid.fusions[fi];
          c.hidden = grid.hiddens[hi];
          c.tokens = grid.tokens[ki];
          c.bytes = static_cast<double>(c.tokens) * static_cast<double>(c.hidden) * esize;
          q.tokens = c.tokens;
          q.hidden = c.hidden;
          q.bytes = c.bytes;
          for (const auto& name : names) {
            q.strategy = name;
            auto p = any_dtype(q);
            if (!usable(p)) continue;
            add_candidate(c, name, *p, options);
            seen.insert(name);
          }
          choose_or_fall_back(c, options.fallback);
        }
      }
    }
  }
  table.strategies.assign(seen.begin(), seen.end());
  return table;
}

CandidateLister model_set_candidates(const ModelSet& models, const std::string& system) {
  return [&models, system](int tp, FusionOp fusion) {
    return models.strategies(system, Collective::AllReduce, fusion, tp);
  };
}

Predictor model_set_predictor(const ModelSet& models) {
  return [&models](const PredictQuery& q) { return models.predict(q); };
}

std::vector<std::string> system_strategies(const ModelSet& models, const std::string& system) {
  return models.strategies(system, Collective::AllReduce);
}

Predictor with_same_size_dtypes(Predictor base) {
  return [base = std::move(base)](const PredictQuery& q) { return predict_same_element_size(base, q); };
}

Predictor mapped_predictor(Predictor base, StrategySources sources) {
  return [base = std::move(base), sources = std::move(sources)](const PredictQuery& q) -> std::optional<Prediction> {
    const auto it = sources.find(q.strategy);
    if (it == sources.end()) return base(q);
    std::optional<Prediction> best;
    for (const auto& s : it->second) {
      PredictQuery m = q;
      m.strategy = s;
      auto p = base(m);
      if (usable(p) && (!best || p->time_us < best->time_us)) best = p;
    }
    return best;
  };
}

StrategyTable remap_table(const StrategyTable& t, const StrategySources& sources, const std::string& fallback) {
  StrategyTable out;
  out.grid = t.grid;
  out.options = t.options;
  out.options.fallback = fallback;
  out.cells.reserve(t.cells.size());
  std::set<std::string> seen;
  for (const Cell& in : t.cells) {
    Cell c;
    c.tp = in.tp;
    c.fusion = in.fusion;
    c.hidden = in.hidden;
    c.tokens = in.tokens;
    c.bytes = in.bytes;
    // A name takes the fastest prediction of its strategies, whether or not the consumer could run them under
    // their own names (a TWOSHOT --map'ped to ONESHOT runs where TWOSHOT would not); then the name's own
    // precondition decides.
    for (const auto& [name, strategies] : sources) {
      const Prediction* best = nullptr;
      for (const auto& s : strategies) {
        for (const auto& cand : in.candidates)
          if (cand.strategy == s && (!best || cand.prediction.time_us < best->time_us)) best = &cand.prediction;
        for (const auto& cand : in.excluded)
          if (cand.strategy == s && (!best || cand.prediction.time_us < best->time_us)) best = &cand.prediction;
      }
      if (!best) continue;
      add_candidate(c, name, *best, out.options);
      seen.insert(name);
    }
    choose_or_fall_back(c, fallback);
    out.cells.push_back(std::move(c));
  }
  out.strategies.assign(seen.begin(), seen.end());
  return out;
}

std::map<std::string, std::string> parse_map_options(const std::vector<std::string>& entries,
                                                     const std::vector<std::string>& model_strategies,
                                                     const std::vector<std::string>& targets) {
  auto list = [](const std::vector<std::string>& v) { return v.empty() ? std::string("none") : join(v, ", "); };
  std::map<std::string, std::string> out;
  for (const auto& e : entries) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size())
      throw std::invalid_argument("--map: '" + e + "' is not MODEL_STRATEGY=TARGET");
    const std::string from = e.substr(0, eq), to = e.substr(eq + 1);
    if (std::find(model_strategies.begin(), model_strategies.end(), from) == model_strategies.end())
      throw std::invalid_argument("--map: '" + from + "' is not an all-reduce strategy of the models (strategies: " +
                                  list(model_strategies) + ")");
    const auto t = std::find_if(targets.begin(), targets.end(), [&](const std::string& x) { return upper(x) == upper(to); });
    if (t == targets.end())
      throw std::invalid_argument("--map: '" + to + "' is not a target of this format (targets: " + list(targets) + ")");
    if (!out.emplace(from, *t).second) throw std::invalid_argument("--map: '" + from + "' is mapped twice");
  }
  return out;
}

}  // namespace arfit::codegen

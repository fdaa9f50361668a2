#include "codegen/select_eval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "codegen/table.h"
#include "fit/fit.h"
#include "model/interp.h"
#include "model/metrics.h"
#include "model/text.h"

namespace arfit::codegen {

namespace {

// Natural order: digit runs compare as numbers ("nccl_2.9" < "nccl_2.27"), the rest as text.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      std::string na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size()));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size()));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// The vendor library's collective, the baseline every custom strategy is compared with: NCCL on GPUs, and
// MPI (MPI_Allreduce) in arbench's host backend, which plays NCCL's role in the CPU-only pipeline.
bool is_nccl(const std::string& strategy) {
  const std::string s = lower(strategy);
  return s == "nccl" || s == "mpi";
}

struct CellKey {
  std::int64_t tokens = 0, hidden = 0;
  double bytes = 0;
  bool operator<(const CellKey& o) const { return std::tie(bytes, tokens, hidden) < std::tie(o.bytes, o.tokens, o.hidden); }
};


struct CandCurve {
  std::string strategy, source, dtype;
  int nnodes = 1;
  std::map<CellKey, std::vector<double>> raw;
  std::map<CellKey, double> time;  // median per cell
  std::string label() const { return strategy + "@" + source; }
};

// (system, collective, fusion, nranks, element size)
using Bucket = std::tuple<std::string, Collective, FusionOp, int, int>;

struct Plan {
  enum Kind { Auto, Sparse, Lattice } kind = Auto;
  int k = 4;
};

// K >= 2 where arbench's --plan takes lattice:1 (its full grid): lattice:1 here would measure every cell and
// leave none to choose and score.
Plan parse_plan(const std::string& p) {
  if (p == "auto") return {Plan::Auto, 0};
  if (p == "sparse4") return {Plan::Sparse, 4};
  if (p.rfind("lattice:", 0) == 0) {
    std::string why;
    const std::optional<std::uint64_t> k = parse_whole_number(p.substr(8), 2, std::numeric_limits<int>::max(), &why);
    if (!k)
      throw std::invalid_argument("--plan lattice:K needs K, every K-th value of each axis measured, from 2 (lattice:1 "
                                  "measures every cell and leaves none to choose): " + why);
    return {Plan::Lattice, static_cast<int>(*k)};
  }
  throw std::invalid_argument("--plan: '" + p + "' is not one of auto, sparse4, lattice:K (K >= 2)");
}

// Every k-th index of n, plus the last.
std::vector<bool> every_kth(std::size_t n, int k) {
  std::vector<bool> m(n, false);
  for (std::size_t i = 0; i < n; i += static_cast<std::size_t>(k)) m[i] = true;
  if (n) m[n - 1] = true;
  return m;
}

MeasuredCurve measured_curve(const CandCurve& c, const std::vector<CellKey>& cells, const std::vector<bool>& measured) {
  std::map<double, std::vector<double>> by_bytes;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (measured[i]) by_bytes[cells[i].bytes].push_back(c.time.at(cells[i]));
  MeasuredCurve m;
  for (auto& [b, v] : by_bytes) {
    m.bytes.push_back(b);
    m.time_us.push_back(size_median(v));
  }
  return m;
}

}  // namespace

std::vector<double> loglog_interpolate(const std::vector<double>& bytes, const std::vector<double>& time_us,
                                       const std::vector<double>& query) {
  std::vector<double> out;
  out.reserve(query.size());
  for (double q : query) out.push_back(loglog_at(bytes, time_us, q));
  return out;
}

CurvePredictor fitted_model_predictor() {
  return [](const MeasuredCurve& m, const std::vector<double>& query) {
    fit::Curve curve;
    curve.key = m.key;
    curve.bytes = m.bytes;
    curve.time_us = m.time_us;
    if (!m.source.empty()) curve.sources = {m.source};
    std::vector<Prediction> out;
    out.reserve(query.size());
    const fit::GroupFit g = fit::fit_curve(curve);
    if (!g.ok) {
      for (double t : loglog_interpolate(m.bytes, m.time_us, query)) {
        Prediction p;
        p.time_us = p.lo_us = p.hi_us = t;
        p.how = "loglog (fit failed: " + g.problem + ")";
        out.push_back(p);
      }
      return out;
    }
    for (double q : query) out.push_back(fit::predict_group(g.model, q));
    return out;
  };
}

MethodStats regret_stats(std::vector<double> r) {
  MethodStats s;
  s.cells = static_cast<long>(r.size());
  if (r.empty()) return s;
  double sum = 0;
  long exact = 0;
  for (double v : r) {
    sum += std::log(v);
    if (v <= 1.0 + 1e-7) ++exact;
  }
  s.geomean_regret = std::exp(sum / r.size());
  s.p95_regret = percentile(r, 95);
  s.max_regret = *std::max_element(r.begin(), r.end());
  s.exact = 100.0 * exact / r.size();
  return s;
}

namespace {

// The decision rule of `auto` for one case.
//  * Measured cells take their measured winner: that is what was measured, and the table a user builds from
//    the sweep holds it.
//  * Unmeasured cells inside the measured size range: the measured advantage of each candidate over the first
//    one, ln(t_j / t_0), is interpolated against ln(bytes) with a monotone (PCHIP) cubic through the measured
//    cells, and the candidate with the lowest interpolated ratio wins. Why the ratio and not each curve on its
//    own: near a crossover both curves bend, and what decides is where their difference changes sign; a
//    shape-preserving interpolant of that difference places the crossover without the overshoot of a free
//    spline and without the bias of interpolating each curve linearly (the loglog baseline), and never
//    invents a crossover between two measured cells that agree with a monotone trend.
//  * Outside the measured range (extrapolation): the fitted models' argmin.
std::vector<int> choose_auto(const std::vector<CellKey>& cells, const std::vector<bool>& measured,
                             const std::vector<std::vector<double>>& times,  // [cand][cell], read at measured cells only
                             const std::vector<MeasuredCurve>& mc,          // measured subset per candidate
                             const std::vector<std::vector<Prediction>>& pred) {
  const std::size_t nc = pred.size(), n = cells.size();
  std::vector<HermiteSpline> ratio(nc);
  std::vector<double> x;
  for (double b : mc[0].bytes) x.push_back(std::log(b));
  for (std::size_t j = 1; j < nc; ++j) {
    std::vector<double> y;
    for (std::size_t i = 0; i < x.size(); ++i) y.push_back(std::log(mc[j].time_us[i] / mc[0].time_us[i]));
    ratio[j] = HermiteSpline(x, y, SplineKind::Pchip);
  }
  std::vector<int> choice(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const double lx = std::log(cells[i].bytes);
    const bool inside = !x.empty() && lx >= x.front() && lx <= x.back();
    auto value = [&](std::size_t k) {
      if (measured[i]) return std::log(times[k][i]);
      if (inside) return k == 0 ? 0.0 : ratio[k](lx);
      return std::log(pred[k][i].time_us);
    };
    int best = 0;
    double vb = value(0);
    for (std::size_t k = 1; k < nc; ++k) {
      const double vk = value(k);
      if (vk < vb) {
        vb = vk;
        best = static_cast<int>(k);
      }
    }
    choice[i] = best;
  }
  return choice;
}

// The fitted models alone: the argmin of the predictions everywhere (reported as `model-argmin`).
std::vector<int> choose_model_argmin(const std::vector<std::vector<Prediction>>& pred) {
  const std::size_t nc = pred.size(), n = pred.empty() ? 0 : pred[0].size();
  std::vector<int> choice(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 1; k < nc; ++k)
      if (pred[k][i].time_us < pred[choice[i]][i].time_us) choice[i] = static_cast<int>(k);
  return choice;
}

// ---------------------------------------------------------------- cases from samples

using Buckets = std::map<Bucket, std::map<std::pair<std::string, std::string>, CandCurve>>;

// Curves per (bucket, source, strategy); each cell's time is the median of its samples.
Buckets collect_curves(const std::vector<Sample>& samples) {
  Buckets buckets;
  for (const auto& s : samples) {
    if (!s.ok() || !(s.time_us > 0) || !std::isfinite(s.time_us) || s.bytes <= 0) continue;
    if (lower(s.strategy).find("eager") != std::string::npos) continue;
    const int esize = dtype_size(s.dtype);
    Bucket b{sample_system(s), s.collective, s.fusion, s.nranks, esize};
    CandCurve& c = buckets[b][{s.source, s.strategy}];
    c.strategy = s.strategy;
    c.source = s.source;
    c.dtype = s.dtype;
    c.nnodes = s.nnodes;
    CellKey k;
    if (s.tokens > 0 && s.hidden > 0) {
      k.tokens = s.tokens;
      k.hidden = s.hidden;
    }
    k.bytes = static_cast<double>(s.bytes);
    c.raw[k].push_back(s.time_us);
  }
  for (auto& [b, curves] : buckets)
    for (auto& [id, c] : curves)
      for (auto& [k, v] : c.raw) c.time[k] = size_median(v);
  return buckets;
}

struct Case {
  Bucket bucket;
  std::vector<const CandCurve*> cands;
};

// The cases of each bucket (select_eval.h): a source with custom strategies and NCCL is one case; a source with
// custom strategies only gives one case per strategy against the bucket's newest NCCL table; without one it is
// skipped with a note.
std::vector<Case> form_cases(const Buckets& buckets, std::vector<std::string>& notes) {
  std::vector<Case> cases;
  for (auto& [b, curves] : buckets) {
    std::map<std::string, std::vector<const CandCurve*>> by_source;
    for (auto& [id, c] : curves) by_source[id.first].push_back(&c);
    // The NCCL table of this bucket for sources that measured only custom strategies: the newest NCCL.
    const CandCurve* nccl = nullptr;
    for (auto& [src, cs] : by_source) {
      const bool only_nccl = std::all_of(cs.begin(), cs.end(), [](const CandCurve* c) { return is_nccl(c->strategy); });
      if (!only_nccl) continue;
      for (const CandCurve* c : cs)
        if (!nccl || natural_less(nccl->source, c->source)) nccl = c;
    }
    for (auto& [src, cs] : by_source) {
      const bool has_custom = std::any_of(cs.begin(), cs.end(), [](const CandCurve* c) { return !is_nccl(c->strategy); });
      if (!has_custom) continue;
      const bool has_nccl = std::any_of(cs.begin(), cs.end(), [](const CandCurve* c) { return is_nccl(c->strategy); });
      if (cs.size() >= 2 && has_nccl) {
        cases.push_back({b, cs});
      } else if (has_nccl) {
        continue;
      } else if (nccl) {
        // One case per custom strategy of this source against the system's NCCL.
        for (const CandCurve* c : cs) cases.push_back({b, {nccl, c}});
      } else {
        notes.push_back(std::get<0>(b) + " n" + std::to_string(std::get<3>(b)) + " " + src +
                        ": no NCCL measurement of the same system and element size to compare with; skipped");
      }
    }
  }
  return cases;
}

// ---------------------------------------------------------------- one case laid out for the methods

// The candidates with NCCL first, so that always-nccl and the threshold rule find it at index 0.
std::vector<const CandCurve*> nccl_first(std::vector<const CandCurve*> cands) {
  std::stable_partition(cands.begin(), cands.end(), [](const CandCurve* c) { return is_nccl(c->strategy); });
  return cands;
}

struct CaseLayout {
  std::vector<const CandCurve*> cands;  // nccl_first
  std::vector<CellKey> cells;           // the cells every candidate measured
  bool grid2d = false;                  // token x hidden cells (else byte sizes)
  std::vector<bool> measured;           // the plan's subset
  std::vector<std::vector<double>> t;   // measured times [cand][cell], all cells: for scoring
  std::vector<double> best;             // the measured best per cell
  std::vector<double> bytes;            // per cell
  std::vector<MeasuredCurve> mc;        // each candidate's measured subset: what the methods fit or interpolate

  // The winner among the measured times of cell i (the first candidate on ties).
  int measured_winner(std::size_t i) const {
    int w = 0;
    for (std::size_t j = 1; j < t.size(); ++j)
      if (t[j][i] < t[w][i]) w = static_cast<int>(j);
    return w;
  }
};

std::vector<CellKey> shared_cells(const std::vector<const CandCurve*>& cands) {
  std::vector<CellKey> cells;
  for (const auto& [k, t] : cands[0]->time) {
    bool everywhere = true;
    for (std::size_t j = 1; j < cands.size(); ++j) everywhere = everywhere && cands[j]->time.count(k);
    if (everywhere) cells.push_back(k);
  }
  return cells;
}

// The cells the plan measures: every k-th value along tokens and hidden (lattice, token x hidden grids), else
// every k-th size.
std::vector<bool> plan_cells(const std::vector<CellKey>& cells, bool grid2d, Plan p) {
  if (p.kind == Plan::Auto) p = grid2d ? Plan{Plan::Lattice, 2} : Plan{Plan::Sparse, 4};
  if (!(p.kind == Plan::Lattice && grid2d)) return every_kth(cells.size(), p.k);
  std::set<std::int64_t> ts, hs;
  for (const auto& k : cells) {
    ts.insert(k.tokens);
    hs.insert(k.hidden);
  }
  std::vector<std::int64_t> tv(ts.begin(), ts.end()), hv(hs.begin(), hs.end());
  const auto tm = every_kth(tv.size(), p.k), hm = every_kth(hv.size(), p.k);
  std::set<std::int64_t> tsel, hsel;
  for (std::size_t i = 0; i < tv.size(); ++i)
    if (tm[i]) tsel.insert(tv[i]);
  for (std::size_t i = 0; i < hv.size(); ++i)
    if (hm[i]) hsel.insert(hv[i]);
  std::vector<bool> measured;
  for (const auto& k : cells) measured.push_back(tsel.count(k.tokens) && hsel.count(k.hidden));
  return measured;
}

CaseLayout lay_out(const Case& cs, std::vector<CellKey> cells, const Plan& plan) {
  CaseLayout d;
  d.cands = nccl_first(cs.cands);
  d.cells = std::move(cells);
  const std::size_t nc = d.cands.size(), n = d.cells.size();
  d.grid2d = std::all_of(d.cells.begin(), d.cells.end(), [](const CellKey& k) { return k.tokens > 0; });
  d.measured = plan_cells(d.cells, d.grid2d, plan);
  d.t.assign(nc, std::vector<double>(n));
  for (std::size_t j = 0; j < nc; ++j)
    for (std::size_t i = 0; i < n; ++i) d.t[j][i] = d.cands[j]->time.at(d.cells[i]);
  d.best.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    d.best[i] = d.t[0][i];
    for (std::size_t j = 1; j < nc; ++j) d.best[i] = std::min(d.best[i], d.t[j][i]);
  }
  d.bytes.resize(n);
  for (std::size_t i = 0; i < n; ++i) d.bytes[i] = d.cells[i].bytes;
  d.mc.resize(nc);
  for (std::size_t j = 0; j < nc; ++j) {
    MeasuredCurve& m = d.mc[j];
    m = measured_curve(*d.cands[j], d.cells, d.measured);
    m.key.system = std::get<0>(cs.bucket);
    m.key.collective = std::get<1>(cs.bucket);
    m.key.fusion = std::get<2>(cs.bucket);
    m.key.nranks = std::get<3>(cs.bucket);
    m.key.strategy = d.cands[j]->strategy;
    m.key.dtype = canonical_dtype(d.cands[j]->dtype);
    m.key.nnodes = d.cands[j]->nnodes;
    m.source = d.cands[j]->source;
  }
  return d;
}

// ---------------------------------------------------------------- the baselines' choices

// The measured winner of the nearest measured cell (log distance in bytes, or in tokens and hidden on a grid;
// ties: the first measured cell in size order).
std::vector<int> choose_nearest(const CaseLayout& d) {
  const std::size_t n = d.cells.size();
  std::vector<int> c(n);
  for (std::size_t i = 0; i < n; ++i) {
    double bestd = std::numeric_limits<double>::infinity();
    std::size_t at = i;
    for (std::size_t m = 0; m < n; ++m) {
      if (!d.measured[m]) continue;
      double dist;
      if (d.grid2d) {
        const double dt = std::log2(double(d.cells[m].tokens)) - std::log2(double(d.cells[i].tokens));
        const double dh = std::log2(double(d.cells[m].hidden)) - std::log2(double(d.cells[i].hidden));
        dist = dt * dt + dh * dh;
      } else {
        dist = std::fabs(std::log(d.cells[m].bytes) - std::log(d.cells[i].bytes));
      }
      if (dist < bestd) {
        bestd = dist;
        at = m;
      }
    }
    c[i] = d.measured_winner(at);
  }
  return c;
}

// The custom strategy that wins most measured cells below a byte threshold, NCCL from the threshold up; the
// threshold (a measured size, or twice the largest) minimises the mean log regret on the measured cells.
std::vector<int> choose_threshold(const CaseLayout& d) {
  const std::size_t nc = d.cands.size(), n = d.cells.size();
  std::vector<int> wins(nc, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (d.measured[i]) ++wins[d.measured_winner(i)];
  int custom = nc > 1 ? 1 : 0;
  for (std::size_t j = 2; j < nc; ++j)
    if (wins[j] > wins[custom]) custom = static_cast<int>(j);
  std::vector<double> thresholds;
  for (std::size_t i = 0; i < n; ++i)
    if (d.measured[i]) thresholds.push_back(d.cells[i].bytes);
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  thresholds.push_back(thresholds.back() * 2);
  double best_thr = thresholds[0], best_v = std::numeric_limits<double>::infinity();
  for (double thr : thresholds) {
    double sum = 0;
    int cnt = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (d.measured[i]) {
        sum += std::log(d.t[d.cells[i].bytes < thr ? custom : 0][i] / d.best[i]);
        ++cnt;
      }
    const double v = sum / cnt;
    if (v < best_v) {
      best_v = v;
      best_thr = thr;
    }
  }
  std::vector<int> c(n);
  for (std::size_t i = 0; i < n; ++i) c[i] = d.cells[i].bytes < best_thr ? custom : 0;
  return c;
}

// Each candidate's measured subset interpolated log-log, then the argmin.
std::vector<int> choose_loglog(const CaseLayout& d) {
  const std::size_t nc = d.cands.size(), n = d.cells.size();
  std::vector<std::vector<double>> pr(nc);
  for (std::size_t j = 0; j < nc; ++j) pr[j] = loglog_interpolate(d.mc[j].bytes, d.mc[j].time_us, d.bytes);
  std::vector<int> c(n);
  for (std::size_t i = 0; i < n; ++i) {
    int b = 0;
    for (std::size_t j = 1; j < nc; ++j)
      if (pr[j][i] < pr[b][i]) b = static_cast<int>(j);
    c[i] = b;
  }
  return c;
}

// Every method's choice per cell (an index into d.cands). `auto` and `model-argmin` predict every cell from
// each candidate's measured subset with `model`.
std::map<std::string, std::vector<int>> choose_all(const CaseLayout& d, const CurvePredictor& model) {
  std::map<std::string, std::vector<int>> choice;
  std::vector<std::vector<Prediction>> pred(d.cands.size());
  for (std::size_t j = 0; j < d.cands.size(); ++j) pred[j] = model(d.mc[j], d.bytes);
  choice["auto"] = choose_auto(d.cells, d.measured, d.t, d.mc, pred);
  choice["model-argmin"] = choose_model_argmin(pred);
  choice["always-nccl"] = std::vector<int>(d.cells.size(), 0);
  choice["nearest"] = choose_nearest(d);
  choice["threshold"] = choose_threshold(d);
  choice["loglog"] = choose_loglog(d);
  return choice;
}

// ---------------------------------------------------------------- scoring and the report

// Regret per method and cell, t(choice) / t(measured best), over all of the case's cells.
using Regrets = std::map<std::string, std::vector<double>>;

Regrets score(const CaseLayout& d, const std::map<std::string, std::vector<int>>& choice,
              const std::vector<std::string>& methods) {
  Regrets out;
  for (const auto& name : methods) {
    const std::vector<int>& c = choice.at(name);
    std::vector<double> r(d.cells.size());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = d.t[c[i]][i] / d.best[i];
    out[name] = std::move(r);
  }
  return out;
}

void append(Regrets& to, const Regrets& from) {
  for (const auto& [name, r] : from) to[name].insert(to[name].end(), r.begin(), r.end());
}

// One note per distinct message (a source is seen once per element size and GPU count).
void drop_repeated_notes(std::vector<std::string>& notes) {
  std::set<std::string> seen;
  std::vector<std::string> unique;
  for (auto& n : notes)
    if (seen.insert(n).second) unique.push_back(std::move(n));
  notes = std::move(unique);
}

std::string case_name(const Case& cs) {
  std::string name = std::get<0>(cs.bucket) + " n" + std::to_string(std::get<3>(cs.bucket)) + " " +
                     to_string(std::get<2>(cs.bucket));
  for (auto* c : nccl_first(cs.cands)) name += " " + c->label();
  return name;
}

}  // namespace

std::vector<SelectPair> select_pairs(const std::vector<Sample>& samples, int min_cells, std::vector<std::string>* notes) {
  std::vector<std::string> skipped;
  std::vector<SelectPair> pairs;
  const Buckets buckets = collect_curves(samples);
  for (const Case& cs : form_cases(buckets, skipped)) {
    std::vector<CellKey> cells = shared_cells(cs.cands);
    if (static_cast<int>(cells.size()) < min_cells) {
      skipped.push_back(case_name(cs) + ": " + std::to_string(cells.size()) + " shared cells (< " +
                        std::to_string(min_cells) + "); skipped");
      continue;
    }
    const CaseLayout d = lay_out(cs, std::move(cells), Plan{});
    SelectPair p;
    p.system = std::get<0>(cs.bucket);
    p.collective = std::get<1>(cs.bucket);
    p.fusion = std::get<2>(cs.bucket);
    p.nranks = std::get<3>(cs.bucket);
    for (std::size_t j = 0; j < d.cands.size(); ++j) {
      p.candidates.push_back(d.cands[j]->label());
      MeasuredCurve m;
      m.key = d.mc[j].key;
      m.source = d.mc[j].source;
      m.bytes = d.bytes;
      m.time_us = d.t[j];
      p.curves.push_back(std::move(m));
    }
    for (const CellKey& k : d.cells) {
      p.tokens.push_back(k.tokens);
      p.hidden.push_back(k.hidden);
    }
    pairs.push_back(std::move(p));
  }
  drop_repeated_notes(skipped);
  if (notes) notes->insert(notes->end(), skipped.begin(), skipped.end());
  return pairs;
}

void check_select_options(const SelectOptions& options) { parse_plan(options.plan); }

SelectReport evaluate_select(const std::vector<Sample>& samples, const SelectOptions& options) {
  const Plan plan = parse_plan(options.plan);
  const CurvePredictor model = options.model ? options.model : fitted_model_predictor();
  SelectReport report;
  report.plan = options.plan;
  report.method_order = {"auto", "always-nccl", "nearest", "threshold", "loglog", "model-argmin"};

  const Buckets buckets = collect_curves(samples);
  Regrets all;
  std::map<std::string, Regrets> per_system;
  for (const Case& cs : form_cases(buckets, report.notes)) {
    std::vector<CellKey> cells = shared_cells(cs.cands);
    if (static_cast<int>(cells.size()) < options.min_cells) {
      report.notes.push_back(case_name(cs) + ": " + std::to_string(cells.size()) + " shared cells (< " +
                             std::to_string(options.min_cells) + "); skipped");
      continue;
    }
    const CaseLayout d = lay_out(cs, std::move(cells), plan);
    const Regrets regrets = score(d, choose_all(d, model), report.method_order);
    SelectCase sc;
    sc.system = std::get<0>(cs.bucket);
    sc.collective = std::get<1>(cs.bucket);
    sc.fusion = std::get<2>(cs.bucket);
    sc.nranks = std::get<3>(cs.bucket);
    for (auto* c : d.cands) sc.candidates.push_back(c->label());
    sc.cells = static_cast<int>(d.cells.size());
    sc.measured = static_cast<int>(std::count(d.measured.begin(), d.measured.end(), true));
    for (const auto& [name, r] : regrets) sc.methods[name] = regret_stats(r);
    append(all, regrets);
    append(per_system[sc.system], regrets);
    report.cells += static_cast<long>(d.cells.size());
    report.measured += sc.measured;
    report.cases.push_back(std::move(sc));
  }
  if (report.cases.empty())
    throw std::runtime_error("select: no case with two or more strategies measured over at least " +
                             std::to_string(options.min_cells) + " shared cells (NCCL among them)");
  report.measured_fraction = double(report.measured) / double(report.cells);
  drop_repeated_notes(report.notes);
  for (const auto& name : report.method_order) report.methods[name] = regret_stats(all[name]);
  for (const auto& [sys, m] : per_system) {
    std::map<std::string, MethodStats> row;
    for (const auto& [name, r] : m) row[name] = regret_stats(r);
    report.per_system.emplace_back(sys, row);
  }
  return report;
}

nlohmann::json select_report_json(const SelectReport& r) {
  using nlohmann::json;
  auto stats = [](const MethodStats& s) {
    return json{{"geomean_regret", s.geomean_regret}, {"p95_regret", s.p95_regret}, {"max_regret", s.max_regret},
                {"exact", s.exact}, {"cells", s.cells}};
  };
  json j;
  j["protocol"] = "select";
  j["plan"] = r.plan;
  j["measured_fraction"] = r.measured_fraction;
  j["cells"] = r.cells;
  j["cases"] = r.cases.size();
  json m = json::object();
  for (const auto& name : r.method_order) m[name] = stats(r.methods.at(name));
  j["methods"] = m;
  json sys = json::object();
  for (const auto& [name, row] : r.per_system) {
    json js = json::object();
    for (const auto& [meth, s] : row) js[meth] = stats(s);
    sys[name] = js;
  }
  j["systems"] = sys;
  j["notes"] = r.notes;
  return j;
}

std::string format_select_report(const SelectReport& r) {
  std::ostringstream s;
  s << std::fixed;
  s << "select protocol, plan " << r.plan << ": " << r.cases.size() << " cases, " << r.cells << " cells, "
    << std::setprecision(1) << 100.0 * r.measured_fraction << " % measured\n";
  s << std::left << std::setw(13) << "method" << std::right << std::setw(8) << "cells" << std::setw(11) << "geomean"
    << std::setw(9) << "p95" << std::setw(9) << "max" << std::setw(9) << "exact%" << "\n";
  for (const auto& name : r.method_order) {
    const auto& m = r.methods.at(name);
    s << std::left << std::setw(13) << name << std::right << std::setw(8) << m.cells << std::setprecision(4)
      << std::setw(11) << m.geomean_regret << std::setprecision(3) << std::setw(9) << m.p95_regret << std::setw(9)
      << m.max_regret << std::setprecision(1) << std::setw(9) << m.exact << "\n";
  }
  s << "\nper system (geomean regret / exact %):\n";
  s << std::left << std::setw(22) << "system" << std::right << std::setw(7) << "cells";
  for (const auto& name : r.method_order) s << std::setw(17) << name;
  s << "\n";
  for (const auto& [sys, row] : r.per_system) {
    s << std::left << std::setw(22) << sys << std::right << std::setw(7) << row.at(r.method_order[0]).cells;
    for (const auto& name : r.method_order) {
      std::ostringstream cell;
      cell << std::fixed << std::setprecision(4) << row.at(name).geomean_regret << " / " << std::setprecision(1)
           << row.at(name).exact;
      s << std::setw(17) << cell.str();
    }
    s << "\n";
  }
  if (!r.notes.empty()) {
    s << "\nnotes:\n";
    for (const auto& n : r.notes) s << "  " << n << "\n";
  }
  return s.str();
}

}  // namespace arfit::codegen

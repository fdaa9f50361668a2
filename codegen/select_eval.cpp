#include "codegen/select_eval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
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

Plan parse_plan(const std::string& p) {
  if (p == "auto") return {Plan::Auto, 0};
  if (p == "sparse4") return {Plan::Sparse, 4};
  if (p.rfind("lattice:", 0) == 0) {
    const std::string k = p.substr(8);
    if (!k.empty() && k.find_first_not_of("0123456789") == std::string::npos && k.size() < 6) {
      const int v = std::stoi(k);
      if (v >= 2) return {Plan::Lattice, v};
    }
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

}  // namespace

SelectReport evaluate_select(const std::vector<Sample>& samples, const SelectOptions& options) {
  const Plan plan = parse_plan(options.plan);
  const CurvePredictor model = options.model ? options.model : fitted_model_predictor();
  SelectReport report;
  report.plan = options.plan;
  report.method_order = {"auto", "always-nccl", "nearest", "threshold", "loglog", "model-argmin"};

  // 1. Curves per (bucket, source, strategy).
  std::map<Bucket, std::map<std::pair<std::string, std::string>, CandCurve>> buckets;
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

  // 2. Cases.
  struct Case {
    Bucket bucket;
    std::vector<const CandCurve*> cands;
  };
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
        report.notes.push_back(std::get<0>(b) + " n" + std::to_string(std::get<3>(b)) + " " + src +
                               ": no NCCL measurement of the same system and element size to compare with; skipped");
      }
    }
  }

  // 3. Evaluate each case.
  std::map<std::string, std::vector<double>> all;
  std::map<std::string, std::map<std::string, std::vector<double>>> per_system;
  for (const Case& cs : cases) {
    const std::size_t nc = cs.cands.size();
    // Put NCCL first so that "always-nccl" and the threshold rule find it at index 0.
    std::vector<const CandCurve*> cands = cs.cands;
    std::stable_partition(cands.begin(), cands.end(), [](const CandCurve* c) { return is_nccl(c->strategy); });
    // Shared cells.
    std::vector<CellKey> cells;
    for (const auto& [k, t] : cands[0]->time) {
      bool everywhere = true;
      for (std::size_t j = 1; j < nc; ++j) everywhere = everywhere && cands[j]->time.count(k);
      if (everywhere) cells.push_back(k);
    }
    const std::string sys = std::get<0>(cs.bucket);
    std::string case_name = sys + " n" + std::to_string(std::get<3>(cs.bucket)) + " " + to_string(std::get<2>(cs.bucket));
    for (auto* c : cands) case_name += " " + c->label();
    if (static_cast<int>(cells.size()) < options.min_cells) {
      report.notes.push_back(case_name + ": " + std::to_string(cells.size()) + " shared cells (< " +
                             std::to_string(options.min_cells) + "); skipped");
      continue;
    }
    const std::size_t n = cells.size();
    const bool grid2d = std::all_of(cells.begin(), cells.end(), [](const CellKey& k) { return k.tokens > 0; });
    // Measured subset.
    std::vector<bool> measured;
    Plan p = plan;
    if (p.kind == Plan::Auto) p = grid2d ? Plan{Plan::Lattice, 2} : Plan{Plan::Sparse, 4};
    if (p.kind == Plan::Lattice && grid2d) {
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
      for (const auto& k : cells) measured.push_back(tsel.count(k.tokens) && hsel.count(k.hidden));
    } else {
      measured = every_kth(n, p.k);
    }
    // Measured times [cand][cell] (all cells: for scoring; the methods only look at measured ones).
    std::vector<std::vector<double>> t(nc, std::vector<double>(n));
    for (std::size_t j = 0; j < nc; ++j)
      for (std::size_t i = 0; i < n; ++i) t[j][i] = cands[j]->time.at(cells[i]);
    std::vector<double> best(n);
    for (std::size_t i = 0; i < n; ++i) {
      best[i] = t[0][i];
      for (std::size_t j = 1; j < nc; ++j) best[i] = std::min(best[i], t[j][i]);
    }
    auto measured_winner = [&](std::size_t i) {
      int w = 0;
      for (std::size_t j = 1; j < nc; ++j)
        if (t[j][i] < t[w][i]) w = static_cast<int>(j);
      return w;
    };
    std::vector<double> qbytes(n);
    for (std::size_t i = 0; i < n; ++i) qbytes[i] = cells[i].bytes;
    std::vector<MeasuredCurve> mc(nc);
    for (std::size_t j = 0; j < nc; ++j) {
      mc[j] = measured_curve(*cands[j], cells, measured);
      mc[j].key.system = sys;
      mc[j].key.collective = std::get<1>(cs.bucket);
      mc[j].key.fusion = std::get<2>(cs.bucket);
      mc[j].key.nranks = std::get<3>(cs.bucket);
      mc[j].key.strategy = cands[j]->strategy;
      mc[j].key.dtype = canonical_dtype(cands[j]->dtype);
      mc[j].key.nnodes = cands[j]->nnodes;
      mc[j].source = cands[j]->source;
    }

    std::map<std::string, std::vector<int>> choice;
    // auto
    {
      std::vector<std::vector<Prediction>> pred(nc);
      for (std::size_t j = 0; j < nc; ++j) pred[j] = model(mc[j], qbytes);
      choice["auto"] = choose_auto(cells, measured, t, mc, pred);
      choice["model-argmin"] = choose_model_argmin(pred);
    }
    choice["always-nccl"] = std::vector<int>(n, 0);
    // nearest measured cell's winner (ties: the first measured cell in size order)
    {
      std::vector<int> c(n);
      for (std::size_t i = 0; i < n; ++i) {
        double bestd = std::numeric_limits<double>::infinity();
        std::size_t at = i;
        for (std::size_t m = 0; m < n; ++m) {
          if (!measured[m]) continue;
          double d;
          if (grid2d) {
            const double dt = std::log2(double(cells[m].tokens)) - std::log2(double(cells[i].tokens));
            const double dh = std::log2(double(cells[m].hidden)) - std::log2(double(cells[i].hidden));
            d = dt * dt + dh * dh;
          } else {
            d = std::fabs(std::log(cells[m].bytes) - std::log(cells[i].bytes));
          }
          if (d < bestd) {
            bestd = d;
            at = m;
          }
        }
        c[i] = measured_winner(at);
      }
      choice["nearest"] = c;
    }
    // threshold: the custom strategy that wins most measured cells below, NCCL from the threshold up
    {
      std::vector<int> wins(nc, 0);
      for (std::size_t i = 0; i < n; ++i)
        if (measured[i]) ++wins[measured_winner(i)];
      int custom = nc > 1 ? 1 : 0;
      for (std::size_t j = 2; j < nc; ++j)
        if (wins[j] > wins[custom]) custom = static_cast<int>(j);
      std::vector<double> thresholds;
      for (std::size_t i = 0; i < n; ++i)
        if (measured[i]) thresholds.push_back(cells[i].bytes);
      std::sort(thresholds.begin(), thresholds.end());
      thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
      thresholds.push_back(thresholds.back() * 2);
      double best_thr = thresholds[0], best_v = std::numeric_limits<double>::infinity();
      for (double thr : thresholds) {
        double sum = 0;
        int cnt = 0;
        for (std::size_t i = 0; i < n; ++i)
          if (measured[i]) {
            sum += std::log(t[cells[i].bytes < thr ? custom : 0][i] / best[i]);
            ++cnt;
          }
        const double v = sum / cnt;
        if (v < best_v) {
          best_v = v;
          best_thr = thr;
        }
      }
      std::vector<int> c(n);
      for (std::size_t i = 0; i < n; ++i) c[i] = cells[i].bytes < best_thr ? custom : 0;
      choice["threshold"] = c;
    }
    // loglog
    {
      std::vector<std::vector<double>> pr(nc);
      for (std::size_t j = 0; j < nc; ++j) pr[j] = loglog_interpolate(mc[j].bytes, mc[j].time_us, qbytes);
      std::vector<int> c(n);
      for (std::size_t i = 0; i < n; ++i) {
        int b = 0;
        for (std::size_t j = 1; j < nc; ++j)
          if (pr[j][i] < pr[b][i]) b = static_cast<int>(j);
        c[i] = b;
      }
      choice["loglog"] = c;
    }

    SelectCase sc;
    sc.system = sys;
    sc.collective = std::get<1>(cs.bucket);
    sc.fusion = std::get<2>(cs.bucket);
    sc.nranks = std::get<3>(cs.bucket);
    for (auto* c : cands) sc.candidates.push_back(c->label());
    sc.cells = static_cast<int>(n);
    sc.measured = static_cast<int>(std::count(measured.begin(), measured.end(), true));
    for (const auto& name : report.method_order) {
      std::vector<double> r(n);
      for (std::size_t i = 0; i < n; ++i) r[i] = t[choice[name][i]][i] / best[i];
      sc.methods[name] = regret_stats(r);
      all[name].insert(all[name].end(), r.begin(), r.end());
      auto& ps = per_system[sys][name];
      ps.insert(ps.end(), r.begin(), r.end());
    }
    report.cells += static_cast<long>(n);
    report.measured += sc.measured;
    report.cases.push_back(std::move(sc));
  }
  if (report.cases.empty())
    throw std::runtime_error("select: no case with two or more strategies measured over at least " +
                             std::to_string(options.min_cells) + " shared cells (NCCL among them)");
  report.measured_fraction = double(report.measured) / double(report.cells);
  {  // one note per distinct message (a source is seen once per element size and GPU count)
    std::set<std::string> seen;
    std::vector<std::string> unique;
    for (auto& n : report.notes)
      if (seen.insert(n).second) unique.push_back(std::move(n));
    report.notes = std::move(unique);
  }
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

// crosshw:K — a new machine from K of its sizes per curve, leave one system out. Every curve of a system
// that another system measured too (same collective, strategy, fusion, rank and node count, element size)
// is a target; its K sizes at anchor_indices() are measured, the other systems' curves are the priors, the
// rest of its sizes are held out. Three parts: the prior library (every curve fitted once on all its
// sizes), the tasks (targets, their anchors and sources), the predictions per method; then the report, per
// target system too.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "fit/eval_common.h"
#include "fit/siblings.h"
#include "fit/transfer.h"
#include "model/anchors.h"
#include "model/sm_targets.h"

namespace arfit::fit {
namespace {

using detail::CurvePreds;

// Every curve fitted on all its sizes (arfit's default, siblings pooled within each machine): what a
// prior models file of those machines holds.
struct Library {
  std::vector<GroupModel> models;      // per curve (ok == false where the fit failed)
  std::vector<TransferSource> sources;  // per fitted curve
  std::vector<size_t> curve_of;         // sources[i] is the model of curves[curve_of[i]]
};

Library build_library(const std::vector<Curve>& curves, int threads) {
  std::vector<GroupFit> fits(curves.size());
  const FitOptions fo = detail::method_fit_options("auto");
  detail::parallel_for(curves.size(), threads, [&](size_t i) { fits[i] = fit_curve(curves[i], fo); });
  pool_siblings(curves, fits);
  Library lib;
  for (size_t i = 0; i < curves.size(); ++i) lib.models.push_back(GroupModel::from_json(fits[i].model));
  std::vector<TransferSource> src(curves.size());
  detail::parallel_for(curves.size(), threads, [&](size_t i) {
    if (lib.models[i].ok) src[i] = TransferSource::from_model(lib.models[i], curves[i].machine);
  });
  for (size_t i = 0; i < curves.size(); ++i)
    if (lib.models[i].ok) {
      lib.sources.push_back(std::move(src[i]));
      lib.curve_of.push_back(i);
    }
  return lib;
}

struct Task {
  size_t curve = 0;
  TransferTarget target;
  std::vector<size_t> sources;  // indices into Library::sources
  std::vector<double> test_bytes, test_time;
};

// `scale`: today's --sm rule (model/sm_targets.h) from the most similar other system — the nearest datasheet
// interconnect bandwidth, then the same SM, then name order — as the geometric mean over that system's
// matching curves. Unknown SMs (or equal ones) carry the curve unscaled.
std::vector<Prediction> predict_scale(const Task& t, const Library& lib) {
  auto distance = [&](int sm) { return datasheet_distance(sm, t.target.sm); };
  const TransferSource* best = nullptr;
  for (size_t i : t.sources) {
    const TransferSource& s = lib.sources[i];
    if (!best) {
      best = &s;
      continue;
    }
    const double ds = distance(s.sm()), db = distance(best->sm());
    const bool same_s = s.sm() == t.target.sm, same_b = best->sm() == t.target.sm;
    if (ds < db || (ds == db && (same_s > same_b || (same_s == same_b && s.system() < best->system())))) best = &s;
  }
  std::vector<Prediction> out;
  for (double x : t.test_bytes) {
    double acc = 0;
    int n = 0;
    for (size_t i : t.sources) {
      const TransferSource& s = lib.sources[i];
      if (s.system() != best->system()) continue;
      const GroupModel& m = lib.models[lib.curve_of[i]];
      const Prediction p = m.predict(x);
      const auto scaled = transfer_prediction(p, m.predict(m.min_bytes).time_us, s.sm(), t.target.sm);
      acc += std::log(scaled && s.sm() != t.target.sm ? scaled->time_us : p.time_us);
      ++n;
    }
    Prediction p;
    p.time_us = std::exp(acc / n);
    p.how = "scale from " + best->system();
    out.push_back(p);
  }
  return out;
}

std::vector<Prediction> predict_auto(const Task& t, const Library& lib, const TransferCalibration* calibration) {
  std::vector<const TransferSource*> src;
  for (size_t i : t.sources) src.push_back(&lib.sources[i]);
  TransferOptions o;
  o.calibration = calibration;
  const Transfer tr = transfer_curve(t.target, src, o);
  std::vector<Prediction> out;
  if (!tr.ok()) return out;
  const GroupFit g = transferred_group(t.target, tr, tr.min_bytes(), tr.max_bytes());
  if (g.ok) {
    const GroupModel m = GroupModel::from_json(g.model);
    for (double x : t.test_bytes) out.push_back(m.predict(x));
  } else {
    for (double x : t.test_bytes) out.push_back(tr.predict(x));
  }
  return out;
}

std::vector<Prediction> predict_loglog(const Task& t) {
  std::vector<Prediction> out;
  if (t.target.bytes.size() < 2) return out;
  for (double x : t.test_bytes) {
    Prediction p;
    p.time_us = loglog_at(t.target.bytes, t.target.time_us, x);
    p.how = "loglog";
    out.push_back(p);
  }
  return out;
}

// Why crosshw had no target although curves qualified: one system only, no curve another system measured
// too, or no size left to hold out after the K anchors.
std::string crosshw_nothing_qualifies(const std::vector<Curve>& curves, int unmatched, int K) {
  std::map<std::string, int> per_system;
  for (const Curve& c : curves) ++per_system[c.machine];
  std::string found;
  for (const auto& [system, n] : per_system)
    found += (found.empty() ? "" : ", ") + ("'" + system + "' (" + std::to_string(n) + (n == 1 ? " curve)" : " curves)"));
  const std::string label =
      " (the machine label: a sample's system, set by `arfit ingest --system` or the file's machine, else its device, "
      "else its file name; labels whose samples name the same device on the same hosts are one machine)";
  if (per_system.size() < 2)
    return "crosshw leaves one system out and predicts it from the others: it needs curves of at least two systems" +
           label + "; the inputs hold one, " + found;
  if (unmatched == static_cast<int>(curves.size()))
    return "no curve of one system has a curve of another system at the same collective, strategy, fusion, rank and "
           "node count and element size to transfer from (systems: " + found + ")";
  return "every curve another system measured too has at most K = " + std::to_string(K) +
         " sizes: none is left to hold out (systems: " + found + ")";
}

}  // namespace

void check_crosshw_options(int K, const EvalOptions& options) {
  if (K < 0) throw std::invalid_argument("crosshw:K needs K >= 0 (sizes measured per target curve)");
  for (const std::string& m : options.methods)
    if (m != "auto" && m != "loglog" && m != "scale")
      throw std::invalid_argument("unknown method '" + m + "' for crosshw (known: auto, loglog, scale)");
  if (K < 2 && std::find(options.methods.begin(), options.methods.end(), "loglog") != options.methods.end())
    throw std::invalid_argument("method loglog needs crosshw:K with K >= 2 (two own sizes to interpolate), not K = " +
                                std::to_string(K));
}

namespace {

// Curve i as a crosshw task: its K anchors, the sizes held out, and the other systems' comparable curves to
// transfer from; nullopt when no other system has one (`unmatched`) or no size is left to hold out.
std::optional<Task> crosshw_task(const std::vector<Curve>& curves, std::size_t i, const Library& lib, int K, bool& unmatched) {
  const Curve& c = curves[i];
  Task t;
  t.curve = i;
  for (size_t j = 0; j < lib.sources.size(); ++j)
    if (lib.sources[j].system() != c.machine && comparable_curves(c.key, lib.sources[j].key())) t.sources.push_back(j);
  unmatched = t.sources.empty();
  if (unmatched) return std::nullopt;
  t.target.key = c.key;
  t.target.sm = datasheet_sm(c.sm, c.device, c.hardware);
  t.target.lo_bytes = c.bytes.front();
  t.target.hi_bytes = c.bytes.back();
  const std::vector<size_t> idx = anchor_indices(c.bytes.size(), K);
  for (size_t k = 0, a = 0; k < c.bytes.size(); ++k) {
    if (a < idx.size() && idx[a] == k) {
      t.target.bytes.push_back(c.bytes[k]);
      t.target.time_us.push_back(c.time_us[k]);
      ++a;
    } else {
      t.test_bytes.push_back(c.bytes[k]);
      t.test_time.push_back(c.time_us[k]);
    }
  }
  if (t.test_bytes.empty()) return std::nullopt;
  return t;
}

// The K <= 1 rule's interval, per target system: its errors on the other systems, each predicted from the
// rest (the target system's curves take no part).
std::map<std::string, TransferCalibration> calibration_by_system(const std::vector<Task>& tasks,
                                                                 const std::vector<Curve>& curves, const Library& lib,
                                                                 int K, int threads) {
  std::map<std::string, TransferCalibration> calibration;
  if (K > 1) return calibration;
  std::set<std::string> systems;
  for (const Task& t : tasks) systems.insert(curves[t.curve].machine);
  std::vector<std::string> sys(systems.begin(), systems.end());
  std::vector<TransferCalibration> hw(sys.size());
  detail::parallel_for(sys.size(), threads, [&](size_t i) { hw[i] = transfer_calibration(lib.sources, K, sys[i]); });
  for (size_t i = 0; i < sys.size(); ++i) calibration[sys[i]] = hw[i];
  return calibration;
}

// Every task's held-out points as method `m` predicts them.
std::vector<CurvePreds> crosshw_predictions(const std::string& m, const std::vector<Task>& tasks,
                                            const std::vector<Curve>& curves, const Library& lib,
                                            const std::map<std::string, TransferCalibration>& calibration, int threads) {
  std::vector<CurvePreds> per(tasks.size());
  detail::parallel_for(tasks.size(), threads, [&](size_t i) {
    const Task& t = tasks[i];
    std::vector<Prediction> p;
    if (m == "auto") {
      auto it = calibration.find(curves[t.curve].machine);
      p = predict_auto(t, lib, it != calibration.end() ? &it->second : nullptr);
    } else if (m == "loglog") {
      p = predict_loglog(t);
    } else {
      p = predict_scale(t, lib);
    }
    if (p.size() != t.test_bytes.size()) return;
    per[i].ok = true;
    for (size_t k = 0; k < p.size(); ++k) per[i].points.push_back({curves[t.curve].key, t.test_bytes[k], t.test_time[k], p[k]});
  });
  return per;
}

}  // namespace

EvalResult eval_crosshw(const std::vector<Sample>& samples, int K, const EvalOptions& options) {
  check_crosshw_options(K, options);
  EvalResult res;
  res.protocol = "crosshw:" + std::to_string(K);
  const std::vector<Curve> curves = eval_curves(samples, options.min_sizes);
  const Library lib = build_library(curves, options.threads);

  std::vector<Task> tasks;
  res.unmatched_curves = 0;
  for (size_t i = 0; i < curves.size(); ++i) {
    bool unmatched = false;
    if (std::optional<Task> t = crosshw_task(curves, i, lib, K, unmatched)) tasks.push_back(std::move(*t));
    res.unmatched_curves += unmatched;
  }
  res.curves = static_cast<int>(tasks.size());
  if (tasks.empty() && !curves.empty()) res.nothing_qualifies = crosshw_nothing_qualifies(curves, res.unmatched_curves, K);
  const std::map<std::string, TransferCalibration> calibration =
      calibration_by_system(tasks, curves, lib, K, options.threads);

  // Per target system subsets, in name order.
  std::map<std::string, std::vector<char>> by_system;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto& mask = by_system[curves[tasks[i].curve].machine];
    mask.resize(tasks.size(), 0);
    mask[i] = 1;
  }
  res.subsets_key = "by_system";
  for (const auto& [sys, mask] : by_system)
    res.subsets.push_back({sys, static_cast<int>(std::count(mask.begin(), mask.end(), 1)), {}});

  for (const std::string& m : options.methods) {
    const std::vector<CurvePreds> per = crosshw_predictions(m, tasks, curves, lib, calibration, options.threads);
    res.methods.push_back(detail::summarize(m, per, options.keep_points));
    size_t s = 0;
    for (const auto& [sys, mask] : by_system) res.subsets[s++].methods.push_back(detail::summarize(m, per, false, mask));
  }
  return res;
}

}  // namespace arfit::fit

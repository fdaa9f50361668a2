#include "fit/eval.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <cstdlib>

#include "fit/eval_common.h"
#include "fit/family_fit.h"
#include "fit/siblings.h"
#include "model/group_model.h"
#include "model/sample_csv.h"
#include "model/text.h"

namespace arfit::fit {
namespace {

bool is_ceiling_method(const std::string& m) { return m == "ceiling-others" || m == "ceiling-otherhw"; }

}  // namespace

namespace detail {

EvalMethodResult summarize(const std::string& name, const std::vector<CurvePreds>& per_curve, bool keep,
                           const std::vector<char>& include) {
  EvalMethodResult r;
  r.name = name;
  std::vector<double> errs;
  int covered = 0, with_interval = 0;
  for (size_t i = 0; i < per_curve.size(); ++i) {
    const CurvePreds& c = per_curve[i];
    if (!include.empty() && !include[i]) continue;
    if (!c.ok) {
      ++r.failed_groups;
      continue;
    }
    if (c.points.empty()) continue;
    ++r.groups;
    for (const auto& p : c.points) {
      errs.push_back(relative_error(p.predicted.time_us, p.measured));
      if (p.predicted.hi_us > p.predicted.lo_us) {
        ++with_interval;
        if (p.measured >= p.predicted.lo_us && p.measured <= p.predicted.hi_us) ++covered;
      }
      if (keep) r.points.push_back(p);
    }
  }
  r.errors = summarize_errors(errs);
  r.coverage = with_interval > 0 ? static_cast<double>(covered) / with_interval : -1;
  return r;
}

FitOptions method_fit_options(const std::string& method) {
  FitOptions fo;
  std::string fam = method;
  bool corr = false;
  if (fam.size() > 2 && fam.compare(fam.size() - 2, 2, "+c") == 0) {
    fam = fam.substr(0, fam.size() - 2);
    corr = true;
  }
  if (fam == "auto" || fam == "auto-solo") {
    fam = "auto";
    corr = true;
  }
  if (fam == "auto-nc") {
    fam = "auto";
    corr = false;
  }
  fo.family = fam;
  fo.residual_correction = corr;
  // Baselines are the families alone: no tail line either.
  fo.tail = fam == "auto";
  return fo;
}

void check_methods(const std::vector<std::string>& methods, bool size_protocol) {
  for (const std::string& m : methods) {
    if (m == "loglog" || m == "seed") continue;
    if (is_ceiling_method(m)) {
      if (size_protocol) continue;
      throw std::invalid_argument("method '" + m + "' needs a size protocol (interp2, sparse4, extrap)");
    }
    const std::string fam = method_fit_options(m).family;
    if (fam == "auto" || fam == "regimes") continue;
    try {
      parse_family(fam);
    } catch (const std::invalid_argument&) {
      std::string known = "auto, auto-solo, auto-nc, seed, alphabeta, loglog, a family name, FAMILY+c";
      if (size_protocol) known += ", ceiling-others, ceiling-otherhw";
      throw std::invalid_argument("unknown method '" + m + "' (known: " + known + ")");
    }
  }
}

}  // namespace detail

using detail::check_methods;
using detail::CurvePreds;
using detail::method_fit_options;
using detail::parallel_for;

namespace {

constexpr double kExtrapLimit = 64.0 * 1024 * 1024;  // extrap: fit sizes <= 64 MiB

}  // namespace

void split_sizes(const std::string& protocol, const std::vector<double>& bytes, std::vector<size_t>& train,
                 std::vector<size_t>& test) {
  train.clear();
  test.clear();
  const size_t n = bytes.size();
  if (protocol == "interp2") {
    for (size_t i = 0; i < n; ++i) (i % 2 == 0 ? train : test).push_back(i);
  } else if (protocol == "sparse4") {
    for (size_t i = 0; i < n; ++i) (i % 4 == 0 || i + 1 == n ? train : test).push_back(i);
  } else if (protocol == "extrap") {
    for (size_t i = 0; i < n; ++i) (bytes[i] <= kExtrapLimit ? train : test).push_back(i);
  } else {
    throw std::invalid_argument("unknown size protocol '" + protocol + "' (known: interp2, sparse4, extrap)");
  }
}

std::vector<Curve> eval_curves(const std::vector<Sample>& samples, int min_sizes) {
  CurveOptions co;
  co.group_by = GroupBy::Source;
  co.out_of_place_only = true;
  co.min_sizes = min_sizes;
  return build_curves(samples, co);
}

std::vector<Prediction> predict_method(const std::string& method, const Curve& train, const std::vector<double>& test) {
  std::vector<Prediction> out;
  if (method == "loglog") {
    for (double x : test) {
      Prediction p;
      p.time_us = loglog_at(train.bytes, train.time_us, x);
      p.how = "loglog";
      out.push_back(p);
    }
    return out;
  }
  const FitOptions fo = method_fit_options(method);
  const GroupFit g = fit_curve(train, fo);
  if (!g.ok && method != "auto" && method != "auto-solo") return out;
  return predict_fitted(g, train, test);
}

std::vector<Prediction> predict_fitted(const GroupFit& g, const Curve& train, const std::vector<double>& test) {
  std::vector<Prediction> out;
  if (!g.ok) {
    // arfit's default answers every curve: when no family can be fitted it falls back to the table
    // (log-log interpolation), flagged in Prediction::how. Baselines report the failure instead.
    for (double x : test) {
      Prediction p;
      p.time_us = loglog_at(train.bytes, train.time_us, x);
      p.how = "loglog-fallback (" + g.problem + ")";
      out.push_back(p);
    }
    return out;
  }
  const GroupModel m = GroupModel::from_json(g.model);
  for (double x : test) out.push_back(m.predict(x));
  return out;
}

namespace {

// The ceiling diagnostics (eval.h): auto's prediction at each held-out point times the median held-out
// error exp(median ln(measured / predicted)) of auto at the same (collective, strategy, fusion, ranks, nodes,
// size) on the other curves, from another source file ("ceiling-others") or another machine
// ("ceiling-otherhw"); at least kCeilingMinOthers of them, else auto's prediction is kept.
constexpr size_t kCeilingMinOthers = 3;

// A ceiling's points, and how many of them other curves corrected: the rest keep auto's prediction.
struct CeilingPreds {
  std::vector<CurvePreds> per_curve;
  int corrected = 0, points = 0;
};

CeilingPreds ceiling_preds(const std::vector<CurvePreds>& auto_per, const std::vector<std::string>& machine,
                           bool other_machines_only) {
  struct Entry {
    const std::string* source;
    const std::string* machine;
    double log_error;
  };
  using Key = std::tuple<Collective, std::string, FusionOp, int, int, double>;
  auto key_of = [](const EvalPoint& p) {
    return Key{p.key.collective, p.key.strategy, p.key.fusion, p.key.nranks, p.key.nnodes, p.bytes};
  };
  std::map<Key, std::vector<Entry>> by_key;
  for (size_t i = 0; i < auto_per.size(); ++i)
    for (const EvalPoint& p : auto_per[i].points)
      by_key[key_of(p)].push_back({&p.key.system, &machine[i], std::log(p.measured / p.predicted.time_us)});
  CeilingPreds out;
  out.per_curve.resize(auto_per.size());
  for (size_t i = 0; i < auto_per.size(); ++i) {
    out.per_curve[i].ok = auto_per[i].ok;
    for (const EvalPoint& p : auto_per[i].points) {
      std::vector<double> others;
      for (const Entry& e : by_key[key_of(p)])
        if (other_machines_only ? *e.machine != machine[i] : *e.source != p.key.system) others.push_back(e.log_error);
      EvalPoint q = p;
      ++out.points;
      if (others.size() >= kCeilingMinOthers) {
        const double factor = std::exp(percentile(others, 50));
        q.predicted.time_us *= factor;
        q.predicted.lo_us *= factor;
        q.predicted.hi_us *= factor;
        q.predicted.how += " x ceiling";
        ++out.corrected;
      }
      out.per_curve[i].points.push_back(std::move(q));
    }
  }
  // No point corrected: not a ceiling at all, so no row of errors (auto's would read as a bound reached).
  if (out.corrected == 0)
    for (CurvePreds& c : out.per_curve) c.points.clear();
  return out;
}

// What the table does not show about a ceiling: the held-out points where too few other curves shared the key,
// and, where none had enough, what the inputs hold (one machine, one file). "" when every point was corrected.
std::string ceiling_note(const std::string& method, const CeilingPreds& c, const std::set<std::string>& origins) {
  if (c.corrected == c.points) return {};
  const bool hw = method == "ceiling-otherhw";
  const std::string others = hw ? "other machines' curves" : "other source files' curves";
  const std::string where = " at the same collective, strategy, fusion, rank and node count and size";
  if (c.corrected == 0)
    return method + ": no held-out point has " + std::to_string(kCeilingMinOthers) + " or more " + others + where +
           " (the inputs hold " + std::to_string(origins.size()) + (hw ? " machine" : " source file") +
           (origins.size() == 1 ? "" : "s") + ": " + join(origins, ", ") + "), so it bounds nothing: shown as '-'";
  return method + ": " + std::to_string(c.points - c.corrected) + " of " + std::to_string(c.points) +
         " held-out points had fewer than " + std::to_string(kCeilingMinOthers) + " " + others + where +
         "; auto's prediction is kept there";
}

// One curve of a size protocol: its training sizes and its held-out points (the same for every method).
struct SizeTask {
  Curve train;
  std::vector<double> test_bytes, test_time;
};

// The curves with at least 6 training sizes and one held-out size under `protocol`.
std::vector<SizeTask> size_tasks(const std::vector<Curve>& curves, const std::string& protocol) {
  std::vector<size_t> tr, te;
  std::vector<SizeTask> tasks;
  for (const Curve& c : curves) {
    split_sizes(protocol, c.bytes, tr, te);
    if (tr.size() < 6 || te.empty()) continue;
    SizeTask t;
    t.train = c;
    t.train.bytes.clear();
    t.train.time_us.clear();
    for (size_t i : tr) {
      t.train.bytes.push_back(c.bytes[i]);
      t.train.time_us.push_back(c.time_us[i]);
    }
    for (size_t i : te) {
      t.test_bytes.push_back(c.bytes[i]);
      t.test_time.push_back(c.time_us[i]);
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

// Every task's held-out points predicted by method `m` from its training sizes.
std::vector<CurvePreds> predict_size_tasks(const std::string& m, const std::vector<SizeTask>& tasks, int threads) {
  std::vector<CurvePreds> per(tasks.size());
  // arfit's default pools sibling curves (fit/siblings.h): every curve is fitted alone on its training
  // sizes, then siblings' training points add knots. Held-out points of one curve never reach another.
  // "auto-solo" is the same without pooling.
  std::vector<GroupFit> pooled;
  if (m == "auto") {
    pooled.resize(tasks.size());
    const FitOptions fo = method_fit_options(m);
    parallel_for(tasks.size(), threads, [&](size_t i) { pooled[i] = fit_curve(tasks[i].train, fo); });
    std::vector<Curve> trains;
    trains.reserve(tasks.size());
    for (const SizeTask& t : tasks) trains.push_back(t.train);
    pool_siblings(trains, pooled);
  }
  parallel_for(tasks.size(), threads, [&](size_t i) {
    const SizeTask& t = tasks[i];
    std::vector<Prediction> p =
        pooled.empty() ? predict_method(m, t.train, t.test_bytes) : predict_fitted(pooled[i], t.train, t.test_bytes);
    if (p.size() != t.test_bytes.size()) return;
    per[i].ok = true;
    for (size_t k = 0; k < p.size(); ++k) per[i].points.push_back({t.train.key, t.test_bytes[k], t.test_time[k], p[k]});
  });
  return per;
}

}  // namespace

EvalResult eval_sizes(const std::vector<Sample>& samples, const std::string& protocol, const EvalOptions& options) {
  std::vector<size_t> tr, te;
  split_sizes(protocol, {1.0}, tr, te);  // validates the protocol name
  check_methods(options.methods, true);
  EvalResult res;
  res.protocol = protocol;
  const std::vector<SizeTask> tasks = size_tasks(eval_curves(samples, options.min_sizes), protocol);
  res.curves = static_cast<int>(tasks.size());
  std::vector<CurvePreds> auto_per;  // auto's points, kept for the ceiling diagnostics
  std::vector<std::string> machine;  // per task, for the ceiling diagnostics (Curve::machine)
  for (const SizeTask& t : tasks) machine.push_back(t.train.machine);
  for (const std::string& m : options.methods) {
    if (is_ceiling_method(m)) {
      if (auto_per.empty()) auto_per = predict_size_tasks("auto", tasks, options.threads);
      const bool hw = m == "ceiling-otherhw";
      const CeilingPreds c = ceiling_preds(auto_per, machine, hw);
      res.methods.push_back(detail::summarize(m, c.per_curve, options.keep_points));
      res.methods.back().ceiling_points = c.corrected;
      std::set<std::string> origins;
      for (const SizeTask& t : tasks) origins.insert(hw ? t.train.machine : t.train.key.system);
      if (std::string note = ceiling_note(m, c, origins); !note.empty()) res.notes.push_back(std::move(note));
      continue;
    }
    std::vector<CurvePreds> per = predict_size_tasks(m, tasks, options.threads);
    if (m == "auto") auto_per = per;
    res.methods.push_back(detail::summarize(m, per, options.keep_points));
  }
  return res;
}

namespace {

nlohmann::json methods_json(const std::vector<EvalMethodResult>& methods) {
  nlohmann::json ms = nlohmann::json::object();
  for (const auto& m : methods) {
    nlohmann::json e = {{"points", m.errors.points}, {"groups", m.groups}};
    // A method that answered no held-out point has no error (a 0 would read as perfect, as the table's '-' says;
    // the error figures read an absent value as none).
    if (m.errors.points > 0) {
      e["gmae"] = m.errors.gmae * 100;
      e["median"] = m.errors.median * 100;
      e["p90"] = m.errors.p90 * 100;
      e["max"] = m.errors.max * 100;
    }
    if (m.failed_groups) e["failed_groups"] = m.failed_groups;
    if (m.coverage >= 0) e["coverage90"] = m.coverage * 100;
    if (m.ceiling_points >= 0) e["ceiling_points"] = m.ceiling_points;
    ms[m.name] = e;
  }
  return ms;
}

}  // namespace

nlohmann::json EvalResult::to_json() const {
  nlohmann::json j;
  j["protocol"] = protocol;
  j["methods"] = methods_json(methods);
  if (!subsets_key.empty()) {
    nlohmann::json sub = nlohmann::json::object();
    for (const EvalSubset& s : subsets) sub[s.name] = {{"curves", s.curves}, {"methods", methods_json(s.methods)}};
    j[subsets_key] = sub;
  }
  if (unmatched_curves >= 0) j["unmatched_curves"] = unmatched_curves;
  return j;
}

std::string EvalResult::to_table() const {
  std::ostringstream o;
  o << "protocol " << protocol << " (" << curves << (protocol == "crossn" ? " families" : " curves");
  if (unmatched_curves >= 0) o << "; " << unmatched_curves << " curves no other system measured";
  o << ")\n";
  int name_width = 14;  // wide enough for the longest method name and a space
  for (const auto& m : methods) name_width = std::max(name_width, static_cast<int>(m.name.size()) + 1);
  o << std::left << std::setw(name_width) << "method" << std::right << std::setw(9) << "GMAE%" << std::setw(9) << "median%"
    << std::setw(9) << "p90%" << std::setw(10) << "max%" << std::setw(8) << "points" << std::setw(8) << "groups"
    << std::setw(11) << "cover90%" << "\n";
  o << std::fixed << std::setprecision(2);
  for (const auto& m : methods) {
    o << std::left << std::setw(name_width) << m.name << std::right;
    // A method that answered no held-out point has no error to show (0.00 would read as perfect).
    if (m.errors.points > 0)
      o << std::setw(9) << m.errors.gmae * 100 << std::setw(9) << m.errors.median * 100 << std::setw(9)
        << m.errors.p90 * 100 << std::setw(10) << m.errors.max * 100;
    else
      o << std::setw(9) << "-" << std::setw(9) << "-" << std::setw(9) << "-" << std::setw(10) << "-";
    o << std::setw(8) << m.errors.points << std::setw(8) << m.groups << std::setw(11);
    if (m.coverage >= 0)
      o << m.coverage * 100;
    else
      o << "-";
    o << "\n";
  }
  if (subsets.empty()) return o.str();
  // One row per subset: its curves and points, every method's GMAE, and the first method's coverage.
  int sub_width = static_cast<int>(subsets_key.size()) + 1;
  for (const EvalSubset& s : subsets) sub_width = std::max(sub_width, static_cast<int>(s.name.size()) + 1);
  o << "\n" << std::left << std::setw(sub_width) << subsets_key << std::right << std::setw(7) << "curves" << std::setw(8)
    << "points";
  for (const auto& m : methods) o << std::setw(std::max(10, static_cast<int>(m.name.size()) + 2)) << m.name + "%";
  o << std::setw(11) << "cover90%" << "\n";
  for (const EvalSubset& s : subsets) {
    o << std::left << std::setw(sub_width) << s.name << std::right << std::setw(7) << s.curves << std::setw(8)
      << (s.methods.empty() ? 0 : s.methods.front().errors.points);
    for (size_t i = 0; i < methods.size(); ++i) {
      o << std::setw(std::max(10, static_cast<int>(methods[i].name.size()) + 2));
      if (i < s.methods.size() && s.methods[i].errors.points > 0)
        o << s.methods[i].errors.gmae * 100;
      else
        o << "-";
    }
    o << std::setw(11);
    if (!s.methods.empty() && s.methods.front().coverage >= 0)
      o << s.methods.front().coverage * 100;
    else
      o << "-";
    o << "\n";
  }
  return o.str();
}

std::string EvalResult::points_csv() const {
  std::ostringstream o;
  o << "method,group,bytes,measured_us,predicted_us,lo_us,hi_us,rel_error,how\n";
  o << std::setprecision(10);
  for (const auto& m : methods)
    for (const auto& p : m.points)
      o << csv_escape(m.name) << ',' << csv_escape(p.key.id()) << ',' << p.bytes << ',' << p.measured << ',' << p.predicted.time_us << ','
        << p.predicted.lo_us << ',' << p.predicted.hi_us << ',' << relative_error(p.predicted.time_us, p.measured) << ','
        << csv_escape(p.predicted.how) << '\n';
  return o.str();
}

const EvalMethodResult* EvalResult::method(const std::string& name) const {
  for (const auto& m : methods)
    if (m.name == name) return &m;
  return nullptr;
}

namespace {

// K of "crosshw:K": a whole number (model/text.h's one reader of counts).
int crosshw_anchors(const std::string& arg) {
  std::string why;
  const std::optional<std::uint64_t> k = parse_whole_number(arg, 0, std::numeric_limits<int>::max(), &why);
  if (!k) throw std::invalid_argument("--protocol crosshw:K needs K, the number of sizes measured per curve: " + why);
  return static_cast<int>(*k);
}

// crosshw's own default methods where the generic ones were left: auto, loglog (K >= 2) and scale.
EvalOptions crosshw_options(EvalOptions o) {
  if (!o.methods_chosen) {
    o.methods = {"auto", "scale"};
    if (crosshw_anchors(o.protocol_arg) >= 2) o.methods.insert(o.methods.begin() + 1, "loglog");
  }
  return o;
}

}  // namespace

ProtocolSpec parse_protocol_spec(const std::string& text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return {text, std::nullopt};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

std::string nothing_to_evaluate_message(const std::string& text, const std::string& reason) {
  if (!reason.empty()) return "nothing to evaluate for --protocol " + text + ": " + reason;
  std::string rule;
  for (const auto& p : fit_protocols())
    if (p.name == parse_protocol_spec(text).name) rule = p.help;
  return "no curve qualifies for --protocol " + text + " (" + rule +
         "; a curve is one group of out-of-place samples with at least 12 distinct sizes): nothing to evaluate";
}

const std::vector<ProtocolEntry>& fit_protocols() {
  const auto size_methods = [](const EvalOptions& o) { check_methods(o.methods, true); };
  static const std::vector<ProtocolEntry> v = {
      {"interp2", "fit even-indexed sizes of each curve, predict the odd ones",
       [](const std::vector<Sample>& s, const EvalOptions& o) { return eval_sizes(s, "interp2", o); }, size_methods},
      {"sparse4", "fit every 4th size plus the largest, predict the rest",
       [](const std::vector<Sample>& s, const EvalOptions& o) { return eval_sizes(s, "sparse4", o); }, size_methods},
      {"extrap", "fit sizes <= 64 MiB, predict larger",
       [](const std::vector<Sample>& s, const EvalOptions& o) { return eval_sizes(s, "extrap", o); }, size_methods},
      {"crossn", "families at >= 3 GPU counts (2 when the larger spans more nodes): fit all but the largest count, predict the largest",
       [](const std::vector<Sample>& s, const EvalOptions& o) { return eval_crossn(s, o); },
       [](const EvalOptions& o) { check_methods(o.methods, false); }},
      {"crosshw", "crosshw:K, leave one system out: each curve from K of its sizes and other systems' curves",
       [](const std::vector<Sample>& s, const EvalOptions& o) { return eval_crosshw(s, crosshw_anchors(o.protocol_arg), crosshw_options(o)); },
       [](const EvalOptions& o) { check_crosshw_options(crosshw_anchors(o.protocol_arg), crosshw_options(o)); },
       true},
  };
  return v;
}

}  // namespace arfit::fit

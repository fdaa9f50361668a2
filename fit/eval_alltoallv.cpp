#include "fit/eval_alltoallv.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "fit/eval_common.h"
#include "model/alltoallv.h"
#include "model/errors.h"
#include "model/group_model.h"
#include "model/metrics.h"

namespace arfit::fit {
namespace {

constexpr const char* kPaperSizes = "seed-paper";  // the seed at the paper's own effective sizes
constexpr int kMinCurveSizes = 4;                   // fewer sizes: no model worth predicting from

// One measured split of a group: the median of its repeats.
struct MeasuredSplit {
  AllToAllvSplit split;
  double time_us = 0;
};

struct SplitGroup {
  GroupKey key;
  std::vector<MeasuredSplit> splits;
  const Curve* curve = nullptr;
};

std::vector<SplitGroup> alltoallv_groups(const std::vector<Sample>& samples) {
  std::map<GroupKey, std::map<std::string, std::vector<double>>> times;
  std::map<GroupKey, std::string> source;
  for (const Sample& s : samples) {
    if (!s.ok() || s.collective != Collective::AllToAllV || s.splits.empty() || !(s.time_us > 0) || !std::isfinite(s.time_us))
      continue;
    const GroupKey k = sample_group_key(s);
    times[k][s.splits].push_back(s.time_us);
    source.emplace(k, s.source);
  }
  std::vector<SplitGroup> out;
  for (auto& [key, by_split] : times) {
    SplitGroup g;
    g.key = key;
    const int elem = dtype_size(key.dtype) > 0 ? dtype_size(key.dtype) : 4;
    for (auto& [text, t] : by_split) {
      MeasuredSplit m;
      try {
        m.split = parse_alltoallv_split(text, elem);
      } catch (const std::invalid_argument& e) {
        throw InputError(source[key], 0, "splits", e.what());
      }
      if (m.split.nranks() != key.nranks)
        throw InputError(source[key], 0, "splits",
                         "all-to-allv split '" + text + "' has " + std::to_string(m.split.nranks()) + " ranks, the sample " +
                             std::to_string(key.nranks));
      m.time_us = size_median(t);
      g.splits.push_back(std::move(m));
    }
    out.push_back(std::move(g));
  }
  return out;
}

// The uniform all-to-all curve an all-to-allv group is predicted from: same system, strategy, fusion, rank and
// node count; the same dtype when measured (a message's bytes move alike whatever their type), else the first.
const Curve* uniform_curve(const std::vector<Curve>& curves, const GroupKey& k) {
  const Curve* other_dtype = nullptr;
  for (const Curve& c : curves) {
    const GroupKey& u = c.key;
    if (u.collective != Collective::AllToAll || u.system != k.system || u.strategy != k.strategy || u.fusion != k.fusion ||
        u.nranks != k.nranks || u.nnodes != k.nnodes)
      continue;
    if (u.dtype == k.dtype) return &c;
    if (!other_dtype) other_dtype = &c;
  }
  return other_dtype;
}

double effective_bytes(const std::string& method, const AllToAllvSplit& split, EffectiveMode mode) {
  return method == kPaperSizes ? paper_effective_bytes(split, mode) : effective_alltoall_bytes(split, mode);
}

std::string row_name(const std::string& method, EffectiveMode mode) { return method + ":" + to_string(mode); }

// Predictions of one method in every mode for one group: one fit of the curve, all modes' sizes at once.
// Index [mode][split]; empty when the method cannot fit the curve.
std::vector<std::vector<Prediction>> predict_modes(const std::string& method, const SplitGroup& g) {
  const auto& modes = all_effective_modes();
  std::vector<double> sizes;
  for (EffectiveMode mode : modes)
    for (const MeasuredSplit& m : g.splits) sizes.push_back(effective_bytes(method, m.split, mode));
  const std::vector<Prediction> p = predict_method(method == kPaperSizes ? "seed" : method, *g.curve, sizes);
  if (p.size() != sizes.size()) return {};
  std::vector<std::vector<Prediction>> out(modes.size());
  for (std::size_t k = 0; k < modes.size(); ++k)
    out[k].assign(p.begin() + static_cast<std::ptrdiff_t>(k * g.splits.size()),
                  p.begin() + static_cast<std::ptrdiff_t>((k + 1) * g.splits.size()));
  return out;
}

// The mode with the lowest GMAE of `errors[mode]` over the entries whose `use` is set; ties to the earlier mode.
std::size_t best_mode(const std::vector<std::vector<double>>& errors, const std::vector<char>& use) {
  std::size_t best = 0;
  double best_g = INFINITY;
  for (std::size_t k = 0; k < errors.size(); ++k) {
    std::vector<double> e;
    for (std::size_t i = 0; i < use.size(); ++i)
      if (use[i]) e.push_back(errors[k][i]);
    const double g = gmae(e);
    if (g < best_g) best_g = g, best = k;
  }
  return best;
}

// RMS of ln(measured / predicted) over the entries whose `use` is set: how far the mode's sizes miss.
double log_rms(const std::vector<std::vector<double>>& log_errors, std::size_t mode, const std::vector<char>& use) {
  double ss = 0;
  int n = 0;
  for (std::size_t i = 0; i < use.size(); ++i)
    if (use[i]) ss += log_errors[mode][i] * log_errors[mode][i], ++n;
  return n ? std::sqrt(ss / n) : 0;
}

// The curve's 90 % interval widened, in quadrature in log space, by the mode's own scatter `sigma`.
void widen(Prediction& p, double sigma) {
  const double extra = kZ90 * sigma;
  auto wider = [&](double bound, double side) {  // side -1: the lower bound, +1: the upper
    const double h = std::log(bound / p.time_us);
    return p.time_us * std::exp(side * std::sqrt(h * h + extra * extra));
  };
  if (p.lo_us > 0 && p.hi_us > p.lo_us) {
    p.lo_us = wider(p.lo_us, -1);
    p.hi_us = wider(p.hi_us, +1);
  } else {
    p.lo_us = p.time_us * std::exp(-extra);
    p.hi_us = p.time_us * std::exp(extra);
  }
}

// arfit's automatic choice of the mode, per system: the mode with the lowest GMAE of auto over the system's
// samples (what `arfit fit` stores), or, with `leave_one_out`, over the system's other samples for each sample
// (max_of_sum, the default `arfit fit` stores without all-to-allv samples, for a system with a single sample).
// Each interval is widened by the chosen mode's scatter on the samples that chose it. Fills `chosen` (per
// system, the mode all of its samples favour) and returns the per-group predictions.
std::vector<detail::CurvePreds> automatic_choice(const std::vector<const SplitGroup*>& groups,
                                               const std::vector<std::vector<detail::CurvePreds>>& auto_rows,
                                               bool leave_one_out, std::map<std::string, std::string>& chosen) {
  const auto& modes = all_effective_modes();
  std::vector<detail::CurvePreds> out(groups.size());
  std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> by_system;  // (group, split)
  for (std::size_t g = 0; g < groups.size(); ++g) {
    out[g].ok = auto_rows[0][g].ok;
    if (!out[g].ok) continue;
    out[g].points.resize(groups[g]->splits.size());
    for (std::size_t i = 0; i < groups[g]->splits.size(); ++i) by_system[groups[g]->key.system].emplace_back(g, i);
  }
  for (const auto& [system, members] : by_system) {
    std::vector<std::vector<double>> errors(modes.size()), log_errors(modes.size());
    for (std::size_t k = 0; k < modes.size(); ++k)
      for (auto [g, i] : members) {
        const EvalPoint& p = auto_rows[k][g].points[i];
        errors[k].push_back(relative_error(p.predicted.time_us, p.measured));
        log_errors[k].push_back(std::log(p.measured / p.predicted.time_us));
      }
    const std::vector<char> all(members.size(), 1);
    chosen[system] = to_string(modes[best_mode(errors, all)]);
    for (std::size_t m = 0; m < members.size(); ++m) {
      std::vector<char> use = all;
      if (leave_one_out) use[m] = 0;
      const bool none = std::find(use.begin(), use.end(), 1) == use.end();
      const std::size_t k = none ? static_cast<std::size_t>(EffectiveMode::MaxOfSum) : best_mode(errors, use);
      auto [g, i] = members[m];
      EvalPoint p = auto_rows[k][g].points[i];
      if (!none) widen(p.predicted, log_rms(log_errors, k, use));
      p.predicted.how += " (mode " + to_string(modes[k]) + ")";
      out[g].points[i] = std::move(p);
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& alltoallv_default_methods() {
  static const std::vector<std::string> v = {"auto", "seed", kPaperSizes};
  return v;
}

void check_alltoallv_methods(const EvalOptions& options) {
  std::vector<std::string> fit_methods;
  for (const std::string& m : options.methods)
    if (m != kPaperSizes) fit_methods.push_back(m);
  detail::check_methods(fit_methods, false);
}

AllToAllvEval eval_alltoallv(const std::vector<Sample>& samples, const EvalOptions& options) {
  check_alltoallv_methods(options);

  AllToAllvEval out;
  out.result.protocol = "alltoallv";
  std::vector<Sample> uniform;
  for (const Sample& s : samples)
    if (s.collective == Collective::AllToAll) uniform.push_back(s);
  CurveOptions co;
  co.group_by = GroupBy::System;
  const std::vector<Curve> curves = build_curves(uniform, co);
  std::vector<SplitGroup> groups = alltoallv_groups(samples);
  if (groups.empty())
    throw std::runtime_error("no all-to-allv samples with splits (arbench --collective alltoallv --splits ...) to evaluate");

  std::vector<const SplitGroup*> predicted;
  std::string reasons;
  for (SplitGroup& g : groups) {
    AllToAllvGroupStatus st;
    st.key = g.key;
    st.samples = static_cast<int>(g.splits.size());
    g.curve = uniform_curve(curves, g.key);
    if (!g.curve) {
      st.problem = "no uniform all-to-all curve of " + g.key.system + " " + g.key.strategy + " on " +
                   std::to_string(g.key.nranks) + " ranks (measure --collective alltoall at that rank count)";
    } else if (static_cast<int>(g.curve->bytes.size()) < kMinCurveSizes) {
      st.problem = "the uniform all-to-all curve " + g.curve->key.id() + " has " + std::to_string(g.curve->bytes.size()) +
                   " sizes (needs " + std::to_string(kMinCurveSizes) + ")";
    } else {
      st.curve = g.curve->key.id();
      predicted.push_back(&g);
    }
    if (!st.problem.empty()) reasons += "\n  " + g.key.id() + ": " + st.problem;
    out.groups.push_back(std::move(st));
  }
  if (predicted.empty()) throw std::runtime_error("no all-to-allv group can be predicted:" + reasons);
  out.result.curves = static_cast<int>(predicted.size());

  const auto& modes = all_effective_modes();
  for (const std::string& method : options.methods) {
    // rows[mode][group]
    std::vector<std::vector<detail::CurvePreds>> rows(modes.size(), std::vector<detail::CurvePreds>(predicted.size()));
    for (std::size_t g = 0; g < predicted.size(); ++g) {
      const SplitGroup& grp = *predicted[g];
      const std::vector<std::vector<Prediction>> p = predict_modes(method, grp);
      for (std::size_t k = 0; k < modes.size() && !p.empty(); ++k) {
        rows[k][g].ok = true;
        for (std::size_t i = 0; i < grp.splits.size(); ++i)
          rows[k][g].points.push_back(
              {grp.key, effective_bytes(method, grp.splits[i].split, modes[k]), grp.splits[i].time_us, p[k][i]});
      }
    }
    if (method == "auto")
      for (const bool leave_one_out : {false, true}) {
        out.result.methods.push_back(detail::summarize(leave_one_out ? "auto-loo" : "auto",
                                                       automatic_choice(predicted, rows, leave_one_out, out.chosen_mode),
                                                       options.keep_points));
      }
    for (std::size_t k = 0; k < modes.size(); ++k) {
      out.result.methods.push_back(detail::summarize(row_name(method, modes[k]), rows[k], options.keep_points));
    }
  }
  return out;
}

nlohmann::json AllToAllvEval::to_json() const {
  nlohmann::json j = result.to_json();
  nlohmann::json gs = nlohmann::json::array();
  for (const auto& g : groups) {
    nlohmann::json e = {{"group", g.key.id()}, {"samples", g.samples}};
    if (g.problem.empty()) {
      e["curve"] = g.curve;
      e["status"] = "predicted";
    } else {
      e["status"] = "left out: " + g.problem;
    }
    gs.push_back(e);
  }
  j["groups"] = gs;
  j["chosen_mode"] = chosen_mode;
  return j;
}

std::string AllToAllvEval::to_table() const {
  std::ostringstream o;
  o << result.to_table();
  o << "all-to-allv groups:\n";
  for (const auto& g : groups) {
    o << "  " << g.key.id() << ": " << g.samples << " splits";
    if (g.problem.empty())
      o << ", predicted from " << g.curve << "\n";
    else
      o << ", left out: " << g.problem << "\n";
  }
  for (const auto& [system, mode] : chosen_mode)
    o << "chosen mode (lowest auto GMAE over all samples) for " << system << ": " << mode << "\n";
  return o.str();
}

}  // namespace arfit::fit

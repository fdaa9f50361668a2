#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "fit/family_fit.h"
#include "fit/fit.h"
#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/interp.h"
#include "model/metrics.h"
#include "model/text.h"

namespace arfit::fit {
namespace {

// Spline rule of the residual correction (see model/interp.h); chosen on the public data (docs/fit.md).
constexpr SplineKind kCorrectionSpline = SplineKind::Additive;
// Floor of the in-range residual scale: the repeatability of a measurement (~1.6 % GMAE noise floor).
constexpr double kSigmaInFloor = 0.01;

std::vector<FamilySpec> candidates(const std::string& family) {
  if (family == "auto")
    // sigmoid is left out of auto: on the public curves it never beat satbw/regimes by enough to pay for its
    // cost (its fits are the slowest). regimes3 left too once the additive correction carried the shape between
    // measured sizes: every protocol's figure stayed the same to the printed digit without it, at half the
    // fitting time (docs/fit.md). Both stay available by name.
    return {parse_family("alphabeta"), parse_family("satbw"), parse_family("regimes2")};
  if (family == "regimes")
    return {parse_family("regimes1"), parse_family("regimes2"), parse_family("regimes3"), parse_family("regimes4")};
  return {parse_family(family)};
}

struct Evaluated {
  FamilySpec spec;
  FamilyFitResult fit;
  SeedModel seed;
  double cv = std::numeric_limits<double>::infinity();
  std::vector<double> cv_log_errors;
};

// ln t at s of the piece that holds at `at` (GroupModel::model_log_time_on_piece, for the correction's knots).
double log_model_on_piece(const FamilySpec& spec, const std::vector<double>& p, const SeedModel& seed, double s, double at,
                          double f) {
  if (spec.kind == FamilyKind::Seed) return std::log(seed.piece_time_us(seed.piece(at), s, f));
  return family_log_time(spec, p, s, f);
}

double log_model(const FamilySpec& spec, const std::vector<double>& p, const SeedModel& seed, double s, double f) {
  return log_model_on_piece(spec, p, seed, s, s, f);
}

// Knots at every size but the spikes (spike_indices(t), ascending), which the correction interpolates across.
HermiteSpline correction_spline(const FamilySpec& spec, const std::vector<double>& p, const SeedModel& seed,
                                const std::vector<double>& s, const std::vector<double>& t, double f,
                                const std::vector<size_t>& spikes) {
  std::vector<double> x, y;
  for (size_t i = 0, k = 0; i < s.size(); ++i) {
    if (k < spikes.size() && spikes[k] == i) {
      ++k;
      continue;
    }
    x.push_back(std::log(s[i]));
    y.push_back(std::log(t[i]) - log_model(spec, p, seed, s[i], f));
  }
  return HermiteSpline(std::move(x), std::move(y), kCorrectionSpline);
}

// Interleaved folds over the interior sizes: the ends always stay in the training set, so the CV error
// measures interpolation between measured sizes, which is what the residual correction is used for.
void cross_validate(Evaluated& e, const std::vector<double>& s, const std::vector<double>& t, double f, bool correction) {
  const size_t n = s.size();
  const size_t folds = n >= 12 ? 4 : (n >= 6 ? 3 : 2);
  std::vector<double> errs;
  for (size_t k = 0; k < folds; ++k) {
    std::vector<double> ts, tt, hs, ht;
    for (size_t i = 0; i < n; ++i) {
      const bool held = i > 0 && i + 1 < n && (i - 1) % folds == k;
      (held ? hs : ts).push_back(s[i]);
      (held ? ht : tt).push_back(t[i]);
    }
    if (hs.empty() || ts.size() < 3) continue;
    std::vector<double> p;
    SeedModel seed;
    if (e.spec.kind == FamilyKind::Seed) {
      seed = fit_seed(ts, tt, f);
    } else {
      // Started from the fold's own data (never from the full fit, which has seen the held-out sizes: with
      // few sizes a warm start would leak them into the CV error).
      FamilyFitConfig cfg;
      cfg.max_iterations = 40;
      const auto starts = start_points(e.spec, ts, tt, f);
      p = fit_family(e.spec, ts, tt, f, cfg, {starts.front()}).params;
    }
    HermiteSpline sp;
    if (correction) sp = correction_spline(e.spec, p, seed, ts, tt, f, spike_indices(tt));
    const std::vector<double> steps = e.spec.kind == FamilyKind::Seed ? seed.step_log_bytes() : std::vector<double>{};
    for (size_t i = 0; i < hs.size(); ++i) {
      double lt = log_model(e.spec, p, seed, hs[i], f);
      if (correction)
        lt = sp.corrected(std::log(hs[i]), lt, [&](double x, double at) {
          return log_model_on_piece(e.spec, p, seed, knot_bytes(x), knot_bytes(at), f);
        }, steps);
      errs.push_back(lt - std::log(ht[i]));
    }
  }
  e.cv_log_errors = errs;
  std::vector<double> rel;
  for (double d : errs) rel.push_back(std::fabs(std::exp(d) - 1));
  e.cv = rel.empty() ? 0.0 : gmae(rel);
}

std::string check_curve(const Curve& c, int min_points) {
  const size_t n = c.bytes.size();
  if (c.time_us.size() != n) return "sizes and times differ in length";
  for (size_t i = 0; i < n; ++i) {
    if (!(c.bytes[i] > 0) || !std::isfinite(c.bytes[i])) return "size " + std::to_string(c.bytes[i]) + " is not positive";
    if (!(c.time_us[i] > 0) || !std::isfinite(c.time_us[i]))
      return "time at " + std::to_string(static_cast<long long>(c.bytes[i])) + " bytes is not positive";
    if (i > 0 && !(c.bytes[i] > c.bytes[i - 1])) return "sizes are not strictly increasing";
  }
  if (static_cast<int>(n) < min_points)
    return "too few distinct sizes: " + std::to_string(n) + " (need >= " + std::to_string(min_points) + ")";
  if (c.key.nranks < 1) return "nranks " + std::to_string(c.key.nranks) + " is not a rank count";
  // Latency never falls much as the message grows; a curve that does is not a latency curve.
  int drops = 0;
  for (size_t i = 1; i < n; ++i)
    if (c.time_us[i] < 0.7 * c.time_us[i - 1]) ++drops;
  if (drops * 4 > static_cast<int>(n - 1))
    return "not a latency curve: time falls by > 30 % between consecutive sizes at " + std::to_string(drops) + " of " +
           std::to_string(n - 1) + " steps (more than a quarter)";
  // A slow fall (a few % a step) is not a drop, but over the whole curve it is not latency either.
  if (c.time_us.back() < 0.5 * c.time_us.front())
    return "not a latency curve: time falls from " + format_number(c.time_us.front(), "%.4g") + " us at " +
           format_number(c.bytes.front(), "%.0f") + " bytes to " + format_number(c.time_us.back(), "%.4g") + " us at " +
           format_number(c.bytes.back(), "%.0f") + " bytes (to less than half)";
  return "";
}

struct TailLine {
  double a_us = 0, b_us_per_byte = 0;
};

// t = a + b·s through the top three sizes (least squares); falls back to the top two, then to a flat line,
// so that time never decreases with size.
TailLine fit_tail(const std::vector<double>& s, const std::vector<double>& t) {
  const size_t n = s.size();
  TailLine L;
  L.a_us = t.back();
  for (size_t k : {size_t{3}, size_t{2}}) {
    if (n < k) continue;
    double ms = 0, mt = 0;
    for (size_t i = n - k; i < n; ++i) {
      ms += s[i];
      mt += t[i];
    }
    ms /= k;
    mt /= k;
    double sst = 0, ss = 0;
    for (size_t i = n - k; i < n; ++i) {
      sst += (s[i] - ms) * (t[i] - mt);
      ss += (s[i] - ms) * (s[i] - ms);
    }
    const double b = ss > 0 ? sst / ss : 0;
    if (b > 0) {
      L.b_us_per_byte = b;
      L.a_us = mt - b * ms;
      // keep the line positive at the last size
      if (L.a_us + b * s.back() <= 0) continue;
      return L;
    }
  }
  L.a_us = t.back();
  L.b_us_per_byte = 0;
  return L;
}

nlohmann::json matrix_json(const std::vector<double>& c, size_t np) {
  if (c.size() != np * np) return nullptr;
  nlohmann::json m = nlohmann::json::array();
  for (size_t a = 0; a < np; ++a) {
    nlohmann::json row = nlohmann::json::array();
    for (size_t b = 0; b < np; ++b) row.push_back(c[a * np + b]);
    m.push_back(row);
  }
  return m;
}


// The curve's failure recorded in both the result and its model JSON.
GroupFit failed_fit(GroupFit out, const std::string& problem, const nlohmann::json& range) {
  out.problem = problem;
  out.model["ok"] = false;
  out.model["problem"] = problem;
  if (!range.is_null()) out.model["range"] = range;
  return out;
}

// Every candidate family fitted and (when there is a choice, or a correction to judge) cross-validated.
std::vector<Evaluated> evaluate_candidates(const std::vector<FamilySpec>& cands, const std::vector<double>& s,
                                           const std::vector<double>& t, double f, bool residual_correction) {
  std::vector<Evaluated> evs;
  for (const FamilySpec& spec : cands) {
    // A family needs at least two sizes per parameter to be judged (unless it was asked for by name).
    if (cands.size() > 1 && spec != cands.front() && 2 * spec.num_params() > static_cast<int>(s.size())) continue;
    Evaluated e;
    e.spec = spec;
    if (spec.kind == FamilyKind::Seed) {
      e.seed = fit_seed(s, t, f);
      e.fit.spec = spec;
      e.fit.params = {e.seed.L, e.seed.x0, e.seed.k, e.seed.b};
      e.fit.converged = true;
    } else {
      e.fit = fit_family(spec, s, t, f);
    }
    if (cands.size() > 1 || residual_correction) cross_validate(e, s, t, f, residual_correction);
    evs.push_back(std::move(e));
  }
  return evs;
}

// The candidate with the lowest cross-validated error, refitted from its own parameters with its covariance.
Evaluated& choose_and_refit(std::vector<Evaluated>& evs, const std::vector<double>& s, const std::vector<double>& t,
                            double f) {
  size_t best = 0;
  for (size_t i = 1; i < evs.size(); ++i)
    if (evs[i].cv < evs[best].cv) best = i;
  Evaluated& e = evs[best];
  if (e.spec.kind != FamilyKind::Seed) {
    FamilyFitConfig cfg;
    cfg.covariance = true;
    FamilyFitResult fin = fit_family(e.spec, s, t, f, cfg, {e.fit.params});
    fin.starts = e.fit.starts + 1;
    e.fit = fin;
  }
  return e;
}

// In-range residual scale: RMS of the cross-validated log errors (model + correction refitted without the
// held-out sizes), floored at the measurement noise. On the public curves the 90 % intervals built from it
// cover 85-95 % of held-out sizes (docs/fit.md).
double in_range_sigma(const Evaluated& e) {
  if (e.cv_log_errors.empty()) return kSigmaInFloor;
  double ss = 0;
  for (double d : e.cv_log_errors) ss += d * d;
  return std::max(kSigmaInFloor, std::sqrt(ss / e.cv_log_errors.size()));
}

// The tail rule's uncertainty per octave beyond the range: backtest the same rule on the sizes up to a quarter
// of the largest, predicting the top ones.
double tail_sigma_per_octave(const std::vector<double>& s, const std::vector<double>& t) {
  const size_t n = s.size();
  std::vector<double> ts, tt;
  for (size_t i = 0; i < n; ++i)
    if (s[i] <= s.back() / 4) {
      ts.push_back(s[i]);
      tt.push_back(t[i]);
    }
  if (ts.size() < 3 || ts.size() >= n) return 0.05;
  const TailLine bt = fit_tail(ts, tt);
  double acc = 0;
  int cnt = 0;
  for (size_t i = ts.size(); i < n; ++i) {
    const double oct = std::log2(s[i] / ts.back());
    const double d = std::log(bt.a_us + bt.b_us_per_byte * s[i]) - std::log(t[i]);
    acc += (d / oct) * (d / oct);
    ++cnt;
  }
  return cnt ? std::max(0.02, std::sqrt(acc / cnt)) : 0.05;
}

// The residual-correction spline of the chosen family, with the spikes it set aside.
nlohmann::json correction_json(const Evaluated& e, const std::vector<double>& s, const std::vector<double>& t,
                               double f) {
  const std::vector<size_t> spikes = spike_indices(t);
  HermiteSpline sp = correction_spline(e.spec, e.fit.params, e.seed, s, t, f, spikes);
  // The spikes' own residuals are kept too: the correction does not use them, but a new machine borrowing
  // this curve's shape (fit/transfer.h) wants what was measured, interference and warm-up included.
  std::vector<double> spike_bytes, spike_resid;
  for (size_t i : spikes) {
    spike_bytes.push_back(s[i]);
    spike_resid.push_back(std::log(t[i]) - log_model(e.spec, e.fit.params, e.seed, s[i], f));
  }
  return {{"kind", to_string(sp.kind())},
          {"log_bytes", sp.x()},
          {"log_resid", sp.y()},
          {"spike_bytes", spike_bytes},
          {"spike_log_resid", spike_resid}};
}

// Shapes: does the hidden size matter at equal bytes? Median log residual of each hidden size's points
// against the group's prediction (which depends on bytes only); it matters when some hidden size sits
// consistently further off than twice the measurement noise.
void add_hidden_residuals(const Curve& c, const nlohmann::json& model, nlohmann::json& diag) {
  const GroupModel gm = GroupModel::from_json(model);
  nlohmann::json per = nlohmann::json::object();
  bool matters = false;
  for (std::int64_t h : c.hidden) {
    std::vector<double> r;
    for (const auto& sp : c.shape_points)
      if (sp.hidden == h) r.push_back(std::log(sp.time_us) - std::log(gm.predict(sp.bytes).time_us));
    if (r.empty()) continue;
    std::sort(r.begin(), r.end());
    const double med = r[r.size() / 2];
    per[std::to_string(h)] = {{"median_log_residual", med}, {"points", r.size()}};
    matters = matters || std::fabs(med) > 2 * kSigmaInFloor;
  }
  diag["hidden_residuals"] = per;
  diag["hidden_matters"] = matters;
}

// The chosen fit's solver diagnostics, and the hidden sizes' residuals where the curve has several.
nlohmann::json diagnostics_json(const Curve& c, const Evaluated& e, const nlohmann::json& model) {
  nlohmann::json diag;
  diag["converged"] = e.fit.converged;
  diag["iterations"] = e.fit.iterations;
  diag["starts"] = e.fit.starts;
  diag["cost"] = e.fit.cost;
  diag["rms_log_residual"] = e.fit.rms;
  diag["message"] = e.fit.message;
  diag["huber_scale"] = kHuberScale;
  if (c.hidden.size() >= 2) add_hidden_residuals(c, model, diag);
  return diag;
}

// The model JSON's fields describing the chosen family, its parameters and the candidates' scores.
void write_chosen_family(nlohmann::json& j, const Evaluated& e, const std::vector<Evaluated>& evs, double f) {
  j["ok"] = true;
  j["family"] = e.spec.name();
  j["params"] = e.fit.params;
  j["param_names"] = e.spec.param_names();
  j["covariance"] = matrix_json(e.fit.covariance, e.fit.params.size());
  if (e.spec.kind == FamilyKind::Seed) j["seed"] = e.seed.to_json();
  j["bus_factor"] = f;
  j["cv_gmae"] = e.cv;
  nlohmann::json cvs = nlohmann::json::object();
  for (const auto& ev : evs) cvs[ev.spec.name()] = std::isfinite(ev.cv) ? nlohmann::json(ev.cv) : nlohmann::json(nullptr);
  j["cv"] = cvs;
}

}  // namespace

GroupFit fit_curve(const Curve& c, const FitOptions& options) {
  GroupFit out;
  out.key = c.key;
  out.model["id"] = c.key.id();
  out.model["key"] = group_key_to_json(c.key);
  const std::string problem = check_curve(c, std::max(options.min_points, 2));
  if (!problem.empty()) return failed_fit(std::move(out), problem, {{"points", c.bytes.size()}});
  const std::vector<double>& s = c.bytes;
  const std::vector<double>& t = c.time_us;
  double f = bus_factor(c.key.collective, c.key.nranks);
  if (!(f > 0)) f = 1.0;  // one rank: no traffic, keep the size term in plain bytes

  std::vector<FamilySpec> cands;
  try {
    cands = candidates(options.family);
  } catch (const std::exception& e) {
    return failed_fit(std::move(out), e.what(), nullptr);
  }
  std::vector<Evaluated> evs = evaluate_candidates(cands, s, t, f, options.residual_correction);
  const Evaluated& e = choose_and_refit(evs, s, t, f);

  out.ok = true;
  out.family = e.spec.name();
  out.cv_gmae = e.cv;
  nlohmann::json& j = out.model;
  write_chosen_family(j, e, evs, f);
  j["correction"] = options.residual_correction ? correction_json(e, s, t, f) : nlohmann::json(nullptr);
  // Above the measured range the prediction follows the tail regime: the α-β line through the top three
  // sizes (least squares), i.e. the marginal bus bandwidth of the largest messages. On the public curves this
  // extrapolates far better than any global family (extrap protocol: 4.2 % GMAE vs 7-26 %, docs/fit.md).
  if (options.tail) {
    const TailLine tail = fit_tail(s, t);
    j["tail"] = {{"a_us", tail.a_us}, {"b_us_per_byte", tail.b_us_per_byte}};
  } else {
    j["tail"] = nullptr;
  }
  j["range"] = {{"min_bytes", s.front()}, {"max_bytes", s.back()}, {"points", s.size()}};
  j["sm"] = c.sm;
  j["device"] = c.device;
  if (!c.network.empty()) j["network"] = c.network;
  j["sources"] = c.sources;
  j["interval"] = {{"z", kZ90},
                   {"sigma_in", in_range_sigma(e)},
                   {"sigma_floor", kSigmaInFloor},
                   {"sigma_out_per_octave", tail_sigma_per_octave(s, t)}};
  j["diagnostics"] = diagnostics_json(c, e, j);
  return out;
}

GroupFit fit_group(const std::vector<Sample>& samples, const FitOptions& options) {
  const std::vector<Curve> curves = build_curves(samples);
  if (curves.empty()) {
    GroupFit g;
    g.problem = "no usable samples (all failed, or sizes/times not positive)";
    g.model = {{"ok", false}, {"problem", g.problem}};
    return g;
  }
  return fit_curve(curves.front(), options);
}

Prediction predict_group(const nlohmann::json& group_model, double bytes) {
  return GroupModel::from_json(group_model).predict(bytes);
}

std::vector<size_t> spike_indices(const std::vector<double>& time_us) {
  std::vector<size_t> out;
  const size_t n = time_us.size();
  if (n >= 3 && time_us[0] > (1 + kSpikeRise) * std::max(time_us[1], time_us[2])) out.push_back(0);
  for (size_t i = 1; i + 1 < n; ++i)
    if (time_us[i] > (1 + kSpikeRise) * std::max(time_us[i - 1], time_us[i + 1])) out.push_back(i);
  return out;
}

}  // namespace arfit::fit

#include "planner/estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "codegen/table.h"
#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/metrics.h"

namespace arfit::planner {
namespace {

constexpr double kZ90 = 1.6448536269514722;  // the 90 % interval's half-width in σ
constexpr double kOneSided90 = 1.2815515655446004;  // 90 % of a normal lies below mean + this many σ

// The first two moments of max(0, −d) for d ~ N(mean, sd²): expected_shortfall and
// E[max(0, −d)²] = (mean² + sd²)·Φ(−mean/sd) − mean·sd·φ(mean/sd).
void shortfall_moments(double mean, double sd, double& first, double& second) {
  first = codegen::expected_shortfall(mean, sd);
  if (!(sd > 0)) {
    second = first * first;
    return;
  }
  const double z = mean / sd;
  const double phi = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
  const double Phi_neg = 0.5 * std::erfc(z / std::sqrt(2.0));
  second = std::max(first * first, (mean * mean + sd * sd) * Phi_neg - mean * sd * phi);
}

// The same when the chosen case's time may be a spike (SpikeRisk): the mixture over no spike and each rise.
void spiked_moments(double mean, double sd, const SpikeRisk& risk, double& first, double& second) {
  shortfall_moments(mean, sd, first, second);
  if (!(risk.rate > 0) || risk.rises.empty()) return;
  double f = 0, s2 = 0;
  for (double rise : risk.rises) {
    double a, b;
    shortfall_moments(mean - rise, sd, a, b);
    f += a, s2 += b;
  }
  const double n = static_cast<double>(risk.rises.size());
  first = (1 - risk.rate) * first + risk.rate * f / n;
  second = (1 - risk.rate) * second + risk.rate * s2 / n;
}

// A curve's distinct sizes in grid order and the median measured time at each (0 where none is measured or every
// case there failed).
void curve_grid(const TargetTable& table, const Measurements& m, int curve, std::vector<double>& sizes,
                std::vector<double>& times) {
  sizes.clear();
  times.clear();
  std::vector<double> at;
  const auto flush = [&] { times.push_back(at.empty() ? 0.0 : size_median(at)); };
  for (int k : table.curve_cases(curve)) {
    const double b = table.cases()[static_cast<std::size_t>(k)].bytes;
    if (sizes.empty() || sizes.back() != b) {
      if (!sizes.empty()) flush();
      sizes.push_back(b);
      at.clear();
    }
    if (m.measured(k) && !m.failed(k)) at.push_back(m.time_us[static_cast<std::size_t>(k)]);
  }
  if (!sizes.empty()) flush();
}

// The measured cases their curves' models set aside: at the sizes fit::spike_indices finds among each curve's
// measured sizes (its rule on the times in size order).
std::vector<bool> spike_cases(const TargetTable& table, const Measurements& m) {
  std::vector<bool> out(table.size(), false);
  std::vector<double> sizes, times;
  for (std::size_t c = 0; c < table.curves(); ++c) {
    curve_grid(table, m, static_cast<int>(c), sizes, times);
    std::vector<double> measured_sizes, measured_times;
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (times[i] > 0) measured_sizes.push_back(sizes[i]), measured_times.push_back(times[i]);
    for (std::size_t i : fit::spike_indices(measured_times))
      for (int k : table.curve_cases(static_cast<int>(c)))
        if (m.measured(k) && table.cases()[static_cast<std::size_t>(k)].bytes == measured_sizes[i])
          out[static_cast<std::size_t>(k)] = true;
  }
  return out;
}

// The sample a measured case is, as arbench writes it (the fit groups by Sample::extra["system"]).
Sample sample_of(const PlanCase& c, double time_us) {
  Sample s;
  s.collective = c.curve.collective;
  s.strategy = c.curve.strategy;
  s.fusion = c.curve.fusion;
  s.dtype = c.curve.dtype;
  s.nranks = c.curve.nranks;
  s.nnodes = c.curve.nnodes;
  s.bytes = c.bytes;
  s.tokens = c.tokens;
  s.hidden = c.hidden;
  s.time_us = time_us;
  s.source = "adaptive";
  s.extra["system"] = c.curve.system;
  return s;
}

// The fitted (or transferred) models of the measured cases, as `arfit fit` would write them. Joint fits across GPU
// counts are left out: every case is asked at its own count.
ModelSet fit_measured(const TargetTable& table, const Measurements& m, const std::vector<bool>& spikes,
                      const EstimateOptions& options) {
  std::vector<Sample> samples;
  for (std::size_t k = 0; k < table.size(); ++k)
    if (m.measured(static_cast<int>(k)) && !m.failed(static_cast<int>(k)) && !spikes[k])
      samples.push_back(sample_of(table.cases()[k], m.time_us[k]));
  fit::FitOptions fo;
  fo.joint_n = false;
  fo.prior = options.prior;
  fo.threads = options.threads;
  return fit::fit_model_set(samples, fo);
}

// The α-β line t = α + b·s through measured sizes (x = ln s, y = ln t), least squares in relative error, α and b
// kept non-negative; false when it has no positive time anywhere.
bool alpha_beta(const std::vector<double>& x, const std::vector<double>& y, double& alpha, double& b) {
  // Minimise Σ ((α + b s_i − t_i) / t_i)²: linear in (α, b) with rows (1/t_i, s_i/t_i) and target 1.
  double a11 = 0, a12 = 0, a22 = 0, r1 = 0, r2 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = std::exp(-y[i]), v = std::exp(x[i] - y[i]);
    a11 += u * u, a12 += u * v, a22 += v * v, r1 += u, r2 += v;
  }
  const double det = a11 * a22 - a12 * a12;
  alpha = det > 0 ? (r1 * a22 - r2 * a12) / det : 0;
  b = det > 0 ? (a11 * r2 - a12 * r1) / det : 0;
  if (!(alpha >= 0 && b >= 0)) {
    // One term alone: the better of a pure latency and a pure bandwidth line.
    const double alpha_only = r1 / a11, b_only = r2 / a22;
    const double e_alpha = x.size() - 2 * alpha_only * r1 + alpha_only * alpha_only * a11;
    const double e_b = x.size() - 2 * b_only * r2 + b_only * b_only * a22;
    alpha = e_alpha <= e_b ? alpha_only : 0;
    b = e_alpha <= e_b ? 0 : b_only;
  }
  return alpha + b > 0;
}

// A curve's measured sizes for the fallback (its spikes set aside): ln bytes ascending, ln of the median time at each.
void measured_points(const TargetTable& table, const Measurements& m, const std::vector<bool>& spikes, int curve,
                     std::vector<double>& x, std::vector<double>& y) {
  std::map<double, std::vector<double>> by_size;
  for (int k : table.curve_cases(curve))
    if (m.measured(k) && !m.failed(k) && !spikes[static_cast<std::size_t>(k)]) by_size[table.cases()[static_cast<std::size_t>(k)].bytes].push_back(m.time_us[static_cast<std::size_t>(k)]);
  x.clear();
  y.clear();
  for (auto& [bytes, times] : by_size) {
    x.push_back(std::log(bytes));
    y.push_back(std::log(size_median(times)));
  }
}

}  // namespace

CaseEstimate fallback_estimate(const std::vector<double>& x, const std::vector<double>& y, double at,
                               const FallbackRule& rule) {
  CaseEstimate e;
  const std::size_t n = x.size();
  // The physical bounds (ln t): monotone and subadditive from the measured sizes around `at`.
  double lo, hi;
  std::size_t i = 0;  // at lies between x[i] and x[i + 1] (in range)
  if (at <= x[0]) {
    lo = y[0] + (at - x[0]), hi = y[0];
  } else if (at >= x[n - 1]) {
    lo = y[n - 1], hi = y[n - 1] + (at - x[n - 1]);
  } else {
    i = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), at) - x.begin()) - 1;
    lo = std::max(y[i], y[i + 1] + (at - x[i + 1]));
    hi = std::min(y[i + 1], y[i] + (at - x[i]));
    if (lo > hi) std::swap(lo, hi);  // measured times that fall with the size (a dip): the bounds cross
  }
  double alpha = 0, b = 0;
  if (n >= 2 && alpha_beta(x, y, alpha, b)) {
    const auto line = [&](double ln_s) { return std::log(alpha + b * std::exp(ln_s)); };
    // The line's log residuals at the measured sizes, interpolated between them and held beyond.
    double resid;
    if (at <= x[0]) resid = y[0] - line(x[0]);
    else if (at >= x[n - 1]) resid = y[n - 1] - line(x[n - 1]);
    else {
      const double w = (at - x[i]) / (x[i + 1] - x[i]);
      resid = (1 - w) * (y[i] - line(x[i])) + w * (y[i + 1] - line(x[i + 1]));
    }
    e.log_us = line(at) + resid;
  } else {
    e.log_us = 0.5 * (lo + hi);  // one size: slope 1/2, the middle of the bounds
  }
  e.log_us = std::clamp(e.log_us, lo, hi);
  e.sigma = std::max(rule.floor, 0.5 * (hi - lo) / kZ90);
  return e;
}

std::vector<CaseEstimate> estimate_cases(const TargetTable& table, const Measurements& m, const EstimateOptions& options) {
  std::vector<CaseEstimate> out(table.size());
  const std::vector<bool> spikes = spike_cases(table, m);
  const ModelSet models = fit_measured(table, m, spikes, options);
  std::set<std::string> fitted;
  for (const GroupModelView& g : models.groups()) fitted.insert(g.key.id());
  std::vector<double> x, y;
  for (std::size_t c = 0; c < table.curves(); ++c) {
    const std::vector<int>& members = table.curve_cases(static_cast<int>(c));
    const GroupKey& key = table.cases()[static_cast<std::size_t>(members.front())].curve;
    const bool has_model = fitted.count(key.id()) > 0;
    measured_points(table, m, spikes, static_cast<int>(c), x, y);
    for (int k : members) {
      CaseEstimate& e = out[static_cast<std::size_t>(k)];
      const PlanCase& pc = table.cases()[static_cast<std::size_t>(k)];
      if (m.measured(k)) {
        e.measured = true;
        e.spike = spikes[static_cast<std::size_t>(k)];
        e.failed = m.failed(k);
        e.log_us = e.failed ? 0 : std::log(m.time_us[static_cast<std::size_t>(k)]);
        continue;
      }
      std::optional<Prediction> p;
      if (has_model) {
        PredictQuery q = group_query(key, pc.bytes);
        q.tokens = pc.tokens;
        q.hidden = pc.hidden;
        p = models.predict(q);
      }
      if (p && p->time_us > 0 && std::isfinite(p->time_us)) {
        e.log_us = std::log(p->time_us);
        e.sigma = codegen::log_sigma(*p);
        e.fitted = true;
      } else if (!x.empty()) {
        e = fallback_estimate(x, y, std::log(pc.bytes), options.fallback);
      } else {
        e.log_us = std::numeric_limits<double>::quiet_NaN();  // nothing known: the cell's other candidates decide
      }
    }
  }
  // A curve with nothing measured yet: each case takes the mean of its cells' known candidates, and a factor e of
  // uncertainty either way (nothing says which side of them it lies).
  for (std::size_t k = 0; k < table.size(); ++k) {
    CaseEstimate& e = out[k];
    if (!std::isnan(e.log_us)) continue;
    double sum = 0;
    int n = 0;
    for (int cell : table.cells_of(static_cast<int>(k)))
      for (int o : table.cells()[static_cast<std::size_t>(cell)]) {
        const CaseEstimate& other = out[static_cast<std::size_t>(o)];
        if (!std::isnan(other.log_us) && !other.failed) sum += other.log_us, ++n;
      }
    e.log_us = n ? sum / n : std::log(table.cases()[k].bytes) - std::log(1e3);  // 1 GB/s when nothing is known
    e.sigma = 1.0;
  }
  return out;
}

SpikeRisk spike_risk(const TargetTable& table, const Measurements& m) {
  SpikeRisk r;
  std::vector<double> sizes, t;
  const auto test = [&](double at, double a, double b) {
    ++r.tested;
    const double rise = std::log(at / std::max(a, b));
    if (rise > std::log1p(fit::kSpikeRise)) ++r.spikes, r.rises.push_back(rise);
  };
  for (std::size_t c = 0; c < table.curves(); ++c) {
    curve_grid(table, m, static_cast<int>(c), sizes, t);
    if (t.size() >= 3 && t[0] > 0 && t[1] > 0 && t[2] > 0) test(t[0], t[1], t[2]);
    for (std::size_t i = 1; i + 1 < t.size(); ++i)
      if (t[i - 1] > 0 && t[i] > 0 && t[i + 1] > 0) test(t[i], t[i - 1], t[i + 1]);
  }
  if (r.rises.empty()) return r;
  // The rate's posterior mean under a uniform prior (a few spikes in few tests are no certainty either way).
  r.rate = (r.spikes + 1.0) / (r.tested + 2.0);
  std::sort(r.rises.begin(), r.rises.end());
  if (r.rises.size() > SpikeRisk::kMaxRises) {
    // Evenly spaced quantiles: the mixture's cost stays bounded on a large table.
    std::vector<double> q;
    for (std::size_t i = 0; i < SpikeRisk::kMaxRises; ++i)
      q.push_back(r.rises[(2 * i + 1) * r.rises.size() / (2 * SpikeRisk::kMaxRises)]);
    r.rises = std::move(q);
  }
  return r;
}

double Assessment::expected_geomean_regret() const { return std::expm1(mean_expected_regret); }

double Assessment::geomean_regret_bound() const { return std::expm1(mean_expected_regret + kOneSided90 * mean_regret_sd); }

int Assessment::worst_cell() const {
  int worst = -1;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (worst < 0 || cells[i].expected_regret > cells[static_cast<std::size_t>(worst)].expected_regret) worst = static_cast<int>(i);
  return worst;
}

Assessment assess(const TargetTable& table, const std::vector<CaseEstimate>& est, const SpikeRisk& risk) {
  Assessment a;
  a.cells.resize(table.cells().size());
  double sum = 0, var = 0;
  std::map<std::vector<int>, double> sd_of_curves;
  for (std::size_t i = 0; i < table.cells().size(); ++i) {
    CellAssessment& ca = a.cells[i];
    const std::vector<int>& cands = table.cells()[i];
    // The fastest estimate wins (the earlier candidate on an exact tie), as in codegen's table.
    for (int k : cands)
      if (!est[static_cast<std::size_t>(k)].failed &&
          (ca.choice < 0 || est[static_cast<std::size_t>(k)].log_us < est[static_cast<std::size_t>(ca.choice)].log_us))
        ca.choice = k;
    if (ca.choice < 0) continue;
    const CaseEstimate& c = est[static_cast<std::size_t>(ca.choice)];
    double runner_gap = std::numeric_limits<double>::infinity(), runner_sigma = 0;
    for (int k : cands) {
      const CaseEstimate& o = est[static_cast<std::size_t>(k)];
      if (k == ca.choice || o.failed) continue;
      const double gap = o.log_us - c.log_us;
      const double sd = std::hypot(c.sigma, o.sigma);
      double first, second;
      if (c.measured) shortfall_moments(gap, sd, first, second);
      else spiked_moments(gap, sd, risk, first, second);
      ca.expected_regret += first;
      ca.regret_variance += std::max(0.0, second - first * first);
      if (gap < runner_gap) runner_gap = gap, runner_sigma = o.sigma;
    }
    ca.uncertain = std::isfinite(runner_gap) && runner_gap <= kZ90 * (c.sigma + runner_sigma);
    a.uncertain_cells += ca.uncertain;
    sum += ca.expected_regret;
    // The cells of one set of competing curves err together (one curve's model error moves all of them): their
    // standard deviations add within the set, the sets' variances add across.
    std::vector<int> curves;
    for (int k : cands) curves.push_back(table.curve_of(k));
    std::sort(curves.begin(), curves.end());
    sd_of_curves[curves] += std::sqrt(ca.regret_variance);
  }
  for (const auto& [curves, sd] : sd_of_curves) var += sd * sd;
  const double n = static_cast<double>(a.cells.size());
  a.mean_expected_regret = a.cells.empty() ? 0 : sum / n;
  a.mean_regret_sd = a.cells.empty() ? 0 : std::sqrt(var) / n;
  return a;
}

}  // namespace arfit::planner

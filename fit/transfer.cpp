#include "fit/transfer.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "model/anchors.h"
#include "model/interp.h"
#include "model/metrics.h"
#include "model/sm_targets.h"

namespace arfit::fit {
namespace {

constexpr double kLn2 = 0.69314718055994531;
// Table of a source: 8 points per octave, reaching 12 octaves beyond its measured range (a size scale b
// moves the target's sizes by up to |v| <= kScaleSearch in ln s, ~7 octaves).
constexpr double kTableStep = kLn2 / 8;
constexpr double kTableMargin = 12 * kLn2;
// Noise of one anchor (σ of ln t): the repeatability of a measurement, the in-range floor of a fit.
constexpr double kAnchorSigma = 0.01;
// Prior σ of the size scale ln b where anchors judge the sources (fit_map).
constexpr double kSizeScaleSigma = 0.03;
// Search range and step of the size scale ln b (and of the own line's ln crossover around the anchors).
constexpr double kScaleSearch = 5.0;
constexpr double kSearchStep = 0.05;
// Grid of a transferred group: at most this many sizes per octave (dense sources are thinned).
constexpr double kGridPerOctave = 8;
constexpr double kMadToSigma = 1.4826;

// The mean gap between ascending anchors (ln bytes, K >= 2): the unit of the random walk the leave-one-out
// errors, the per-size weights and the interval are measured in.
double mean_anchor_gap(const std::vector<double>& a) { return (a.back() - a.front()) / (a.size() - 1); }

// Minimum of f over [lo, hi]: a scan at `step` (the objective has local minima where a switch of the source
// crosses an anchor), then golden-section refinement around the best scan point (first on ties).
template <typename F>
double minimize_1d(const F& f, double lo, double hi, double step) {
  double best_x = lo, best_f = std::numeric_limits<double>::infinity();
  for (double x = lo; x <= hi + 1e-12; x += step) {
    const double v = f(x);
    if (v < best_f) {
      best_f = v;
      best_x = x;
    }
  }
  double a = std::max(lo, best_x - step), b = std::min(hi, best_x + step);
  const double g = 0.38196601125010515;
  double c = a + g * (b - a), d = b - g * (b - a), fc = f(c), fd = f(d);
  for (int i = 0; i < 30; ++i) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = a + g * (b - a);
      fc = f(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = b - g * (b - a);
      fd = f(d);
    }
  }
  const double x = fc < fd ? c : d;
  return std::min(fc, fd) < best_f ? x : best_x;
}

// Linear interpolation of y against ascending x, held constant beyond the ends (the residuals at anchors).
double interconnect(int sm) {
  const auto t = find_sm_target(sm);
  return t ? t->interconnect_gbps : 0.0;
}

// The bandwidth ratio a·b (log) a source is carried with when nothing judges it: the datasheet
// interconnect ratio (time scales inversely with bandwidth) within one node, where the table describes the
// link the collective uses; 1 otherwise.
double datasheet_ratio(const TransferSource& s, int target_sm, int nnodes) {
  const double a = interconnect(s.sm()), b = interconnect(target_sm);
  return a > 0 && b > 0 && nnodes <= 1 ? std::log(a / b) : 0.0;
}

struct MapFit {
  double u = 0, v = 0;
  std::vector<double> resid;
};

// The size-and-time map of one source fitted to anchors (x: ln bytes, y: ln t). Two regimes:
//  * judged (the target has K >= 2 anchors; also inside its leave-one-out fits): the time scale from the
//    anchors and the size scale held near 1 (prior σ kSizeScaleSigma), i.e. the source's shape carried as
//    is unless the anchors ask for a shift — a size scale free to fit three or four anchors exactly overfits
//    them (they carry each machine's own noise and switches);
//  * unjudged (K <= 1): the bandwidth ratio a·b = e^w0 from the datasheet, the time scale a from the anchor
//    (K = 1: u + g(x₁ + v) = y₁ with u + v = w0) or 1 (K = 0).
MapFit fit_map(const TransferSource& s, double w0, const std::vector<double>& x, const std::vector<double>& y,
               bool judged) {
  MapFit m;
  const size_t k = x.size();
  if (k == 0) {
    m.v = judged ? 0.0 : w0;  // a = 1: the latency carried as is, the bandwidth by the datasheet
  } else if (!judged) {
    m.v = minimize_1d([&](double v) { const double r = w0 - v + s.log_time(x[0] + v) - y[0]; return r * r; },
                      -kScaleSearch, kScaleSearch, kSearchStep);
    m.u = w0 - m.v;
  } else {
    const double wn = 1 / (kAnchorSigma * kAnchorSigma), wv = 1 / (kSizeScaleSigma * kSizeScaleSigma);
    auto u_of = [&](double v) {
      double acc = 0;
      for (size_t i = 0; i < k; ++i) acc += y[i] - s.log_time(x[i] + v);
      return acc / k;
    };
    auto cost = [&](double v) {
      const double u = u_of(v);
      double c = 0;
      for (size_t i = 0; i < k; ++i) {
        const double r = u + s.log_time(x[i] + v) - y[i];
        c += r * r * wn;
      }
      return c + v * v * wv;
    };
    m.v = minimize_1d(cost, -kScaleSearch, kScaleSearch, kSearchStep);
    m.u = u_of(m.v);
  }
  for (size_t i = 0; i < k; ++i) m.resid.push_back(y[i] - (m.u + s.log_time(x[i] + m.v)));
  return m;
}

// The machine's own α-β line through the anchors, ln t = ln α + ln(1 + s/s_c), s_c = e^c the crossover size.
// One anchor: a constant.
MapFit fit_own(const std::vector<double>& x, const std::vector<double>& y) {
  MapFit m;
  const size_t k = x.size();
  auto shape = [](double xi, double c) { return std::log1p(std::exp(xi - c)); };
  auto u_of = [&](double c) {
    double acc = 0;
    for (size_t i = 0; i < k; ++i) acc += y[i] - shape(x[i], c);
    return acc / k;
  };
  if (k == 1) {
    m.u = y[0];
    m.v = std::numeric_limits<double>::infinity();
  } else {
    auto cost = [&](double c) {
      const double u = u_of(c);
      double s = 0;
      for (size_t i = 0; i < k; ++i) s += (u + shape(x[i], c) - y[i]) * (u + shape(x[i], c) - y[i]);
      return s;
    };
    m.v = minimize_1d(cost, x.front() - 6, x.back() + 6, kSearchStep);
    m.u = u_of(m.v);
  }
  for (size_t i = 0; i < k; ++i) m.resid.push_back(y[i] - (m.u + (std::isfinite(m.v) ? shape(x[i], m.v) : 0.0)));
  return m;
}

double own_base(double u, double c, double x) { return u + (std::isfinite(c) ? std::log1p(std::exp(x - c)) : 0.0); }

}  // namespace

// ---------------------------------------------------------------- sources

TransferSource TransferSource::from_model(const GroupModel& m, const std::string& system) {
  TransferSource s;
  s.key_ = m.key;
  s.system_ = system;
  s.sm_ = datasheet_sm(m.sm, m.device, system);
  s.min_bytes_ = m.min_bytes;
  s.max_bytes_ = m.max_bytes;
  // What it measured: the correction's knots and the spikes it set aside (interference and warm-up are part
  // of what a machine of the same kind measures at those sizes too).
  std::vector<std::pair<double, double>> pts;
  const std::vector<double>& kx = m.correction.x();
  for (size_t i = 0; i < kx.size(); ++i) pts.push_back({kx[i], m.model_log_time(std::exp(kx[i])) + m.correction.y()[i]});
  for (size_t i = 0; i < m.spike_log_bytes.size(); ++i)
    pts.push_back({m.spike_log_bytes[i], m.model_log_time(std::exp(m.spike_log_bytes[i])) + m.spike_log_resid[i]});
  if (pts.empty())
    for (double b : {m.min_bytes, m.max_bytes}) pts.push_back({std::log(b), std::log(m.predict(b).time_us)});
  std::sort(pts.begin(), pts.end());
  for (const auto& [x, y] : pts)
    if (s.measured_.empty() || x > s.measured_.back() + 1e-9) {
      s.measured_.push_back(x);
      s.y_.push_back(y);
    }
  // The table: the measured points, log-log between them (as a measured table is read), and the model's own
  // answer beyond them (tail line above, family below, within the physical bounds) every 1/8 octave.
  std::vector<double> below, below_y;
  for (double t = s.measured_.front() - kTableMargin; t < s.measured_.front() - 1e-9; t += kTableStep) {
    below.push_back(t);
    below_y.push_back(std::log(m.predict(std::exp(t)).time_us));
  }
  s.x_ = below;
  s.x_.insert(s.x_.end(), s.measured_.begin(), s.measured_.end());
  below_y.insert(below_y.end(), s.y_.begin(), s.y_.end());
  s.y_ = below_y;
  for (double t = s.measured_.back() + kTableStep; t <= s.measured_.back() + kTableMargin; t += kTableStep) {
    s.x_.push_back(t);
    s.y_.push_back(std::log(m.predict(std::exp(t)).time_us));
  }
  std::vector<double> second;
  for (size_t i = 1; i + 1 < s.measured_.size(); ++i)
    second.push_back(std::fabs(s.log_time(s.measured_[i + 1]) - 2 * s.log_time(s.measured_[i]) + s.log_time(s.measured_[i - 1])));
  s.roughness_ = second.empty() ? 0.0 : percentile(second, 50);
  return s;
}

double TransferSource::log_time(double x) const {
  const size_t n = x_.size();
  if (n == 1) return y_[0];
  size_t i = static_cast<size_t>(std::upper_bound(x_.begin(), x_.end(), x) - x_.begin());
  i = std::clamp<size_t>(i, 1, n - 1);
  const double t = (x - x_[i - 1]) / (x_[i] - x_[i - 1]);
  return y_[i - 1] + t * (y_[i] - y_[i - 1]);
}

double datasheet_distance(int sm_a, int sm_b) {
  const double a = interconnect(sm_a), b = interconnect(sm_b);
  return a > 0 && b > 0 ? std::fabs(std::log(a / b)) : std::numeric_limits<double>::infinity();
}

// ---------------------------------------------------------------- the transfer

double Transfer::Candidate::base(double x) const { return source ? u + source->log_time(x + v) : own_base(u, v, x); }

double Transfer::Candidate::log_time(double x, const std::vector<double>& anchor_x) const {
  return base(x) + linear_hold_at(anchor_x, resid, x);
}

bool Transfer::Candidate::measured_at(double x) const {
  if (!source) return false;
  const double at = x + v;  // the source is read at ln bytes + its size scale
  return at >= std::log(source->min_bytes()) - 1e-9 && at <= std::log(source->max_bytes()) + 1e-9;
}

std::vector<double> Transfer::median_log_times(double x) const {
  std::vector<double> measured, all;
  for (const Candidate& c : cands_) {
    all.push_back(c.log_time(x, anchor_x_));
    if (c.measured_at(x)) measured.push_back(all.back());
  }
  return measured.empty() ? all : measured;
}

double Transfer::Candidate::local_var(double x, const std::vector<double>& anchor_x) const {
  // One mean gap is the unit the random walk of bridge() and anchor_gap_factors() is measured in, so it is
  // the kernel's width: the anchors bounding x's gap count most, the next ones out less than half as much.
  const double gap = mean_anchor_gap(anchor_x);
  double nearest = std::numeric_limits<double>::infinity();
  for (double a : anchor_x) nearest = std::min(nearest, std::fabs(x - a) / gap);
  double sum = 0, wsum = 0;
  for (size_t k = 0; k < anchor_x.size(); ++k) {
    const double d = std::fabs(x - anchor_x[k]) / gap;
    const double w = std::exp(-(d - nearest) * (d + nearest) / 2);  // relative to the nearest: never all 0
    sum += w * gap_var[k];
    wsum += w;
  }
  return sum / wsum;
}

double Transfer::Candidate::raw_weight(double var) const {
  // 1/v², sharper than inverse variance (docs/fit.md: exponents 1, 1.5, 3 and 5 measured against it on
  // crosshw; 2 kept), v the variance with the anchors' noise floor and the source's own roughness added.
  const double rough = source ? source->roughness() : 0.0;
  const double v = var + kAnchorSigma * kAnchorSigma + rough * rough;
  return 1 / (v * v);
}

std::vector<double> Transfer::weights_at(double x, double* local_variance) const {
  std::vector<double> w(cands_.size()), var(cands_.size());
  double sum = 0;
  for (size_t i = 0; i < cands_.size(); ++i) {
    var[i] = cands_[i].local_var(x, anchor_x_);
    w[i] = cands_[i].raw_weight(var[i]);
    sum += w[i];
  }
  double lv = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] /= sum;
    lv += w[i] * var[i];
  }
  if (local_variance) *local_variance = lv;
  return w;
}

double Transfer::log_time(double bytes) const {
  const double x = std::log(bytes);
  if (median_) return percentile(median_log_times(x), 50);
  const std::vector<double> w = weights_at(x, nullptr);
  double acc = 0;
  for (size_t i = 0; i < cands_.size(); ++i) acc += w[i] * cands_[i].log_time(x, anchor_x_);
  return acc;
}

double Transfer::log_sigma(double bytes) const {
  const double x = std::log(bytes);
  if (median_) {
    // The median's candidates, read once for the centre and their deviations from it.
    std::vector<double> dev = median_log_times(x);
    const double centre = percentile(dev, 50);
    for (double& d : dev) d = std::fabs(d - centre);
    const double s = kMadToSigma * percentile(dev, 50);
    return std::sqrt(kAnchorSigma * kAnchorSigma + s * s + tau_ * tau_);
  }
  double local_variance = 0;
  const std::vector<double> w = weights_at(x, &local_variance);
  std::vector<double> y(cands_.size());
  double centre = 0;
  for (size_t i = 0; i < cands_.size(); ++i) {
    y[i] = cands_[i].log_time(x, anchor_x_);
    centre += w[i] * y[i];
  }
  double spread2 = 0;
  for (size_t i = 0; i < cands_.size(); ++i) spread2 += w[i] * (y[i] - centre) * (y[i] - centre);
  // Student's t with K degrees of freedom: the variance comes from K leave-one-out errors about zero (no mean
  // is estimated from them, so none is lost).
  return student_t90(anchor_x_.size()) / kZ90 * std::sqrt(kAnchorSigma * kAnchorSigma + spread2 + local_variance * bridge(x));
}

double Transfer::bridge(double x) const {
  const std::vector<double>& a = anchor_x_;
  const double gap = mean_anchor_gap(a);
  if (x <= a.front()) return (a.front() - x) / gap;
  if (x >= a.back()) return (x - a.back()) / gap;
  const size_t i = static_cast<size_t>(std::upper_bound(a.begin(), a.end(), x) - a.begin());
  const double t = (x - a[i - 1]) / (a[i] - a[i - 1]);
  return t * (1 - t);
}

Prediction Transfer::predict(double bytes) const {
  Prediction p;
  const double lt = log_time(bytes), h = kZ90 * log_sigma(bytes);
  p.time_us = std::exp(lt);
  p.lo_us = std::exp(lt - h);
  p.hi_us = std::exp(lt + h);
  p.extrapolated = anchor_x_.size() < 2 || std::log(bytes) < anchor_x_.front() || std::log(bytes) > anchor_x_.back();
  p.how = how_;
  return p;
}

std::vector<double> Transfer::grid(double lo, double hi) const {
  const double llo = std::log(lo), lhi = std::log(hi);
  std::vector<double> xs;
  for (const Candidate& c : cands_)
    if (c.source && c.weight > 0)
      for (double x : c.source->measured_ln_bytes())
        if (x >= llo - 1e-9 && x <= lhi + 1e-9) xs.push_back(x);
  // No source measured anything here (the own line alone): a regular grid carries its shape.
  if (xs.empty() && !anchor_x_.empty())
    for (double x = anchor_x_.front(); x <= anchor_x_.back(); x += kLn2 / 4) xs.push_back(x);
  std::sort(xs.begin(), xs.end());
  // Thin to kGridPerOctave per octave, keeping every anchor.
  const double min_gap = kLn2 / kGridPerOctave * (1 - 1e-6);
  std::vector<double> kept = anchor_x_;
  std::vector<double> out;
  for (double x : xs) {
    auto it = std::lower_bound(kept.begin(), kept.end(), x);
    const bool near_next = it != kept.end() && *it - x < min_gap;
    const bool near_prev = it != kept.begin() && x - *(it - 1) < min_gap;
    if (!near_next && !near_prev) kept.insert(it, x);
  }
  // Byte counts are integers: undo the rounding of exp(ln s).
  for (double x : kept) {
    const double b = std::exp(x), r = std::nearbyint(b);
    out.push_back(std::fabs(b - r) <= 1e-9 * b ? r : b);
  }
  return out;
}

namespace {

// The sources that measured some of the wanted sizes [lo, hi] (all when hi is 0); when none did, the ones
// nearest to them in size, so that every comparable curve still answers.
std::vector<const TransferSource*> usable_sources(const std::vector<const TransferSource*>& all, double lo, double hi) {
  std::vector<const TransferSource*> out;
  for (const TransferSource* s : all)
    if (!(hi > 0) || (s->max_bytes() >= lo && s->min_bytes() <= hi)) out.push_back(s);
  if (!out.empty() || all.empty()) return out;
  auto gap = [&](const TransferSource* s) { return std::max(std::log(lo / s->max_bytes()), std::log(s->min_bytes() / hi)); };
  double best = std::numeric_limits<double>::infinity();
  for (const TransferSource* s : all) best = std::min(best, gap(s));
  for (const TransferSource* s : all)
    if (gap(s) <= best + kLn2) out.push_back(s);
  return out;
}

// The share of a mean anchor gap each anchor is predicted across when it is left out, under the random walk
// of Transfer::bridge: an end anchor from its neighbour, one gap away ((a1 - a0) / gap); an inner one
// between its neighbours (a Brownian bridge: t(1 - t)·(a[k+1] - a[k-1]) / gap, half a gap on even spacing).
// Dividing by it puts every anchor's squared error on one scale, so an end anchor's extrapolation does not
// outweigh an inner anchor's interpolation.
std::vector<double> anchor_gap_factors(const std::vector<double>& a) {
  const size_t K = a.size();
  const double gap = mean_anchor_gap(a);
  std::vector<double> f(K);
  f[0] = (a[1] - a[0]) / gap;
  f[K - 1] = (a[K - 1] - a[K - 2]) / gap;
  for (size_t k = 1; k + 1 < K; ++k) {
    const double t = (a[k] - a[k - 1]) / (a[k + 1] - a[k - 1]);
    f[k] = t * (1 - t) * (a[k + 1] - a[k - 1]) / gap;
  }
  return f;
}

// Each anchor's squared error when predicted from the others, over its anchor_gap_factors; fit_at(x, y, at)
// fits on (x, y) and answers at `at`.
template <typename FitAt>
std::vector<double> leave_one_out_gap_var(const std::vector<double>& ax, const std::vector<double>& ay,
                                          const std::vector<double>& factors, const FitAt& fit_at) {
  const size_t K = ax.size();
  std::vector<double> out;
  for (size_t k = 0; k < K; ++k) {
    std::vector<double> x, y;
    for (size_t i = 0; i < K; ++i)
      if (i != k) {
        x.push_back(ax[i]);
        y.push_back(ay[i]);
      }
    const double e = fit_at(x, y, ax[k]) - ay[k];
    out.push_back(e * e / factors[k]);
  }
  return out;
}

}  // namespace

void Transfer::carry_nearest(const TransferTarget& target, const std::vector<const TransferSource*>& sources,
                             const TransferOptions& options) {
  double best = std::numeric_limits<double>::infinity();
  for (const TransferSource* s : sources) best = std::min(best, datasheet_distance(s->sm(), target.sm));
  for (const TransferSource* s : sources) {
    if (std::isfinite(best) && !(datasheet_distance(s->sm(), target.sm) <= best + 1e-9)) continue;
    const MapFit m = fit_map(*s, datasheet_ratio(*s, target.sm, target.key.nnodes), anchor_x_, anchor_y_, false);
    cands_.push_back({s, m.u, m.v, m.resid, 0, {}});
  }
  for (auto& c : cands_) c.weight = 1.0 / cands_.size();
  median_ = true;
  const double tau = options.calibration
                         ? options.calibration->for_class(TransferCalibration::calibration_class(best, target.key.nnodes, target.sm))
                         : -1;
  tau_ = tau >= 0 ? tau : kSmTransferLogSigma;
}

void Transfer::judge(const std::vector<const TransferSource*>& sources) {
  const std::vector<double>& ax = anchor_x_;
  const std::vector<double>& ay = anchor_y_;
  const std::vector<double> factors = anchor_gap_factors(ax);
  auto add = [&](const TransferSource* s, const MapFit& m, std::vector<double> gap_var) {
    cands_.push_back({s, m.u, m.v, m.resid, 0, std::move(gap_var)});
  };
  for (const TransferSource* s : sources)
    add(s, fit_map(*s, 0.0, ax, ay, true),
        leave_one_out_gap_var(ax, ay, factors, [&](const std::vector<double>& x, const std::vector<double>& y, double at) {
          const MapFit f = fit_map(*s, 0.0, x, y, true);
          return f.u + s->log_time(at + f.v) + linear_hold_at(x, f.resid, at);
        }));
  add(nullptr, fit_own(ax, ay),
      leave_one_out_gap_var(ax, ay, factors, [&](const std::vector<double>& x, const std::vector<double>& y, double at) {
        const MapFit f = fit_own(x, y);
        return own_base(f.u, f.v, at) + linear_hold_at(x, f.resid, at);
      }));
  double wsum = 0;
  // The shares over the whole curve: the mean of the per-anchor variances.
  for (auto& c : cands_) {
    double mean = 0;
    for (double v : c.gap_var) mean += v / c.gap_var.size();
    c.weight = c.raw_weight(mean);
    wsum += c.weight;
  }
  for (auto& c : cands_) c.weight /= wsum;
}

void Transfer::describe(bool any_source) {
  std::map<std::string, double> by_system;
  for (const auto& c : cands_) {
    by_system[c.source ? c.source->system() : "own"] += c.weight;
    shares_.push_back({c.source ? c.source->system() : "own", c.source ? c.source->key().id() : "", c.weight});
    if (c.source) {
      min_bytes_ = std::min(min_bytes_, c.source->min_bytes());
      max_bytes_ = std::max(max_bytes_, c.source->max_bytes());
    }
  }
  std::vector<std::pair<double, std::string>> order;  // largest share first
  for (const auto& [sys, w] : by_system) order.push_back({-w, sys});
  std::sort(order.begin(), order.end());
  const size_t K = anchor_x_.size();
  std::ostringstream how;
  how << std::fixed << std::setprecision(0);
  if (!any_source) {
    how << "no comparable curve in the priors: own " << K << " sizes only";
  } else if (K <= 1) {
    how << (K == 0 ? "zero-shot" : "transfer") << " K=" << K << " from datasheet-nearest ";
    for (size_t i = 0; i < order.size(); ++i) how << (i ? ", " : "") << order[i].second;
  } else {
    // Candidates below half a percent are left out of `how` (the models file keeps every weight).
    how << "transfer K=" << K << ": ";
    for (size_t i = 0; i < order.size() && (i == 0 || -order[i].first >= 0.005); ++i)
      how << (i ? ", " : "") << order[i].second << " " << -order[i].first * 100 << "%";
  }
  how_ = how.str();
}

Transfer transfer_curve(const TransferTarget& target, const std::vector<const TransferSource*>& all_sources,
                        const TransferOptions& options) {
  Transfer tr;
  for (size_t i = 0; i < target.bytes.size(); ++i) {
    tr.anchor_x_.push_back(std::log(target.bytes[i]));
    tr.anchor_y_.push_back(std::log(target.time_us[i]));
  }
  const size_t K = target.bytes.size();
  const bool span = target.hi_bytes > 0;
  const std::vector<const TransferSource*> sources = usable_sources(
      all_sources, span ? target.lo_bytes : (K ? target.bytes.front() : 0), span ? target.hi_bytes : (K ? target.bytes.back() : 0));
  if (sources.empty() && K < 2) {
    tr.problem_ = "no comparable curve in the priors (same collective, strategy, fusion, rank and node count, element "
                  "size) and " + std::to_string(K) + " own size" + (K == 1 ? "" : "s");
    return tr;
  }
  tr.ok_ = true;
  tr.min_bytes_ = K ? target.bytes.front() : std::numeric_limits<double>::infinity();
  tr.max_bytes_ = K ? target.bytes.back() : 0;
  if (K <= 1)
    tr.carry_nearest(target, sources, options);  // nothing to judge the sources by
  else
    tr.judge(sources);
  tr.describe(!sources.empty());
  return tr;
}

// ---------------------------------------------------------------- calibration of the K <= 1 rule

namespace {
// Fewest errors a distance class needs for its own percentile.
constexpr size_t kMinCalibrationErrors = 50;

// The datasheet distance of the sources a K <= 1 transfer used (the nearest machines').
double used_distance(const Transfer& tr, const std::vector<const TransferSource*>& sources, int target_sm) {
  double best = std::numeric_limits<double>::infinity();
  for (const TransferShare& sh : tr.shares())
    for (const TransferSource* s : sources)
      if (s->key().id() == sh.id && s->system() == sh.system) best = std::min(best, datasheet_distance(s->sm(), target_sm));
  return best;
}
}  // namespace

int TransferCalibration::calibration_class(double d, int nnodes, int target_sm) {
  // Across nodes the table describes no link the collective uses (the network decides): "unknown", whatever
  // the SM.
  if (nnodes > 1 || !std::isfinite(d)) return 3;
  if (const auto t = find_sm_target(target_sm); t && t->pcie) return 4;
  if (d < 1e-9) return 0;
  return d <= kLn2 + 1e-9 ? 1 : 2;
}

double TransferCalibration::for_class(int c) const {
  const double t = tau[c];
  return t >= 0 ? t : overall;
}

namespace {
// Smallest τ >= 0 for which |e| <= z·sqrt(spread² + τ²) at 90 % of the points (bisection: the share is
// non-decreasing in τ).
// Each curve weighs the same whatever its number of sizes (one densely measured curve must not set the
// interval of every other machine).
struct CalibrationPoint {
  double err, spread;  // |ln(predicted / measured)|, σ of the rule without τ
  double weight;       // 1 / the curve's held-out sizes
};
double calibrate_tau(const std::vector<CalibrationPoint>& pts) {
  double total = 0;
  for (const auto& p : pts) total += p.weight;
  auto share = [&](double tau) {
    double in = 0;
    for (const auto& p : pts) in += p.err <= kZ90 * std::sqrt(p.spread * p.spread + tau * tau) ? p.weight : 0.0;
    return in / total;
  };
  double lo = 0, hi = 1;
  if (share(0) >= 0.9) return 0;
  while (share(hi) < 0.9 && hi < 64) hi *= 2;
  for (int i = 0; i < 50; ++i) {
    const double mid = 0.5 * (lo + hi);
    (share(mid) >= 0.9 ? hi : lo) = mid;
  }
  return hi;
}
}  // namespace

TransferCalibration transfer_calibration(const std::vector<TransferSource>& library, int K, const std::string& exclude_system) {
  TransferCalibration cal;
  std::set<std::string> systems;
  for (const auto& s : library)
    if (s.system() != exclude_system) systems.insert(s.system());
  if (systems.size() < 2) return cal;
  std::vector<CalibrationPoint> pts[TransferCalibration::kClasses], all;
  for (const TransferSource& c : library) {
    if (c.system() == exclude_system) continue;
    std::vector<const TransferSource*> src;
    for (const TransferSource& s : library)
      if (s.system() != c.system() && s.system() != exclude_system && comparable_curves(c.key(), s.key())) src.push_back(&s);
    if (src.empty()) continue;
    const std::vector<double>& xs = c.measured_ln_bytes();
    const std::vector<size_t> held = anchor_indices(xs.size(), K);
    TransferTarget t;
    t.key = c.key();
    t.sm = c.sm();
    t.lo_bytes = c.min_bytes();
    t.hi_bytes = c.max_bytes();
    for (size_t i : held) {
      t.bytes.push_back(std::exp(xs[i]));
      t.time_us.push_back(std::exp(c.log_time(xs[i])));
    }
    // With τ = 0 the rule's σ is its spread alone (and the anchor noise): what τ is added to.
    TransferCalibration no_tau;
    no_tau.overall = 0;
    TransferOptions o;
    o.calibration = &no_tau;
    const Transfer tr = transfer_curve(t, src, o);
    if (!tr.ok()) continue;
    std::vector<CalibrationPoint>& e =
        pts[TransferCalibration::calibration_class(used_distance(tr, src, t.sm), t.key.nnodes, t.sm)];
    for (size_t i = 0; i < xs.size(); ++i) {
      if (std::find(held.begin(), held.end(), i) != held.end()) continue;
      const double b = std::exp(xs[i]);
      e.push_back({std::fabs(tr.log_time(b) - c.log_time(xs[i])), tr.log_sigma(b), 1.0 / (xs.size() - held.size())});
      all.push_back(e.back());
    }
  }
  for (int k = 0; k < TransferCalibration::kClasses; ++k)
    if (pts[k].size() >= kMinCalibrationErrors) cal.tau[k] = calibrate_tau(pts[k]);
  if (!all.empty()) cal.overall = calibrate_tau(all);
  return cal;
}

// ---------------------------------------------------------------- the prior library

TransferLibrary::TransferLibrary(const std::vector<ModelSet>& priors) {
  for (const ModelSet& set : priors)
    for (const auto& g : set.raw().at("groups")) {
      const GroupModel m = GroupModel::from_json(g);
      if (m.ok) sources_.push_back(TransferSource::from_model(m, m.key.system));
    }
}

std::vector<const TransferSource*> TransferLibrary::matching(const GroupKey& target) const {
  std::vector<const TransferSource*> out;
  for (const TransferSource& s : sources_)
    if (comparable_curves(target, s.key())) out.push_back(&s);
  return out;
}

const TransferCalibration& TransferLibrary::calibration(int K) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = calibration_.find(K);
  if (it == calibration_.end()) it = calibration_.emplace(K, transfer_calibration(sources_, K)).first;
  return it->second;
}

// ---------------------------------------------------------------- the models-file group

GroupFit transferred_group(const TransferTarget& target, const Transfer& tr, double lo_bytes, double hi_bytes) {
  Curve c;
  c.key = target.key;
  c.sm = target.sm;
  const std::vector<double> grid = tr.grid(lo_bytes, hi_bytes);
  std::vector<double> log_bytes, log_sigma;
  for (double s : grid) {
    // The grid's times become the group's knots, which are times a sample can have (the models reader refuses
    // others): a size carried from the priors past them (one anchor of 1 MiB in 550 s along a fast prior reached
    // 1.4e9 us at 1 GiB) is no knot, and the group answers there as extrapolated. The anchors were measured.
    const double t = std::exp(tr.log_time(s));
    const bool anchor = std::find(target.bytes.begin(), target.bytes.end(), s) != target.bytes.end();
    if (!anchor && !(t >= kMinSampleTimeUs && t <= kMaxSampleTimeUs)) continue;
    c.bytes.push_back(s);
    c.time_us.push_back(t);
    log_bytes.push_back(std::log(s));
    // σ grows with the octaves beyond the anchors without bound (two anchors an octave apart, 47x apart in time,
    // reached σ > 50 eighteen octaves out, which the reader refuses); held at the largest a models file holds,
    // past which the interval's half-width is capped anyway (kMaxLogHalfWidth = 34.5 < z90 × 50).
    log_sigma.push_back(std::min(tr.log_sigma(s), kMaxLogSigma));
  }
  FitOptions fo;
  fo.family = "alphabeta";  // the grid carries the shape (every size a knot); the family only extrapolates
  // However few sizes the grid keeps: two anchors 0.1 % apart with priors dense only there (thinned to one size
  // per eighth of an octave) left 3, and the machine's curve went unfitted, "too few distinct sizes: 3 (need
  // >= 4)", where the same anchors with no comparable prior fit the own line. The family needs two.
  fo.min_points = 2;
  GroupFit g = fit_curve(c, fo);
  if (!g.ok) return g;
  nlohmann::json shares = nlohmann::json::array();
  for (const TransferShare& s : tr.shares())
    shares.push_back({{"system", s.system}, {"id", s.id}, {"weight", s.weight}});
  // What the group says about itself is the transfer's, not the grid fit's: the sizes actually measured,
  // and for cv_gmae the median absolute error its σ stands for (0.674 σ, the normal's median), the median
  // over the grid.
  std::vector<double> typical;
  for (double sg : log_sigma) typical.push_back(std::expm1(0.6745 * sg));
  g.cv_gmae = percentile(typical, 50);
  g.model["cv_gmae"] = g.cv_gmae;
  g.model["cv"] = {{"transfer", g.cv_gmae}};
  g.model["range"]["points"] = tr.anchors();
  g.model["transfer"] = {{"how", tr.how()},
                         {"anchors", tr.anchors()},
                         {"anchor_bytes", target.bytes},
                         {"sources", shares},
                         {"log_bytes", log_bytes},
                         {"log_sigma", log_sigma}};
  g.family = g.model.value("family", std::string());
  return g;
}

}  // namespace arfit::fit

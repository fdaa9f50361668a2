// Residual correction: an interpolation of the model's residuals between measured sizes, so that in range a
// fitted model honours what was measured; outside the knots the correction is 0 and the prediction rests on
// the model alone. Knots are stored as x_i = ln bytes, y_i = ln measured − ln model.
//
// Rules (SplineKind):
//   additive  t(s) = model(s) + r(s), r the residual t_measured − t_model interpolated linearly in bytes
//             (corrected()). Between two knots this is exact for a curve that is α + s/β there, whatever the
//             family; with the alphabeta family it is plain linear interpolation of (bytes, time). The
//             default since the public data showed it beats log-space splines (docs/fit.md).
//   pchip     prediction = model × exp(spline(ln s)), Fritsch–Carlson monotone slopes (no new extrema);
//   akima     the same with Akima's slopes (local, no overshoot near outliers);
//   natural   the same with the C2 natural cubic spline (second derivative 0 at the ends);
//   linear    the same, piecewise linear in ln s.
// Also loglog_at, log-log interpolation of a measured curve itself, and linear_hold_at.
// Header-only, double only (model/ is pure math).
//
// Why not Boost's boost::math::interpolators::pchip and makima (Boost 1.74, measured for issue #22 on
// ../shared/data/public):
//   * pchip takes the secant as its end slopes; ours are SciPy's shape-preserving three-point rule. With
//     Boost's ends `eval --protocol select` (which interpolates the candidates' ratio with pchip) moves from
//     geomean regret 1.0064 / 91.0 % exact to 1.0065 / 90.8 %. Given our end slopes explicitly, Boost
//     reproduces every printed figure (select identical; the pchip correction rule's interp2 / sparse4 points
//     agree but for 2 of 14,318 in the 10th digit), but it needs at least 4 knots (3-knot curves would still
//     need this code), throws outside the knots, and its 1.74 header calls isnan unqualified (it does not
//     compile without a `using std::isnan` before it). It would replace only the interior-slope formula.
//   * makima is the *modified* Akima (weights |m_i+1 − m_i| + |m_i+1 + m_i| / 2), another spline: as the
//     correction rule it gives interp2 1.79 % / sparse4 3.11 % GMAE where Akima's original gives 1.81 / 3.15,
//     and models files written with "akima" would predict differently when read back. The akima kind stays
//     Akima's own (1970), as files name it.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace arfit {

enum class SplineKind { Natural, Akima, Pchip, Linear, Additive };

inline std::string to_string(SplineKind k) {
  switch (k) {
    case SplineKind::Natural: return "natural";
    case SplineKind::Akima: return "akima";
    case SplineKind::Pchip: return "pchip";
    case SplineKind::Linear: return "linear";
    case SplineKind::Additive: return "additive";
  }
  return "?";
}

inline SplineKind parse_spline_kind(const std::string& s) {
  if (s == "natural") return SplineKind::Natural;
  if (s == "akima") return SplineKind::Akima;
  if (s == "pchip") return SplineKind::Pchip;
  if (s == "linear") return SplineKind::Linear;
  if (s == "additive") return SplineKind::Additive;
  throw std::invalid_argument("unknown spline kind '" + s + "' (known: natural, akima, pchip, linear, additive)");
}

// The size in bytes at a knot stored as ln bytes: knots are measured sizes, whole byte counts (Sample::bytes), and
// e^(ln s) is a last-bit neighbour of s. A model is evaluated at the knot where its residual was taken, at s itself:
// the seed's turning points are steps, and a knot at exactly 2^sats_p evaluated at the neighbour took the line
// (3,526 us) where the fit had taken the logistic (8.6e-13 us), so its residual of +35.5 predicted 9.6e18 us there (a
// public nccl-tests table, fit --family seed). Sizes that are not whole numbers are left as they are.
inline double knot_bytes(double log_bytes) {
  const double s = std::exp(log_bytes), whole = std::round(s);
  return whole >= 1 && std::fabs(whole - s) <= 1e-12 * s ? whole : s;
}

// Log-log interpolation: piecewise-linear ln y against ln x through the points (x ascending, all > 0), the end
// segments extended linearly beyond them (the table-driven approach, and the `loglog` baseline of every
// evaluation protocol). One point: its y everywhere; none: NaN.
inline double loglog_at(const std::vector<double>& x, const std::vector<double>& y, double at) {
  const size_t n = x.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  if (n == 1) return y[0];
  const double lx = std::log(at);
  auto seg = [&](size_t a, size_t b) {
    const double xa = std::log(x[a]), xb = std::log(x[b]), ya = std::log(y[a]), yb = std::log(y[b]);
    return std::exp(ya + (yb - ya) / (xb - xa) * (lx - xa));
  };
  if (lx <= std::log(x[0])) return seg(0, 1);
  if (lx >= std::log(x[n - 1])) return seg(n - 2, n - 1);
  size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), at) - x.begin());
  if (i >= n) i = n - 1;
  if (i == 0) i = 1;
  return seg(i - 1, i);
}

// Piecewise-linear y(x) through the knots (x ascending), held at the end values beyond them: a transferred
// curve's correction and its σ per size between the sizes they were computed at. No knots: 0.
inline double linear_hold_at(const std::vector<double>& x, const std::vector<double>& y, double at) {
  if (x.empty()) return 0;
  if (at <= x.front()) return y.front();
  if (at >= x.back()) return y.back();
  const size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), at) - x.begin());
  return y[i - 1] + (at - x[i - 1]) / (x[i] - x[i - 1]) * (y[i] - y[i - 1]);
}

class HermiteSpline {
 public:
  HermiteSpline() = default;
  // x strictly increasing. One knot: a constant inside [x0, x0]. Zero knots: always 0.
  HermiteSpline(std::vector<double> x, std::vector<double> y, SplineKind kind) : x_(std::move(x)), y_(std::move(y)), kind_(kind) {
    if (x_.size() != y_.size()) throw std::invalid_argument("HermiteSpline: x and y differ in length");
    for (size_t i = 1; i < x_.size(); ++i)
      if (!(x_[i] > x_[i - 1])) throw std::invalid_argument("HermiteSpline: x must be strictly increasing");
    slopes();
  }

  // ln t corrected at x = ln bytes, given the model's ln t as a function of ln bytes. Multiplicative kinds add
  // the interpolated log-residual; Additive interpolates the residual t_measured − t_model linearly in bytes
  // (exact for a curve that is piecewise α + s/β between the knots).
  // Outside the knots the Additive kind holds the nearest knot's residual t_measured − t_model (a measured
  // range can reach past its knots when a fit set its first size aside as a warm-up spike); the other kinds
  // leave the model alone there.
  // model_at(x_k) is the model's ln t at knot x_k. A piecewise model (the seed: pieces meeting in steps) also
  // takes model_at(x_k, x), ln t at x_k of the piece that holds at x, and names in `steps` the sizes (ln bytes,
  // ascending) where its pieces meet, each the last size of the piece below it. The Additive kind then never
  // carries a step into the prediction between measurements:
  //   * both knots' residuals are taken against the piece that holds at x: a knot on a step, its residual taken
  //     against the piece on the knot's other side, carried the whole step into the gap beside it (a public
  //     reduce-scatter log, fit --family seed: 5,479 us at 65.3 MB just past a 64 MB knot measured at 2,365 us,
  //     the next knot 2,767 us);
  //   * a step strictly between two knots is a knot too, its time the measured times interpolated linearly in
  //     bytes, so each piece is corrected only across the part of the gap where it holds (a piece evaluated
  //     beyond it, the seed's logistic below its latency-bound size, put 1.8 us between knots of 5.6 and 6.3 us).
  // Where the piece that holds at x has no finite time at a knot, the model's own value there is used; where it has
  // none at a step, the sum is no time and the log-residual rule answers (as below).
  template <typename ModelLogTime>
  double corrected(double x, double model_lt, const ModelLogTime& model_at, const std::vector<double>& steps = {}) const {
    if (x_.empty()) return model_lt;
    if (x < x_.front() || x > x_.back()) {
      if (kind_ != SplineKind::Additive) return model_lt;
      const double t = std::exp(model_lt) + knot_residual(x < x_.front() ? 0 : x_.size() - 1, x, model_at);
      return t > 0 ? std::log(t) : model_lt;
    }
    if (kind_ != SplineKind::Additive || x_.size() < 2) return model_lt + (*this)(x);
    const size_t a = segment(x), i = a + 1;
    // The part of the gap [x_a, x_i] where the piece holding x holds: from the last step below x (or x_a) to
    // the first step at or above it (or x_i).
    double lo = x_[a], hi = x_[i];
    for (const double st : steps) {
      if (!(st > x_[a] + kSameSize && st < x_[i] - kSameSize)) continue;
      if (st < x) lo = std::max(lo, st);
      else hi = std::min(hi, st);
    }
    const double w = bytes_weight(x, lo, hi);
    const double ra = lo == x_[a] ? knot_residual(a, x, model_at) : step_residual(lo, a, x, model_at);
    const double ri = hi == x_[i] ? knot_residual(i, x, model_at) : step_residual(hi, a, x, model_at);
    const double t = std::exp(model_lt) + ra + w * (ri - ra);
    if (!(t > 0)) return model_lt + (*this)(x);
    return std::log(t);
  }

  bool in_range(double x) const { return !x_.empty() && x >= x_.front() && x <= x_.back(); }
  const std::vector<double>& x() const { return x_; }
  const std::vector<double>& y() const { return y_; }
  SplineKind kind() const { return kind_; }

  // Value at x; 0 outside [x_0, x_last].
  double operator()(double x) const {
    const size_t n = x_.size();
    if (n == 0 || x < x_.front() || x > x_.back()) return 0.0;
    if (n == 1) return y_[0];
    const size_t a = segment(x), i = a + 1;
    const double h = x_[i] - x_[a];
    const double t = (x - x_[a]) / h;
    if (kind_ == SplineKind::Linear) return y_[a] + t * (y_[i] - y_[a]);
    if (kind_ == SplineKind::Additive) {
      // Without the model at hand: the log-residual interpolated with weights linear in bytes (corrected()
      // is the additive rule itself).
      return y_[a] + bytes_weight(x, a) * (y_[i] - y_[a]);
    }
    const double t2 = t * t, t3 = t2 * t;
    const double h00 = 2 * t3 - 3 * t2 + 1, h10 = t3 - 2 * t2 + t, h01 = -2 * t3 + 3 * t2, h11 = t3 - t2;
    return h00 * y_[a] + h10 * h * d_[a] + h01 * y_[i] + h11 * h * d_[i];
  }

 private:
  // Steps within this of a knot (ln bytes) lie on it: e^(ln s) is a last-bit neighbour of a measured size s.
  static constexpr double kSameSize = 1e-12;

  // The model's ln t at x_k for the piece holding at x, and at x_k itself (one functor for smooth models).
  template <typename ModelLogTime>
  static double model_on_piece(const ModelLogTime& model_at, double at_knot, double x) {
    if constexpr (std::is_invocable_v<const ModelLogTime&, double, double>) return model_at(at_knot, x);
    else return model_at(at_knot);
  }

  // Measured time at knot k (y_k = ln t_measured − ln t_model there).
  template <typename ModelLogTime>
  double measured_time(size_t k, const ModelLogTime& model_at) const {
    return std::exp(model_on_piece(model_at, x_[k], x_[k]) + y_[k]);
  }

  // Residual at a step `st` inside the gap [x_a, x_a+1]: the measured times interpolated linearly in bytes
  // there, minus the piece that holds at x.
  template <typename ModelLogTime>
  double step_residual(double st, size_t a, double x, const ModelLogTime& model_at) const {
    const double ta = measured_time(a, model_at), tb = measured_time(a + 1, model_at);
    return ta + bytes_weight(st, x_[a], x_[a + 1]) * (tb - ta) - std::exp(model_on_piece(model_at, st, x));
  }

  // t_measured − t_model at knot k (y_k = ln t_measured − ln t_model there), in the model's time unit, t_model
  // of the piece that holds at x when the model has pieces (corrected()).
  template <typename ModelLogTime>
  double knot_residual(size_t k, double x, const ModelLogTime& model_at) const {
    const double at_knot = model_on_piece(model_at, x_[k], x_[k]), beside = model_on_piece(model_at, x_[k], x);
    const double piece_t = std::exp(beside);
    if (beside != at_knot && std::isfinite(piece_t)) return std::exp(at_knot + y_[k]) - piece_t;
    return std::exp(at_knot) * std::expm1(y_[k]);
  }

  // Index a of the knot interval [x_a, x_a+1] holding x (clamped to the first/last interval); needs 2+ knots.
  size_t segment(double x) const {
    size_t i = static_cast<size_t>(std::upper_bound(x_.begin(), x_.end(), x) - x_.begin());
    if (i == 0) i = 1;
    if (i >= x_.size()) i = x_.size() - 1;
    return i - 1;
  }

  // Position of x within [lo, hi] measured in bytes (all ln bytes): 0 at lo, 1 at hi.
  static double bytes_weight(double x, double lo, double hi) {
    return (std::exp(x) - std::exp(lo)) / (std::exp(hi) - std::exp(lo));
  }
  // Position of x within [x_a, x_a+1] measured in bytes.
  double bytes_weight(double x, size_t a) const { return bytes_weight(x, x_[a], x_[a + 1]); }

  void slopes() {
    const size_t n = x_.size();
    d_.assign(n, 0.0);
    if (n < 2) return;
    std::vector<double> m(n - 1);
    for (size_t i = 0; i + 1 < n; ++i) m[i] = (y_[i + 1] - y_[i]) / (x_[i + 1] - x_[i]);
    if (n == 2 || kind_ == SplineKind::Linear || kind_ == SplineKind::Additive) {
      d_[0] = d_[1] = m[0];
      for (size_t i = 0; i < n; ++i) d_[i] = m[std::min(i, n - 2)];
      return;
    }
    switch (kind_) {
      case SplineKind::Natural: natural(m); break;
      case SplineKind::Akima: akima(m); break;
      case SplineKind::Pchip: pchip(m); break;
      case SplineKind::Linear:
      case SplineKind::Additive: break;
    }
  }

  void natural(const std::vector<double>& m) {
    // Solve the tridiagonal system for the first derivatives of the C2 spline with y'' = 0 at the ends.
    const size_t n = x_.size();
    std::vector<double> a(n), b(n), c(n), r(n);
    std::vector<double> h(n - 1);
    for (size_t i = 0; i + 1 < n; ++i) h[i] = x_[i + 1] - x_[i];
    b[0] = 2 / h[0];
    c[0] = 1 / h[0];
    r[0] = 3 * m[0] / h[0];
    for (size_t i = 1; i + 1 < n; ++i) {
      a[i] = 1 / h[i - 1];
      b[i] = 2 / h[i - 1] + 2 / h[i];
      c[i] = 1 / h[i];
      r[i] = 3 * (m[i - 1] / h[i - 1] + m[i] / h[i]);
    }
    a[n - 1] = 1 / h[n - 2];
    b[n - 1] = 2 / h[n - 2];
    r[n - 1] = 3 * m[n - 2] / h[n - 2];
    for (size_t i = 1; i < n; ++i) {  // Thomas algorithm
      const double w = a[i] / b[i - 1];
      b[i] -= w * c[i - 1];
      r[i] -= w * r[i - 1];
    }
    d_[n - 1] = r[n - 1] / b[n - 1];
    for (size_t i = n - 1; i-- > 0;) d_[i] = (r[i] - c[i] * d_[i + 1]) / b[i];
  }

  void akima(const std::vector<double>& m) {
    const size_t n = x_.size();
    // Extend the secants by two on each side (Akima's end rule).
    std::vector<double> e(n + 3);
    for (size_t i = 0; i + 1 < n; ++i) e[i + 2] = m[i];
    e[1] = 2 * e[2] - e[3];
    e[0] = 2 * e[1] - e[2];
    e[n + 1] = 2 * e[n] - e[n - 1];
    e[n + 2] = 2 * e[n + 1] - e[n];
    for (size_t i = 0; i < n; ++i) {
      const double w1 = std::fabs(e[i + 3] - e[i + 2]), w2 = std::fabs(e[i + 1] - e[i]);
      if (w1 + w2 < 1e-12)
        d_[i] = 0.5 * (e[i + 1] + e[i + 2]);
      else
        d_[i] = (w1 * e[i + 1] + w2 * e[i + 2]) / (w1 + w2);
    }
  }

  void pchip(const std::vector<double>& m) {
    const size_t n = x_.size();
    std::vector<double> h(n - 1);
    for (size_t i = 0; i + 1 < n; ++i) h[i] = x_[i + 1] - x_[i];
    for (size_t i = 1; i + 1 < n; ++i) {
      if (m[i - 1] * m[i] <= 0) {
        d_[i] = 0;
      } else {
        const double w1 = 2 * h[i] + h[i - 1], w2 = h[i] + 2 * h[i - 1];
        d_[i] = (w1 + w2) / (w1 / m[i - 1] + w2 / m[i]);
      }
    }
    auto end = [](double h0, double h1, double m0, double m1) {
      double d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1);
      if (d * m0 <= 0) return 0.0;
      if (m0 * m1 <= 0 && std::fabs(d) > std::fabs(3 * m0)) return 3 * m0;
      return d;
    };
    d_[0] = end(h[0], h[1], m[0], m[1]);
    d_[n - 1] = end(h[n - 2], h[n - 3], m[n - 2], m[n - 3]);  // n >= 3 here
  }

  std::vector<double> x_, y_, d_;
  SplineKind kind_ = SplineKind::Akima;
};

}  // namespace arfit

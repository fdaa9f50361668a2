#include "fit/family_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ceres/ceres.h>

namespace arfit::fit {
namespace {

// All log-time residuals of a curve in one block (one Jacobian evaluation per iteration instead of one per
// size: the fits are small and Ceres' per-block overhead dominated). The Huber loss is folded into each
// residual as r' = sign(r)·sqrt(ρ(r²)), so ½Σr'² is exactly the robust cost ½Σρ(r²) a per-residual
// ceres::HuberLoss would minimise.
struct LogTimeResiduals {
  FamilySpec spec;
  std::vector<double> s, log_t, w;
  double f, huber;
  template <typename T>
  bool operator()(const T* p, T* r) const {
    using std::sqrt;
    for (size_t i = 0; i < s.size(); ++i) {
      const T d = (families::log_time(spec, p, s[i], f) - T(log_t[i])) * w[i];
      if (d > T(huber))
        r[i] = sqrt(T(2.0 * huber) * d - T(huber * huber));
      else if (d < T(-huber))
        r[i] = -sqrt(T(-2.0 * huber) * d - T(huber * huber));
      else
        r[i] = d;
    }
    return true;
  }
};

template <int N>
ceres::CostFunction* make_cost(LogTimeResiduals* r) {
  const int n = static_cast<int>(r->s.size());
  return new ceres::AutoDiffCostFunction<LogTimeResiduals, ceres::DYNAMIC, N>(r, n);
}

ceres::CostFunction* make_cost_any(LogTimeResiduals* r, int np) {
  switch (np) {
    case 2: return make_cost<2>(r);
    case 4: return make_cost<4>(r);
    case 6: return make_cost<6>(r);
    case 8: return make_cost<8>(r);
  }
  delete r;
  return nullptr;
}

// Least-squares slope/intercept of t = a + b s on [i0, i1).
void line_fit(const std::vector<double>& s, const std::vector<double>& t, size_t i0, size_t i1, double& a, double& b) {
  const double n = static_cast<double>(i1 - i0);
  double ms = 0, mt = 0;
  for (size_t i = i0; i < i1; ++i) {
    ms += s[i];
    mt += t[i];
  }
  ms /= n;
  mt /= n;
  double sst = 0, ss = 0;
  for (size_t i = i0; i < i1; ++i) {
    sst += (s[i] - ms) * (t[i] - mt);
    ss += (s[i] - ms) * (s[i] - ms);
  }
  b = ss > 0 ? sst / ss : 0;
  a = mt - b * ms;
}

double clampd(double v, double lo, double hi) { return std::min(std::max(v, lo), hi); }

}  // namespace

double family_log_time(const FamilySpec& spec, const std::vector<double>& p, double s, double f) {
  return families::log_time<double>(spec, p.data(), s, f);
}

std::vector<std::vector<double>> start_points(const FamilySpec& spec, const std::vector<double>& s,
                                              const std::vector<double>& t, double f) {
  const size_t n = s.size();
  const double tmin = *std::min_element(t.begin(), t.end());
  double maxbw = 0;  // GB/s bus bandwidth
  size_t imax = n - 1;
  for (size_t i = 0; i < n; ++i) {
    const double bw = f * s[i] / t[i] / 1e3;
    if (bw > maxbw) {
      maxbw = bw;
      imax = i;
    }
  }
  (void)imax;
  // Size at which bus bandwidth first reaches half its maximum.
  double s_half = s[n / 2];
  for (size_t i = 0; i < n; ++i)
    if (f * s[i] / t[i] / 1e3 >= 0.5 * maxbw) {
      s_half = s[i];
      break;
    }
  const double la = std::log(std::max(tmin, 1e-3)), lb = std::log(std::max(maxbw, 1e-4));
  std::vector<std::vector<double>> out;
  switch (spec.kind) {
    case FamilyKind::AlphaBeta: {
      out.push_back({la, lb});
      // marginal bandwidth of the top half
      double a, b;
      line_fit(s, t, n / 2, n, a, b);
      if (b > 0) out.push_back({std::log(std::max(a, tmin * 0.5)), std::log(std::max(f / b / 1e3, 1e-4))});
      break;
    }
    case FamilyKind::Sigmoid: {
      const double x0 = std::log2(s_half);
      out.push_back({la + std::log(0.9), lb + std::log(1.1), x0, std::log(0.3)});
      out.push_back({la + std::log(0.9), lb + std::log(1.1), x0 + 3.0, std::log(0.6)});
      break;
    }
    case FamilyKind::SatBw: {
      for (double g : {1.0, 10.0}) out.push_back({la + std::log(0.9), lb, std::log(s_half), std::log(g)});
      out.push_back({la + std::log(0.9), lb + std::log(1.3), std::log(s_half * 4), std::log(3.0)});
      break;
    }
    case FamilyKind::Regimes: {
      const int k = spec.regimes;
      // Contiguous chunks of the sizes, each an α-β line; two shifts of the chunk boundaries.
      for (double shift : {0.0, 0.5}) {
        std::vector<double> p;
        for (int j = 0; j < k; ++j) {
          double lo = (j + shift * (j > 0)) * static_cast<double>(n) / k;
          double hi = (j + 1 + shift * (j + 1 < k)) * static_cast<double>(n) / k;
          size_t i0 = static_cast<size_t>(std::floor(lo)), i1 = std::min(n, static_cast<size_t>(std::ceil(hi)));
          if (i1 < i0 + 2) i1 = std::min(n, i0 + 2);
          if (i1 < i0 + 2) i0 = i1 - 2;
          double a, b;
          line_fit(s, t, i0, i1, a, b);
          const double tl = t[i0];
          a = std::max(a, 0.3 * tl);
          double beta = b > 0 ? f / b / 1e3 : maxbw * 10;
          beta = std::max(beta, 1e-4);
          p.push_back(std::log(a));
          p.push_back(std::log(beta));
        }
        out.push_back(p);
        if (k == 1) break;
      }
      break;
    }
    case FamilyKind::Seed: break;
  }
  std::vector<double> lo, hi;
  spec.bounds(lo, hi);
  for (auto& p : out)
    for (size_t i = 0; i < p.size(); ++i) p[i] = clampd(std::isfinite(p[i]) ? p[i] : 0.5 * (lo[i] + hi[i]), lo[i] + 1e-9, hi[i] - 1e-9);
  return out;
}

FamilyFitResult fit_family(const FamilySpec& spec, const std::vector<double>& s, const std::vector<double>& t, double f,
                           const FamilyFitConfig& config, std::vector<std::vector<double>> starts) {
  FamilyFitResult best;
  best.spec = spec;
  best.cost = std::numeric_limits<double>::infinity();
  const int np = spec.num_params();
  if (starts.empty()) starts = start_points(spec, s, t, f);
  std::vector<double> lo, hi;
  spec.bounds(lo, hi);
  const size_t n = s.size();

  ceres::Solver::Options opts;
  // ≤ 8 parameters and ≤ a few hundred residuals: the normal equations are tiny and well scaled (log-form
  // parameters), so Cholesky is exact enough and ~10 % faster per group than QR; the eval figures on the
  // public data are identical to QR's to the printed digit (docs/fit.md).
  opts.linear_solver_type = ceres::DENSE_NORMAL_CHOLESKY;
  opts.max_num_iterations = config.max_iterations;
  opts.logging_type = ceres::SILENT;
  opts.minimizer_progress_to_stdout = false;
  opts.num_threads = 1;
  opts.function_tolerance = 1e-9;
  opts.gradient_tolerance = 1e-11;
  opts.parameter_tolerance = 1e-9;

  std::vector<double> log_t(n), w(n, 1.0);
  for (size_t i = 0; i < n; ++i) {
    log_t[i] = std::log(t[i]);
    if (config.weights) w[i] = (*config.weights)[i];
  }

  for (size_t si = 0; si < starts.size(); ++si) {
    std::vector<double> p = starts[si];
    for (int i = 0; i < np; ++i) p[i] = clampd(p[i], lo[i], hi[i]);
    ceres::Problem problem;
    problem.AddResidualBlock(make_cost_any(new LogTimeResiduals{spec, s, log_t, w, f, config.huber}, np), nullptr, p.data());
    for (int i = 0; i < np; ++i) {
      problem.SetParameterLowerBound(p.data(), i, lo[i]);
      problem.SetParameterUpperBound(p.data(), i, hi[i]);
    }
    ceres::Solver::Summary summary;
    ceres::Solve(opts, &problem, &summary);
    ++best.starts;
    if (summary.final_cost < best.cost) {
      best.cost = summary.final_cost;
      best.params = p;
      best.converged = summary.termination_type == ceres::CONVERGENCE;
      best.iterations = static_cast<int>(summary.iterations.size());
      best.message = summary.message;
      if (config.covariance) {
        best.covariance.clear();
        ceres::Covariance::Options copts;
        copts.algorithm_type = ceres::DENSE_SVD;
        copts.null_space_rank = -1;
        copts.num_threads = 1;
        ceres::Covariance cov(copts);
        std::vector<std::pair<const double*, const double*>> blocks = {{p.data(), p.data()}};
        if (cov.Compute(blocks, &problem)) {
          best.covariance.assign(static_cast<size_t>(np * np), 0.0);
          cov.GetCovarianceBlock(p.data(), p.data(), best.covariance.data());
        }
      }
    }
  }
  if (best.params.empty()) {
    best.params = starts.empty() ? std::vector<double>(np, 0.0) : starts[0];
    best.message = "no start point";
  }
  double ss = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = family_log_time(spec, best.params, s[i], f) - std::log(t[i]);
    ss += r * r;
  }
  best.rms = n ? std::sqrt(ss / static_cast<double>(n)) : 0;
  if (!best.covariance.empty()) {
    // Ceres returns (JᵀJ)⁻¹; scale by the residual variance (robust cost, n − p degrees of freedom).
    const double dof = std::max<double>(1.0, static_cast<double>(n) - np);
    const double sigma2 = 2.0 * best.cost / dof;
    for (double& c : best.covariance) c *= sigma2;
  }
  return best;
}

namespace {
struct LogisticResidual {
  double x, y;
  template <typename T>
  bool operator()(const T* p, T* r) const {
    // p = (L, x0, k, b): y = L / (1 + e^(−k (x − x0))) + b. Far on the flat side (z = −k (x − x0) > 30) the
    // same value as e^−z / (1 + e^−z): e^z would overflow there once the fit walks x0 and k far out (a host
    // all-to-all curve does), and its Jacobian (inf / inf) would end the solve at NaN. Below 30 the form is
    // the reference's, bit for bit.
    using std::exp;
    const T z = -p[2] * (T(x) - p[1]);
    const T level = z > T(30.0) ? p[0] * exp(-z) / (T(1.0) + exp(-z)) : p[0] / (T(1.0) + exp(z));
    r[0] = level + p[3] - T(y);
    return true;
  }
};
}  // namespace

SeedModel fit_seed(const std::vector<double>& s, const std::vector<double>& t, double f) {
  SeedSetup setup = seed_setup(s, t, f);
  SeedModel m = setup.model;
  if (setup.x.size() < 4) return m;  // scipy's curve_fit refuses M < N: the reference keeps p0
  double p[4] = {m.L, m.x0, m.k, m.b};
  ceres::Problem problem;
  for (size_t i = 0; i < setup.x.size(); ++i)
    problem.AddResidualBlock(new ceres::AutoDiffCostFunction<LogisticResidual, 1, 4>(new LogisticResidual{setup.x[i], setup.y[i]}),
                             nullptr, p);
  ceres::Solver::Options opts;
  opts.linear_solver_type = ceres::DENSE_QR;
  opts.max_num_iterations = 200;
  opts.logging_type = ceres::SILENT;
  opts.num_threads = 1;
  ceres::Solver::Summary summary;
  ceres::Solve(opts, &problem, &summary);
  bool finite = true;
  for (double v : p) finite = finite && std::isfinite(v);
  if (finite) {
    m.L = p[0];
    m.x0 = p[1];
    m.k = p[2];
    m.b = p[3];
  }
  return m;
}

}  // namespace arfit::fit

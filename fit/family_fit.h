// Ceres fits of one family to one curve: log-time residuals, Huber loss, box bounds, deterministic
// multi-start. Internal to fit/ (fit.h is the public API).
#pragma once

#include <string>
#include <vector>

#include "model/families.h"
#include "model/seed.h"

namespace arfit::fit {

// Huber scale in log time. The repeatability floor of the public measurements is ~1.6 % GMAE (typical
// |error| 1.5-3 %), so residuals up to 4 % are treated as noise (quadratic) and larger ones — a protocol
// switch, a stray measurement — count only linearly instead of dragging the fit.
inline constexpr double kHuberScale = 0.04;

struct FamilyFitResult {
  FamilySpec spec;
  std::vector<double> params;
  double cost = 0;           // Ceres cost (robust), 0.5 Σ ρ(r²)
  double rms = 0;            // root-mean-square log residual
  bool converged = false;
  int iterations = 0;
  int starts = 0;
  std::string message;
  std::vector<double> covariance;  // row-major p×p, scaled by the residual variance; empty when unavailable
};

struct FamilyFitConfig {
  bool covariance = false;  // compute the parameter covariance (final fits only)
  int max_iterations = 60;
  double huber = kHuberScale;
  const std::vector<double>* weights = nullptr;  // per-point weights (multiplying the residual), optional
};

// Deterministic start points from the data (sizes ascending).
std::vector<std::vector<double>> start_points(const FamilySpec& spec, const std::vector<double>& s,
                                              const std::vector<double>& t, double f);

// Multi-start fit; `starts` empty = start_points(). The best start (lowest cost, first on ties) wins.
FamilyFitResult fit_family(const FamilySpec& spec, const std::vector<double>& s, const std::vector<double>& t, double f,
                           const FamilyFitConfig& config = {}, std::vector<std::vector<double>> starts = {});

// The seed (DLRM paper) port: turning points + least-squares logistic (no robust loss, as scipy's
// curve_fit). Sizes ascending, n >= 2.
SeedModel fit_seed(const std::vector<double>& s, const std::vector<double>& t, double f);

// ln t of a smooth family in double.
double family_log_time(const FamilySpec& spec, const std::vector<double>& p, double s, double f);

}  // namespace arfit::fit

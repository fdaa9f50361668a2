// Latency model families: time t(s) of one collective call as a function of the message size s (bytes, as
// nccl-tests defines it) on n ranks, with f = bus_factor(collective, n).
//
// Every family is a templated function of its parameter vector so that the same code evaluates in double
// (predict, plots) and in ceres::Jet (fit/ differentiates it). All families return ln t (t in microseconds):
// the fit works on log time, i.e. on relative error.
//
// Parameters are stored in log form where they must be positive, so the optimiser never sees a sign
// constraint; the bounds below are box bounds on the stored values.
//
//   alphabeta (2)   t = α + f·s / β
//                   p[0] = ln α  [µs],  bounds ln 1e-3 .. ln 1e7
//                   p[1] = ln β  [GB/s = 1e3 bytes/µs], bounds ln 1e-4 .. ln 1e5
//   sigmoid (4)     t = α + f·s / (B · σ(k (log2 s − x0)))      (the seed's idea without its seams)
//                   p[0] = ln α [µs], p[1] = ln B [GB/s] (saturated bus bandwidth),
//                   p[2] = x0 [log2 bytes] (half-bandwidth size), bounds 0 .. 48,
//                   p[3] = ln k [1/octave], k in 0.02 .. 0.69: k < ln 2 keeps f·s/(Bσ) non-decreasing in s
//   regimesK (2K)   t = smooth-min_j (α_j + f·s / β_j), j = 1..K: NCCL switches protocol/algorithm with size,
//                   each regime is an α-β line and the fastest one runs. smooth-min is a soft minimum in log
//                   space with sharpness q = kRegimesSharpness: ln t = −(1/q) ln Σ_j t_j^−q.
//                   p[2j] = ln α_j [µs], p[2j+1] = ln β_j [GB/s]; bounds as alphabeta.
//   satbw (4)       t = α + (f·s/B)·(1 + γ·s_h/(s + s_h)): bus bandwidth rises from B/(1+γ) at small
//                   sizes to B at large ones, half-way at s_h (a saturating bandwidth term that extrapolates to
//                   the large sizes as a line, unlike the logistic whose tail depends on k).
//                   p[0] = ln α [µs], p[1] = ln B [GB/s], p[2] = ln s_h [bytes] (bounds ln 1 .. ln 1e11),
//                   p[3] = ln γ (γ in 1e-4 .. 1e4)
//
// The seed family (the DLRM paper's piecewise predictor) is not a smooth function of its parameters; it lives
// in model/seed.h.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace arfit {

enum class FamilyKind { AlphaBeta, Sigmoid, Regimes, SatBw, Seed };

inline constexpr double kRegimesSharpness = 12.0;

struct FamilySpec {
  FamilyKind kind = FamilyKind::AlphaBeta;
  int regimes = 1;  // K for Regimes

  bool operator==(const FamilySpec& o) const { return kind == o.kind && (kind != FamilyKind::Regimes || regimes == o.regimes); }
  bool operator!=(const FamilySpec& o) const { return !(*this == o); }

  int num_params() const {
    switch (kind) {
      case FamilyKind::AlphaBeta: return 2;
      case FamilyKind::Sigmoid: return 4;
      case FamilyKind::Regimes: return 2 * regimes;
      case FamilyKind::SatBw: return 4;
      case FamilyKind::Seed: return 4;  // the logistic's L, x0, k, b (turning points are stored apart)
    }
    return 0;
  }
  // "alphabeta", "sigmoid", "regimes3", "satbw", "seed"
  std::string name() const {
    switch (kind) {
      case FamilyKind::AlphaBeta: return "alphabeta";
      case FamilyKind::Sigmoid: return "sigmoid";
      case FamilyKind::Regimes: return "regimes" + std::to_string(regimes);
      case FamilyKind::SatBw: return "satbw";
      case FamilyKind::Seed: return "seed";
    }
    return "?";
  }
  std::vector<std::string> param_names() const {
    switch (kind) {
      case FamilyKind::AlphaBeta: return {"ln_alpha_us", "ln_beta_GBps"};
      case FamilyKind::Sigmoid: return {"ln_alpha_us", "ln_B_GBps", "x0_log2_bytes", "ln_k"};
      case FamilyKind::SatBw: return {"ln_alpha_us", "ln_B_GBps", "ln_sh_bytes", "ln_gamma"};
      case FamilyKind::Seed: return {"L", "x0", "k", "b"};
      case FamilyKind::Regimes: {
        std::vector<std::string> v;
        for (int j = 0; j < regimes; ++j) {
          v.push_back("ln_alpha" + std::to_string(j + 1) + "_us");
          v.push_back("ln_beta" + std::to_string(j + 1) + "_GBps");
        }
        return v;
      }
    }
    return {};
  }
  // Box bounds of the stored parameters (lower, upper), in parameter order.
  void bounds(std::vector<double>& lo, std::vector<double>& hi) const {
    lo.clear();
    hi.clear();
    auto add = [&](double l, double h) {
      lo.push_back(l);
      hi.push_back(h);
    };
    const double la = std::log(1e-3), ha = std::log(1e7), lb = std::log(1e-4), hb = std::log(1e5);
    switch (kind) {
      case FamilyKind::AlphaBeta: add(la, ha); add(lb, hb); break;
      case FamilyKind::Sigmoid: add(la, ha); add(lb, hb); add(0.0, 48.0); add(std::log(0.02), std::log(0.69)); break;
      case FamilyKind::SatBw: add(la, ha); add(lb, hb); add(0.0, std::log(1e11)); add(std::log(1e-4), std::log(1e4)); break;
      case FamilyKind::Regimes:
        for (int j = 0; j < regimes; ++j) {
          add(la, ha);
          add(lb, hb);
        }
        break;
      case FamilyKind::Seed: add(-50, 50); add(-10, 80); add(-20, 20); add(-50, 50); break;
    }
  }
};

// Parses "alphabeta", "sigmoid", "regimes1".."regimes4", "satbw", "seed"; throws std::invalid_argument.
inline FamilySpec parse_family(const std::string& name) {
  FamilySpec s;
  if (name == "alphabeta") s.kind = FamilyKind::AlphaBeta;
  else if (name == "sigmoid") s.kind = FamilyKind::Sigmoid;
  else if (name == "satbw") s.kind = FamilyKind::SatBw;
  else if (name == "seed") s.kind = FamilyKind::Seed;
  else if (name.size() == 8 && name.compare(0, 7, "regimes") == 0 && name[7] >= '1' && name[7] <= '4') {
    s.kind = FamilyKind::Regimes;
    s.regimes = name[7] - '0';
  } else {
    throw std::invalid_argument("unknown model family '" + name + "' (known: alphabeta, sigmoid, regimes1..regimes4, satbw, seed)");
  }
  return s;
}

namespace families {

// ADL-friendly math so the same expression works for double and ceres::Jet.
using std::exp;
using std::log;

template <typename T>
T log_sum_exp_neg(const T* lt, int k, double q) {
  // ln Σ exp(−q·lt_j), shifted by the smallest lt for stability.
  T m = lt[0];
  for (int j = 1; j < k; ++j)
    if (lt[j] < m) m = lt[j];
  T acc = T(0.0);
  for (int j = 0; j < k; ++j) acc += exp(-q * (lt[j] - m));
  return -q * m + log(acc);
}

// ln t(s) for the smooth families. `s` in bytes, `f` the bus factor. T = double or ceres::Jet.
template <typename T>
T log_time(const FamilySpec& spec, const T* p, double s, double f) {
  const double fs_us = f * s / 1e3;  // f·s in units of GB/s·µs: t_us = fs_us / B_GBps
  switch (spec.kind) {
    case FamilyKind::AlphaBeta:
      return log(exp(p[0]) + fs_us * exp(-p[1]));
    case FamilyKind::Sigmoid: {
      const double x = std::log2(s);
      const T k = exp(p[3]);
      // 1/σ(z) = 1 + e^(−z)
      const T inv_sigma = T(1.0) + exp(-k * (x - p[2]));
      return log(exp(p[0]) + fs_us * exp(-p[1]) * inv_sigma);
    }
    case FamilyKind::SatBw: {
      const T sh = exp(p[2]);
      const T gamma = exp(p[3]);
      return log(exp(p[0]) + fs_us * exp(-p[1]) * (T(1.0) + gamma * sh / (sh + s)));
    }
    case FamilyKind::Regimes: {
      T lt[4] = {T(0.0), T(0.0), T(0.0), T(0.0)};
      const int k = spec.regimes < 4 ? spec.regimes : 4;
      for (int j = 0; j < k; ++j) lt[j] = log(exp(p[2 * j]) + fs_us * exp(-p[2 * j + 1]));
      if (k == 1) return lt[0];
      return -log_sum_exp_neg(lt, k, kRegimesSharpness) / kRegimesSharpness;
    }
    case FamilyKind::Seed:
      break;
  }
  return T(0.0);
}

}  // namespace families
}  // namespace arfit

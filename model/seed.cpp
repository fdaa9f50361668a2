#include "model/seed.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace arfit {

double SeedModel::logistic(double x) const { return L / (1.0 + std::exp(-k * (x - x0))) + b; }

SeedModel::Piece SeedModel::piece(double bytes) const {
  const double ls = std::log2(bytes);
  if (ls <= ln_p) return Piece::Overhead;
  if (ls > sats_p) return Piece::Line;
  return Piece::Logistic;
}

double SeedModel::piece_time_us(Piece p, double bytes, double bus_factor) const {
  switch (p) {
    case Piece::Overhead: return overhead;
    case Piece::Line: return bytes / max_bw * bus_factor / 1e3 + overhead;
    case Piece::Logistic: break;
  }
  return bytes / std::pow(10.0, logistic(std::log2(bytes))) * bus_factor / 1e3;
}

std::vector<double> SeedModel::step_log_bytes() const {
  std::vector<double> steps = {ln_p * std::log(2.0)};
  if (sats_p > ln_p) steps.push_back(sats_p * std::log(2.0));
  return steps;
}

double SeedModel::time_us(double bytes, double bus_factor) const { return piece_time_us(piece(bytes), bytes, bus_factor); }

nlohmann::json SeedModel::to_json() const {
  return {{"ln_p", ln_p}, {"sats_p", sats_p}, {"max_bw", max_bw}, {"overhead", overhead},
          {"L", L},       {"x0", x0},         {"k", k},           {"b", b}};
}


SeedModel SeedModel::from_json(const JsonView& j) {
  // The port is faithful, so its logistic is fitted without bounds (the public data gives L = 134, b = -764):
  // its parameters need only be finite. The peak bandwidth must be positive and the overhead a time.
  SeedModel m;
  m.ln_p = j.at("ln_p").number();
  m.sats_p = j.at("sats_p").number();
  m.max_bw = j.at("max_bw").number();
  if (!(m.max_bw > 0)) j.at("max_bw").fail("the peak bus bandwidth must be positive, got " + j.at("max_bw").json().dump());
  m.overhead = j.at("overhead").number(0, 1e9);
  m.L = j.at("L").number();
  m.x0 = j.at("x0").number();
  m.k = j.at("k").number();
  m.b = j.at("b").number();
  return m;
}

SeedTurningPoints seed_turning_points(const std::vector<double>& sizes, const std::vector<double>& lat,
                                      const std::vector<double>& bw) {
  const int n = static_cast<int>(sizes.size());
  if (n < 2 || lat.size() != sizes.size() || bw.size() != sizes.size())
    throw std::invalid_argument("seed_turning_points: need >= 2 points with matching lengths");
  SeedTurningPoints tp;
  const double max_bw = *std::max_element(bw.begin(), bw.end());
  tp.sat = n - 1;
  for (int i = n - 2; i > 0; --i) {
    if (bw[i] < 0.95 * max_bw) {
      tp.sat = std::min(i + 2, n - 1);
      break;
    }
  }
  tp.lin = 4;
  for (int i = 5; i < n - 1; ++i) {
    const double ratio = (lat[i + 1] - lat[i - 1]) / 2.0 / lat[i];
    if (std::fabs(ratio) > 0.1) {
      tp.lin = i - 1;
      break;
    }
  }
  tp.lin = std::min(tp.lin, n - 1);
  return tp;
}

SeedSetup seed_setup(const std::vector<double>& sizes, const std::vector<double>& lat, double bus_factor) {
  const size_t n = sizes.size();
  std::vector<double> bw(n);
  for (size_t i = 0; i < n; ++i) bw[i] = sizes[i] / lat[i] / 1e3 * bus_factor + kGmaeEps;
  SeedSetup s;
  s.tp = seed_turning_points(sizes, lat, bw);
  SeedModel& m = s.model;
  m.ln_p = std::log2(sizes[s.tp.lin]);
  m.sats_p = std::log2(sizes[s.tp.sat]);
  m.max_bw = *std::max_element(bw.begin(), bw.end());
  m.overhead = lat[std::max(s.tp.lin - 1, 0)];
  for (size_t i = 0; i < n; ++i) {
    if (sizes[i] >= std::exp2(m.ln_p) && sizes[i] <= std::exp2(m.sats_p)) {
      s.x.push_back(std::log2(sizes[i]));
      s.y.push_back(std::log10(bw[i]));
    }
  }
  if (!s.x.empty()) {
    std::vector<double> xs = s.x;
    std::sort(xs.begin(), xs.end());
    const size_t h = xs.size() / 2;
    const double median = xs.size() % 2 ? xs[h] : 0.5 * (xs[h - 1] + xs[h]);
    m.L = xs.back();
    m.x0 = median;
    m.k = 1.0;
    m.b = *std::min_element(s.y.begin(), s.y.end());
  }
  return s;
}

}  // namespace arfit

#include "fit/siblings.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "model/group_model.h"
#include "model/interp.h"

namespace arfit::fit {
namespace {

// Below this total kernel weight no ratio sample lies within ~3 bandwidths: the ratio is not known there.
constexpr double kMinKernelWeight = 1e-2;
// Floor of a transfer's log variance: two measurements of one point differ by ~1.6 % (nccl-tests in-place
// vs out-of-place), i.e. ~1.1 % each.
constexpr double kTransferSigmaFloor = 0.011;

bool same_size(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(a, b); }

bool contains_size(const std::vector<double>& sorted, double s) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), s * (1 - 1e-9));
  return it != sorted.end() && same_size(*it, s);
}

struct RatioSample {
  double u;      // log2 size
  double r;      // ln t_target − ln t_sibling
  double bytes;  // where it was taken
};

struct Transfer {
  double value;     // ln t of the target
  double variance;  // its log variance
};

// Kernel-weighted median of r (w: weights, sw: their sum). A ratio sample next to a sharp feature pairs a
// measurement with the other curve's interpolation across that feature and is off by the feature's size; the
// median ignores such samples where a weighted mean would be dragged by them.
double weighted_median(const std::vector<double>& r, const std::vector<double>& w, double sw) {
  std::vector<std::pair<double, double>> v;
  for (size_t i = 0; i < r.size(); ++i)
    if (w[i] > 0) v.push_back({r[i], w[i]});
  std::sort(v.begin(), v.end());
  double acc = 0;
  for (const auto& [ri, wi] : v) {
    acc += wi;
    if (acc >= 0.5 * sw) return ri;
  }
  return v.empty() ? 0.0 : v.back().first;
}

}  // namespace

std::string sibling_set_key(const Curve& c) {
  const GroupKey& k = c.key;
  return (c.hardware.empty() ? k.system : c.hardware) + "/" + to_string(k.collective) + "/" + k.strategy + "/" +
         to_string(k.fusion) + "/n" + std::to_string(k.nranks) + "/N" + std::to_string(k.nnodes);
}

SiblingPoolStats pool_siblings(const std::vector<Curve>& curves, std::vector<GroupFit>& fits) {
  SiblingPoolStats stats;
  if (curves.size() != fits.size()) return stats;
  std::map<std::string, std::vector<size_t>> sets;
  for (size_t i = 0; i < curves.size(); ++i)
    if (fits[i].ok && curves[i].bytes.size() >= 2) sets[sibling_set_key(curves[i])].push_back(i);

  // Every ratio is computed from the models fitted alone, so the pooled result of one curve never feeds
  // another's and the order within a set does not matter.
  std::map<size_t, GroupModel> alone;
  std::map<size_t, std::vector<bool>> spikes;  // per curve: which sizes are spikes (set aside, fit.h)
  for (const auto& [key, members] : sets) {
    if (members.size() < 2) continue;
    for (size_t i : members) {
      alone.emplace(i, GroupModel::from_json(fits[i].model));
      std::vector<bool>& sp = spikes[i];
      sp.assign(curves[i].bytes.size(), false);
      for (size_t k : spike_indices(curves[i].time_us)) sp[k] = true;
    }
  }
  const double h = kSiblingBandwidthOctaves;

  for (const auto& [key, members] : sets) {
    if (members.size() < 2) continue;
    // Members ordered by id so that summation order (hence the last bits) is independent of input order.
    std::vector<size_t> order = members;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return curves[x].key.id() < curves[y].key.id(); });
    for (size_t a : order) {
      const Curve& A = curves[a];
      const GroupModel& MA = alone.at(a);
      const std::vector<bool>& a_spike = spikes.at(a);
      if (MA.correction.x().empty()) continue;  // no in-range correction to carry the knots
      const double amin = A.bytes.front(), amax = A.bytes.back();
      std::map<double, std::vector<Transfer>> at_size;
      std::set<std::string> used;
      for (size_t b : order) {
        if (b == a) continue;
        const Curve& B = curves[b];
        const GroupModel& MB = alone.at(b);
        const std::vector<bool>& b_spike = spikes.at(b);
        std::vector<RatioSample> rs;
        for (size_t i = 0; i < A.bytes.size(); ++i)
          if (!a_spike[i] && A.bytes[i] >= B.bytes.front() && A.bytes[i] <= B.bytes.back())
            rs.push_back({std::log2(A.bytes[i]), std::log(A.time_us[i]) - std::log(MB.predict(A.bytes[i]).time_us), A.bytes[i]});
        for (size_t i = 0; i < B.bytes.size(); ++i)
          if (!b_spike[i] && B.bytes[i] >= amin && B.bytes[i] <= amax)
            rs.push_back({std::log2(B.bytes[i]), std::log(MA.predict(B.bytes[i]).time_us) - std::log(B.time_us[i]), B.bytes[i]});
        if (rs.size() < 3) continue;
        for (size_t j = 0; j < B.bytes.size(); ++j) {
          const double sb = B.bytes[j];
          // A sibling's spike is no measurement of the target either.
          if (b_spike[j] || sb <= amin || sb >= amax || contains_size(A.bytes, sb)) continue;
          const double ub = std::log2(sb);
          // Kernel weight of each ratio sample; the sample at sb itself holds the target's interpolation
          // error there and gets none.
          std::vector<double> w(rs.size(), 0.0);
          double sw = 0, sw2 = 0;
          for (size_t i = 0; i < rs.size(); ++i) {
            if (same_size(rs[i].bytes, sb)) continue;
            const double z = (rs[i].u - ub) / h;
            w[i] = std::exp(-0.5 * z * z);
            sw += w[i];
            sw2 += w[i] * w[i];
          }
          if (sw < kMinKernelWeight) continue;
          std::vector<double> r(rs.size());
          for (size_t i = 0; i < rs.size(); ++i) r[i] = rs[i].r;
          const double rho = weighted_median(r, w, sw);
          // Robust scale: kernel-weighted median absolute deviation, as a normal standard deviation.
          for (double& d : r) d = std::fabs(d - rho);
          const double mad = 1.4826 * weighted_median(r, w, sw);
          const double scatter = mad * mad;
          const double n_eff = sw * sw / sw2;
          // The ratio's own uncertainty (scatter / n_eff) plus one sample's scatter: the transfer inherits the
          // sibling's point-to-point noise at sb as well.
          const double var = std::max(scatter * (1 + 1 / n_eff), kTransferSigmaFloor * kTransferSigmaFloor);
          at_size[sb].push_back({std::log(B.time_us[j]) + rho, var});
          used.insert(B.key.id());
        }
      }
      if (at_size.empty()) continue;
      // New knots: the target's own, plus one per sibling size.
      std::vector<std::pair<double, double>> knots;
      for (size_t i = 0; i < MA.correction.x().size(); ++i) knots.push_back({MA.correction.x()[i], MA.correction.y()[i]});
      const double var_own = MA.sigma_in * MA.sigma_in;
      for (const auto& [sb, ts] : at_size) {
        double wsum = 0, wv = 0;
        for (const Transfer& t : ts) {
          wsum += 1 / t.variance;
          wv += t.value / t.variance;
        }
        const double own = std::log(MA.predict(sb).time_us);
        const double value = (wv + own / var_own) / (wsum + 1 / var_own);
        knots.push_back({std::log(sb), value - MA.model_log_time(sb)});
      }
      std::sort(knots.begin(), knots.end());
      std::vector<double> kx, ky;
      for (const auto& [x, y] : knots) {
        if (!kx.empty() && !(x > kx.back())) continue;
        kx.push_back(x);
        ky.push_back(y);
      }
      const HermiteSpline sp(kx, ky, MA.correction.kind());
      nlohmann::json& j = fits[a].model;
      j["correction"]["log_bytes"] = sp.x();
      j["correction"]["log_resid"] = sp.y();
      j["sibling_knots"] = {{"count", static_cast<int>(at_size.size())},
                            {"siblings", std::vector<std::string>(used.begin(), used.end())},
                            {"bandwidth_octaves", h}};
      ++stats.targets;
      stats.knots += static_cast<int>(at_size.size());
    }
  }
  return stats;
}

}  // namespace arfit::fit

#include "fit/siblings.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
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

namespace {

// A curve's model fitted alone, and which of its sizes are spikes (set aside, fit.h).
struct AloneFit {
  GroupModel model;
  std::vector<bool> spike;
};

// The ratio samples between a target A and a sibling B where both were measured: A's measurements against B's
// model inside B's range, and A's model against B's measurements inside A's range (spikes of either left out).
std::vector<RatioSample> ratio_samples(const Curve& A, const AloneFit& a, const Curve& B, const AloneFit& b) {
  std::vector<RatioSample> rs;
  const double amin = A.bytes.front(), amax = A.bytes.back();
  for (size_t i = 0; i < A.bytes.size(); ++i)
    if (!a.spike[i] && A.bytes[i] >= B.bytes.front() && A.bytes[i] <= B.bytes.back())
      rs.push_back({std::log2(A.bytes[i]), std::log(A.time_us[i]) - std::log(b.model.predict(A.bytes[i]).time_us), A.bytes[i]});
  for (size_t i = 0; i < B.bytes.size(); ++i)
    if (!b.spike[i] && B.bytes[i] >= amin && B.bytes[i] <= amax)
      rs.push_back({std::log2(B.bytes[i]), std::log(a.model.predict(B.bytes[i]).time_us) - std::log(B.time_us[i]), B.bytes[i]});
  return rs;
}

// The target's log time at the sibling's size sb, from the sibling's measurement there and the kernel-weighted
// ratio around it; none where no ratio sample lies near enough.
std::optional<Transfer> transfer_at(const std::vector<RatioSample>& rs, double sb, double sibling_time_us) {
  const double ub = std::log2(sb);
  // Kernel weight of each ratio sample; the sample at sb itself holds the target's interpolation
  // error there and gets none.
  std::vector<double> w(rs.size(), 0.0);
  double sw = 0, sw2 = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    if (same_size(rs[i].bytes, sb)) continue;
    const double z = (rs[i].u - ub) / kSiblingBandwidthOctaves;
    w[i] = std::exp(-0.5 * z * z);
    sw += w[i];
    sw2 += w[i] * w[i];
  }
  if (sw < kMinKernelWeight) return std::nullopt;
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
  return Transfer{std::log(sibling_time_us) + rho, var};
}

// Every transfer sibling B lends target A: one per B size strictly inside A's range that A did not measure.
// Returns whether B lent any.
bool add_sibling_transfers(const Curve& A, const AloneFit& a, const Curve& B, const AloneFit& b,
                           std::map<double, std::vector<Transfer>>& at_size) {
  const std::vector<RatioSample> rs = ratio_samples(A, a, B, b);
  if (rs.size() < 3) return false;
  bool lent = false;
  for (size_t j = 0; j < B.bytes.size(); ++j) {
    const double sb = B.bytes[j];
    // A sibling's spike is no measurement of the target either.
    if (b.spike[j] || sb <= A.bytes.front() || sb >= A.bytes.back() || contains_size(A.bytes, sb)) continue;
    if (const auto t = transfer_at(rs, sb, B.time_us[j])) {
      at_size[sb].push_back(*t);
      lent = true;
    }
  }
  return lent;
}

// The target's correction with new knots: its own, plus one per sibling size, each the inverse-variance mean of the
// transfers there and the target's own model.
HermiteSpline pooled_correction(const GroupModel& MA, const std::map<double, std::vector<Transfer>>& at_size) {
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
  return HermiteSpline(kx, ky, MA.correction.kind());
}

}  // namespace

SiblingPoolStats pool_siblings(const std::vector<Curve>& curves, std::vector<GroupFit>& fits) {
  SiblingPoolStats stats;
  if (curves.size() != fits.size()) return stats;
  std::map<std::string, std::vector<size_t>> sets;
  for (size_t i = 0; i < curves.size(); ++i)
    if (fits[i].ok && curves[i].bytes.size() >= 2) sets[sibling_set_key(curves[i])].push_back(i);

  // Every ratio is computed from the models fitted alone, so the pooled result of one curve never feeds
  // another's and the order within a set does not matter.
  std::map<size_t, AloneFit> alone;
  for (const auto& [key, members] : sets) {
    if (members.size() < 2) continue;
    for (size_t i : members) {
      AloneFit& f = alone.emplace(i, AloneFit{GroupModel::from_json(fits[i].model), {}}).first->second;
      f.spike.assign(curves[i].bytes.size(), false);
      for (size_t k : spike_indices(curves[i].time_us)) f.spike[k] = true;
    }
  }

  for (const auto& [key, members] : sets) {
    if (members.size() < 2) continue;
    // Members ordered by id so that summation order (hence the last bits) is independent of input order.
    std::vector<size_t> order = members;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return curves[x].key.id() < curves[y].key.id(); });
    for (size_t a : order) {
      const AloneFit& MA = alone.at(a);
      if (MA.model.correction.x().empty()) continue;  // no in-range correction to carry the knots
      std::map<double, std::vector<Transfer>> at_size;
      std::set<std::string> used;
      for (size_t b : order)
        if (b != a && add_sibling_transfers(curves[a], MA, curves[b], alone.at(b), at_size)) used.insert(curves[b].key.id());
      if (at_size.empty()) continue;
      const HermiteSpline sp = pooled_correction(MA.model, at_size);
      nlohmann::json& j = fits[a].model;
      j["correction"]["log_bytes"] = sp.x();
      j["correction"]["log_resid"] = sp.y();
      j["sibling_knots"] = {{"count", static_cast<int>(at_size.size())},
                            {"siblings", std::vector<std::string>(used.begin(), used.end())},
                            {"bandwidth_octaves", kSiblingBandwidthOctaves}};
      ++stats.targets;
      stats.knots += static_cast<int>(at_size.size());
    }
  }
  return stats;
}

}  // namespace arfit::fit

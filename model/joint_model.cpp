#include "model/joint_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "model/bus_factor.h"
#include "model/metrics.h"

namespace arfit {
namespace {

constexpr double kMadToSigma = 1.4826;  // sigma of a normal distribution per median absolute deviation

// The trend t_c / t_d at `bytes`: the median of ln(t_c / t_d) over sizes bytes·2^k, |k| <= octaves, that both
// members measured (bytes itself always), so that one protocol switch between neighbouring sizes shifts the
// ratio at a single size, not the trend; and the median absolute deviation of those logs, the trend's own
// uncertainty.
struct Trend {
  double ratio = 1;
  double log_mad = 0;
};

Trend smoothed_trend(const GroupModel& c, const GroupModel& d, double bytes, int octaves) {
  const double lo = std::max(c.min_bytes, d.min_bytes), hi = std::min(c.max_bytes, d.max_bytes);
  std::vector<double> r;
  for (int k = -octaves; k <= octaves; ++k) {
    const double s = std::ldexp(bytes, k);
    if (k != 0 && (s < lo || s > hi)) continue;
    r.push_back(std::log(c.predict(s).time_us) - std::log(d.predict(s).time_us));
  }
  Trend t;
  const double med = percentile(r, 50);
  t.ratio = std::exp(med);
  for (double& x : r) x = std::abs(x - med);
  t.log_mad = percentile(r, 50);
  return t;
}

// Sorts the members by rank count, refuses fewer than two or a repeated count (`fail` says why), and sets the
// members' latency floors and the SM.
template <typename Fail>
void set_members(JointModel& m, std::vector<GroupModel> members, Fail fail) {
  std::sort(members.begin(), members.end(), [](const GroupModel& a, const GroupModel& b) { return a.key.nranks < b.key.nranks; });
  if (members.size() < 2) fail("a joint model needs >= 2 fitted rank counts");
  for (std::size_t i = 1; i < members.size(); ++i)
    if (members[i].key.nranks == members[i - 1].key.nranks)
      fail("two members measured at " + std::to_string(members[i].key.nranks) + " ranks");
  m.members = std::move(members);
  m.latency_us.clear();
  for (const GroupModel& g : m.members) m.latency_us.push_back(latency_floor_us(g));
  m.sm = m.members.back().sm;
}

}  // namespace

double latency_floor_us(const GroupModel& m) {
  double best = m.predict(m.min_bytes).time_us;
  for (double s = m.min_bytes * 2; s < m.max_bytes; s *= 2) best = std::min(best, m.predict(s).time_us);
  return std::min(best, m.predict(m.max_bytes).time_us);
}

JointModel JointModel::of_members(const GroupKey& key, std::vector<GroupModel> members) {
  JointModel m;
  m.key = key;
  m.key.nranks = 0;
  m.sigma_excess_trend = kJointSigmaExcessTrend;
  set_members(m, std::move(members), [](const std::string& why) { throw std::invalid_argument(why); });
  return m;
}

JointModel JointModel::from_json(const nlohmann::json& j) { return from_json(JsonView(j)); }

JointModel JointModel::from_json(const JsonView& j) {
  JointModel m;
  m.key = group_key_from_json(j.at("key"), 0);
  // Files without "rule" predate it and used the legacy rule.
  m.rule = j.string_or("rule", kJointRuleLegacy);
  if (m.rule != kJointRule && m.rule != kJointRuleLegacy) j.at("rule").fail("unknown joint rule '" + m.rule + "'");
  // kappa damps the measured trend per doubling (a fraction of it): above 1 a hand-edited 4 carried a trend of
  // 1e11 over 18 doublings to a time of inf (null in --json) with exit 0.
  m.kappa = j.at("kappa").number(0, 1);
  m.sigma_per_doubling = j.at("sigma_per_doubling").number(0, kMaxLogSigma);
  if (const auto o = j.find("smooth_octaves")) m.smooth_octaves = o->integer<int>(0, 64);
  if (const auto s = j.find("sigma_excess_trend")) m.sigma_excess_trend = s->number(0, 10);
  const JsonView members = j.at("members");
  m.members_json = members.json();
  std::vector<GroupModel> fitted;
  for (std::size_t i = 0; i < members.size(); ++i) {
    GroupModel gm = GroupModel::from_json(members.at(i));
    if (gm.ok) fitted.push_back(std::move(gm));
  }
  set_members(m, std::move(fitted), [&](const std::string& why) { members.fail(why); });
  return m;
}

nlohmann::json JointModel::make_json(const GroupKey& key, const std::vector<nlohmann::json>& member_groups, double kappa,
                                     double sigma_per_doubling, int smooth_octaves, double sigma_excess_trend) {
  nlohmann::json j;
  j["key"] = group_key_to_json(key);
  j["id"] = key.id();
  std::vector<int> ns;
  for (const auto& g : member_groups) ns.push_back(g.at("key").at("nranks").get<int>());
  j["nranks"] = ns;
  j["rule"] = kJointRule;
  j["kappa"] = kappa;
  j["sigma_per_doubling"] = sigma_per_doubling;
  j["smooth_octaves"] = smooth_octaves;
  j["sigma_excess_trend"] = sigma_excess_trend;
  j["members"] = member_groups;
  return j;
}

namespace {

// The two members a count is read from: the nearest counts around n, or the two largest (smallest) outside.
std::pair<std::size_t, std::size_t> bracketing_members(const std::vector<GroupModel>& members, int n) {
  std::size_t a = 0, b = 1;
  const std::size_t k = members.size();
  if (n > members.back().key.nranks) {
    a = k - 2;
    b = k - 1;
  } else if (n > members.front().key.nranks) {
    for (std::size_t i = 0; i + 1 < k; ++i)
      if (members[i].key.nranks < n && n < members[i + 1].key.nranks) {
        a = i;
        b = i + 1;
      }
  }
  return {a, b};
}

// Beyond the measured counts under the current rule: ln t at n from C, the member next to n (its time tc at these
// bytes), and D, the other one; with the trend's scatter and the part of the trend the rule's laws do not explain,
// each as a σ of ln t at n (`outside` doublings beyond C).
struct BeyondCounts {
  double log_t = 0, trend_sigma = 0, excess_sigma = 0;
};

BeyondCounts beyond_counts(const JointModel& m, std::size_t ic, std::size_t id, double tc, int n, double bytes,
                           double outside) {
  BeyondCounts out;
  const GroupModel& C = m.members[ic];
  const GroupModel& D = m.members[id];
  const double c = C.key.nranks, d = D.key.nranks, uc = std::log2(c), ud = std::log2(d), u = std::log2(n);
  const Trend trend = smoothed_trend(C, D, bytes, m.smooth_octaves);
  const double q = trend.ratio;
  // The trend's scatter over the window, as a normal sigma (1.4826·MAD), carried along the extrapolation.
  out.trend_sigma = kMadToSigma * trend.log_mad * outside / std::abs(uc - ud);
  const double lambda = std::clamp(m.latency_us[ic] / tc, 0.0, 1.0);
  // Latency a + b·(n − 1) with a, b >= 0: the ratio to count c lies between 1 (b = 0) and (n−1)/(c−1) (a = 0).
  double r_lat = 1 + (n - c) * (1 - 1 / q) / (c - d);
  if (c > 1) {
    const double peers_ratio = (n - 1) / (c - 1);
    r_lat = std::clamp(r_lat, std::min(1.0, peers_ratio), std::max(1.0, peers_ratio));
  } else {
    r_lat = std::max(r_lat, 1.0);
  }
  // Bandwidth: the measured trend scaled by the bus factor's remaining growth (per doubling, in [0, 1]).
  // A member of one rank (bus factor 0: no ring, no peer, a local copy at most) measured no bandwidth trend;
  // its ratio to c, any size (a copy at 1e-3 us against a ring at 1e8 us), raised to the doublings beyond c
  // overflowed the time to 1e121 us and beyond. From c alone the bus bandwidth is held, as for a family
  // with one measured count (docs/fit.md, "Across node boundaries").
  const Collective coll = m.key.collective;
  const double fn = bus_factor(coll, n), fc = bus_factor(coll, C.key.nranks), fd = bus_factor(coll, D.key.nranks);
  const bool no_bandwidth_trend = fd == 0 && fc > 0;
  double per_doubling = m.kappa;
  if (fn > 0 && fc > 0 && fd > 0 && std::abs(std::log(fc / fd)) > 1e-9)
    per_doubling = std::clamp(std::log(fn / fc) / (u - uc) / (std::log(fc / fd) / (uc - ud)), 0.0, 1.0);
  const double r_bw = no_bandwidth_trend ? fn / fc : std::pow(q, per_doubling * (u - uc) / (uc - ud));
  // The part of the measured trend that the rule's own laws do not explain widens the interval: in the
  // latency share the number of peers ((c−1)/(d−1) at most), in the bandwidth share the bus factor. A trend
  // from one rank is no evidence about the topology beyond c in either share (the latency law starts at no
  // peer; the bandwidth share does not use it).
  const double lat_explained = d > 1 ? std::abs(std::log((c - 1) / (d - 1))) : std::abs(std::log(q));
  const double bw_explained =
      no_bandwidth_trend ? std::abs(std::log(q)) : (fc > 0 && fd > 0) ? std::abs(std::log(fc / fd)) : 0.0;
  const double explained = lambda * lat_explained + (1 - lambda) * bw_explained;
  out.excess_sigma = m.sigma_excess_trend * std::max(0.0, std::abs(std::log(q)) - explained) / std::abs(uc - ud) * outside;
  out.log_t = std::log(tc * (lambda * r_lat + (1 - lambda) * r_bw));
  return out;
}

}  // namespace

Prediction JointModel::predict(int n, double bytes) const {
  for (const auto& m : members)
    if (m.key.nranks == n) return m.predict(bytes);
  const auto [a, b] = bracketing_members(members, n);
  const GroupModel& A = members[a];
  const GroupModel& B = members[b];
  const Prediction pa = A.predict(bytes), pb = B.predict(bytes);
  const double ua = std::log2(A.key.nranks), ub = std::log2(B.key.nranks), u = std::log2(n);
  const double la = std::log(pa.time_us), lb = std::log(pb.time_us);
  const double slope = (lb - la) / (ub - ua);
  double lt;
  double outside = 0;  // doublings beyond the measured counts
  double trend_sigma = 0;
  double excess_sigma = 0;
  if (u > ua && u < ub) {
    lt = la + slope * (u - ua);
  } else {
    const bool up = u > ub;
    outside = up ? u - ub : ua - u;
    if (rule == kJointRuleLegacy) {
      lt = up ? lb + kappa * slope * (u - ub) : la + kappa * slope * (u - ua);
    } else {
      // The measured count next to n is the anchor.
      const BeyondCounts beyond = beyond_counts(*this, up ? b : a, up ? a : b, (up ? pb : pa).time_us, n, bytes, outside);
      lt = beyond.log_t;
      trend_sigma = beyond.trend_sigma;
      excess_sigma = beyond.excess_sigma;
    }
  }
  Prediction p;
  p.time_us = std::exp(lt);
  const double ha = 0.5 * (std::log(pa.hi_us) - std::log(pa.lo_us)), hb = 0.5 * (std::log(pb.hi_us) - std::log(pb.lo_us));
  const double h0 = std::max(ha, hb);
  const double dh = kZ90 * sigma_per_doubling * std::max(outside, 0.5);
  const double dt = kZ90 * trend_sigma;
  const double dx = kZ90 * excess_sigma;
  // At most the widest band a group gives (kMaxLogHalfWidth): beyond it an upper bound of inf and a lower one
  // of 0 (null in --json) far beyond the measured counts.
  const double h = std::min(std::sqrt(h0 * h0 + dh * dh + dt * dt + dx * dx), kMaxLogHalfWidth);
  p.lo_us = p.time_us * std::exp(-h);
  p.hi_us = p.time_us * std::exp(h);
  p.extrapolated = true;
  p.transferred = pa.transferred || pb.transferred;
  p.how = "joint-n " + std::to_string(A.key.nranks) + "," + std::to_string(B.key.nranks) + "->" + std::to_string(n);
  return p;
}

}  // namespace arfit

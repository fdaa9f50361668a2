#include "model/joint_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/bus_factor.h"

namespace arfit {

JointModel JointModel::from_json(const nlohmann::json& j) {
  JointModel m;
  m.key = group_key_from_json(j.at("key"));
  m.kappa = j.at("kappa").get<double>();
  m.sigma_per_doubling = j.at("sigma_per_doubling").get<double>();
  m.members_json = j.at("members");
  for (const auto& g : m.members_json) {
    GroupModel gm = GroupModel::from_json(g);
    if (gm.ok) m.members.push_back(std::move(gm));
  }
  std::sort(m.members.begin(), m.members.end(), [](const GroupModel& a, const GroupModel& b) { return a.key.nranks < b.key.nranks; });
  if (m.members.size() < 2) throw std::invalid_argument("joint model needs >= 2 fitted rank counts");
  m.sm = m.members.back().sm;
  return m;
}

nlohmann::json JointModel::make_json(const GroupKey& key, const std::vector<nlohmann::json>& member_groups, double kappa,
                                     double sigma_per_doubling) {
  nlohmann::json j;
  j["key"] = group_key_to_json(key);
  j["id"] = key.id();
  std::vector<int> ns;
  for (const auto& g : member_groups) ns.push_back(g.at("key").at("nranks").get<int>());
  j["nranks"] = ns;
  j["rule"] = "loglinear-busbw-in-log2n";
  j["kappa"] = kappa;
  j["sigma_per_doubling"] = sigma_per_doubling;
  j["members"] = member_groups;
  return j;
}

Prediction JointModel::predict(int n, double bytes) const {
  for (const auto& m : members)
    if (m.key.nranks == n) return m.predict(bytes);
  // Choose the pair.
  size_t a = 0, b = 1;
  const size_t k = members.size();
  if (n > members.back().key.nranks) {
    a = k - 2;
    b = k - 1;
  } else if (n > members.front().key.nranks) {
    for (size_t i = 0; i + 1 < k; ++i)
      if (members[i].key.nranks < n && n < members[i + 1].key.nranks) {
        a = i;
        b = i + 1;
      }
  }
  const GroupModel& A = members[a];
  const GroupModel& B = members[b];
  const Prediction pa = A.predict(bytes), pb = B.predict(bytes);
  const double ua = std::log2(A.key.nranks), ub = std::log2(B.key.nranks), u = std::log2(n);
  const double la = std::log(pa.time_us), lb = std::log(pb.time_us);
  const double slope = (lb - la) / (ub - ua);
  double lt;
  double outside = 0;  // doublings beyond the measured counts
  if (u > ub) {
    lt = lb + kappa * slope * (u - ub);
    outside = u - ub;
  } else if (u < ua) {
    lt = la + kappa * slope * (u - ua);
    outside = ua - u;
  } else {
    lt = la + slope * (u - ua);
  }
  Prediction p;
  p.time_us = std::exp(lt);
  const double ha = 0.5 * (std::log(pa.hi_us) - std::log(pa.lo_us)), hb = 0.5 * (std::log(pb.hi_us) - std::log(pb.lo_us));
  const double h0 = std::max(ha, hb);
  const double d = kZ90 * sigma_per_doubling * std::max(outside, 0.5);
  const double h = std::sqrt(h0 * h0 + d * d);
  p.lo_us = p.time_us * std::exp(-h);
  p.hi_us = p.time_us * std::exp(h);
  p.extrapolated = true;
  p.how = "joint-n " + std::to_string(A.key.nranks) + "," + std::to_string(B.key.nranks) + "->" + std::to_string(n);
  return p;
}

}  // namespace arfit

// Joint model across GPU counts: the fitted groups of one (system, collective, strategy, fusion, dtype,
// nnodes) family at several rank counts n, and a rule that carries them to an unmeasured n.
//
// Between two measured counts ln t(s) is interpolated linearly in u = log2 n. Outside them (rule
// kJointRule) the time at the nearest measured count c is carried to n, with d the other count of the pair
// and q(s) = t_c(s) / t_d(s) the measured trend (median over sizes s·2^k, |k| <= smooth_octaves, so that one
// protocol switch between neighbouring sizes does not set the trend), split by regime:
//   t_n(s) = t_c(s) · [ λ(s) · R_lat(s) + (1 − λ(s)) · R_bw(s) ]
//   λ(s)   = L_c / t_c(s) in [0, 1], L_c the smallest time of count c: the share of t_c(s) that is latency;
//   R_lat  : latency affine in the number of peers, L(n) = a + b·(n − 1) with a, b >= 0, through q —
//            1 + (n − c)·(1 − 1/q)/(c − d), kept between 1 and (n − 1)/(c − 1) (the a = 0 / b = 0 limits);
//   R_bw   = q^e, e = ln(f(n)/f(c)) / ln(f(c)/f(d)) with f the bus factor: the measured bandwidth trend
//            scaled by how much the bus factor still grows, i.e. bus bandwidth carried over when the measured
//            times grew as the bus factor did. e is capped to a per-doubling trend of at most 1; collectives
//            with a constant bus factor (broadcast, reduce, sendrecv) use kappa per doubling instead.
// No constant is fitted to the held-out counts: the form and smooth_octaves were chosen on the public
// families (crossn protocol, docs/fit.md). The interval widens by sigma_per_doubling per doubling beyond the
// measured counts, by the trend's scatter over its window, and by sigma_excess_trend times the part of the
// measured trend per doubling that the rule's laws do not explain, |ln q| − [λ·|ln((c−1)/(d−1))| +
// (1−λ)·|ln(f(c)/f(d))|] (a trend beyond them says the topology changed between the measured counts — PCIe
// switches, sockets — and the next doubling may change it again or not), all in quadrature with the members'.
// Files written before this rule ("loglinear-busbw-in-log2n") keep their rule: ln t extrapolated in u with
// the slope scaled by kappa.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/group_model.h"

namespace arfit {

inline constexpr const char* kJointRule = "latency-peers+busbw-trend";
inline constexpr const char* kJointRuleLegacy = "loglinear-busbw-in-log2n";

// Defaults, chosen on the crossn protocol over the public families (docs/fit.md).
inline constexpr double kJointKappa = 0.5;  // per-doubling damping where the bus factor does not grow
inline constexpr double kJointSigmaPerDoubling = 0.12;
inline constexpr double kJointSigmaExcessTrend = 1.0;
inline constexpr int kJointSmoothOctaves = 2;

struct JointModel {
  GroupKey key;  // nranks = 0
  std::vector<GroupModel> members;  // ascending nranks
  std::vector<double> latency_us;   // per member: smallest predicted time over its measured sizes
  nlohmann::json members_json;
  std::string rule = kJointRule;
  double kappa = kJointKappa;
  double sigma_per_doubling = kJointSigmaPerDoubling;
  double sigma_excess_trend = 0;  // files without it predate the term
  int smooth_octaves = kJointSmoothOctaves;
  int sm = 0;

  // Throws JsonError (a std::invalid_argument naming the JSON pointer) on bad or absurd content.
  static JointModel from_json(const nlohmann::json& j);
  static JointModel from_json(const JsonView& j);
  // The rule over members already in memory (>= 2 distinct rank counts, any order), with the defaults above;
  // members_json stays empty (such a model is evaluated, never written). Throws std::invalid_argument.
  static JointModel of_members(const GroupKey& key, std::vector<GroupModel> members);
  static nlohmann::json make_json(const GroupKey& key, const std::vector<nlohmann::json>& member_groups, double kappa,
                                  double sigma_per_doubling, int smooth_octaves = kJointSmoothOctaves,
                                  double sigma_excess_trend = kJointSigmaExcessTrend);
  Prediction predict(int nranks, double bytes) const;
};

// Smallest predicted time over a member's measured sizes (octave steps): its latency floor. Not the time at
// the smallest size alone, because some strategies (eager custom all-reduce) are slower at tiny sizes.
double latency_floor_us(const GroupModel& m);

}  // namespace arfit

// Joint model across GPU counts: the fitted groups of one (system, collective, strategy, fusion, dtype,
// nnodes) family at several rank counts n, and a rule that carries them to an unmeasured n.
//
// Rule (per size s, u = log2 n): take the two measured counts nearest to the target (the two largest when
// extrapolating upwards, the two smallest downwards) and interpolate/extrapolate ln t_m(s) linearly in u, with
// the slope scaled by `kappa` outside the measured counts (kappa = 0: time carried over unchanged; 1: the
// per-doubling trend continues in full). Latency grows with the number of steps (~ log2 n or n) and the bus
// factor grows towards 2 (all-reduce), so the trend is real but flattens: kappa = 0.5 was the best of
// 0..1 on the public families (crossn protocol, docs/fit.md), better than carrying bus bandwidth over.
// The interval widens by sigma_per_doubling per doubling of n beyond the measured counts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/group_model.h"

namespace arfit {

// Defaults, chosen on the crossn protocol over the public families (docs/fit.md).
inline constexpr double kJointKappa = 0.5;
inline constexpr double kJointSigmaPerDoubling = 0.3;

struct JointModel {
  GroupKey key;  // nranks = 0
  std::vector<GroupModel> members;  // ascending nranks
  nlohmann::json members_json;
  double kappa = kJointKappa;
  double sigma_per_doubling = kJointSigmaPerDoubling;
  int sm = 0;

  static JointModel from_json(const nlohmann::json& j);
  static nlohmann::json make_json(const GroupKey& key, const std::vector<nlohmann::json>& member_groups, double kappa,
                                  double sigma_per_doubling);
  Prediction predict(int nranks, double bytes) const;
};

}  // namespace arfit

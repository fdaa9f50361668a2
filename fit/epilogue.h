// Fused epilogues: the time a fused all-reduce (residual-add + RMSNorm, + FP8 quantisation) spends over the
// same strategy unfused, fitted on token x hidden shape samples as
//     e(tokens, bytes) = a + per_byte · bytes + per_row · tokens        (all coefficients >= 0)
// bytes = tokens · hidden · dtype size is what the norm reads and writes; the per-row term is the per-token
// reduction (one RMS per row) and the launch/tail work that grows with rows. Each measured fused shape point
// is paired with the unfused group's model at the same bytes (model x residual correction, i.e. its
// measurements where it has them), so the term is what fusion adds on that machine, rank count and dtype.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/fit.h"
#include "model/group_model.h"

namespace arfit::fit {

struct EpilogueFit {
  bool ok = false;
  std::string problem;         // why not ok
  std::string base_group;      // id of the unfused group it is measured against
  double a_us = 0, per_byte_us = 0, per_row_us = 0;
  int points = 0;
  double rms_us = 0;           // RMS of the fit's residuals (µs)
  double median_rel = 0;       // median |residual| / fused time
  double mean_share = 0;       // mean epilogue share of the fused time

  double time_us(double tokens, double bytes) const { return a_us + per_byte_us * bytes + per_row_us * tokens; }
  nlohmann::json to_json() const;
};

// Least squares on relative residuals (residual / fused time) with non-negative coefficients over the fused
// curve's shape points (needs >= 3 distinct shapes).
EpilogueFit fit_epilogue(const Curve& fused, const GroupModel& unfused);

// For every fitted fused group with shape points whose unfused twin (same key, fusion NONE) was fitted too:
// stores the term as the group's "epilogue" entry. Returns how many groups got one.
int add_epilogue_terms(const std::vector<Curve>& curves, std::vector<GroupFit>& fits);

}  // namespace arfit::fit

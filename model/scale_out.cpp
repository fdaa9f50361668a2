#include "model/scale_out.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/metrics.h"
#include "model/sm_targets.h"

namespace arfit {

bool comparable_curves(const GroupKey& a, const GroupKey& b) {
  return a.collective == b.collective && a.strategy == b.strategy && a.fusion == b.fusion && a.nranks == b.nranks &&
         a.nnodes == b.nnodes && dtype_size(a.dtype) == dtype_size(b.dtype);
}

double cross_node_half_width(int sm) {
  const auto t = find_sm_target(sm);
  return t && t->interconnect_gbps > kNetworkGBps ? std::log(t->interconnect_gbps / kNetworkGBps) : std::log(10.0);
}

double new_machine_half_width(const std::vector<double>& steps, int sm) {
  const std::size_t n = steps.size();
  if (n < 2) return cross_node_half_width(sm);
  double mean = 0;
  for (double s : steps) mean += s;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double s : steps) ss += (s - mean) * (s - mean);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  // Capped at the width of knowing nothing about the network: two or three machines that disagree (Student's t
  // is 6.3 for two) would otherwise give an interval wider than having no prior at all.
  return std::min(student_t90(n - 1) * sd * std::sqrt(1.0 + 1.0 / static_cast<double>(n)), cross_node_half_width(sm));
}

Prediction scale_out_by_prior(const Prediction& largest_measured, const std::vector<double>& steps, double doublings, int sm) {
  const double step = percentile(steps, 50);
  const double h0 = 0.5 * (std::log(largest_measured.hi_us) - std::log(largest_measured.lo_us));
  const double hs = new_machine_half_width(steps, sm);
  const double hd = kZ90 * kJointSigmaPerDoubling * doublings;
  const double h = std::sqrt(h0 * h0 + hs * hs + hd * hd);
  Prediction p;
  p.time_us = largest_measured.time_us * std::exp(step);
  p.lo_us = p.time_us * std::exp(-h);
  p.hi_us = p.time_us * std::exp(h);
  p.extrapolated = true;
  p.how = "scale-out prior from " + std::to_string(steps.size()) + " machine(s)";
  p.bytes = largest_measured.bytes;
  return p;
}

Prediction widen_across_nodes(Prediction p, int sm) {
  const double h0 = 0.5 * (std::log(p.hi_us) - std::log(p.lo_us));
  const double hn = cross_node_half_width(sm);
  const double h = std::sqrt(h0 * h0 + hn * hn);
  p.lo_us = p.time_us * std::exp(-h);
  p.hi_us = p.time_us * std::exp(h);
  p.extrapolated = true;
  p.how += " across nodes (no multi-node prior)";
  return p;
}

}  // namespace arfit

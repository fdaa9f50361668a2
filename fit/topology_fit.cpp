#include "fit/topology_fit.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <ceres/ceres.h>

#include "fit/small_problem.h"

#include "model/bus_factor.h"

namespace arfit::fit {
namespace {

struct TopologyResidual {
  TopologyPoint x;
  double rails, log_t;
  template <typename T>
  bool operator()(const T* p, T* r) const {
    r[0] = topology_log_time_us(p, x, rails) - T(log_t);
    return true;
  }
};

// One fit at fixed rails; its final cost in `cost`.
std::optional<TopologyModel> fit_at_rails(const std::vector<const Curve*>& curves, Collective coll, double rails, double* cost) {
  TopologyModel m;
  m.collective = coll;
  m.rails = rails;
  // Start: the smallest time as α, a µs per step, the best bus bandwidths seen on one node and per GPU across nodes.
  double tmin = 1e300, node_bw = 1, rail_bw = 1;
  for (const Curve* c : curves) {
    const int g = c->key.nranks / c->key.nnodes;
    const double f = bus_factor(coll, c->key.nranks);
    for (size_t k = 0; k < c->bytes.size(); ++k) {
      tmin = std::min(tmin, c->time_us[k]);
      const double busbw = f * c->bytes[k] / c->time_us[k] / 1e3;
      if (c->key.nnodes == 1) node_bw = std::max(node_bw, busbw);
      else rail_bw = std::max(rail_bw, busbw / std::min<double>(g, rails));
    }
  }
  m.p[0] = std::log(0.5 * tmin);
  m.p[1] = m.p[2] = std::log(1.0);
  m.p[3] = std::log(std::max(node_bw, 2 * rail_bw * rails));
  m.p[4] = std::log(rail_bw);
  ceres::Problem problem;
  for (const Curve* c : curves) {
    const TopologyPoint base{coll, c->key.nranks / c->key.nnodes, c->key.nnodes, 0};
    for (size_t k = 0; k < c->bytes.size(); ++k) {
      TopologyPoint x = base;
      x.bytes = c->bytes[k];
      problem.AddResidualBlock(new ceres::AutoDiffCostFunction<TopologyResidual, 1, kTopologyParams>(
                                   new TopologyResidual{x, rails, std::log(c->time_us[k])}),
                               new ceres::SoftLOneLoss(0.1), m.p);
    }
  }
  // Box bounds keep an unidentified term (no one-node curve: B_node) from running off to infinity.
  const double lo[kTopologyParams] = {std::log(1e-3), std::log(1e-4), std::log(1e-4), std::log(1e-2), std::log(1e-3)};
  const double hi[kTopologyParams] = {std::log(1e6), std::log(1e4), std::log(1e4), std::log(1e5), std::log(1e5)};
  for (int i = 0; i < kTopologyParams; ++i) {
    m.p[i] = std::clamp(m.p[i], lo[i], hi[i]);
    problem.SetParameterLowerBound(m.p, i, lo[i]);
    problem.SetParameterUpperBound(m.p, i, hi[i]);
  }
  const ceres::Solver::Summary sum = solve_small_problem(problem);
  if (!sum.IsSolutionUsable()) return std::nullopt;
  *cost = sum.final_cost;
  return m;
}

}  // namespace

std::optional<TopologyModel> fit_topology(const std::vector<const Curve*>& all, double stated_rails) {
  std::vector<const Curve*> curves;
  std::set<int> multi_node_g;
  for (const Curve* c : all) {
    if (c->key.nnodes < 1 || c->key.nranks % c->key.nnodes != 0 || c->bytes.empty()) continue;
    curves.push_back(c);
    if (c->key.nnodes > 1) multi_node_g.insert(c->key.nranks / c->key.nnodes);
  }
  if (multi_node_g.empty()) return std::nullopt;
  const Collective coll = curves.front()->key.collective;
  std::vector<double> candidates;
  if (stated_rails > 0) candidates = {stated_rails};
  else candidates.assign(multi_node_g.begin(), multi_node_g.end());
  std::optional<TopologyModel> best;
  double best_cost = 0;
  for (double r : candidates) {  // ascending: a larger count takes over on a lower cost or a tie within 1 %
    double cost = 0;
    const std::optional<TopologyModel> m = fit_at_rails(curves, coll, r, &cost);
    if (m && (!best || cost <= best_cost * 1.01)) {
      best = m;
      best_cost = cost;
    }
  }
  if (best) best->rails_stated = stated_rails > 0;
  return best;
}

}  // namespace arfit::fit

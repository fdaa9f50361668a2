#include "model/scale_out.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/metrics.h"
#include "model/sm_targets.h"
#include "model/text.h"

namespace arfit {

bool comparable_kinds(const GroupKey& a, const GroupKey& b) {
  return a.collective == b.collective && a.strategy == b.strategy && a.fusion == b.fusion &&
         dtype_size(a.dtype) == dtype_size(b.dtype);
}

bool comparable_curves(const GroupKey& a, const GroupKey& b) {
  return comparable_kinds(a, b) && a.nranks == b.nranks && a.nnodes == b.nnodes;
}

bool comparable_steps(const GroupKey& a, const GroupKey& b) {
  return a.collective == b.collective && a.strategy == b.strategy && a.fusion == b.fusion;
}

double cross_node_half_width(int sm) {
  const auto t = find_sm_target(sm);
  return t && t->interconnect_gbps > kNetworkGBps ? std::log(t->interconnect_gbps / kNetworkGBps) : std::log(10.0);
}

std::vector<std::size_t> same_fabric_lenders(const std::vector<int>& lender_sms, int target_sm) {
  std::vector<std::size_t> all(lender_sms.size()), same;
  for (std::size_t i = 0; i < lender_sms.size(); ++i) all[i] = i;
  const auto target = find_sm_target(target_sm);
  if (!target) return all;
  for (std::size_t i = 0; i < lender_sms.size(); ++i) {
    const auto lender = find_sm_target(lender_sms[i]);
    if (lender && lender->interconnect_gbps == target->interconnect_gbps) same.push_back(i);
  }
  return same.empty() ? all : same;
}

double new_machine_half_width(const std::vector<double>& steps, int sm) {
  const std::size_t n = steps.size();
  if (n < 2) return cross_node_half_width(sm);
  double mean = 0;
  for (double s : steps) mean += s;
  mean /= static_cast<double>(n);
  double ss = 0;
  for (double s : steps) ss += (s - mean) * (s - mean);
  // The spread of networks before any was measured, as a normal sigma: the unknown network's width is its 90 %
  // half-width. It weighs as one machine (kPriorMachines) in the pooled variance, so that a few machines that
  // happen to agree (three InfiniBand clusters) do not promise a new network their narrow spread.
  const double prior_sd = cross_node_half_width(sm) / kZ90;
  const double dof = kPriorMachines + static_cast<double>(n - 1);
  const double sd = std::sqrt((kPriorMachines * prior_sd * prior_sd + ss) / dof);
  // Capped at the width of knowing nothing about the network: two or three machines that disagree would
  // otherwise give an interval wider than having no prior at all.
  return std::min(student_t90(static_cast<std::size_t>(dof)) * sd * std::sqrt(1.0 + 1.0 / static_cast<double>(n)),
                  cross_node_half_width(sm));
}

Prediction scale_out_by_prior(const Prediction& largest_measured, const std::vector<double>& steps, double doublings, int sm,
                              double bridge_half_width) {
  const double step = percentile(steps, 50);
  const double h0 = 0.5 * (std::log(largest_measured.hi_us) - std::log(largest_measured.lo_us));
  const double hs = new_machine_half_width(steps, sm);
  const double hd = kZ90 * kJointSigmaPerDoubling * doublings;
  const double h = std::sqrt(h0 * h0 + hs * hs + hd * hd + bridge_half_width * bridge_half_width);
  Prediction p;
  p.time_us = largest_measured.time_us * std::exp(step);
  p.lo_us = p.time_us * std::exp(-h);
  p.hi_us = p.time_us * std::exp(h);
  p.extrapolated = true;
  p.transferred = largest_measured.transferred;
  p.how = "scale-out prior from " + std::to_string(steps.size()) + " machine(s)";
  p.bytes = largest_measured.bytes;
  return p;
}

namespace {

// The latency share λ of a count's time at `bytes` (its latency floor over its time), in [0, 1].
double latency_share(const GroupModel& m, const Prediction& at) {
  return std::clamp(latency_floor_us(m) / at.time_us, 0.0, 1.0);
}

}  // namespace

double fabric_adjusted_step(double step, int lender_sm, int target_sm, const GroupModel& target_count, double bytes) {
  const auto lender = find_sm_target(lender_sm), target = find_sm_target(target_sm);
  if (!lender || !target || lender->interconnect_gbps <= 0 || target->interconnect_gbps <= 0) return step;
  const double bandwidth_share = 1 - latency_share(target_count, target_count.predict(bytes));
  const double adjusted = step + bandwidth_share * std::log(target->interconnect_gbps / lender->interconnect_gbps);
  // A slower fabric narrows the gap between the network and the node down to none, not below: a ring across
  // nodes still runs through the target's own fabric, so only a step the lender measured below zero stays so.
  return std::max(adjusted, std::min(step, 0.0));
}

bool states_networks(const GroupModel& lender_network, const GroupModel& target_count) {
  return lender_network.network && target_count.network && lender_network.network->node_gbps() > 0 &&
         target_count.network->node_gbps() > 0;
}

double network_adjusted_step(double step, const GroupModel& lender_network, const GroupModel& target_count, double bytes) {
  if (!states_networks(lender_network, target_count)) return step;
  const double lender_gbps = lender_network.network->node_gbps();
  const double target_gbps = target_count.network->node_gbps();
  const double bandwidth_share = 1 - latency_share(lender_network, lender_network.predict(bytes));
  const double adjusted = step + bandwidth_share * std::log(lender_gbps / target_gbps);
  // As with the fabric: a faster network narrows the gap to the one-node time down to none, not below.
  return std::max(adjusted, std::min(step, 0.0));
}

namespace {

// One measured count c on the network carried to n GPUs on `nnodes` nodes (carry_within_network).
Prediction carry_one_count(const GroupModel& c, int n, int nnodes, double bytes) {
  const Prediction at_c = c.predict(bytes);
  const int nc = c.key.nranks;
  const double fc = bus_factor(c.key.collective, nc), fn = bus_factor(c.key.collective, n);
  const double bw_ratio = fc > 0 && fn > 0 ? fn / fc : 1.0;
  const double peers_ratio = nc > 1 ? static_cast<double>(n - 1) / (nc - 1) : static_cast<double>(n);
  const double lambda = latency_share(c, at_c);
  const double low = lambda * std::min(1.0, peers_ratio) + (1 - lambda) * bw_ratio;
  const double high = lambda * std::max(1.0, peers_ratio) + (1 - lambda) * bw_ratio;
  const double doublings = std::max({std::log2(static_cast<double>(n) / nc),
                                     std::log2(static_cast<double>(nnodes) / c.key.nnodes), 0.5});
  const double h0 = 0.5 * (std::log(at_c.hi_us) - std::log(at_c.lo_us));
  const double h_latency = 0.5 * std::log(high / low);
  const double h_doublings = kZ90 * kJointSigmaPerDoubling * doublings;
  const double h = std::sqrt(h0 * h0 + h_latency * h_latency + h_doublings * h_doublings);
  Prediction p;
  p.time_us = at_c.time_us * std::sqrt(low * high);
  p.lo_us = p.time_us * std::exp(-h);
  p.hi_us = p.time_us * std::exp(h);
  p.bytes = at_c.bytes;
  p.transferred = at_c.transferred;
  p.how = "from " + std::to_string(nc) + " GPUs on " + std::to_string(c.key.nnodes) + (c.key.nnodes == 1 ? " node" : " nodes");
  return p;
}

}  // namespace

Prediction carry_within_network(const std::vector<GroupModel>& multi_node, int nranks, int nnodes, double bytes) {
  if (multi_node.empty()) throw std::invalid_argument("carry_within_network: no count measured on the network");
  std::vector<GroupModel> counts;  // one per rank count: the one on the most nodes; ascending rank counts
  for (const GroupModel& m : multi_node) {
    auto same = std::find_if(counts.begin(), counts.end(), [&](const GroupModel& g) { return g.key.nranks == m.key.nranks; });
    if (same == counts.end()) counts.push_back(m);
    else if (m.key.nnodes > same->key.nnodes) *same = m;
  }
  std::sort(counts.begin(), counts.end(), [](const GroupModel& a, const GroupModel& b) { return a.key.nranks < b.key.nranks; });
  const GroupModel& largest = counts.back();
  // The joint-n rule extends the network's own trend to a larger count; the same count on more nodes (and a
  // single measured count) has no trend to extend.
  Prediction p = counts.size() >= 2 && nranks > largest.key.nranks
                     ? JointModel::of_members(largest.key, counts).predict(nranks, bytes)
                     : carry_one_count(largest, nranks, nnodes, bytes);
  p.extrapolated = true;
  p.how = "within the measured network: " + p.how;
  return p;
}

BridgedStep bridged_step(double one_node_log_us, const std::vector<GroupModel>& lender_multi_node, int nranks, int nnodes,
                         double bytes) {
  const Prediction carried = carry_within_network(lender_multi_node, nranks, nnodes, bytes);
  BridgedStep s;
  s.log_step = std::log(carried.time_us) - one_node_log_us;
  s.half_width = 0.5 * (std::log(carried.hi_us) - std::log(carried.lo_us));
  return s;
}

std::vector<LenderPlan> plan_scale_out_lenders(const std::vector<LenderCurve>& pool, const GroupKey& largest,
                                               const GroupKey& target, int target_sm) {
  // The curves a step may use: the machine's count on one node, the target's count on its nodes, counts on more
  // than one node within them.
  auto one_node_count = [&](const GroupKey& k) { return k.nranks == largest.nranks && k.nnodes == largest.nnodes; };
  auto target_count = [&](const GroupKey& k) { return k.nranks == target.nranks && k.nnodes == target.nnodes; };
  auto within = [&](const GroupKey& k) { return k.nnodes > 1 && k.nnodes <= target.nnodes && k.nranks <= target.nranks; };
  auto usable = [&](const GroupKey& k) {
    return k.system != largest.system && comparable_steps(k, largest) && (one_node_count(k) || target_count(k) || within(k));
  };
  // Each machine's element size: the target's where it measured that, else the first it measured.
  const int wanted = dtype_size(largest.dtype);
  std::map<std::string, int> element_size;
  for (const LenderCurve& c : pool)
    if (usable(c.key)) {
      const auto [it, fresh] = element_size.emplace(c.key.system, dtype_size(c.key.dtype));
      if (!fresh && dtype_size(c.key.dtype) == wanted) it->second = wanted;
    }
  std::map<std::string, LenderPlan> networks;    // by machine: what it measured beyond one node
  std::map<std::string, std::size_t> one_node;  // by machine: its `largest` count on one node (the first)
  for (std::size_t i = 0; i < pool.size(); ++i) {
    const GroupKey& k = pool[i].key;
    if (!usable(k) || dtype_size(k.dtype) != element_size.at(k.system)) continue;
    if (one_node_count(k)) {
      one_node.emplace(k.system, i);
      continue;
    }
    LenderPlan& p = networks[k.system];
    p.system = k.system;
    p.sm = pool[i].sm;
    if (target_count(k)) {
      if (!p.to) p.to = i;
    } else {
      p.network.push_back(i);
    }
  }
  // A lender's GPU is that of its first curve beyond one node.
  auto first_curve = [](const LenderPlan& p) {
    return p.network.empty() ? *p.to : p.to ? std::min(*p.to, p.network.front()) : p.network.front();
  };
  std::vector<LenderPlan> candidates;
  for (auto& [system, p] : networks) {
    if (const auto own = one_node.find(system); own != one_node.end()) {
      p.from = {own->second};
    } else if (const std::string gpu = gpu_model_name(pool[first_curve(p)].device); !gpu.empty()) {
      for (const auto& [other, i] : one_node)
        if (gpu_model_name(pool[i].device) == gpu) p.from.push_back(i);
      p.paired = true;
    }
    if (!p.from.empty()) candidates.push_back(std::move(p));
  }
  std::vector<int> sms;
  for (const LenderPlan& p : candidates) sms.push_back(p.sm);
  const std::vector<std::size_t> fabric = same_fabric_lenders(sms, target_sm);
  auto any_of_fabric = [&](auto pred) {
    return std::any_of(fabric.begin(), fabric.end(), [&](std::size_t i) { return pred(candidates[i]); });
  };
  const bool any_own = any_of_fabric([](const LenderPlan& p) { return !p.paired; });
  const bool any_measured = any_of_fabric([&](const LenderPlan& p) { return p.paired != any_own && p.to.has_value(); });
  std::vector<LenderPlan> out;
  for (std::size_t i : fabric)
    if (candidates[i].paired != any_own && candidates[i].to.has_value() == any_measured) out.push_back(candidates[i]);
  return out;
}

namespace {

// Octaves from `bytes` up to the smallest size a lender measured beyond one node (its `to` curve, else its
// network's curves): 0 at or above it. Above its sizes a curve's tail is the bandwidth line (time ∝ bytes), which
// carries; below them the network's latency was never measured.
double octaves_below_network(const ScaleOutLender& l, double bytes) {
  double lo = std::numeric_limits<double>::infinity();
  if (l.to) lo = l.to->min_bytes;
  for (const GroupModel& m : l.network) lo = std::min(lo, m.min_bytes);
  return std::isfinite(lo) ? std::max(0.0, std::log2(lo / bytes)) : 0.0;
}

}  // namespace

Prediction scale_out_by_lenders(const GroupModel& largest, int sm, const std::vector<ScaleOutLender>& lenders,
                                int nranks, int nnodes, double bytes, bool name_lenders) {
  if (lenders.empty()) throw std::invalid_argument("scale_out_by_lenders: no lender");
  std::vector<double> steps, carry_half_widths;
  std::vector<std::string> names;
  bool bridged = false, paired = false, networked = false;
  // The lenders whose network measured down to the size, else those nearest to it (within an octave, a sweep's
  // step): a step read 17 octaves below a 1 MiB..1 GiB log is its curve's guess, not the network's latency.
  double nearest = std::numeric_limits<double>::infinity();
  for (const ScaleOutLender& l : lenders) nearest = std::min(nearest, octaves_below_network(l, bytes));
  for (const ScaleOutLender& l : lenders) {
    if (l.from.empty()) throw std::invalid_argument("scale_out_by_lenders: lender " + l.system + " has no one-node count");
    if (octaves_below_network(l, bytes) > nearest + 1) continue;
    names.push_back(l.system);
    // The one-node end: the lender's own, or the median of the paired machines', the half of their range joining
    // the interval (machines of one GPU differ in their one-node times too).
    std::vector<double> one_node;
    for (const GroupModel& f : l.from) one_node.push_back(std::log(f.predict(bytes).time_us));
    const double one_node_log_us = percentile(one_node, 50);
    const double pair_half_width =
        0.5 * (*std::max_element(one_node.begin(), one_node.end()) - *std::min_element(one_node.begin(), one_node.end()));
    paired = paired || l.paired;
    double step = 0, carry = 0;
    if (l.to) {
      step = std::log(l.to->predict(bytes).time_us) - one_node_log_us;
    } else {
      const BridgedStep b = bridged_step(one_node_log_us, l.network, nranks, nnodes, bytes);
      step = b.log_step;
      carry = b.half_width;
      bridged = true;
    }
    step = fabric_adjusted_step(step, l.sm, sm, largest, bytes);
    // The lender's network as its multi-node curve measured it: the asked count, else its largest bridged one.
    const GroupModel* lender_network = l.to ? &*l.to : nullptr;
    for (const GroupModel& m : l.network)
      if (!lender_network || m.key.nranks > lender_network->key.nranks) lender_network = &m;
    if (lender_network) {
      step = network_adjusted_step(step, *lender_network, largest, bytes);
      networked = networked || states_networks(*lender_network, largest);
    }
    steps.push_back(step);
    carry_half_widths.push_back(std::hypot(carry, pair_half_width));
  }
  const double doublings = std::log2(static_cast<double>(nranks) / largest.key.nranks);
  Prediction p = scale_out_by_prior(largest.predict(bytes), steps, doublings, sm, percentile(carry_half_widths, 50));
  if (name_lenders) p.how += ": " + join(names, ", ");
  if (bridged) p.how += " (bridged through their own networks)";
  if (paired) p.how += " (paired with one-node machines of their GPU)";
  if (networked) p.how += " (carried to the stated network " + to_string(*largest.network) + ")";
  return p;
}

Prediction widen_across_nodes(Prediction p, int sm) {
  const double h0 = 0.5 * (std::log(p.hi_us) - std::log(p.lo_us));
  const double hn = cross_node_half_width(sm);
  const double h = std::sqrt(h0 * h0 + hn * hn);
  p.lo_us = p.time_us * std::exp(-h);
  p.hi_us = p.time_us * std::exp(h);
  p.extrapolated = true;
  p.how += std::string(" across nodes ") + kNoMultiNodePrior;
  return p;
}

void hold_at_least(Prediction& p, const Prediction& floor, const std::string& held) {
  if (!(floor.time_us > p.time_us)) return;
  p.time_us = floor.time_us;
  p.hi_us = std::max(p.hi_us, floor.hi_us);
  p.how += held;
}

Prediction joint_across_nodes(const JointModel& joint, const GroupModel& largest, int nranks, double bytes, int sm) {
  Prediction p = joint.predict(nranks, bytes);
  hold_at_least(p, largest.predict(bytes), " held at " + std::to_string(largest.key.nranks) + " GPUs' time");
  return widen_across_nodes(p, sm);
}

Prediction one_count_across_nodes(const GroupModel& count, int nranks, int nnodes, double bytes, int sm) {
  return widen_across_nodes(carry_one_count(count, nranks, nnodes, bytes), sm);
}

}  // namespace arfit

// The topology family (issue 41): a collective's time on N nodes of g GPUs each, as NCCL's own cost model counts it
// (src/graph/tuning.cc of NCCL 2.21: per-algorithm step counts, intra-node and network latencies apart, bus
// bandwidth bounded by the network's rails per node), for carrying a machine's multi-node measurements to more
// GPUs per node on the same nodes. docs/model.md, "The topology family".
//
//   t(g, N, s) = α + λ_node·(steps − net_steps) + λ_net·net_steps + f(n)·s·[ [g > 1]/B_node + [N > 1]/(b·min(g, R)) ]
//
//   n = g·N ranks, f = bus_factor(collective, n); steps: the ring's, 2(n − 1) for all-reduce, n − 1 otherwise;
//   net_steps: those that cross the network, 2N for all-reduce and N otherwise (at most steps) on more than one
//   node, else 0. B_node: the intra-node fabric's bus bandwidth; b: one rail's; R: the rails (NICs) a node drives.
//   A ring's data leaves each node once per step whatever g is, so the network's share of the bus bandwidth grows
//   with the GPUs per node only while each GPU still has a rail of its own (g <= R): past that the NICs are shared
//   and it stays b·R. R is stated (a log, the user) or chosen among the measured GPUs-per-node counts, never above
//   the largest: nothing measured says the rails go further, and the cluster shows what the other guess
//   costs (bus bandwidth carried upward while the NICs were already shared: 3.4 ms predicted, 7.2 ms measured).
//
// Parameters, stored in log form (the fit, fit/topology_fit.h, sees no sign constraint):
//   p[0] = ln α [µs], p[1] = ln λ_node [µs/step], p[2] = ln λ_net [µs/step], p[3] = ln B_node [GB/s],
//   p[4] = ln b [GB/s = 1e3 bytes/µs].
// The same template evaluates in double (predict) and in ceres::Jet (the fit).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/model_set.h"
#include "model/sample.h"

namespace arfit {

inline constexpr int kTopologyParams = 5;

// One point of the family's input: GPUs per node, nodes, bytes.
struct TopologyPoint {
  Collective collective = Collective::AllReduce;
  int gpus_per_node = 1;
  int nodes = 1;
  double bytes = 0;
};

// The ring's steps of n ranks (2(n − 1) for all-reduce, n − 1 for the others) and those that cross the network.
double topology_ring_steps(Collective c, int nranks);
double topology_network_steps(Collective c, int nranks, int nodes);

// ln t (t in µs) of the family at `x`, the rails `rails` (R above, >= 1).
template <typename T>
T topology_log_time_us(const T* p, const TopologyPoint& x, double rails) {
  using std::exp;
  using std::log;
  const int n = x.gpus_per_node * x.nodes;
  const double steps = topology_ring_steps(x.collective, n);
  const double net_steps = topology_network_steps(x.collective, n, x.nodes);
  const double per_byte_node = x.gpus_per_node > 1 ? 1.0 : 0.0;
  const double network_share = x.nodes > 1 ? 1.0 / std::min(static_cast<double>(x.gpus_per_node), rails) : 0.0;
  const double fs = bus_factor(x.collective, n) * x.bytes / 1e3;  // bytes/1e3: GB/s is 1e3 bytes/µs
  const T bandwidth_us = T(fs) * (T(per_byte_node) * exp(-p[3]) + T(network_share) * exp(-p[4]));
  return log(exp(p[0]) + exp(p[1]) * T(steps - net_steps) + exp(p[2]) * T(net_steps) + bandwidth_us);
}

// A fitted topology family: its parameters and rails.
struct TopologyModel {
  Collective collective = Collective::AllReduce;
  double p[kTopologyParams] = {0, 0, 0, 0, 0};
  double rails = 1;         // R
  bool rails_stated = false;  // R from a log or the user, not chosen by the fit
  double time_us(int gpus_per_node, int nodes, double bytes) const;
  // The same with the rails taken as `rails` instead (the interval's other world: every GPU its own NIC).
  double time_us_with_rails(int gpus_per_node, int nodes, double bytes, double rails) const;
};

// The family read off one count measured across nodes (`count`, g GPUs per node on N > 1 nodes) where nothing was
// fitted (a models file keeps the counts, not the family): its latency floor split evenly between α and the ring's
// steps (λ_node = λ_net), the node's fabric taken as far faster than the network, the rails g (what it measured, no
// further; the rails its logs state when they do: GroupModel::network) and one
// rail's bandwidth its bus bandwidth at its largest measured size over g. Carried by topology_carry, this holds the
// count's bus bandwidth and grows half its latency with the ring's steps.
TopologyModel topology_of_count(const GroupModel& count);

// What `how` says of an answer beyond the measured GPUs per node or node count.
inline constexpr const char* kExtrapolatedAcrossTopology = "extrapolated across the topology";

// The machine's largest measured count on `nodes` nodes (`largest`, g_c GPUs per node) carried to `nranks` GPUs on
// the same nodes by the topology family's step: largest's own curve (its measured shape) times
// t_topology(g, N, s) / t_topology(g_c, N, s). The interval: largest's own and kJointSigmaPerDoubling per doubling
// of GPUs per node in quadrature, around the answer and, below, around the time with a rail per GPU (R = g: the
// bandwidth still growing, as joint-n carries it) and `low_end_us` when given (> 0), and `step_half_width` (the spread of other
// machines' steps, 0 when none measured one) in quadrature. Extrapolated; `how` names the step and says
// kExtrapolatedAcrossTopology.
Prediction topology_carry(const GroupModel& largest, const TopologyModel& topology, int nranks, double bytes,
                          double low_end_us = 0, double step_half_width = 0);

}  // namespace arfit

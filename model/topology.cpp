#include "model/topology.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/joint_model.h"

namespace arfit {

double topology_ring_steps(Collective c, int nranks) {
  return c == Collective::AllReduce ? 2.0 * (nranks - 1) : static_cast<double>(nranks - 1);
}

double topology_network_steps(Collective c, int nranks, int nodes) {
  if (nodes <= 1) return 0;
  // NCCL's ring crosses the network once per node and per pass (all-reduce makes two passes: reduce-scatter,
  // all-gather); the rest of its steps stay on the node's fabric.
  const double crossings = c == Collective::AllReduce ? 2.0 * nodes : static_cast<double>(nodes);
  return std::min(crossings, topology_ring_steps(c, nranks));
}

double TopologyModel::time_us_with_rails(int gpus_per_node, int nodes, double bytes, double r) const {
  return std::exp(topology_log_time_us(p, TopologyPoint{collective, gpus_per_node, nodes, bytes}, r));
}

double TopologyModel::time_us(int gpus_per_node, int nodes, double bytes) const {
  return time_us_with_rails(gpus_per_node, nodes, bytes, rails);
}

TopologyModel topology_of_count(const GroupModel& count) {
  TopologyModel m;
  m.collective = count.key.collective;
  const int nodes = std::max(count.key.nnodes, 1), n = count.key.nranks, g = std::max(n / nodes, 1);
  m.rails = g;
  // Rails the machine's logs state (a header, `arfit ingest --network`) hold instead: as crossn's fit keeps them.
  if (count.network) {
    m.rails = count.network->rails;
    m.rails_stated = true;
  }
  const double floor_us = latency_floor_us(count);
  const double steps = std::max(topology_ring_steps(m.collective, n), 1.0);
  const double at_max_us = count.predict(count.max_bytes).time_us;
  const double busbw_gbps = bus_factor(m.collective, n) * count.max_bytes / std::max(at_max_us - floor_us, 1e-9 * at_max_us) / 1e3;
  // Half the floor fixed, half per ring step, the node's and the network's alike: one count cannot tell them
  // apart, and the middle of "latency held" and "latency grown with every step" errs by at most the half.
  m.p[0] = std::log(0.5 * floor_us);
  m.p[1] = m.p[2] = std::log(0.5 * floor_us / steps);
  m.p[3] = std::log(1e5);   // the node's fabric: far faster than the network
  m.p[4] = std::log(busbw_gbps / g);
  return m;
}

Prediction topology_carry(const GroupModel& largest, const TopologyModel& topology, int nranks, double bytes,
                          double low_end_us, double step_half_width) {
  const int nodes = std::max(largest.key.nnodes, 1);
  const int g_c = largest.key.nranks / nodes, g_t = nranks / nodes;
  const Prediction at_c = largest.predict(bytes);
  const double step = topology.time_us(g_t, nodes, bytes) / topology.time_us(g_c, nodes, bytes);
  // The other world the measurements cannot rule out: a rail for every GPU up to the target's count, the bus
  // bandwidth still growing with the GPUs per node. The interval's low end reaches it.
  const double r = std::max<double>(g_t, topology.rails);
  const double growing_step = topology.time_us_with_rails(g_t, nodes, bytes, r) / topology.time_us_with_rails(g_c, nodes, bytes, r);
  const double h0 = 0.5 * (std::log(at_c.hi_us) - std::log(at_c.lo_us));
  const double hd = kZ90 * kJointSigmaPerDoubling * std::max(std::log2(static_cast<double>(g_t) / g_c), 0.5);
  const double h = std::sqrt(h0 * h0 + hd * hd + step_half_width * step_half_width);
  Prediction p;
  p.time_us = at_c.time_us * step;
  // The growing world's answer is as uncertain as the held one: its own width below it.
  p.lo_us = std::min(p.time_us, at_c.time_us * growing_step) * std::exp(-h);
  if (low_end_us > 0) p.lo_us = std::min(p.lo_us, low_end_us);
  p.hi_us = p.time_us * std::exp(h);
  p.extrapolated = true;
  p.transferred = at_c.transferred;
  p.bytes = at_c.bytes;
  p.how = "topology " + std::to_string(g_c) + "->" + std::to_string(g_t) + " GPUs per node on " + std::to_string(nodes) +
          (nodes == 1 ? " node" : " nodes") + " (rails " + std::to_string(static_cast<int>(std::lround(topology.rails))) +
          (topology.rails_stated ? ", stated" : ", fitted") + "), " + kExtrapolatedAcrossTopology;
  return p;
}

}  // namespace arfit

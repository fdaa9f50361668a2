#include "model/bus_factor.h"

#include <stdexcept>
#include <string>

namespace arfit {

double bus_factor(Collective c, int nranks) {
  if (nranks < 1) throw std::invalid_argument("bus_factor: nranks must be >= 1, got " + std::to_string(nranks));
  const double n = nranks;
  switch (c) {
    case Collective::AllReduce: return 2.0 * (n - 1.0) / n;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::AllToAllV:
    case Collective::Gather:    // nccl-tests: (n - 1) / n of the whole buffer crosses the root's link
    case Collective::Scatter: return (n - 1.0) / n;
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::SendRecv: return 1.0;
  }
  return 1.0;
}

double alg_bw_gbps(double bytes, double time_us) {
  if (time_us <= 0) return 0;
  return bytes / time_us / 1e3;
}

double bus_bw_gbps(Collective c, int nranks, double bytes, double time_us) {
  return alg_bw_gbps(bytes, time_us) * bus_factor(c, nranks);
}

}  // namespace arfit

// Bus factors and bandwidths, as nccl-tests' PERFORMANCE.md defines them:
//   algbw = bytes / time; busbw = algbw * bus_factor(collective, n).
// The bus factor turns algorithm bandwidth into the per-link bandwidth a ring would need,
// so that busbw is comparable across rank counts and collectives.
#pragma once

#include "model/sample.h"

namespace arfit {

// all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all(v) (n-1)/n; broadcast, reduce, sendrecv 1.
// Throws std::invalid_argument for n < 1.
double bus_factor(Collective c, int nranks);

// GB/s (1e9 bytes per second) from bytes and microseconds, as nccl-tests prints them.
double alg_bw_gbps(double bytes, double time_us);
double bus_bw_gbps(Collective c, int nranks, double bytes, double time_us);

}  // namespace arfit

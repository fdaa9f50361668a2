// What the runner produces and the reporters format: measuring is separate from reporting
// (google/benchmark's runner/reporter split).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/grid.h"
#include "model/sample.h"

namespace arfit::bench {

// One finished case: the sample (timings, or status failed with the wrong-element count) and why it failed.
struct Record {
  Case c;
  Sample sample;
  std::string note;        // "" when ok; "timeout after 30 s", "wrong results", "error: ..." otherwise
  double wall_s = 0;       // wall time the case took, setup and check included
  int round = -1;          // --plan adaptive: the round that measured it (bench/adaptive.h); -1 otherwise
  double alg_bw_gbps = 0, bus_bw_gbps = 0;
};

using RunHeader = std::vector<std::pair<std::string, std::string>>;

struct RunSummary {
  std::size_t planned = 0;       // cases in the plan
  std::size_t resumed = 0;       // found finished in the output and skipped
  std::size_t measured = 0;      // run in this session
  std::size_t failed = 0;        // of which failed (wrong results, errors, timeouts)
  std::size_t timed_out = 0;
  bool stopped_early = false;    // --on-timeout stop
  double wall_s = 0;
};

}  // namespace arfit::bench

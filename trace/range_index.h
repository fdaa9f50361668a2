// Which time range holds each point, for NVTX phase assignment: the latest-starting range that contains the point
// (start <= t < end), among ranges sorted by start. Ranges may nest or overlap in any way (several processes, pushed
// and projected ranges), so a stack sweep is not enough; a max-segment tree over the ranges' ends answers each point
// in O(log ranges), O((kernels + ranges) log ranges) in all (a scan per kernel took 24 s for 10^6 kernels and
// 3·10^4 ranges, over a minute for 10^5).
#pragma once

#include <cstddef>
#include <vector>

namespace arfit::trace {

class RangeIndex {
 public:
  // `starts` ascending; `ends[i]` the end of range i.
  RangeIndex(std::vector<double> starts, std::vector<double> ends);
  // The largest i with starts[i] <= t < ends[i], or -1 when no range holds t.
  long innermost(double t) const;

 private:
  // The rightmost index below `limit` whose end is above t, in the subtree of `node` covering [lo, hi).
  long rightmost_above(std::size_t node, std::size_t lo, std::size_t hi, std::size_t limit, double t) const;
  std::vector<double> starts_, ends_;
  std::vector<double> max_end_;  // segment tree: node 1 covers [0, n), children 2k and 2k+1
};

}  // namespace arfit::trace

#include "trace/range_index.h"

#include <algorithm>
#include <limits>

namespace arfit::trace {
namespace {

void build(std::vector<double>& tree, const std::vector<double>& ends, std::size_t node, std::size_t lo, std::size_t hi) {
  if (hi - lo == 1) {
    tree[node] = ends[lo];
    return;
  }
  const std::size_t mid = lo + (hi - lo) / 2;
  build(tree, ends, 2 * node, lo, mid);
  build(tree, ends, 2 * node + 1, mid, hi);
  tree[node] = std::max(tree[2 * node], tree[2 * node + 1]);
}

}  // namespace

RangeIndex::RangeIndex(std::vector<double> starts, std::vector<double> ends)
    : starts_(std::move(starts)), ends_(std::move(ends)) {
  if (!ends_.empty()) {
    max_end_.assign(4 * ends_.size(), -std::numeric_limits<double>::infinity());
    build(max_end_, ends_, 1, 0, ends_.size());
  }
}

long RangeIndex::rightmost_above(std::size_t node, std::size_t lo, std::size_t hi, std::size_t limit, double t) const {
  if (lo >= limit || !(max_end_[node] > t)) return -1;  // nothing below the limit here, or every end at or before t
  if (hi - lo == 1) return static_cast<long>(lo);
  const std::size_t mid = lo + (hi - lo) / 2;
  const long right = rightmost_above(2 * node + 1, mid, hi, limit, t);
  return right >= 0 ? right : rightmost_above(2 * node, lo, mid, limit, t);
}

long RangeIndex::innermost(double t) const {
  // Ranges starting at or before t are a prefix; the answer is its last one still open at t.
  const std::size_t started = static_cast<std::size_t>(std::upper_bound(starts_.begin(), starts_.end(), t) - starts_.begin());
  if (started == 0) return -1;
  return rightmost_above(1, 0, ends_.size(), started, t);
}

}  // namespace arfit::trace

// trace/range_index.h against the scan it replaced (the latest-starting range holding a point), on random ranges
// that nest, overlap, share starts and ends, and points outside every range.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "trace/range_index.h"

namespace {

long scan(const std::vector<double>& starts, const std::vector<double>& ends, double t) {
  long holder = -1;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (starts[i] > t) break;
    if (t < ends[i]) holder = static_cast<long>(i);
  }
  return holder;
}

}  // namespace

TEST(RangeIndex, AnswersAsTheScanOnRandomOverlappingRanges) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40);
    std::vector<std::pair<double, double>> r;
    for (int i = 0; i < n; ++i) {
      const double s = static_cast<double>(rng() % 100), len = static_cast<double>(rng() % 30);  // zero-length too
      r.emplace_back(s, s + len);
    }
    std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<double> starts, ends;
    for (const auto& [s, e] : r) starts.push_back(s), ends.push_back(e);
    const arfit::trace::RangeIndex index(starts, ends);
    for (double t = -2; t < 135; t += 0.5) ASSERT_EQ(index.innermost(t), scan(starts, ends, t)) << trial << " t=" << t;
  }
}

TEST(RangeIndex, NestedRangesGiveTheInnermostAndNoneGivesMinusOne) {
  const arfit::trace::RangeIndex index({0, 10, 20, 50}, {100, 40, 30, 60});
  EXPECT_EQ(index.innermost(-1), -1);
  EXPECT_EQ(index.innermost(5), 0);
  EXPECT_EQ(index.innermost(25), 2);
  EXPECT_EQ(index.innermost(35), 1);   // 20..30 ended: the enclosing 10..40
  EXPECT_EQ(index.innermost(45), 0);
  EXPECT_EQ(index.innermost(60), 0);   // end is exclusive
  EXPECT_EQ(index.innermost(100), -1);
  EXPECT_EQ(arfit::trace::RangeIndex({}, {}).innermost(3), -1);
}

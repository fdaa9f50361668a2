// The across-node rules of model/scale_out.h that need no fit: which machines lend a scale-out step, and how
// wide the interval of a new machine's step is from theirs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/metrics.h"
#include "model/scale_out.h"

using namespace arfit;

// Lenders with the target's intra-node fabric (the same datasheet interconnect bandwidth) when any; else all,
// and all when the target's SM is not in the table.
TEST(ScaleOut, LendersShareTheTargetsIntraNodeFabric) {
  using V = std::vector<std::size_t>;
  EXPECT_EQ(same_fabric_lenders({90, 80, 80, 0}, 80), (V{1, 2}));
  EXPECT_EQ(same_fabric_lenders({90, 0}, 80), (V{0, 1}));       // no A100 among them: all
  EXPECT_EQ(same_fabric_lenders({90, 80}, 0), (V{0, 1}));       // the target's fabric is unknown: all
  EXPECT_EQ(same_fabric_lenders({100, 103, 90}, 100), (V{0, 1}));  // B200 and B300 share NVLink 5's bandwidth
  EXPECT_TRUE(same_fabric_lenders({}, 80).empty());
}

// A new machine's step: machines that agree narrow the interval only as their number grows (the unknown
// network's spread weighs as one machine); machines that disagree, or a single one, give the width of knowing
// nothing; never wider than that.
TEST(ScaleOut, NewMachineWidthPoolsTheUnknownNetworksSpread) {
  const int sm = 80;
  const double nothing = cross_node_half_width(sm);
  EXPECT_DOUBLE_EQ(nothing, std::log(300.0 / kNetworkGBps));
  EXPECT_DOUBLE_EQ(new_machine_half_width({0.6}, sm), nothing);
  // Three agreeing InfiniBand clusters: still most of the unknown width (the EFA step of the public logs lies
  // 1.5 beyond theirs in ln t).
  const double three = new_machine_half_width({0.60, 0.62, 0.61}, sm);
  EXPECT_GT(three, 1.5);
  EXPECT_LE(three, nothing);
  // Twenty agreeing machines: narrower, as the prior's weight falls to one in twenty.
  const double twenty = new_machine_half_width(std::vector<double>(20, 0.61), sm);
  EXPECT_LT(twenty, 0.6 * three);
  const double expected = student_t90(20) * std::sqrt(nothing * nothing / (kZ90 * kZ90) / 20.0) * std::sqrt(1.0 + 1.0 / 20);
  EXPECT_NEAR(twenty, expected, 1e-12);
  // Machines that disagree: capped at knowing nothing.
  EXPECT_DOUBLE_EQ(new_machine_half_width({0.6, 2.1, 0.6}, sm), nothing);
}

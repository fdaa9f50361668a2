#include <gtest/gtest.h>

#include <stdexcept>

#include "model/bus_factor.h"

using namespace arfit;

// Values from nccl-tests' PERFORMANCE.md: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n;
// broadcast and reduce 1.
TEST(BusFactor, AllReduceIsTwoNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 16), 1.875);
}

TEST(BusFactor, GatherScatterAllToAllAreNMinusOneOverN) {
  // Gather and scatter as nccl-tests' gather_perf and scatter_perf: (n - 1) / n of the whole buffer.
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll, Collective::AllToAllV,
                       Collective::Gather, Collective::Scatter}) {
    EXPECT_DOUBLE_EQ(bus_factor(c, 2), 0.5);
    EXPECT_DOUBLE_EQ(bus_factor(c, 8), 0.875);
  }
}

TEST(BusFactor, RootedCollectivesAreOne) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Reduce, 4), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::SendRecv, 2), 1.0);
}

TEST(BusFactor, RejectsNonPositiveRankCounts) {
  EXPECT_THROW(bus_factor(Collective::AllReduce, 0), std::invalid_argument);
  EXPECT_THROW(bus_factor(Collective::AllGather, -3), std::invalid_argument);
}

// A row of a real nccl-tests all-reduce log on 8 ranks: 16 MiB in 124.0 us -> algbw 135.30, busbw 236.78 GB/s
// (the log prints 135.33 / 236.82 because it divides by the unrounded time).
TEST(BusFactor, BandwidthsMatchNcclTestsArithmetic) {
  EXPECT_NEAR(alg_bw_gbps(16777216, 124.0), 135.30, 0.01);
  EXPECT_NEAR(bus_bw_gbps(Collective::AllReduce, 8, 16777216, 124.0), 236.78, 0.01);
  EXPECT_DOUBLE_EQ(alg_bw_gbps(1024, 0), 0.0);
}

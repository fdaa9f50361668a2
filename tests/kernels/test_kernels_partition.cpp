// The one partition (kernels/device/partition.h) the GPU launch, the kernels and the host backend all use:
// every work unit has exactly one owner and one block, ranks own contiguous slices, launches get one block per
// unit up to the co-resident limit.
#include <gtest/gtest.h>

#include "kernels/device/partition.h"

namespace arfit::kernels::partition {
namespace {

TEST(KernelPartition, SlicesCoverEveryUnitOnceAndOwnerOfInvertsThem) {
  for (std::int64_t units : {1, 2, 3, 7, 8, 64, 1000, 1001}) {
    for (int n : {2, 4, 8}) {
      const std::int64_t per_rank = units_per_rank(units, n);
      std::int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        const Range mine = owned_units(r, units, per_rank);
        EXPECT_EQ(mine.begin, std::min(next, units)) << units << " units, rank " << r << " of " << n;
        EXPECT_LE(mine.begin, mine.end);
        for (std::int64_t u = mine.begin; u < mine.end; ++u) ASSERT_EQ(owner_of(u, per_rank), r) << u;
        next = mine.end;
      }
      EXPECT_EQ(next, units) << units << " units on " << n << " ranks";
    }
  }
  // Fewer rows than ranks: the first ranks own one row each, the others none.
  EXPECT_EQ(owned_units(0, 3, units_per_rank(3, 8)).end, 1);
  EXPECT_EQ(owned_units(5, 3, units_per_rank(3, 8)).begin, owned_units(5, 3, units_per_rank(3, 8)).end);
}

TEST(KernelPartition, EveryBlockStartsAtItsFirstUnit) {
  for (std::int64_t lo : {0, 1, 5, 63, 64, 1000}) {
    for (int stride : {1, 3, 4, 64}) {
      for (int residue = 0; residue < stride; ++residue) {
        const std::int64_t c = first_at_or_after(lo, residue, stride);
        EXPECT_GE(c, lo);
        EXPECT_LT(c, lo + stride);
        EXPECT_EQ(block_of(c, stride), residue);
      }
    }
  }
}

TEST(KernelPartition, LaunchesGetOneBlockPerUnitUpToTheLimit) {
  // bf16 (8 per vector), 512 threads: 1 MiB = 65536 vectors = 128 chunks.
  EXPECT_EQ(blocks_per_rank_for(FusionOp::None, 512 * 1024, 0, 8, 512, 64), 64);
  EXPECT_EQ(blocks_per_rank_for(FusionOp::None, 512 * 1024, 0, 8, 512, 200), 128);
  EXPECT_EQ(blocks_per_rank_for(FusionOp::None, 3, 0, 8, 512, 64), 1);  // only a scalar tail
  EXPECT_EQ(blocks_per_rank_for(FusionOp::ResidualRmsNorm, 5 * 4096, 4096, 8, 512, 64), 5);  // rows
  EXPECT_EQ(blocks_per_rank_for(FusionOp::ResidualRmsNorm, 5 * 4096, 4096, 8, 512, 3), 3);
  EXPECT_EQ(tail_owner(8), 7);
}

}  // namespace
}  // namespace arfit::kernels::partition

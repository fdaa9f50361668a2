// Host arithmetic: element conversions, the deterministic inputs, the epilogue and the reference check.
#include <gtest/gtest.h>

#include <cmath>

#include "bench/host/host_common.h"
#include "bench/host/host_ops.h"

using namespace arfit;
using namespace arfit::bench;
using namespace arfit::bench::host;

TEST(BenchHostMath, Bf16AndFp16RoundToNearestEven) {
  EXPECT_EQ(to_float(from_float<bf16>(1.0f)), 1.0f);
  EXPECT_EQ(to_float(from_float<bf16>(-2.5f)), -2.5f);
  // 1 + 2^-8 is exactly half way between bf16 neighbours 1 and 1 + 2^-7: ties to even -> 1.
  EXPECT_EQ(to_float(from_float<bf16>(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(to_float(from_float<bf16>(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(to_float(from_float<bf16>(std::nanf("")))));
  for (float f : {0.0f, 1.0f, -1.5f, 65504.0f, 6.103515625e-05f /* min normal */, 5.960464477539063e-08f /* min subnormal */,
                  0.333251953125f})
    EXPECT_EQ(to_float(from_float<fp16>(f)), f) << f;
  EXPECT_EQ(to_float(from_float<fp16>(1.0f + 1.0f / 2048)), 1.0f);  // tie to even
  EXPECT_TRUE(std::isinf(to_float(from_float<fp16>(70000.0f))));
  EXPECT_EQ(to_float(from_float<fp16>(1e-9f)), 0.0f);
}

TEST(BenchHostMath, InputsAreNonZeroExactAndRankDependent) {
  int differ = 0, buffers_differ = 0;
  for (std::int64_t i = 0; i < 4096; ++i) {
    const float a = input_value(0, 0, i), b = input_value(1, 0, i);
    ASSERT_NE(a, 0.0f);
    ASSERT_LE(std::abs(a), 15.0f / 16);
    ASSERT_EQ(to_float(from_float<bf16>(a)), a);  // exact in bf16
    differ += a != b;
    buffers_differ += input_value(0, 1, i) != a;
  }
  EXPECT_GT(differ, 3000);          // ranks hold different data
  EXPECT_GT(buffers_differ, 3000);  // so do the rotated input buffers
  // Sums over 8 ranks plus a residual stay exact in bf16.
  for (std::int64_t i = 0; i < 4096; ++i) {
    float s = residual_value(i);
    for (int r = 0; r < 8; ++r) s += input_value(r, 0, i);
    ASSERT_EQ(to_float(from_float<bf16>(s)), s);
  }
}

TEST(BenchHostMath, ReferenceCheckCountsEveryWrongElement) {
  Case c;
  c.tokens = 3;
  c.hidden = 64;
  c.count = c.tokens * c.hidden;
  c.dtype = "bf16";
  c.fusion = FusionOp::ResidualRmsNorm;
  const int n = 2;
  std::vector<bf16> norm(c.count), res(c.count);
  std::vector<bf16> residual(c.count), gamma(c.hidden);
  for (std::int64_t i = 0; i < c.count; ++i) residual[i] = from_float<bf16>(residual_value(i));
  for (std::int64_t h = 0; h < c.hidden; ++h) gamma[h] = from_float<bf16>(gamma_value(h));
  std::vector<float> acc(c.hidden);
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    for (std::int64_t h = 0; h < c.hidden; ++h) acc[h] = input_value(0, 0, t * c.hidden + h) + input_value(1, 0, t * c.hidden + h);
    residual_rmsnorm_row<bf16>(acc.data(), residual.data() + t * c.hidden, gamma.data(), norm.data() + t * c.hidden,
                               res.data() + t * c.hidden, c.hidden);
  }
  EXPECT_EQ(count_allreduce_wrong<bf16>(c, n, norm.data(), res.data()), 0);
  norm[5] = from_float<bf16>(to_float(norm[5]) * 1.25f + 0.1f);
  res[70].bits = 0xFFFF;  // NaN: an unwritten element
  EXPECT_EQ(count_allreduce_wrong<bf16>(c, n, norm.data(), res.data()), 2);
  // Three ranks expected but two contributed: every element is wrong.
  EXPECT_EQ(count_allreduce_wrong<bf16>(c, 3, norm.data(), res.data()), c.count);

  Case p = c;
  p.fusion = FusionOp::None;
  std::vector<float> out(p.count);
  for (std::int64_t i = 0; i < p.count; ++i) out[i] = input_value(0, 0, i) + input_value(1, 0, i);
  EXPECT_EQ(count_allreduce_wrong<float>(p, 2, out.data(), nullptr), 0);
  out[0] += 1e-3f;
  EXPECT_EQ(count_allreduce_wrong<float>(p, 2, out.data(), nullptr), 1);
}

TEST(BenchHostMath, SplitRangesCoverEverythingOnce) {
  for (std::int64_t total : {0, 1, 7, 8, 1000, 1001})
    for (int n : {1, 2, 3, 8}) {
      std::int64_t next = 0;
      for (int r = 0; r < n; ++r) {
        auto [b, e] = split_range(total, n, r, 8);
        EXPECT_EQ(b, next);
        EXPECT_LE(b, e);
        if (b < total && e < total) {
          EXPECT_EQ(b % 8, 0);
        }
        next = e;
      }
      EXPECT_EQ(next, total);
    }
}

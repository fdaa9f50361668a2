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

// The epilogue is the GPU's (the kernels' residual_rms_norm_row, built for the CPU): the norm is taken over the
// residual as stored (rounded to the dtype), not over the unrounded sum.
TEST(BenchHostMath, EpilogueNormalisesTheRoundedResidual) {
  const std::int64_t hidden = 64, rows = 4, count = hidden * rows;
  std::vector<bf16> reduced(count), residual(count), gamma(hidden), out(count), residual_out(count);
  for (std::int64_t i = 0; i < count; ++i) {
    // Sums of these are not bf16 numbers: rounding the residual changes it.
    reduced[i] = from_float<bf16>(1.0f + static_cast<float>(i % 7) / 128.0f);
    residual[i] = from_float<bf16>(static_cast<float>(i % 5 + 1) / 1024.0f);
  }
  for (std::int64_t h = 0; h < hidden; ++h) gamma[h] = from_float<bf16>(gamma_value(h));
  kernels::AllReduceBuffers b;
  b.residual_in = residual.data();
  b.residual_out = residual_out.data();
  b.gamma = gamma.data();
  b.output = out.data();
  kernels::residual_rms_norm_on_host(kernels::DType::BF16, FusionOp::ResidualRmsNorm, count, hidden, kRmsEps, 1.0f,
                                     reduced.data(), b, 1);
  int differs_from_unrounded = 0;
  for (std::int64_t t = 0; t < rows; ++t) {
    float ss_rounded = 0, ss_exact = 0;
    for (std::int64_t h = 0; h < hidden; ++h) {
      const std::int64_t i = t * hidden + h;
      const float exact = to_float(reduced[i]) + to_float(residual[i]);
      const float rounded = to_float(from_float<bf16>(exact));
      ASSERT_EQ(residual_out[i].bits, from_float<bf16>(exact).bits) << i;
      ss_rounded += rounded * rounded;
      ss_exact += exact * exact;
    }
    const float inv_rounded = 1.0f / std::sqrt(ss_rounded / hidden + kRmsEps);
    const float inv_exact = 1.0f / std::sqrt(ss_exact / hidden + kRmsEps);
    for (std::int64_t h = 0; h < hidden; ++h) {
      const std::int64_t i = t * hidden + h;
      const float rounded = to_float(residual_out[i]);
      const float g = to_float(gamma[h]);
      EXPECT_EQ(out[i].bits, from_float<bf16>(rounded * inv_rounded * g).bits) << i;
      const float exact = to_float(reduced[i]) + to_float(residual[i]);
      differs_from_unrounded += out[i].bits != from_float<bf16>(exact * inv_exact * g).bits;
    }
  }
  // The two orders really differ on these inputs, so the equalities above pin the GPU's.
  EXPECT_GT(differs_from_unrounded, 0);
}

TEST(BenchHostMath, ReferenceCheckCountsEveryWrongElement) {
  Case c;
  c.tokens = 3;
  c.hidden = 64;
  c.count = c.tokens * c.hidden;
  c.dtype = "bf16";
  c.fusion = FusionOp::ResidualRmsNorm;
  const int n = 2;
  std::vector<bf16> norm(c.count), res(c.count), reduced(c.count);
  std::vector<bf16> residual(c.count), gamma(c.hidden);
  for (std::int64_t i = 0; i < c.count; ++i) residual[i] = from_float<bf16>(residual_value(i));
  for (std::int64_t h = 0; h < c.hidden; ++h) gamma[h] = from_float<bf16>(gamma_value(h));
  for (std::int64_t i = 0; i < c.count; ++i) reduced[i] = from_float<bf16>(input_value(0, 0, i) + input_value(1, 0, i));
  kernels::AllReduceBuffers b;
  b.residual_in = residual.data();
  b.residual_out = res.data();
  b.gamma = gamma.data();
  b.output = norm.data();
  kernels::residual_rms_norm_on_host(kernels::DType::BF16, c.fusion, c.count, c.hidden, kRmsEps, 1.0f, reduced.data(),
                                     b, 1);
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

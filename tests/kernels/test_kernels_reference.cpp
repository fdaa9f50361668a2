// The CPU references and element conversions the GPU checks rely on: if these were wrong, the GPU tests
// would compare against the wrong thing. Runs everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "kernels/reference/reference.h"

namespace arfit::kernels {
namespace {

TEST(KernelReference, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie -> even (down)
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -12)), 0x3f81);
  EXPECT_FLOAT_EQ(bf16_bits_to_float(0x3f81), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(0xffff)));  // the poison pattern
}

TEST(KernelReference, Fp16RoundTripsEveryFiniteCodeAndRoundsToNearestEven) {
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const auto bits = static_cast<std::uint16_t>(code);
    if ((bits & 0x7c00) == 0x7c00) continue;  // inf / NaN
    ASSERT_EQ(float_to_fp16_bits(fp16_bits_to_float(bits)), bits) << std::hex << code;
  }
  EXPECT_EQ(float_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7c00);  // rounds past the largest finite value
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000);      // tie -> even
  EXPECT_EQ(float_to_fp16_bits(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie -> even
  EXPECT_EQ(float_to_fp16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(0xffff)));
}

TEST(KernelReference, E4m3RoundTripsEveryCodeAndSaturates) {
  for (int code = 0; code < 256; ++code) {
    const auto bits = static_cast<std::uint8_t>(code);
    if ((bits & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(e4m3_bits_to_float(bits)));
      continue;
    }
    if (bits == 0x80) continue;  // -0 encodes back as -0 (0x80) too, but compare values
    ASSERT_EQ(float_to_e4m3_bits_satfinite(e4m3_bits_to_float(bits)), bits) << code;
  }
  EXPECT_EQ(e4m3_bits_to_float(0x7e), 448.0f);
  EXPECT_EQ(float_to_e4m3_bits_satfinite(448.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3_bits_satfinite(1e6f), 0x7e);
  EXPECT_EQ(float_to_e4m3_bits_satfinite(-1e6f), 0xfe);
  EXPECT_EQ(float_to_e4m3_bits_satfinite(INFINITY), 0x7e);
  EXPECT_EQ(float_to_e4m3_bits_satfinite(-1.0f), 0xb8);
  EXPECT_EQ(float_to_e4m3_bits_satfinite(std::ldexp(1.0f, -9)), 0x01);  // smallest subnormal
  EXPECT_EQ(float_to_e4m3_bits_satfinite(0.0625f), 0x18);
  EXPECT_EQ(float_to_e4m3_bits_satfinite(1.0625f), 0x38);  // tie between 1 and 1.125 -> even (1)
  EXPECT_EQ(float_to_e4m3_bits_satfinite(1.1875f), 0x3a);  // tie between 1.125 and 1.25 -> even (1.25)
  EXPECT_EQ(float_to_e4m3_bits_satfinite(NAN), 0x7f);
}

TEST(KernelReference, SeededInputsAreNonZeroDeterministicAndExactInEveryDtype) {
  std::set<double> seen;
  for (int rank = 0; rank < 8; ++rank) {
    for (std::int64_t i = 0; i < 2000; ++i) {
      for (InputRole role : {InputRole::Data, InputRole::Residual, InputRole::Gamma}) {
        const double v = seeded_value(42, role, rank, i);
        ASSERT_NE(v, 0.0);
        ASSERT_EQ(v, seeded_value(42, role, rank, i));
        ASSERT_GE(std::fabs(v), 0.25);
        ASSERT_LE(std::fabs(v), 1.5);
        // Exactly representable in bf16 (and so in fp16 and fp32).
        ASSERT_EQ(bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(v))), v);
        seen.insert(v);
      }
    }
  }
  EXPECT_GT(seen.size(), 60u);  // not a constant pattern
  // Different ranks and seeds give different data.
  int differing = 0;
  for (std::int64_t i = 0; i < 100; ++i) differing += seeded_value(1, InputRole::Data, 0, i) != seeded_value(1, InputRole::Data, 1, i);
  EXPECT_GT(differing, 50);
  differing = 0;
  for (std::int64_t i = 0; i < 100; ++i) differing += seeded_value(1, InputRole::Data, 0, i) != seeded_value(2, InputRole::Data, 0, i);
  EXPECT_GT(differing, 50);
}

TEST(KernelReference, AllReduceSumsRanksAndTracksMagnitudes) {
  const float a[3] = {1.0f, -2.0f, 0.5f};
  const float b[3] = {0.25f, 3.0f, -0.5f};
  const ReducedReference r = reference_all_reduce(DType::FP32, {a, b}, 3);
  EXPECT_DOUBLE_EQ(r.sum[0], 1.25);
  EXPECT_DOUBLE_EQ(r.sum[1], 1.0);
  EXPECT_DOUBLE_EQ(r.sum[2], 0.0);
  EXPECT_DOUBLE_EQ(r.magnitude[1], 5.0);
  EXPECT_DOUBLE_EQ(r.magnitude[2], 1.0);
}

TEST(KernelReference, ResidualRmsNormMatchesAHandComputedRow) {
  // Two rows of hidden 2. Row 0: reduced (1, 2) + residual (2, 2) = (3, 4); rms = sqrt((9 + 16) / 2).
  ReducedReference reduced;
  reduced.sum = {1, 2, -1, 0.5};
  reduced.magnitude = {1, 2, 1, 0.5};
  const float residual[4] = {2, 2, 0, -0.5f};
  const float gamma[2] = {1.0f, 0.5f};
  const NormReference n = reference_residual_rms_norm(reduced, DType::FP32, residual, gamma, 2, 0.0, 2.0, true);
  EXPECT_DOUBLE_EQ(n.residual_out[0], 3);
  EXPECT_DOUBLE_EQ(n.residual_out[1], 4);
  const double rms = std::sqrt(12.5);
  EXPECT_NEAR(n.out[0], 3 / rms * 1.0, 1e-15);
  EXPECT_NEAR(n.out[1], 4 / rms * 0.5, 1e-15);
  EXPECT_NEAR(n.fp8[1], 4 / rms * 0.5 / 2.0, 1e-15);
  // Row 1: (-1, 0) -> rms = sqrt(0.5); out = (-1 / sqrt(0.5), 0).
  EXPECT_NEAR(n.out[2], -1 / std::sqrt(0.5), 1e-15);
  EXPECT_DOUBLE_EQ(n.out[3], 0.0);
  EXPECT_DOUBLE_EQ(n.residual_scale[3], 1.0);  // 0.5 + |-0.5|
  // eps enters under the square root.
  const NormReference e = reference_residual_rms_norm(reduced, DType::FP32, residual, gamma, 2, 1.0, 1.0, false);
  EXPECT_NEAR(e.out[0], 3 / std::sqrt(13.5), 1e-15);
  EXPECT_TRUE(e.fp8.empty());
}

TEST(KernelReference, Fp8ReferenceSaturates) {
  ReducedReference reduced;
  reduced.sum = {1000, 0.001};
  reduced.magnitude = {1000, 0.001};
  const float residual[2] = {0, 0};
  const float gamma[2] = {1000, 1};
  const NormReference n = reference_residual_rms_norm(reduced, DType::FP32, residual, gamma, 2, 0.0, 1.0, true);
  EXPECT_DOUBLE_EQ(n.fp8[0], kE4m3Max);
}

TEST(KernelReference, TolerancesRejectPoisonAndLargeErrors) {
  EXPECT_DOUBLE_EQ(relative_tolerance(DType::FP32), 1e-5);
  EXPECT_DOUBLE_EQ(relative_tolerance(DType::BF16), 1e-2);
  EXPECT_TRUE(within_tolerance(1.000009, 1.0, 1.0, 1e-5));
  EXPECT_FALSE(within_tolerance(1.00002, 1.0, 1.0, 1e-5));
  EXPECT_FALSE(within_tolerance(bf16_bits_to_float(0xffff), 1.0, 1.0, 1e-2));  // never written
  EXPECT_TRUE(e4m3_within_tolerance(float_to_e4m3_bits_satfinite(1.0f), 1.06, 0));
  EXPECT_FALSE(e4m3_within_tolerance(float_to_e4m3_bits_satfinite(1.0f), 1.3, 0));
  EXPECT_FALSE(e4m3_within_tolerance(0xff, 1.0, 10));  // poison
}

TEST(KernelReference, ElementAccessRoundsToTheDtype) {
  std::uint16_t h[1];
  set_element(DType::FP16, h, 0, 1.0 + std::ldexp(1.0, -12));
  EXPECT_EQ(h[0], 0x3c00);
  set_element(DType::BF16, h, 0, -0.375);
  EXPECT_DOUBLE_EQ(element_at(DType::BF16, h, 0), -0.375);
  float f[1];
  set_element(DType::FP32, f, 0, 0.1);
  EXPECT_EQ(f[0], 0.1f);
}

// e2m1: the eight magnitudes, ties to the even code, saturation, the sign of small negatives; the 128x4 layout's
// hand-computed offsets (TensorRT-LLM's get_sf_out_offset_128x4).
TEST(KernelReference, E2m1AndTheSwizzledScaleLayout) {
  const double magnitudes[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (std::uint8_t code = 0; code < 16; ++code) {
    EXPECT_EQ(e2m1_bits_to_double(code), (code & 8 ? -1 : 1) * magnitudes[code & 7]);
    if (code != 8) {
      EXPECT_EQ(float_to_e2m1_bits(e2m1_bits_to_double(code)), code);
    }
  }
  EXPECT_EQ(float_to_e2m1_bits(0.25), 0);
  EXPECT_EQ(float_to_e2m1_bits(0.26), 1);
  EXPECT_EQ(float_to_e2m1_bits(0.75), 2);
  EXPECT_EQ(float_to_e2m1_bits(1.25), 2);
  EXPECT_EQ(float_to_e2m1_bits(1.75), 4);
  EXPECT_EQ(float_to_e2m1_bits(2.5), 4);
  EXPECT_EQ(float_to_e2m1_bits(3.5), 6);
  EXPECT_EQ(float_to_e2m1_bits(5.0), 6);
  EXPECT_EQ(float_to_e2m1_bits(5.01), 7);
  EXPECT_EQ(float_to_e2m1_bits(1e9), 7);
  EXPECT_EQ(float_to_e2m1_bits(-0.1), 8);
  EXPECT_EQ(float_to_e2m1_bits(-2.9), 0xd);
  EXPECT_EQ(nvfp4_swizzled_scale_offset(0, 0, 8), 0);
  EXPECT_EQ(nvfp4_swizzled_scale_offset(0, 3, 8), 3);
  EXPECT_EQ(nvfp4_swizzled_scale_offset(1, 0, 8), 16);
  EXPECT_EQ(nvfp4_swizzled_scale_offset(32, 0, 8), 4);
  EXPECT_EQ(nvfp4_swizzled_scale_offset(33, 1, 8), 16 + 4 + 1);
  EXPECT_EQ(nvfp4_swizzled_scale_offset(0, 4, 8), 512);
  EXPECT_EQ(nvfp4_swizzled_scale_offset(128, 0, 8), 1024);  // two 512-byte column tiles per 128-row tile
  EXPECT_EQ(nvfp4_swizzled_scale_offset(128, 0, 5), 1024);  // 5 columns pad to 8
}

}  // namespace
}  // namespace arfit::kernels

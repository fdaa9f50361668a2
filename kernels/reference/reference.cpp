#include "kernels/reference/reference.h"
#include "model/splitmix64.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace arfit::kernels {
namespace {

std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Rounds |v| (finite, > 0) to a binary format with `mant_bits` fraction bits and smallest normal exponent
// `min_exp`, round-to-nearest-even (std::nearbyint under the default rounding mode). Returns the rounded value.
double round_to_format(double v, int mant_bits, int min_exp) {
  int exp2 = 0;
  std::frexp(v, &exp2);  // v = f * 2^exp2, f in [0.5, 1)
  int e = exp2 - 1;      // v in [2^e, 2^(e+1))
  if (e < min_exp) e = min_exp;  // subnormal range: fixed step
  const double step = std::ldexp(1.0, e - mant_bits);
  return std::nearbyint(v / step) * step;
}

// Encodes an exactly representable magnitude into exponent/mantissa fields.
std::uint32_t encode_magnitude(double r, int mant_bits, int bias, int min_exp) {
  if (r == 0) return 0;
  if (r < std::ldexp(1.0, min_exp)) {
    return static_cast<std::uint32_t>(std::llround(r / std::ldexp(1.0, min_exp - mant_bits)));
  }
  int exp2 = 0;
  std::frexp(r, &exp2);
  const int e = exp2 - 1;
  const auto mant = static_cast<std::uint32_t>(std::llround((r / std::ldexp(1.0, e) - 1.0) * std::ldexp(1.0, mant_bits)));
  return (static_cast<std::uint32_t>(e + bias) << mant_bits) | mant;
}

}  // namespace

float bf16_bits_to_float(std::uint16_t bits) { return bits_float(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t float_to_bf16_bits(float value) {
  const std::uint32_t u = float_bits(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet NaN, sign kept
  const std::uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

float fp16_bits_to_float(std::uint16_t bits) {
  const bool negative = bits & 0x8000;
  const int exp = (bits >> 10) & 0x1f;
  const int mant = bits & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::nan("") : INFINITY;
  } else {
    v = std::ldexp(1.0 + mant / 1024.0, exp - 15);
  }
  return static_cast<float>(negative ? -v : v);
}

std::uint16_t float_to_fp16_bits(float value) {
  const std::uint16_t sign = (float_bits(value) >> 16) & 0x8000;
  if (std::isnan(value)) return static_cast<std::uint16_t>(sign | 0x7e00);
  const double a = std::fabs(static_cast<double>(value));
  if (std::isinf(a)) return static_cast<std::uint16_t>(sign | 0x7c00);
  if (a == 0) return sign;
  const double r = round_to_format(a, 10, -14);
  if (r > 65504.0) return static_cast<std::uint16_t>(sign | 0x7c00);
  return static_cast<std::uint16_t>(sign | encode_magnitude(r, 10, 15, -14));
}

float e4m3_bits_to_float(std::uint8_t bits) {
  const bool negative = bits & 0x80;
  const int exp = (bits >> 3) & 0xf;
  const int mant = bits & 0x7;
  if (exp == 15 && mant == 7) return std::nanf("");
  const double v = exp == 0 ? std::ldexp(static_cast<double>(mant), -9) : std::ldexp(1.0 + mant / 8.0, exp - 7);
  return static_cast<float>(negative ? -v : v);
}

std::uint8_t float_to_e4m3_bits_satfinite(float value) {
  if (std::isnan(value)) return 0x7f;
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0;
  double a = std::fabs(static_cast<double>(value));
  if (a == 0) return sign;
  double r = std::isinf(a) ? kE4m3Max : round_to_format(a, 3, -6);
  if (r > kE4m3Max) r = kE4m3Max;
  return static_cast<std::uint8_t>(sign | encode_magnitude(r, 3, 7, -6));
}

double e2m1_bits_to_double(std::uint8_t code) {
  static const double magnitudes[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const double m = magnitudes[code & 0x7];
  return (code & 0x8) ? -m : m;
}

std::uint8_t float_to_e2m1_bits(double value) {
  if (std::isnan(value)) return 0x7;
  const std::uint8_t sign = value < 0 ? 0x8 : 0;
  const double a = std::fabs(value);
  // Nearest of the eight magnitudes; on a tie the even code (the smaller one's code when it is even).
  std::uint8_t best = 0;
  for (std::uint8_t code = 1; code < 8; ++code) {
    const double d = std::fabs(e2m1_bits_to_double(code) - a);
    const double best_d = std::fabs(e2m1_bits_to_double(best) - a);
    if (d < best_d || (d == best_d && code % 2 == 0)) best = code;
  }
  return static_cast<std::uint8_t>(sign | best);
}

std::int64_t nvfp4_swizzled_scale_offset(std::int64_t row, std::int64_t column, std::int64_t columns) {
  // Layout [row tile (128 rows)][column tile (4 columns)][row % 32][(row % 128) / 32][column % 4], all row-major.
  const std::int64_t column_tiles = (columns + 3) / 4;
  const std::int64_t row_tile = row / 128, column_tile = column / 4;
  const std::int64_t tile_bytes = 32 * 4 * 4;
  const std::int64_t in_tile = ((row % 32) * 4 + (row % 128) / 32) * 4 + column % 4;
  return (row_tile * column_tiles + column_tile) * tile_bytes + in_tile;
}

double element_at(DType dtype, const void* buffer, std::int64_t i) {
  switch (dtype) {
    case DType::BF16: return bf16_bits_to_float(static_cast<const std::uint16_t*>(buffer)[i]);
    case DType::FP16: return fp16_bits_to_float(static_cast<const std::uint16_t*>(buffer)[i]);
    case DType::FP32: return static_cast<const float*>(buffer)[i];
  }
  return 0;
}

void set_element(DType dtype, void* buffer, std::int64_t i, double value) {
  switch (dtype) {
    case DType::BF16: static_cast<std::uint16_t*>(buffer)[i] = float_to_bf16_bits(static_cast<float>(value)); break;
    case DType::FP16: static_cast<std::uint16_t*>(buffer)[i] = float_to_fp16_bits(static_cast<float>(value)); break;
    case DType::FP32: static_cast<float*>(buffer)[i] = static_cast<float>(value); break;
  }
}

double seeded_value(std::uint64_t seed, InputRole role, int rank, std::int64_t i) {
  if (role == InputRole::GroupRangedData) {
    std::uint64_t g = splitmix64(seed ^ 0x6c6f7770726563ULL);  // "lowprec"
    g = splitmix64(g ^ (static_cast<std::uint64_t>(rank) + 1) * 0xc2b2ae3d27d4eb4fULL);
    g = splitmix64(g ^ static_cast<std::uint64_t>(i / 64));
    const int exponent = static_cast<int>(g % 9) - 4;  // exact in bf16, fp16 (0.25 * 2^-4 is normal) and fp32
    return std::ldexp(seeded_value(seed, InputRole::Data, rank, i), exponent);
  }
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ (static_cast<std::uint64_t>(role) + 1) * 0x100000001b3ULL);
  h = splitmix64(h ^ (static_cast<std::uint64_t>(rank) + 1) * 0xc2b2ae3d27d4eb4fULL);
  h = splitmix64(h ^ static_cast<std::uint64_t>(i));
  const auto k = static_cast<int>((h >> 8) % 65);  // 0..64
  if (role == InputRole::Gamma) return 0.5 + k / 64.0;  // [0.5, 1.5], step 2^-6
  const double magnitude = (64 + 3 * k) / 256.0;      // [0.25, 1], step 2^-8: exact in bf16
  return (h & 1) ? -magnitude : magnitude;
}

void fill_seeded(DType dtype, void* buffer, std::int64_t count, std::uint64_t seed, InputRole role, int rank) {
  for (std::int64_t i = 0; i < count; ++i) set_element(dtype, buffer, i, seeded_value(seed, role, rank, i));
}

ReducedReference reference_all_reduce(DType dtype, const std::vector<const void*>& inputs, std::int64_t count) {
  ReducedReference r;
  r.sum.assign(static_cast<std::size_t>(count), 0.0);
  r.magnitude.assign(static_cast<std::size_t>(count), 0.0);
  for (const void* in : inputs) {
    for (std::int64_t i = 0; i < count; ++i) {
      const double x = element_at(dtype, in, i);
      r.sum[static_cast<std::size_t>(i)] += x;
      r.magnitude[static_cast<std::size_t>(i)] += std::fabs(x);
    }
  }
  return r;
}

NormReference reference_residual_rms_norm(const ReducedReference& reduced, DType dtype, const void* residual,
                                          const void* gamma, std::int64_t hidden, double eps, double fp8_scale,
                                          bool with_fp8) {
  const auto count = static_cast<std::int64_t>(reduced.sum.size());
  NormReference n;
  n.residual_out.resize(reduced.sum.size());
  n.out.resize(reduced.sum.size());
  n.residual_scale.resize(reduced.sum.size());
  n.out_scale.resize(reduced.sum.size());
  if (with_fp8) n.fp8.resize(reduced.sum.size());
  for (std::int64_t row = 0; row * hidden < count; ++row) {
    double sum_squares = 0;
    for (std::int64_t j = 0; j < hidden; ++j) {
      const std::int64_t i = row * hidden + j;
      const double res = element_at(dtype, residual, i);
      const double r = reduced.sum[static_cast<std::size_t>(i)] + res;
      n.residual_out[static_cast<std::size_t>(i)] = r;
      n.residual_scale[static_cast<std::size_t>(i)] = reduced.magnitude[static_cast<std::size_t>(i)] + std::fabs(res);
      sum_squares += r * r;
    }
    const double inv_rms = 1.0 / std::sqrt(sum_squares / static_cast<double>(hidden) + eps);
    for (std::int64_t j = 0; j < hidden; ++j) {
      const auto i = static_cast<std::size_t>(row * hidden + j);
      const double g = element_at(dtype, gamma, j);
      n.out[i] = n.residual_out[i] * inv_rms * g;
      n.out_scale[i] = n.residual_scale[i] * inv_rms * std::fabs(g);
      if (with_fp8) {
        double q = n.out[i] / fp8_scale;
        if (q > kE4m3Max) q = kE4m3Max;
        if (q < -kE4m3Max) q = -kE4m3Max;
        n.fp8[i] = q;
      }
    }
  }
  return n;
}

namespace {

constexpr double kFp32Unit = 0x1p-24;      // fp32 unit roundoff
constexpr double kE4m3Relative = 0x1p-4;   // half an e4m3 step of a normal value (3 mantissa bits), relative
constexpr double kE4m3Absolute = 0x1p-10;  // half the e4m3 subnormal step 2^-9
constexpr int kGroup = 64;                 // kLowPrecisionGroupElements (kernels/device/low_precision_layout.h)

// The kernel's fp32 multiplier of a group whose largest magnitude is `largest` (group_multiplier), as its inverse:
// the value of one e4m3 unit. 0 for an all-zero group.
double multiplier_inverse(double largest) {
  if (!(largest > 0)) return 0;
  const float multiplier = std::fmin(448.0f / static_cast<float>(largest), 0x1p126f);
  return 1.0 / static_cast<double>(multiplier);
}

// Bound on |dequantise(quantise(v)) - v| for a value of magnitude `magnitude` in a group whose multiplier's
// inverse is `unit` (e4m3 rounding of v * m, plus the fp32 roundings of the product and of the division).
double quantisation_error(double magnitude, double unit) {
  if (unit == 0) return 0;  // all-zero group: its bytes and values are exactly 0
  return (1 + 4 * kFp32Unit) * (kE4m3Relative * magnitude + kE4m3Absolute * unit) + 2 * kFp32Unit * magnitude;
}

// Unit roundoff and absolute subnormal half-step of the output type.
double output_unit(DType dtype) { return dtype == DType::BF16 ? 0x1p-8 : dtype == DType::FP16 ? 0x1p-11 : kFp32Unit; }
double output_floor(DType dtype) { return dtype == DType::FP16 ? 0x1p-25 : dtype == DType::BF16 ? 0x1p-134 : 0x1p-150; }

}  // namespace

LowPrecisionReference reference_low_precision_all_reduce(DType dtype, const std::vector<const void*>& inputs,
                                                         std::int64_t count) {
  const auto n = static_cast<std::size_t>(count);
  const double nranks = static_cast<double>(inputs.size());
  LowPrecisionReference r;
  r.sum.assign(n, 0.0);
  r.bound.assign(n, 0.0);
  std::vector<double> stage1(n, 0.0), magnitude(n, 0.0);  // E1 (quantised contributions + fp32 sum), sum of |d_r|
  for (std::int64_t begin = 0; begin < count; begin += kGroup) {
    const std::int64_t end = std::min(count, begin + kGroup);
    for (const void* in : inputs) {
      double largest = 0;
      for (std::int64_t i = begin; i < end; ++i) largest = std::max(largest, std::fabs(element_at(dtype, in, i)));
      const double unit = multiplier_inverse(largest);
      for (std::int64_t i = begin; i < end; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const double x = element_at(dtype, in, i);
        const double e = quantisation_error(std::fabs(x), unit);
        r.sum[k] += x;
        stage1[k] += e;
        magnitude[k] += std::fabs(x) + e;
      }
    }
    // Stage 2: the fp32 sums (each within stage1 of the exact sum) quantised again with their group's multiplier.
    double largest_sum = 0;
    for (std::int64_t i = begin; i < end; ++i) {
      const auto k = static_cast<std::size_t>(i);
      stage1[k] += nranks * kFp32Unit * magnitude[k];
      largest_sum = std::max(largest_sum, std::fabs(r.sum[k]) + stage1[k]);
    }
    const double unit = std::max(largest_sum / 448.0, 0x1p-126);
    for (std::int64_t i = begin; i < end; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const double reduced = std::fabs(r.sum[k]) + stage1[k];
      const double stage2 = quantisation_error(reduced, unit);
      r.bound[k] = stage1[k] + stage2 + output_unit(dtype) * (reduced + stage2) + output_floor(dtype);
    }
  }
  return r;
}

double relative_tolerance(DType dtype) {
  switch (dtype) {
    case DType::BF16: return 1e-2;
    case DType::FP16: return 5e-3;
    case DType::FP32: return 1e-5;
  }
  return 0;
}

bool e4m3_within_tolerance(std::uint8_t got_bits, double expected, double upstream) {
  const double got = e4m3_bits_to_float(got_bits);
  if (!(got == got)) return false;
  double step = std::fabs(expected) * 0.125;
  if (step < 1.0 / 512) step = 1.0 / 512;
  return std::fabs(got - expected) <= step + upstream;
}

}  // namespace arfit::kernels

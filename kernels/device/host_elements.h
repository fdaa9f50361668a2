// Element types of the kernels on the host (the CPU execution of kernels/device/, and bench/host): bf16 and
// fp16 as their bit patterns, with fast conversions that round exactly as CUDA's __float2bfloat16_rn,
// __float2half_rn and __nv_cvt_float2_to_fp8x2(..., __NV_SATFINITE, __NV_E4M3) do (round to nearest even).
// kernels/reference/reference.h has independent double-precision conversions; the tests compare the two
// over every 16-bit code and over many floats.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace arfit::kernels::device::host {

struct bf16_t {
  std::uint16_t bits;
};
struct fp16_t {
  std::uint16_t bits;
};

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_float(std::uint16_t bits) { return bits_float(static_cast<std::uint32_t>(bits) << 16); }

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;                      // NaN stays NaN
  // A select rather than an early return, so the compiler vectorises conversion loops.
  return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return bits_float(sign);
    exp = 127 - 15 + 1;  // subnormal: normalise
    while ((man & 0x400u) == 0) {
      man <<= 1;
      --exp;
    }
    return bits_float(sign | (exp << 23) | ((man & 0x3ffu) << 13));
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (man << 13));
  return bits_float(sign | ((exp + 127 - 15) << 23) | (man << 13));
}

inline std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = float_bits(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow (after rounding) -> inf
  if (abs < 0x38800000u) {                                                   // below the smallest normal: subnormal
    if (abs < 0x33000000u) return sign;                                      // rounds to zero
    const std::uint32_t e = abs >> 23;
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const int shift = static_cast<int>(126 - e);  // value = m * 2^(e-150) = r * 2^-24
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  r = ((r >> 23) - 127 + 15) << 10 | ((r >> 13) & 0x3ffu);
  return static_cast<std::uint16_t>(sign | r);
}

// e4m3 (bias 7, 3 mantissa bits, no infinities, 0x7f/0xff NaN), saturating finite: |x| beyond 448 (and
// infinities) become +-448.
inline std::uint8_t float_to_e4m3_satfinite(float f) {
  const std::uint32_t u = float_bits(f);
  const auto sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7f;  // NaN
  const float a = bits_float(abs);
  if (a < 0.015625f) {  // below 2^-6: subnormal step 2^-9; nearbyint rounds half to even
    return static_cast<std::uint8_t>(sign | static_cast<std::uint32_t>(std::nearbyint(a * 512.0f)));
  }
  const std::uint32_t r = abs + 0x7ffffu + ((abs >> 20) & 1u);  // round the mantissa to 3 bits, nearest even
  const std::uint32_t exponent = (r >> 23) - 127 + 7;
  const std::uint32_t code = exponent > 15 ? 0x7fu : (exponent << 3) | ((r >> 20) & 7u);
  return static_cast<std::uint8_t>(sign | (code > 0x7eu ? 0x7eu : code));  // 0x7e = 448
}

// The value of an e4m3 byte (0x7f / 0xff are NaN): exact in float.
inline float e4m3_to_float(std::uint8_t bits) {
  const std::uint32_t exponent = (bits >> 3) & 0xfu;
  const std::uint32_t mantissa = bits & 0x7u;
  if (exponent == 15 && mantissa == 7) return bits_float(0x7fc00000u);
  const float magnitude = exponent == 0 ? static_cast<float>(mantissa) * 0.001953125f  // subnormal: mantissa * 2^-9
                                        : bits_float(((exponent + 120u) << 23) | (mantissa << 20));
  return (bits & 0x80u) ? -magnitude : magnitude;
}

}  // namespace arfit::kernels::device::host

// Double-precision CPU references for every kernel and epilogue, the host-side element conversions they
// need (bit-exact with CUDA's round-to-nearest-even conversions), seeded inputs that any rank can rebuild,
// and the tolerance rule the checks use. Host-only: used by the strategy checks and the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_types.h"
#include "model/sample.h"

namespace arfit::kernels {

// ---- element conversions ----
float bf16_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16_bits(float value);   // round to nearest even; NaN stays NaN
float fp16_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_fp16_bits(float value);   // round to nearest even, overflow to inf
float e4m3_bits_to_float(std::uint8_t bits);     // 0x7f / 0xff are NaN
std::uint8_t float_to_e4m3_bits_satfinite(float value);  // round to nearest even, saturate to +-448
inline constexpr double kE4m3Max = 448.0;
// e2m1 (NVFP4's element type: sign bit 0x8, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6): round to nearest, ties to the
// even code, saturating to +-6, NaN to +6; negative values that round to zero keep the sign bit (0x8).
double e2m1_bits_to_double(std::uint8_t code);
std::uint8_t float_to_e2m1_bits(double value);
inline constexpr double kE2m1Max = 6.0;
// Offset of the scale of (row, column) in TensorRT-LLM's swizzled 128x4 NVFP4 scale layout (get_sf_out_offset_128x4
// in cpp/tensorrt_llm/kernels/quantization.cuh; `columns` = hidden / 16). Written from that layout's definition
// ([row tiles of 128][column tiles of 4][32][4][4]), independently of the kernels' nvfp4_scale_offset.
std::int64_t nvfp4_swizzled_scale_offset(std::int64_t row, std::int64_t column, std::int64_t columns);

// Element i of a host buffer of `dtype`, widened to double.
double element_at(DType dtype, const void* buffer, std::int64_t i);
// Stores `value` rounded to `dtype` (nearest even).
void set_element(DType dtype, void* buffer, std::int64_t i, double value);

// ---- seeded inputs ----
// What a buffer holds; the value of element i is a pure function of (seed, role, rank, i), so every rank
// can rebuild its peers' inputs for checking. Values are never zero (magnitudes in [0.25, 1] with random
// sign for data and residuals; gamma in [0.5, 1.5]) and exactly representable in every dtype.
// GroupRangedData: Data times 2^k, k in -4..4 drawn per (rank, group of 64 elements): the LOWPRECISION inputs, whose
// per-group multipliers then differ by up to 2^8 between neighbours (a multiplier read for the wrong group shows).
enum class InputRole { Data, Residual, Gamma, GroupRangedData };
double seeded_value(std::uint64_t seed, InputRole role, int rank, std::int64_t i);
void fill_seeded(DType dtype, void* buffer, std::int64_t count, std::uint64_t seed, InputRole role, int rank);

// ---- references ----
// Sum over ranks of input[r][i] (inputs given as host buffers of `dtype`), plus the sum of magnitudes
// (the scale the rounding error of a floating-point sum is proportional to).
struct ReducedReference {
  std::vector<double> sum;
  std::vector<double> magnitude;  // sum over ranks of |input[r][i]|
};
ReducedReference reference_all_reduce(DType dtype, const std::vector<const void*>& inputs, std::int64_t count);

// residual_out = reduced + residual; out = residual_out / sqrt(mean_row(residual_out^2) + eps) * gamma;
// fp8 = clamp(out / fp8_scale, +-448) (the exact value before e4m3 rounding). Scales carry the error budget:
// residual_scale = magnitude + |residual|, out_scale = residual_scale * inv_rms * |gamma|.
struct NormReference {
  std::vector<double> residual_out, out, fp8;
  std::vector<double> residual_scale, out_scale;
};
NormReference reference_residual_rms_norm(const ReducedReference& reduced, DType dtype, const void* residual,
                                          const void* gamma, std::int64_t hidden, double eps, double fp8_scale,
                                          bool with_fp8);

// LOWPRECISION (kernels/device/low_precision_kernels.h): the exact sum and a bound on |kernel output - sum| for
// every element, from the inputs (host buffers of `dtype`, one per rank) and the kernel's numerics: e4m3 rounding
// (relative 2^-4 above 2^-6, absolute 2^-10 below) of every rank's contribution scaled by its group's multiplier
// m = 448 / amax, the fp32 sum, the second e4m3 rounding of the sum (multiplier of the sums' group), and the final
// rounding to dtype. docs/kernels.md derives it.
struct LowPrecisionReference {
  std::vector<double> sum;
  std::vector<double> bound;
};
LowPrecisionReference reference_low_precision_all_reduce(DType dtype, const std::vector<const void*>& inputs,
                                                         std::int64_t count);

// ---- tolerance ----
// Relative tolerance of one output element of a kernel that accumulates in fp32 and rounds once:
// fp32 1e-5, fp16 2e-3, bf16 1e-2 (relative to the element's scale, see above).
double relative_tolerance(DType dtype);
// |got - expected| <= tolerance * scale, and got is not NaN (NaN = the poison pattern, never written).
inline bool within_tolerance(double got, double expected, double scale, double tolerance) {
  if (!(got == got)) return false;
  double err = got - expected;
  if (err < 0) err = -err;
  return err <= tolerance * scale;
}
// e4m3 element check: within one e4m3 step of the exact value (2^-3 relative, or the smallest subnormal
// step 2^-9 near zero), plus the upstream error `upstream` (already divided by the fp8 scale).
bool e4m3_within_tolerance(std::uint8_t got_bits, double expected, double upstream);

}  // namespace arfit::kernels

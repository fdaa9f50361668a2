#include "kernels/reference/check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace arfit::kernels {
namespace detail {

std::vector<unsigned char> seeded_host(DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank) {
  std::vector<unsigned char> host(static_cast<std::size_t>(count) * static_cast<std::size_t>(dtype_bytes(dtype)));
  fill_seeded(dtype, host.data(), count, seed, role, rank);
  return host;
}

void record(CheckResult& result, bool ok, double error, const std::string& where, double got, double expected) {
  ++result.checked;
  if (std::isfinite(error)) result.max_error = std::max(result.max_error, error);
  if (!ok) {
    ++result.wrong;
    if (result.first_wrong.empty()) {
      std::ostringstream s;
      s.precision(9);
      s << where << ": got ";
      if (std::isnan(got)) {
        s << "NaN (the poison pattern: never written, or a NaN result)";
      } else {
        s << got;
      }
      s << ", expected " << expected;
      result.first_wrong = s.str();
    }
  }
}

void compare_elements(CheckResult& result, DType dtype, const std::vector<unsigned char>& got,
                      const std::vector<double>& expected, const std::vector<double>& scale, double tolerance,
                      const std::string& what) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double g = element_at(dtype, got.data(), static_cast<std::int64_t>(i));
    const bool ok = within_tolerance(g, expected[i], scale[i], tolerance);
    const double error = scale[i] > 0 ? std::fabs(g - expected[i]) / scale[i] : std::fabs(g - expected[i]);
    if (!ok || !result.first_wrong.empty()) {
      record(result, ok, ok ? error : INFINITY, what + "[" + std::to_string(i) + "]", g, expected[i]);
    } else {
      ++result.checked;
      result.max_error = std::max(result.max_error, error);
    }
  }
}

void compare_exact(CheckResult& result, DType dtype, const std::vector<unsigned char>& got, std::int64_t got_offset,
                   const std::vector<unsigned char>& expected, std::int64_t expected_offset, std::int64_t count,
                   const std::string& what) {
  const std::size_t size = static_cast<std::size_t>(dtype_bytes(dtype));
  for (std::int64_t i = 0; i < count; ++i) {
    const unsigned char* g = got.data() + static_cast<std::size_t>(got_offset + i) * size;
    const unsigned char* e = expected.data() + static_cast<std::size_t>(expected_offset + i) * size;
    const bool ok = std::memcmp(g, e, size) == 0;
    ++result.checked;
    if (!ok) {
      --result.checked;
      record(result, false, INFINITY, what + "[" + std::to_string(got_offset + i) + "]",
             element_at(dtype, got.data(), got_offset + i), element_at(dtype, expected.data(), expected_offset + i));
    }
  }
}

}  // namespace detail

namespace {

std::vector<unsigned char> seeded(const AllReduceExpectation& e, std::int64_t count, InputRole role, int rank) {
  return detail::seeded_host(e.dtype, count, e.seed, role, rank);
}

// Elements of `a` and `b` (element size `size`) that differ bitwise.
std::int64_t differing_elements(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, std::size_t size) {
  if (a.size() != b.size()) return static_cast<std::int64_t>(std::max(a.size(), b.size()) / size);
  std::int64_t n = 0;
  for (std::size_t i = 0; i + size <= a.size(); i += size) n += std::memcmp(a.data() + i, b.data() + i, size) != 0;
  return n;
}

// The host's fp32 replica of the kernels' nvfp4_quantize_block (kernels/device/all_reduce_kernels.h) for one block of
// stored outputs: the scale byte, and the codes through `code(k)`.
std::uint8_t nvfp4_block_scale_fp32(const float* values, float global) {
  float amax = 0.0f;
  for (int k = 0; k < kNvfp4BlockElements; ++k) amax = std::max(amax, std::fabs(values[k]));
  return float_to_e4m3_bits_satfinite(global * (amax * (1.0f / 6.0f)));
}

// The NVFP4 outputs of one rank against the reference (see check_all_reduce_outputs).
void check_nvfp4(CheckResult& result, const AllReduceExpectation& e, const NormReference& norm, const RankOutputs& o,
                 bool output_written, double tolerance, const std::string& rank) {
  const float global = 1.0f / e.fp8_scale;  // the kernels' fp8_inv_scale
  const std::int64_t columns = e.hidden / kNvfp4BlockElements;
  const std::int64_t rows = e.count / e.hidden;
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t b = 0; b < columns; ++b) {
      const std::int64_t first = row * e.hidden + b * kNvfp4BlockElements;
      const auto scale_at = static_cast<std::size_t>(nvfp4_swizzled_scale_offset(row, b, columns));
      const std::uint8_t scale = scale_at < o.scale_out.size() ? o.scale_out[scale_at] : 0x7f;
      const std::string block = "row " + std::to_string(row) + " block " + std::to_string(b);
      double amax = 0, slack = 0;
      for (int k = 0; k < kNvfp4BlockElements; ++k) {
        const auto i = static_cast<std::size_t>(first + k);
        amax = std::max(amax, std::fabs(norm.out[i]));
        slack = std::max(slack, tolerance * norm.out_scale[i]);
      }
      const double lowest = e4m3_bits_to_float(float_to_e4m3_bits_satfinite(static_cast<float>(global * std::max(0.0, amax - slack) / kE2m1Max)));
      const double highest = e4m3_bits_to_float(float_to_e4m3_bits_satfinite(static_cast<float>(global * (amax + slack) / kE2m1Max)));
      const double block_scale = e4m3_bits_to_float(scale);
      detail::record(result, block_scale >= lowest && block_scale <= highest, 0.0,
                     rank + "scale_out[" + block + "]", block_scale, global * amax / kE2m1Max);
      float stored[kNvfp4BlockElements] = {};
      if (output_written) {
        for (int k = 0; k < kNvfp4BlockElements; ++k) stored[k] = static_cast<float>(element_at(e.dtype, o.output.data(), first + k));
        const std::uint8_t expected = nvfp4_block_scale_fp32(stored, global);
        detail::record(result, scale == expected, 0.0, rank + "scale_out[" + block + "] (of the stored output)",
                       block_scale, e4m3_bits_to_float(expected));
      }
      const float to_e2m1 = block_scale != 0 ? 1.0f / (static_cast<float>(block_scale) * (1.0f / global)) : 0.0f;
      for (int k = 0; k < kNvfp4BlockElements; ++k) {
        const auto i = static_cast<std::size_t>(first + k);
        const auto byte_at = static_cast<std::size_t>((first + k) / 2);
        const std::uint8_t byte = byte_at < o.fp8_out.size() ? o.fp8_out[byte_at] : 0;
        const auto code = static_cast<std::uint8_t>(k % 2 ? byte >> 4 : byte & 0xf);
        const double got = e2m1_bits_to_double(code);
        const std::string where = rank + "fp8_out[element " + std::to_string(first + k) + "] (e2m1)";
        const double u = tolerance * norm.out_scale[i];
        const double scale_q = block_scale != 0 ? global / block_scale : 0.0;
        const double low = e2m1_bits_to_double(float_to_e2m1_bits((norm.out[i] - u) * scale_q));
        const double high = e2m1_bits_to_double(float_to_e2m1_bits((norm.out[i] + u) * scale_q));
        detail::record(result, got >= low && got <= high && byte_at < o.fp8_out.size(), 0.0, where, got,
                       norm.out[i] * scale_q);
        if (output_written) {
          const std::uint8_t expected = float_to_e2m1_bits(static_cast<double>(stored[k] * to_e2m1));
          detail::record(result, code == expected, 0.0, where + " (of the stored output)", got,
                         e2m1_bits_to_double(expected));
        }
      }
    }
  }
}

}  // namespace

AllReduceExpectation expectation_for(const StrategyCase& c, std::uint64_t seed) {
  AllReduceExpectation e;
  e.dtype = c.dtype;
  e.fusion = c.fusion;
  e.nranks = c.nranks;
  e.count = c.count;
  e.hidden = c.hidden;
  e.rms_eps = static_cast<float>(c.rms_eps);
  e.fp8_scale = c.fp8_scale;
  e.seed = seed;
  return e;
}

InputRole data_role(const std::string& strategy) {
  return strategy == strategy::kLowPrecision ? InputRole::GroupRangedData : InputRole::Data;
}

namespace {

// Every rank's seeded input of `role`, and pointers to them (for the references).
struct RankInputs {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<const void*> pointers;
};
RankInputs seeded_rank_inputs(const AllReduceExpectation& e, InputRole role) {
  RankInputs in;
  for (int r = 0; r < e.nranks; ++r) in.bytes.push_back(seeded(e, e.count, role, r));
  for (const auto& b : in.bytes) in.pointers.push_back(b.data());
  return in;
}

// LOWPRECISION: every output element within its bound of the exact sum of the ranged inputs.
CheckResult check_low_precision_outputs(const AllReduceExpectation& e, const std::vector<RankOutputs>& ranks) {
  const RankInputs inputs = seeded_rank_inputs(e, InputRole::GroupRangedData);
  const LowPrecisionReference reference = reference_low_precision_all_reduce(e.dtype, inputs.pointers, e.count);
  CheckResult result;
  for (const RankOutputs& o : ranks) {
    detail::compare_elements(result, e.dtype, o.output, reference.sum, reference.bound, 1.0,
                             "rank " + std::to_string(o.rank) + " output");
  }
  return result;
}

// The exact strategies: the sum (or its fused epilogue's outputs) within the dtype's tolerance.
CheckResult check_exact_outputs(const AllReduceExpectation& e, const std::vector<RankOutputs>& ranks) {
  const RankInputs inputs = seeded_rank_inputs(e, InputRole::Data);
  const ReducedReference reduced = reference_all_reduce(e.dtype, inputs.pointers, e.count);
  const bool fused = e.fusion != FusionOp::None;
  const bool fp8 = fusion_quantizes_fp8(e.fusion);
  const bool nvfp4 = fusion_quantizes_nvfp4(e.fusion);
  const bool output_written = !fused || fusion_writes_norm_output(e.fusion);
  NormReference norm;
  if (fused) {
    const auto residual = seeded(e, e.count, InputRole::Residual, kReplicatedRank);
    const auto gamma = seeded(e, e.hidden, InputRole::Gamma, kReplicatedRank);
    norm = reference_residual_rms_norm(reduced, e.dtype, residual.data(), gamma.data(), e.hidden, e.rms_eps,
                                       e.fp8_scale, fp8);
  }
  const double tolerance = relative_tolerance(e.dtype) * e.tolerance_factor;
  const float inv_scale = 1.0f / e.fp8_scale;  // the kernels multiply by the fp32 reciprocal
  CheckResult result;
  for (const RankOutputs& o : ranks) {
    const std::string rank = "rank " + std::to_string(o.rank) + " ";
    if (!fused) {
      detail::compare_elements(result, e.dtype, o.output, reduced.sum, reduced.magnitude, tolerance, rank + "output");
      continue;
    }
    if (output_written) {
      detail::compare_elements(result, e.dtype, o.output, norm.out, norm.out_scale, tolerance, rank + "output");
    }
    detail::compare_elements(result, e.dtype, o.residual_out, norm.residual_out, norm.residual_scale, tolerance,
                             rank + "residual_out");
    if (nvfp4) check_nvfp4(result, e, norm, o, output_written, tolerance, rank);
    if (!fp8) continue;
    for (std::int64_t i = 0; i < e.count; ++i) {
      const auto iu = static_cast<std::size_t>(i);
      const std::uint8_t bits = iu < o.fp8_out.size() ? o.fp8_out[iu] : 0x7f;
      const std::string where = rank + "fp8_out[" + std::to_string(i) + "]";
      const double upstream = tolerance * norm.out_scale[iu] / e.fp8_scale;
      detail::record(result, e4m3_within_tolerance(bits, norm.fp8[iu], upstream), 0.0, where, e4m3_bits_to_float(bits),
                     norm.fp8[iu]);
      if (!output_written) continue;
      // Which value is quantised: the output as stored, rounded to dtype, times the fp32 reciprocal scale.
      const float stored = static_cast<float>(element_at(e.dtype, o.output.data(), i));
      const std::uint8_t expected = float_to_e4m3_bits_satfinite(stored * inv_scale);
      detail::record(result, bits == expected, 0.0, where + " (e4m3 of the stored output)", e4m3_bits_to_float(bits),
                     e4m3_bits_to_float(expected));
    }
  }
  return result;
}

// Elements of every output the fusion writes that differ from rank 0's (LOWPRECISION is NONE only: its output).
std::int64_t elements_differing_from_rank0(const AllReduceExpectation& e, const std::vector<RankOutputs>& ranks) {
  const bool fused = e.fusion != FusionOp::None;
  const bool fp8 = fusion_quantizes_fp8(e.fusion);
  const bool nvfp4 = fusion_quantizes_nvfp4(e.fusion);
  const bool output_written = !fused || fusion_writes_norm_output(e.fusion);
  const auto size = static_cast<std::size_t>(dtype_bytes(e.dtype));
  std::int64_t differing = 0;
  for (std::size_t k = 1; k < ranks.size(); ++k) {
    if (output_written) differing += differing_elements(ranks[k].output, ranks[0].output, size);
    if (fused) differing += differing_elements(ranks[k].residual_out, ranks[0].residual_out, size);
    if (fp8 || nvfp4) differing += differing_elements(ranks[k].fp8_out, ranks[0].fp8_out, 1);
    if (nvfp4) differing += differing_elements(ranks[k].scale_out, ranks[0].scale_out, 1);
  }
  return differing;
}

}  // namespace

CheckResult check_all_reduce_outputs(const AllReduceExpectation& e, const std::vector<RankOutputs>& ranks,
                                     bool identical) {
  CheckResult result = e.low_precision ? check_low_precision_outputs(e, ranks) : check_exact_outputs(e, ranks);
  if (identical) result.not_identical += elements_differing_from_rank0(e, ranks);
  return result;
}

std::int64_t count_quantized_wrong(FusionOp fusion, std::int64_t hidden, float fp8_scale, const std::vector<double>& out,
                                   const std::vector<double>& slack, const std::vector<unsigned char>& quant,
                                   const std::vector<unsigned char>& scales) {
  CheckResult result;
  const auto count = static_cast<std::int64_t>(out.size());
  if (fusion_quantizes_nvfp4(fusion)) {
    AllReduceExpectation e;
    e.fusion = fusion;
    e.count = count;
    e.hidden = hidden;
    e.fp8_scale = fp8_scale;
    NormReference norm;
    norm.out = out;
    norm.out_scale = slack;  // with tolerance 1 below: the slack itself
    RankOutputs o;
    o.fp8_out = quant;
    o.scale_out = scales;
    check_nvfp4(result, e, norm, o, /*output_written=*/false, 1.0, "");
  } else if (fusion_quantizes_fp8(fusion)) {
    for (std::int64_t i = 0; i < count; ++i) {
      const auto iu = static_cast<std::size_t>(i);
      const std::uint8_t bits = iu < quant.size() ? quant[iu] : 0x7f;
      const double expected = std::clamp(out[iu] / fp8_scale, -kE4m3Max, kE4m3Max);
      detail::record(result, e4m3_within_tolerance(bits, expected, slack[iu] / fp8_scale), 0.0, "", 0.0, 0.0);
    }
  }
  return result.wrong;
}

}  // namespace arfit::kernels

// The option values that shape a codegen request: TP lists, power-of-two size axes (--hidden, --tokens, --bytes;
// also `arfit plot`'s grids) and fusion lists. One parser for every command, so a bad value is refused the same
// way everywhere: std::invalid_argument naming the option (the CLI turns it into exit 2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/sample.h"

namespace arfit::codegen {

// The largest value a size axis accepts: 2^40 (a tebibyte message, or a trillion tokens). Ranges are expanded
// into every power of two between their ends, so the bound also caps an axis at 41 values; far above any
// real tensor, far below where doubling an int64 overflows.
inline constexpr std::int64_t kMaxAxisValue = std::int64_t{1} << 40;

// "2,4,8" -> {2,4,8} (sorted). Throws std::invalid_argument naming `option` on anything else than distinct
// positive integers.
std::vector<int> parse_int_list(const std::string& spec, const std::string& option);
// parse_int_list for GPU counts: also at most kMaxSampleRanks (2^20), the most ranks a sample or a model holds.
std::vector<int> parse_rank_list(const std::string& spec, const std::string& option);
// "128:8192" -> powers of two from 128 to 8192; "128,4096" -> exactly those (sorted). Values must be powers of
// two in [1, kMaxAxisValue], ranges must have lo <= hi. Throws std::invalid_argument naming `option`.
std::vector<std::int64_t> parse_pow2_axis(const std::string& spec, const std::string& option);
// "NONE,RESIDUAL_RMS_NORM" (any alias parse_fusion accepts); "all" = the four ops. The result keeps TensorRT-LLM's
// order whatever order was given. Throws std::invalid_argument naming `option`.
std::vector<FusionOp> parse_fusion_list(const std::string& spec, const std::string& option);

// True when `axis` is every power of two from its first to its last value (TensorRT-LLM's axes are).
bool contiguous_powers_of_two(const std::vector<std::int64_t>& axis);

// Splits at `sep` and trims blanks from each part; an empty string gives no parts.
std::vector<std::string> split_trimmed(const std::string& s, char sep);

}  // namespace arfit::codegen

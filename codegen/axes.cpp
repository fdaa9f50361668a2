#include "codegen/axes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "model/text.h"

namespace arfit::codegen {

namespace {

// A positive whole number, with a unit of parse_size_text where it helps ("8K" hidden, "4G" bytes).
std::int64_t parse_positive(const std::string& text, const std::string& option) {
  std::string why;
  const std::optional<double> v = parse_size_text(trim(text), &why);
  if (!v) throw std::invalid_argument(option + ": " + why);
  if (!(*v >= 1) || std::floor(*v) != *v) throw std::invalid_argument(option + ": '" + text + "' is not a positive integer");
  // Whole doubles up to 2^63 convert exactly; beyond, the value is out of range (every caller's bound is far lower).
  if (*v >= 9223372036854775808.0) throw std::invalid_argument(option + ": '" + text + "' is out of range");
  return static_cast<std::int64_t>(*v);
}

bool is_pow2(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// A size-axis value: positive, a power of two, and at most kMaxAxisValue.
std::int64_t parse_axis_value(const std::string& text, const std::string& option) {
  const std::int64_t v = parse_positive(text, option);
  if (v > kMaxAxisValue)
    throw std::invalid_argument(option + ": " + std::to_string(v) + " is above the largest accepted value " +
                                std::to_string(kMaxAxisValue) + " (2^40)");
  if (!is_pow2(v)) throw std::invalid_argument(option + ": " + std::to_string(v) + " is not a power of two");
  return v;
}

}  // namespace

std::vector<std::string> split_trimmed(const std::string& s, char sep) {
  if (s.empty()) return {};
  std::vector<std::string> out = split_items(s, sep);
  for (std::string& item : out) item = std::string(trim(item));
  return out;
}

std::vector<int> parse_int_list(const std::string& spec, const std::string& option) {
  std::vector<int> out;
  for (const auto& part : split_trimmed(spec, ',')) {
    const std::int64_t v = parse_positive(part, option);
    if (v > std::numeric_limits<int>::max()) throw std::invalid_argument(option + ": '" + part + "' is too large");
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end())
      throw std::invalid_argument(option + ": " + part + " is listed twice");
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw std::invalid_argument(option + ": empty list");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> parse_rank_list(const std::string& spec, const std::string& option) {
  std::vector<int> out = parse_int_list(spec, option);
  if (out.back() > kMaxSampleRanks)
    throw std::invalid_argument(option + ": " + std::to_string(out.back()) + " is above " + std::to_string(kMaxSampleRanks) +
                                " (2^20), the most GPUs arfit models");
  return out;
}

std::vector<std::int64_t> parse_pow2_axis(const std::string& spec, const std::string& option) {
  std::vector<std::int64_t> out;
  const auto colon = spec.find(':');
  if (colon != std::string::npos) {
    const std::int64_t lo = parse_axis_value(spec.substr(0, colon), option);
    const std::int64_t hi = parse_axis_value(spec.substr(colon + 1), option);
    if (lo > hi) throw std::invalid_argument(option + ": range '" + spec + "' has its low end above its high end");
    // Both ends are powers of two <= kMaxAxisValue, so v * 2 never overflows; the loop still stops before
    // doubling past `hi` rather than relying on that.
    for (std::int64_t v = lo;; v *= 2) {
      out.push_back(v);
      if (v >= hi || v > hi / 2) break;
    }
  } else {
    for (const auto& part : split_trimmed(spec, ',')) out.push_back(parse_axis_value(part, option));
    std::sort(out.begin(), out.end());
    if (std::adjacent_find(out.begin(), out.end()) != out.end())
      throw std::invalid_argument(option + ": a value is listed twice in '" + spec + "'");
  }
  if (out.empty()) throw std::invalid_argument(option + ": empty axis");
  return out;
}

std::vector<FusionOp> parse_fusion_list(const std::string& spec, const std::string& option) {
  if (trim(spec) == "all") return all_fusions();
  std::vector<FusionOp> out;
  for (const auto& part : split_trimmed(spec, ',')) {
    auto f = try_parse_fusion(part);
    if (!f) throw std::invalid_argument(option + ": unknown fusion op '" + part + "'");
    if (std::find(out.begin(), out.end(), *f) != out.end())
      throw std::invalid_argument(option + ": fusion op '" + part + "' is listed twice");
    out.push_back(*f);
  }
  if (out.empty()) throw std::invalid_argument(option + ": empty list");
  // The table's fusion axis keeps TensorRT-LLM's order whatever order the user listed.
  std::sort(out.begin(), out.end(), [](FusionOp a, FusionOp b) { return static_cast<int>(a) < static_cast<int>(b); });
  return out;
}

bool contiguous_powers_of_two(const std::vector<std::int64_t>& axis) {
  if (axis.empty() || !is_pow2(axis.front())) return false;
  for (std::size_t i = 1; i < axis.size(); ++i)
    if (axis[i] != axis[i - 1] * 2) return false;
  return true;
}

}  // namespace arfit::codegen

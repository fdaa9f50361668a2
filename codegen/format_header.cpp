// --format header: a self-contained C++17 arfit_select.h. select(tp, fusion, num_tokens, hidden, bucketing)
// returns the strategy of the cell; the fusion argument is TensorRT-LLM's AllReduceFusionOp value, the result
// TensorRT-LLM's AllReduceStrategyType value where it has one. Two bucketings: strict (only inside the grid) and,
// where the axes are contiguous powers of two, TensorRT-LLM's (its lookup's index arithmetic, exactly).
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/safe_text.h"
#include "codegen/writers.h"
#include "model/text.h"

namespace arfit::codegen {

namespace {

struct Enumerator {
  std::string id;
  int value;
};

// Enumerators of the header: TensorRT-LLM's numbers where it has one, else 100, 101, ... in sorted-name order;
// distinct names that sanitise to the same identifier get the value appended.
std::map<std::string, Enumerator> header_enumerators(const StrategyTable& t) {
  std::set<std::string> names(t.strategies.begin(), t.strategies.end());
  names.insert(t.options.fallback);
  for (const auto& c : t.cells) names.insert(c.choice);
  std::map<std::string, Enumerator> out;
  std::set<std::string> ids;
  int next = 100;
  for (const auto& n : names) {
    auto num = trtllm_strategy_number(n);
    Enumerator e{cpp_identifier(n), num ? *num : next++};
    while (!ids.insert(e.id).second) e.id += "_" + std::to_string(e.value);
    out[n] = e;
  }
  return out;
}

int log2_exact(std::int64_t v) {
  int l = 0;
  while ((std::int64_t{1} << l) < v) ++l;
  return l;
}

// The comment that states what select() does for every input.
std::string behaviour_comment(bool trtllm_bucketing) {
  std::string s = R"(//
// Self-contained C++17. Usage: arfit_select::select(tp, fusion, num_tokens, hidden[, bucketing]) -> Strategy.
// `fusion` is TensorRT-LLM's AllReduceFusionOp value (NONE 0, RESIDUAL_RMS_NORM 1, RESIDUAL_RMS_NORM_QUANT_FP8 4,
// RESIDUAL_RMS_NORM_QUANT_NVFP4 5; the OUT_QUANT variants 6 and 7 use the QUANT rows, as TensorRT-LLM's
// mapFusionOpToIndex does): static_cast<Fusion>(op) or fusion_from_trtllm(op) converts.
// The result is TensorRT-LLM's AllReduceStrategyType value where it has one (NCCL 0, ONESHOT 4, TWOSHOT 5, LOWPRECISION 6,
// NCCL_SYMMETRIC 8), else 100+. Behaviour for every input (no undefined behaviour, no exceptions):
//   * a fusion value without a row (2, 3, 8, ... or a fusion not on the table's axis)        -> kOutOfRange
//   * Bucketing::kStrict (default): tp must be on the TP axis, and num_tokens and hidden inside
//     [first, last] of their axes, else kOutOfRange; inside, the cell of the largest grid value <= x.
//   * TWOSHOT is never returned for a cell whose first token count is below tp: TensorRT-LLM's two-shot kernel
//     throws for fewer tokens than GPUs, so the next fastest strategy takes those cells.
)";
  if (trtllm_bucketing)
    s += R"(//   * Bucketing::kTensorRtLlm: TensorRT-LLM's lookup arithmetic, index = (size_t)(log2(x) - log2(axis[0])) on
//     every axis: floor of log2 relative to the first grid value, and values in (axis[0]/2, axis[0]) land on
//     axis[0] (hidden 65..127 -> 128, tp 3 -> 2, tp 6 -> 4, tokens 16385..32767 -> 16384 on the default axes).
//     Where TensorRT-LLM's index leaves the table (or its cast would be undefined: x <= axis[0]/2, x <= 0)
//     this returns kOutOfRange; TensorRT-LLM itself returns NCCL there (NCCL_SYMMETRIC before its commit
//     01e2c361; generate with that --fallback to match it).
)";
  else
    s += R"(//   * Bucketing::kTensorRtLlm is not offered: an axis of this table is not every power of two between its
//     ends, and TensorRT-LLM's positional lookup would not address it.
)";
  return s;
}

std::string bucket_functions(bool trtllm_bucketing) {
  std::string s = R"(namespace detail {
// Strict: index of the largest axis value <= x, or -1 when x is outside [axis[0], axis[n-1]].
inline int strict_bucket(std::int64_t x, const std::int64_t* axis, int n) noexcept {
  if (x < axis[0] || x > axis[n - 1]) return -1;
  int i = 0;
  while (i + 1 < n && axis[i + 1] <= x) ++i;
  return i;
}
)";
  if (trtllm_bucketing)
    s += R"(// TensorRT-LLM: (size_t)(log2(x) - log2_first), or -1 where that index is outside [0, n) or undefined.
inline int trtllm_bucket(std::int64_t x, int log2_first, int n) noexcept {
  if (x <= 0) return -1;
  int l = 0;
  while (l < 62 && (std::int64_t{2} << l) <= x) ++l;  // floor(log2 x)
  int i = l - log2_first;
  // log2(x) - log2_first in (-1, 0) truncates to 0; exactly -1 and below leave the table.
  if (i == -1 && x != (std::int64_t{1} << l)) i = 0;
  return (i < 0 || i >= n) ? -1 : i;
}
)";
  s += R"(// The fusion axis row of a TensorRT-LLM AllReduceFusionOp value; OUT_QUANT variants share the QUANT rows.
inline int fusion_row(Fusion fusion) noexcept {
  int op = static_cast<int>(fusion);
  if (op == 6) op = 4;
  if (op == 7) op = 5;
  for (int i = 0; i < kNumFusion; ++i)
    if (static_cast<int>(kFusion[i]) == op) return i;
  return -1;
}
}  // namespace detail

)";
  return s;
}

// The Strategy, Fusion and Bucketing enums, and the value returned off the table.
std::string header_enums(const StrategyTable& t, const std::map<std::string, Enumerator>& numbers, bool trtllm_bucketing) {
  std::ostringstream s;
  s << "// Strategy values: TensorRT-LLM's AllReduceStrategyType numbers where it has one, else 100+.\n";
  s << "enum class Strategy : int {\n";
  for (const auto& [name, e] : numbers) s << "  " << e.id << " = " << e.value << ",  // " << comment_text(name, CommentSyntax::Cpp) << "\n";
  s << "};\n\n";
  s << "// TensorRT-LLM's AllReduceFusionOp values.\n";
  s << "enum class Fusion : int {\n  NONE = 0,\n  RESIDUAL_RMS_NORM = 1,\n  RESIDUAL_RMS_NORM_QUANT_FP8 = 4,\n"
       "  RESIDUAL_RMS_NORM_QUANT_NVFP4 = 5,\n  RESIDUAL_RMS_NORM_OUT_QUANT_FP8 = 6,\n  RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4 = 7\n};\n";
  s << "inline constexpr Fusion fusion_from_trtllm(int all_reduce_fusion_op) noexcept { return static_cast<Fusion>(all_reduce_fusion_op); }\n\n";
  s << "enum class Bucketing : int { kStrict" << (trtllm_bucketing ? ", kTensorRtLlm" : "") << " };\n\n";
  s << "// Returned off the table (see above): --fallback.\n";
  s << "inline constexpr Strategy kOutOfRange = Strategy::" << numbers.at(t.options.fallback).id << ";\n\n";
  return s.str();
}

// The grid's axes as constants.
std::string header_axes(const Grid& g) {
  std::ostringstream s;
  s << "inline constexpr int kNumTp = " << g.tps.size() << ";\n";
  s << "inline constexpr int kNumFusion = " << g.fusions.size() << ";\n";
  s << "inline constexpr int kNumHidden = " << g.hiddens.size() << ";\n";
  s << "inline constexpr int kNumTokens = " << g.tokens.size() << ";\n";
  s << "inline constexpr int kTp[kNumTp] = {" << join(g.tps, ", ") << "};\n";
  s << "inline constexpr Fusion kFusion[kNumFusion] = {";
  for (std::size_t i = 0; i < g.fusions.size(); ++i) s << (i ? ", " : "") << "Fusion::" << to_string(g.fusions[i]);
  s << "};\n";
  s << "inline constexpr std::int64_t kHidden[kNumHidden] = {" << join(g.hiddens, ", ") << "};\n";
  s << "inline constexpr std::int64_t kTokens[kNumTokens] = {" << join(g.tokens, ", ") << "};\n\n";
  return s.str();
}

// kTable[tp][fusion][hidden][tokens]: each cell's chosen Strategy value.
std::string header_table(const StrategyTable& t, const std::map<std::string, Enumerator>& numbers) {
  const Grid& g = t.grid;
  std::ostringstream s;
  s << "// [tp][fusion][hidden][tokens] = Strategy value\n";
  s << "inline constexpr int kTable[kNumTp][kNumFusion][kNumHidden][kNumTokens] = {\n";
  for (std::size_t ti = 0; ti < g.tps.size(); ++ti) {
    s << "  { // TP=" << g.tps[ti] << "\n";
    for (std::size_t fi = 0; fi < g.fusions.size(); ++fi) {
      s << "    { // Fusion=" << to_string(g.fusions[fi]) << "\n";
      for (std::size_t hi = 0; hi < g.hiddens.size(); ++hi) {
        s << "      {";
        for (std::size_t ki = 0; ki < g.tokens.size(); ++ki) s << (ki ? "," : "") << numbers.at(t.at(ti, fi, hi, ki).choice).value;
        s << "}" << (hi + 1 < g.hiddens.size() ? "," : "") << " // hidden=" << g.hiddens[hi] << "\n";
      }
      s << "    }" << (fi + 1 < g.fusions.size() ? "," : "") << "\n";
    }
    s << "  }" << (ti + 1 < g.tps.size() ? "," : "") << "\n";
  }
  s << "};\n\n";
  return s.str();
}

// select(): strict bucketing, and TensorRT-LLM's when the axes allow it.
std::string select_function(const Grid& g, bool trtllm_bucketing) {
  std::ostringstream s;
  s << "inline Strategy select(int tp, Fusion fusion, std::int64_t num_tokens, std::int64_t hidden,\n"
       "                       Bucketing bucketing = Bucketing::kStrict) noexcept {\n"
       "  const int fi = detail::fusion_row(fusion);\n"
       "  int ti = -1, hi = -1, ki = -1;\n";
  if (trtllm_bucketing) {
    s << "  if (bucketing == Bucketing::kTensorRtLlm) {\n"
      << "    ti = detail::trtllm_bucket(tp, " << log2_exact(g.tps.front()) << ", kNumTp);\n"
      << "    hi = detail::trtllm_bucket(hidden, " << log2_exact(g.hiddens.front()) << ", kNumHidden);\n"
      << "    ki = detail::trtllm_bucket(num_tokens, " << log2_exact(g.tokens.front()) << ", kNumTokens);\n"
      << "  } else {\n";
  } else {
    s << "  (void)bucketing;\n  {\n";
  }
  s << "    for (int i = 0; i < kNumTp; ++i)\n"
       "      if (kTp[i] == tp) ti = i;\n"
       "    hi = detail::strict_bucket(hidden, kHidden, kNumHidden);\n"
       "    ki = detail::strict_bucket(num_tokens, kTokens, kNumTokens);\n"
       "  }\n"
       "  if (ti < 0 || fi < 0 || hi < 0 || ki < 0) return kOutOfRange;\n"
       "  return static_cast<Strategy>(kTable[ti][fi][hi][ki]);\n"
       "}\n\n}  // namespace arfit_select\n";
  return s.str();
}

}  // namespace

std::string write_header(const StrategyTable& t, const Banner& banner, int sm) {
  const Grid& g = t.grid;
  const auto numbers = header_enumerators(t);
  std::vector<std::int64_t> tps(g.tps.begin(), g.tps.end());
  const bool trtllm_bucketing =
      contiguous_powers_of_two(tps) && contiguous_powers_of_two(g.hiddens) && contiguous_powers_of_two(g.tokens);
  std::ostringstream s;
  s << banner_text(banner, "// ", "arfit_select.h: all-reduce strategy selection" +
                                      (sm > 0 ? " for SM" + std::to_string(sm) : std::string()) + ", chosen from fitted models.");
  s << "// Cells: " << t.cells.size() << ", uncertain: " << t.uncertain_cells() << ", fallback: " << t.fallback_cells();
  if (t.transferred_cells() > 0) s << ", " << kTransferredCellsNote << ": " << t.transferred_cells();
  s << "\n";
  s << behaviour_comment(trtllm_bucketing);
  s << "#pragma once\n\n#include <cstdint>\n\nnamespace arfit_select {\n\n";
  s << header_enums(t, numbers, trtllm_bucketing) << header_axes(g) << header_table(t, numbers);
  s << bucket_functions(trtllm_bucketing) << select_function(g, trtllm_bucketing);
  return s.str();
}

namespace {

FormatOutput generate_header(const FormatInput& in) {
  refuse_map(in.request, "header");
  refuse_size_options(in.request, "header");
  refuse_tuner_options(in.request, "header");
  refuse_consumer_file(in.request, "header", "it is arfit's own selector, read by your code, not an engine's file");
  const StrategyTable t = build_request_table(in.models, in.request);
  return {write_header(t, in.banner, in.request.sm), t.summary()};
}

}  // namespace

FormatSpec header_format() {
  return {"header",
          "self-contained C++17 arfit_select.h: select(tp, fusion, tokens, hidden) with strict or TensorRT-LLM bucketing",
          &generate_header};
}

}  // namespace arfit::codegen

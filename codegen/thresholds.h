// One size threshold per GPU count between two strategies: what vLLM (CUSTOM_ALL_REDUCE_MAX_SIZES), SGLang
// (custom_all_reduce_v2's NCCL crossover) and FlashInfer (_use_oneshot_heuristics) can express. Their configs
// take one strategy below a size and the other above it, so where arfit's choice changes more than once along
// the sizes no threshold follows it everywhere: the split with the least predicted regret is taken and the sizes
// it gets wrong are listed (written into the generated file and the summary).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/table.h"

namespace arfit::codegen {

struct SizeTimes {
  double bytes = 0;
  double below_us = 0;  // predicted time of the strategy used below the threshold
  double above_us = 0;  // ... and above it
  bool extrapolated = false;  // either prediction is an extrapolation (a size or GPU count never measured)
  bool below_faster() const { return below_us < above_us; }
};

struct ThresholdRow {
  int tp = 0;
  std::vector<SizeTimes> sizes;  // the sizes where both strategies are predicted, ascending
  std::size_t split = 0;         // the `below` strategy on sizes[0, split), the `above` one from sizes[split]
  std::vector<double> disagree;  // sizes where that split is not the faster strategy (arfit's choice)
  double regret = 0;             // mean ln(t_used / t_faster) over the sizes
  // A boundary the consumer's rules imposed (clamp_boundary), written instead of the least-regret one.
  std::optional<std::uint64_t> imposed_boundary;
  std::string imposed_why;       // ... and why

  // The inclusive byte boundary of the `below` strategy: 0 when split == 0 (never), the geometric midpoint
  // floor(sqrt(a b)) between the last size below and the first above (as the NCCL tuner rules place
  // boundaries), or the largest size when every size is below (arfit claims nothing beyond its sizes).
  std::uint64_t last_below_bytes() const;
  // Where the row rests on extrapolated predictions: "" when nowhere; otherwise a phrase for the file's comment
  // ("extrapolated: a GPU count never measured", "the boundary rests on extrapolated predictions").
  std::string extrapolation_note() const;
};

// Moves a row's boundary (the inclusive last size of the `below` strategy) into [lo, hi] when it lies outside, for
// a consumer that cannot take it there (`why`); the split, the sizes that disagree with arfit's choice and the
// regret follow the new boundary. Returns true when it moved.
bool clamp_boundary(ThresholdRow& row, std::uint64_t lo, std::uint64_t hi, const std::string& why);

// For each TP, the sizes where `predict` answers for both `below` and `above` (strategy names as `predict` knows
// them, e.g. roles through mapped_predictor) and the split with the least total ln regret (ties: the smaller
// split). `base` carries system, dtype, sm and nnodes. TPs where no size has both predictions are left out.
std::vector<ThresholdRow> plan_thresholds(const std::vector<int>& tps, const std::vector<double>& sizes,
                                          const std::string& below, const std::string& above,
                                          const Predictor& predict, const PredictQuery& base);

// "TP 8: 2 sizes (64 MiB, 1 GiB), mean regret 0.31 %" lines for the rows that cannot follow arfit's choice.
std::vector<std::string> describe_disagreements(const std::vector<ThresholdRow>& rows, const std::string& what);
// "TP 16: extrapolated: ..." lines for the rows that rest on extrapolated predictions (extrapolation_note).
std::vector<std::string> describe_extrapolations(const std::vector<ThresholdRow>& rows);
// A Python dict literal keyed by TP, one entry per row: "{\n<indent>    2: <value>,  # <comment>\n<indent>}".
std::string python_tp_dict(const std::vector<ThresholdRow>& rows, const std::string& indent,
                           const std::function<std::string(const ThresholdRow&)>& value,
                           const std::function<std::string(const ThresholdRow&)>& comment);
// The disagreement lines as Python comments, or one line saying every size follows arfit's choice.
std::string python_disagreement_comments(const std::vector<ThresholdRow>& rows, const std::string& what);
// "# Strategies: custom = vLLM_custom_graph; nccl = NCCL.\n": which model strategies stand for each role.
std::string python_roles_comment(const StrategySources& roles);

}  // namespace arfit::codegen

// A customAllReduceUtils.h in TensorRT-LLM's own layout, for the --base tests: its license comment, the
// getMaxRequiredWorkspaceSize and selectStrategyLookUpTable of one era (the 64 MiB gate and NCCL off the table of
// commit 10a94126, or the 16e6 / 8e6 gate and NCCL_SYMMETRIC of 005b299b), and both tables laid out as
// clang-format leaves them there: `= {{    // TP=2`, `{// Fusion=NAME`, two rows of 15 values to a line. Written
// by our code from those facts; the values are the caller's.
#pragma once

#include <functional>
#include <sstream>
#include <string>

namespace arfit::trtllm_layout {

enum class Era { Gate64MiB, Gate16e6 };

// value(table_sm, tp_index, fusion_index, hidden_index, token_index)
using Values = std::function<int(int, int, int, int, int)>;

inline std::string table(int sm, const Values& value) {
  static const char* fusions[] = {"NONE", "RESIDUAL_RMS_NORM", "RESIDUAL_RMS_NORM_QUANT_FP8", "RESIDUAL_RMS_NORM_QUANT_NVFP4"};
  std::ostringstream s;
  s << "inline AllReduceBestStrategyTableType AllReduceBestStrategyTableSM" << sm << "\n";
  for (int tp = 0; tp < 3; ++tp) {
    const std::string indent = tp == 0 ? "           " : "            ";
    s << (tp == 0 ? "    = {{    // TP=2\n" : tp == 1 ? "        {    // TP=4\n" : "        {    // TP=8\n");
    for (int f = 0; f < 4; ++f) {
      s << indent << "{// Fusion=" << fusions[f] << "\n";
      for (int h = 0; h < 7; h += 2) {
        s << indent << "    ";
        for (int r = h; r < h + 2 && r < 7; ++r) {
          s << (r > h ? ", " : "") << "{";
          for (int t = 0; t < 15; ++t) s << (t ? ", " : "") << value(sm, tp, f, r, t);
          s << "}";
        }
        if (h + 2 < 7) s << ",\n";
        else s << (f < 3 ? "},\n" : tp < 2 ? "}},\n" : "}}};\n");
      }
    }
  }
  return s.str();
}

inline std::string file(Era era, const Values& value) {
  std::ostringstream s;
  s << "/*\n * Copyright (c) 2019-2024, NVIDIA CORPORATION.  All rights reserved.\n * (license text)\n */\n\n#pragma once\n\n"
       "namespace utils::customAllReduceUtils\n{\n\n"
       "// WARNING: MUST BE KEPT IN SYNC with tensorrt_llm/plugin/plugin.py\n"
       "inline size_t getMaxRequiredWorkspaceSize(int worldSize) noexcept\n{\n";
  if (era == Era::Gate64MiB)
    s << "    char const* envWorkspaceSize = std::getenv(\"TRTLLM_ALLREDUCE_FUSION_WORKSPACE_SIZE\");\n"
         "    if (envWorkspaceSize != nullptr)\n    {\n        return static_cast<size_t>(std::atoi(envWorkspaceSize));\n    }\n"
         "    return 67108864; // 64 MiB\n}\n\n";
  else
    s << "    if (worldSize <= 2)\n    {\n        return 16 * 1000 * 1000;\n    }\n    return 8 * 1000 * 1000;\n}\n\n";
  s << "inline AllReduceStrategyType selectStrategyLookUpTable(\n    size_t num_tokens, size_t hidden_size, AllReduceFusionOp fusionOp, int tp_size)\n{\n"
       "    // Check if the entry is out of bounds, otherwise return NCCL_SYMMETRIC as fallback\n"
       "    if (AllReduceBestStrategyTable.find(sm_version) == AllReduceBestStrategyTable.end()\n"
       "        || num_token_index\n"
       "            >= AllReduceBestStrategyTable.at(sm_version).at(tp_index).at(fusion_op_index).at(hidden_size_index).size())\n"
       "    {\n        return AllReduceStrategyType::"
    << (era == Era::Gate64MiB ? "NCCL" : "NCCL_SYMMETRIC")
    << ";\n    }\n\n    return static_cast<AllReduceStrategyType>(\n"
       "        AllReduceBestStrategyTable.at(sm_version)[tp_index][fusion_op_index][hidden_size_index][num_token_index]);\n}\n\n"
       "// Strategy table definitions\n"
    << table(90, value) << "\n" << table(100, value)
    << "\ninline const std::unordered_map<int, AllReduceBestStrategyTableType> AllReduceBestStrategyTable = {\n"
       "    {90, AllReduceBestStrategyTableSM90},\n    {100, AllReduceBestStrategyTableSM100},\n};\n"
       "} // namespace utils::customAllReduceUtils\n";
  return s.str();
}

// TensorRT-LLM-like values: ONESHOT for small messages, TWOSHOT in the middle where tokens >= tp, NCCL above;
// NCCL in the SM90 NVFP4 row.
inline int typical_value(int sm, int tp, int f, int h, int t) {
  if (sm == 90 && f == 3) return 0;
  if (t + h < 11) return 4;
  if (t + h < 14 && (1 << t) >= (2 << tp)) return 5;
  return 0;
}

}  // namespace arfit::trtllm_layout

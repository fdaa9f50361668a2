// Writers of the files inference engines and NCCL read, one implementation file per format
// (codegen/format_<name>.cpp). Every generated file starts with a banner (codegen/banner.h); output is a pure
// function of its inputs, so the same inputs give byte-identical files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/banner.h"
#include "codegen/table.h"
#include "codegen/thresholds.h"
#include "model/nccl_variant.h"

namespace arfit::codegen {

// ---------------------------------------------------------------------------------------------------------------
// TensorRT-LLM (format_trtllm.cpp): AllReduceBestStrategyTableSM<90|100> of cpp/tensorrt_llm/common/
// customAllReduceUtils.h, read by selectStrategyLookUpTable purely by position.

// TensorRT-LLM's AllReduceFusionOp value of a fusion op (NONE 0, RESIDUAL_RMS_NORM 1, ..._QUANT_FP8 4,
// ..._QUANT_NVFP4 5).
int trtllm_fusion_op(FusionOp fusion);
// The table TensorRT-LLM reads on an SM: 90 for every SM below 100, 100 from 100 up.
int trtllm_table_sm(int sm);
// What TensorRT-LLM's lookup returns off its table (index out of bounds): NCCL_SYMMETRIC.
inline constexpr int kTrtllmOffTableCode = 8;
// --map targets of the trtllm and json formats: TensorRT-LLM's strategy names, and "ignore".
const std::vector<std::string>& trtllm_map_targets();
// True when the grid is TensorRT-LLM's: TP 2,4,8; its four fusions; hidden 128..8192; tokens 1..16384.
bool is_trtllm_grid(const Grid& grid);

struct TrtllmCell {
  int code = 0;          // AllReduceStrategyType value written into the table
  std::string strategy;  // its TensorRT-LLM name
  std::string rule;      // "model" (lowest predicted time), "fallback" (no model: --fallback),
                         // "nvfp4-below-sm100" (TensorRT-LLM's SM90 table holds NCCL for every NVFP4 cell)
};

struct TrtllmTable {
  StrategyTable table;                 // candidates named by TensorRT-LLM strategy
  int table_sm = 90;                   // trtllm_table_sm(--sm)
  std::vector<TrtllmCell> cells;       // one per table cell, same order
  StrategySources sources;             // TensorRT-LLM name -> the model strategies that stand for it
  std::vector<std::string> unmapped;   // model strategies with neither a TensorRT-LLM number nor a --map
  int count(const std::string& rule) const;
  // Cells whose code is the model's choice (rule "model") and that choice rests on transferred curves.
  int transferred() const;
};

// The codes of a table whose strategies are TensorRT-LLM names, TensorRT-LLM's NVFP4 rule applied for
// `sm` (mapped with trtllm_table_sm). Throws std::invalid_argument for a name without a number.
TrtllmTable trtllm_codes(const StrategyTable& table, int sm);
// The C++ table. Throws std::invalid_argument when the grid is not TensorRT-LLM's (it would be misread).
std::string write_trtllm(const TrtllmTable& table, const Banner& banner);

// ---------------------------------------------------------------------------------------------------------------
// Header (format_header.cpp): a self-contained C++17 arfit_select.h with select() over the table, strict or
// TensorRT-LLM bucketing, the fusion argument in TensorRT-LLM's AllReduceFusionOp numbering.
std::string write_header(const StrategyTable& table, const Banner& banner, int sm);

// ---------------------------------------------------------------------------------------------------------------
// JSON (format_json.cpp): every cell with its predictions and margins, and (when given) the TensorRT-LLM code
// the trtllm format writes for it.
nlohmann::json table_to_json(const StrategyTable& table, const Banner& banner, int sm,
                             const TrtllmTable* trtllm = nullptr);
std::string write_json(const StrategyTable& table, const Banner& banner, int sm, const TrtllmTable* trtllm = nullptr);

// ---------------------------------------------------------------------------------------------------------------
// NCCL tuner (format_nccl_tuner.cpp): the CSV of NCCL's example tuner plugin (plugins/tuner/example, from NCCL
// 2.29.7; ext-tuner/example before), NCCL_TUNER_CONFIG_FILE:
//   collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
// The plugin reads lines into a 256-byte buffer, so no line (newline excluded) is longer than this:
inline constexpr std::size_t kTunerMaxLine = 255;

// NcclVariant and parse_nccl_variant: model/nccl_variant.h.

struct TunerRule {
  std::string collective = "allreduce";
  std::uint64_t min_bytes = 0, max_bytes = 0;
  std::string algorithm, protocol;
  int nranks = -1, nnodes = -1;
  std::string strategy;  // the model set's name of the chosen variant
};

// Argmin per size over `sizes` (ascending bytes) for each nranks; consecutive sizes with the same winner are
// merged; boundaries sit at the geometric midpoint between the last size of one range and the first of the
// next; the first range starts at 0 and the last ends at `max_bytes`.
std::vector<TunerRule> tuner_rules(const std::vector<int>& nranks_list, const std::vector<double>& sizes,
                                   const std::vector<NcclVariant>& variants, const Predictor& predict,
                                   const PredictQuery& base, std::uint64_t max_bytes);
// `channels` goes into every rule: the example plugin sets 1 channel before matching and keeps it for -1, and
// NCCL reads a 0 as "no cap" (its own count), so 0 is how a rule keeps NCCL's channel choice.
std::string write_nccl_tuner(const std::vector<TunerRule>& rules, const Banner& banner, int channels);

// ---------------------------------------------------------------------------------------------------------------
// vLLM (format_vllm.cpp): CUSTOM_ALL_REDUCE_MAX_SIZES of vllm/distributed/device_communicators/all_reduce_utils.py
// (custom all-reduce while inp_size < max size, NCCL above) and the one-shot/two-shot switch size.
struct VllmConfig {
  int sm = 90;
  std::vector<ThresholdRow> custom_vs_nccl;
  std::vector<ThresholdRow> oneshot_vs_twoshot;  // empty when the models have no one-shot and two-shot strategies
  StrategySources roles;                         // role -> model strategies
};
// vLLM's "9.0" / "10.0" capability key of an SM number.
std::string vllm_capability(int sm);
// The exclusive max size vLLM compares with (`inp_size < max_size`): 0 when the custom kernel never wins.
std::uint64_t vllm_max_size(const ThresholdRow& row);
std::string write_vllm(const VllmConfig& config, const Banner& banner);

// SGLang (format_sglang.cpp): the NCCL crossover of custom_all_reduce_v2 per arch, CUDA-graph and eager
// (custom all-reduce while nbytes <= crossover), and apply() that puts it into SGLang's tuned Heuristic.
struct SglangConfig {
  int sm = 90;
  std::vector<ThresholdRow> graph;  // empty: not modelled (SGLang keeps its tuned value)
  std::vector<ThresholdRow> eager;
  StrategySources roles;
};
std::string write_sglang(const SglangConfig& config, const Banner& banner);

// FlashInfer (format_flashinfer.cpp): _use_oneshot_heuristics of flashinfer/comm/trtllm_ar.py, MiB per TP
// (one-shot while token_num * hidden * 2 * world_size * itemsize / MiB <= value).
struct FlashinferConfig {
  int sm = 90;
  std::vector<ThresholdRow> oneshot_vs_twoshot;
  StrategySources roles;
};
// The MiB value for a row: comm size (bytes x 2 x TP / MiB) of last_below_bytes().
double flashinfer_oneshot_mib(const ThresholdRow& row);
std::string write_flashinfer(const FlashinferConfig& config, const Banner& banner);

}  // namespace arfit::codegen

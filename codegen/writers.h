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
#include "codegen/rules_trtllm.h"
#include "codegen/rules_vllm.h"
#include "codegen/thresholds.h"
#include "codegen/trtllm_base.h"
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
// --map targets of the trtllm and json formats: TensorRT-LLM's strategy names, and "ignore".
const std::vector<std::string>& trtllm_map_targets();
// True when the grid is TensorRT-LLM's: TP 2,4,8; its four fusions; hidden 128..8192; tokens 1..16384.
bool is_trtllm_grid(const Grid& grid);

struct TrtllmCell {
  int code = 0;          // AllReduceStrategyType value written into the table
  std::string strategy;  // its TensorRT-LLM name
  std::string rule;      // why that value (kTrtllmRules)
  GateCover gate = GateCover::None;  // how much of the cell TensorRT-LLM's size gate sends to NCCL itself
};

// The rules a trtllm cell's value follows, in order:
//   "engine-size-gate"   every message of the cell is above TensorRT-LLM's workspace size: it runs NCCL before
//                        reading the table (the value is NCCL, or the --base file's, unread either way);
//   "nvfp4-below-sm100"  the SM90 table's NVFP4 row: NCCL, as TensorRT-LLM's own (its fused NVFP4 kernels need
//                        SM100; a --base value of NCCL or NCCL_SYMMETRIC is kept);
//   "model"              arfit's choice: the lowest predicted time among the strategies TensorRT-LLM can run there
//                        (with --base, where at least two of them are predicted);
//   "base"               no model decides the cell: the --base file's value, as it was;
//   "base-would-throw"   the --base file's value would throw there (TWOSHOT with fewer tokens than GPUs, a value
//                        the dispatcher rejects): NCCL instead;
//   "fallback"           no model decides the cell and there is no --base: --fallback.
const std::vector<std::string>& trtllm_rule_names();

struct TrtllmTable {
  StrategyTable table;                 // candidates named by TensorRT-LLM strategy
  int table_sm = 90;                   // trtllm_table_sm(--sm)
  TrtllmVersion version;               // the rules followed (--consumer-version, or read from the --base file)
  std::string version_source;          // "--consumer-version", "default", or the --base path
  std::optional<TrtllmBase> base;      // --base: TensorRT-LLM's own file, whose values fill the cells no model decides
  std::vector<TrtllmCell> cells;       // one per table cell, same order
  StrategySources sources;             // TensorRT-LLM name -> the model strategies that stand for it
  std::vector<std::string> unmapped;   // model strategies with neither a TensorRT-LLM number nor a --map
  // Model strategies with a TensorRT-LLM number it never runs from the table (LOWPRECISION 6: only as the module's
  // configured strategy, whose buffers are allocated only then); left out of every cell.
  std::vector<std::string> not_from_table;
  int count(const std::string& rule) const;
  int gated(GateCover cover) const;    // cells the size gate takes wholly or partly
  // Cells whose choice differs from the fastest prediction because TensorRT-LLM cannot run that there.
  int excluded_choices() const;
  // Cells whose code is the model's choice (rule "model") and that choice rests on transferred curves.
  int transferred() const;
};

// The codes of a table whose strategies are TensorRT-LLM names under the rules above. Throws
// std::invalid_argument for a name without a number.
TrtllmTable trtllm_codes(const StrategyTable& table, int sm, const TrtllmVersion& version = trtllm_versions().front(),
                         const std::optional<TrtllmBase>& base = std::nullopt);
// The C++ table (or, with a --base file, that file with the table written in place). Throws
// std::invalid_argument when the grid is not TensorRT-LLM's (it would be misread).
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
inline constexpr std::size_t kTunerMaxLine = 254;

// NcclVariant and parse_nccl_variant: model/nccl_variant.h.

struct TunerRule {
  std::string collective = "allreduce";
  std::uint64_t min_bytes = 0, max_bytes = 0;
  std::string algorithm, protocol;
  int nranks = -1, nnodes = -1;
  std::string strategy;  // the model set's name of the chosen variant
  bool extrapolated = false;  // the winner's prediction is an extrapolation at some size of the range
};

// Argmin per size over `sizes` (ascending bytes) for each nranks; consecutive sizes with the same winner are
// merged; boundaries sit at the geometric midpoint between the last size of one range and the first of the
// next; the first range starts at 0 and the last ends at `max_bytes`.
std::vector<TunerRule> tuner_rules(const std::vector<int>& nranks_list, const std::vector<double>& sizes,
                                   const std::vector<NcclVariant>& variants, const Predictor& predict,
                                   const PredictQuery& base, std::uint64_t max_bytes);
// `channels` goes into every rule: the example plugin sets 1 channel before matching and keeps it for -1, and
// NCCL reads a 0 as "no cap" (its own count), so 0 is how a rule keeps NCCL's channel choice.
// `version`: the NCCL release the banner states (codegen/rules_nccl_tuner.h).
std::string write_nccl_tuner(const std::vector<TunerRule>& rules, const Banner& banner, int channels,
                             const std::string& version = "2.30.7");

// ---------------------------------------------------------------------------------------------------------------
// vLLM (format_vllm.cpp): CUSTOM_ALL_REDUCE_MAX_SIZES of vllm/distributed/device_communicators/all_reduce_utils.py
// (custom all-reduce while inp_size < max size) under vLLM's rules (codegen/rules_vllm.h), and the one-shot/two-shot
// switch size.
struct VllmEntry {
  int world_size = 0;
  std::uint64_t bytes = 0;  // the exclusive bound written
  std::string comment;      // where it comes from
};
struct VllmConfig {
  int sm = 90;
  std::string capability = "9.0";
  std::vector<ThresholdRow> custom_vs_above;     // arfit's rows: the custom all-reduce against what vLLM runs above it
  std::vector<VllmEntry> entries;                // every world size vLLM's custom all-reduce runs
  std::vector<ThresholdRow> oneshot_vs_twoshot;  // empty when the models have no one-shot and two-shot strategies
  StrategySources roles;                         // role -> model strategies
};
// vLLM's "9.0" / "10.0" capability key of an SM number.
std::string vllm_capability(int sm);
// The exclusive max size vLLM compares with (`inp_size < max_size`) for a row: a multiple of 16 (messages are),
// at least kVllmNeverCustomBytes, at most kVllmCustomMaxBytes.
std::uint64_t vllm_max_size(const ThresholdRow& row);
std::string write_vllm(const VllmConfig& config, const Banner& banner);

// SGLang (format_sglang.cpp): the NCCL crossover of custom_all_reduce_v2 per arch, CUDA-graph and eager
// (custom all-reduce while nbytes <= crossover), and apply() that clips every band and threshold of SGLang's tuned
// Heuristic to it, under SGLang's rules (codegen/rules_sglang.h).
struct SglangConfig {
  int sm = 90;
  std::vector<std::string> snapshots;  // the configs shapes the file is for (CONSUMER_VERSIONS)
  std::vector<ThresholdRow> graph;     // empty: not modelled (SGLang keeps its tuned value)
  std::vector<ThresholdRow> eager;
  StrategySources roles;
};
std::string write_sglang(const SglangConfig& config, const Banner& banner);

// FlashInfer (format_flashinfer.cpp): _use_oneshot_heuristics of flashinfer/comm/trtllm_ar.py, MiB per TP
// (one-shot while token_num * hidden * 2 * world_size * itemsize / MiB <= value), under FlashInfer's rules
// (codegen/rules_flashinfer.h).
struct FlashinferEntry {
  int world_size = 0;
  double mib = 0;
  std::string comment;  // where the value comes from (arfit, FlashInfer's own, --base, the floor)
};
struct FlashinferConfig {
  int sm = 90;
  std::string version;                           // the FlashInfer release written for (the newest of the range)
  std::vector<ThresholdRow> oneshot_vs_twoshot;  // arfit's rows, boundaries moved into FlashInfer's range
  std::vector<FlashinferEntry> entries;          // every world size FlashInfer runs
  StrategySources roles;
};
// The MiB value for a row: comm size (bytes x 2 x TP / MiB) of last_below_bytes().
double flashinfer_oneshot_mib(const ThresholdRow& row);
std::string write_flashinfer(const FlashinferConfig& config, const Banner& banner);

}  // namespace arfit::codegen

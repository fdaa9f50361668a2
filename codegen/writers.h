// Writers of a StrategyTable into the forms inference engines and NCCL consume. Every generated file starts
// with a banner naming the generator, its version, its inputs (with FNV-1a hashes) and the date, and says
// "do not edit". Output is a pure function of (table, banner): the same inputs give byte-identical files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/table.h"

namespace arfit::codegen {

struct InputFile {
  std::string path;
  std::string fnv1a64;  // 16 hex digits of the content hash
};

struct Banner {
  std::string generator = "arfit codegen";
  std::string version;                 // arfit version (ARFIT_VERSION by default, see default_banner)
  std::vector<InputFile> inputs;
  std::string date;                    // YYYY-MM-DD, never the wall clock (see resolve_date)
  std::string command;                 // the options that shaped the output, for reproduction
};

// FNV-1a 64 of a byte string, as 16 lower-case hex digits.
std::string fnv1a64_hex(const std::string& bytes);

// The date written into banners, chosen so that output is reproducible:
//   1. `explicit_date` (--date YYYY-MM-DD) when not empty (validated; throws std::invalid_argument),
//   2. else SOURCE_DATE_EPOCH (seconds since 1970, UTC; reproducible-builds.org convention),
//   3. else a "date" or "created" string field of the models JSON (first 10 characters),
//   4. else the modification time of the models file (UTC), 5. else "unknown".
std::string resolve_date(const std::string& explicit_date, const nlohmann::json& models_json,
                         const std::string& models_path);

// Writers. The table must have been built with the strategies the format can express (trtllm: the
// TensorRT-LLM-numbered ones, see trtllm_strategy_number); otherwise they throw std::invalid_argument.
std::string write_trtllm(const StrategyTable& table, const Banner& banner, int sm);
std::string write_header(const StrategyTable& table, const Banner& banner, int sm);
nlohmann::json table_to_json(const StrategyTable& table, const Banner& banner, int sm);
std::string write_json(const StrategyTable& table, const Banner& banner, int sm);

// NCCL's example tuner plugin config (ext-tuner/example, NCCL_TUNER_CONFIG_FILE):
//   collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
// One rule per (nranks, merged size range), algorithm/protocol from the predicted argmin among the model set's
// NCCL algorithm/protocol variants (strategies named NCCL_<ALGO>_<PROTO>, e.g. NCCL_RING_LL128).
struct NcclVariant {
  std::string strategy;   // as in the model set
  std::string algorithm;  // tree|ring|collnet_direct|collnet_chain|nvls|nvls_tree|pat
  std::string protocol;   // ll|ll128|simple
};
// nullopt when the name is not NCCL_<algo>_<proto> (case-insensitive; '_', '-', ':' or '/' separate).
std::optional<NcclVariant> parse_nccl_variant(const std::string& strategy);

struct TunerRule {
  std::string collective = "allreduce";
  std::uint64_t min_bytes = 0, max_bytes = 0;
  std::string algorithm, protocol;
  int nranks = -1, nnodes = -1;
  std::string strategy;  // the model set's name of the chosen variant
};

// Argmin per size over `sizes` (ascending bytes) for each nranks; consecutive sizes with the same winner
// are merged; boundaries sit at the geometric midpoint between the last size of one range and the first of
// the next; the first range starts at 0 and the last ends at `max_bytes`.
std::vector<TunerRule> tuner_rules(const std::vector<int>& nranks_list, const std::vector<double>& sizes,
                                   const std::vector<NcclVariant>& variants, const Predictor& predict,
                                   const std::string& system, int nnodes, std::uint64_t max_bytes);
std::string write_nccl_tuner(const std::vector<TunerRule>& rules, const Banner& banner);

}  // namespace arfit::codegen

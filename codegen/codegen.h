// The request-level API behind `arfit codegen` and `arfit suggest`: models file + grid options -> table ->
// generated text. The CLI only parses options and writes files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/table.h"
#include "codegen/writers.h"
#include "model/model_set.h"

namespace arfit::codegen {

enum class Format { Trtllm, Header, NcclTuner, Json };
Format parse_format(const std::string& s);  // trtllm|header|nccl-tuner|json; throws std::invalid_argument
std::string to_string(Format f);

struct Request {
  std::string models_path;     // for the banner (path + hash) and the date fallback
  std::string system;          // "" = the only system of the model set
  int sm = 90;                 // names the TensorRT-LLM table; predictions use it only with transfer_sm
  bool transfer_sm = false;    // ask the models for this SM (fit/ transfers across generations, extrapolated)
  std::string tp = "2,4,8";
  std::string fusion = "all";
  std::string hidden = "128:8192";
  std::string tokens = "1:16384";
  std::string bytes = "8:4294967296";  // nccl-tuner: sizes (powers of two) the rules are computed on
  int nnodes = 1;                      // nccl-tuner: nNodes of the rules
  std::string dtype = "bf16";
  std::string fallback = strategy::kNccl;
  std::string date;                    // "" = resolve_date's order (SOURCE_DATE_EPOCH, models file)
  std::string command;                 // written into the banner
};

// The system the request is about: Request::system, or the model set's only system. Throws
// std::invalid_argument listing the systems when ambiguous or unknown.
std::string resolve_system(const ModelSet& models, const std::string& requested);

Banner make_banner(const ModelSet& models, const Request& request, const std::string& models_text);

// The table for `format` (trtllm keeps only TensorRT-LLM-numbered strategies; the others keep every modelled
// strategy). Throws std::invalid_argument for bad grid options and when no cell has a candidate.
StrategyTable build_request_table(const ModelSet& models, const Request& request, Format format);

// Everything `arfit codegen` writes, as text. `models_text` is the models file's content (for its hash).
std::string generate(const ModelSet& models, const Request& request, Format format, const std::string& models_text,
                     std::string* summary = nullptr);

// `arfit suggest`: the uncertain cells (best and runner-up intervals overlap) ranked by expected regret, highest
// first (ties: table order) -- the measurements that would most improve the table. top <= 0: all of them.
std::vector<const Cell*> suggest_cells(const StrategyTable& table, int top);
std::string format_suggestions(const StrategyTable& table, const std::vector<const Cell*>& cells);
nlohmann::json suggestions_json(const StrategyTable& table, const std::vector<const Cell*>& cells);

}  // namespace arfit::codegen

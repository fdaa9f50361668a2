// The output formats of `arfit codegen`, one file each (format_<name>.cpp), registered in one table
// (output_formats(), formats.cpp) the way nccl-tests keeps one file per collective over one harness. Each
// format turns a request into the table it needs and writes it; codegen.cpp only looks the format up.
#pragma once

#include <string>
#include <vector>

#include "codegen/banner.h"
#include "codegen/request.h"
#include "codegen/table.h"
#include "codegen/thresholds.h"
#include "codegen/writers.h"
#include "model/model_set.h"

namespace arfit::codegen {

struct FormatInput {
  const ModelSet& models;
  const Request& request;
  Banner banner;
};

struct FormatOutput {
  std::string text;     // the file
  std::string summary;  // one line for the terminal: cells, uncertain cells, fallbacks, what was refused
};

struct FormatSpec {
  std::string name;         // --format value
  std::string description;  // one line for --help
  // Throws std::invalid_argument (a usage error, exit 2) for requests the format cannot express, naming the
  // option.
  FormatOutput (*generate)(const FormatInput& input);
};

// The registered formats, in --help order.
const std::vector<FormatSpec>& output_formats();
// Throws std::invalid_argument naming --format and listing the formats.
const FormatSpec& find_format(const std::string& name);
// "trtllm|header|..." for usage lines.
std::string format_names();

// One per format file.
FormatSpec trtllm_format();
FormatSpec header_format();
FormatSpec nccl_tuner_format();
FormatSpec json_format();
FormatSpec vllm_format();
FormatSpec sglang_format();
FormatSpec flashinfer_format();

// The preconditions every table follows: the tables' strategies are numbered as TensorRT-LLM numbers them
// (trtllm, header, json, suggest, plot's grids), so TensorRT-LLM's checks around them apply
// (codegen/rules_trtllm.h, trtllm_precondition) for a consumer on `consumer_sm`.
Precondition table_precondition(int consumer_sm);

// The table of every modelled all-reduce strategy on the request's grid (json, header, suggest). Throws
// std::invalid_argument for bad grid options and when no cell has a candidate.
StrategyTable build_request_table(const ModelSet& models, const Request& request);

// The table the trtllm format writes and the json format records: the strategies TensorRT-LLM numbers (and the
// --map'ped ones) on the request's grid, with its SM and NVFP4 rules. Strategies neither numbered nor mapped are
// listed in TrtllmTable::unmapped (the trtllm format refuses them).
// `all_strategies`: the request's table of every strategy when already built (its predictions are reused).
TrtllmTable build_trtllm_table(const ModelSet& models, const Request& request, const StrategyTable* all_strategies = nullptr);

// Refuses --map for formats that have nothing to map onto (header, nccl-tuner).
void refuse_map(const Request& request, const std::string& format);
// Refuses --fusion/--hidden/--tokens values other than the defaults for the formats that work on message sizes
// per GPU count (nccl-tuner, vllm, sglang, flashinfer), and a --fallback, which they do not read.
void refuse_grid_options(const Request& request, const std::string& format);
// Refuses --bytes other than its default for the formats that work on the tokens x hidden grid (trtllm, header,
// json): they would ignore it.
void refuse_size_options(const Request& request, const std::string& format);
// Refuses --base and --consumer-version for a format that has no consumer file to merge with or no versions to
// tell apart (`why`).
void refuse_consumer_file(const Request& request, const std::string& format, const std::string& why);
// Refuses --base alone (`why`).
void refuse_base(const Request& request, const std::string& format, const std::string& why);
// Refuses --nnodes and --channels other than their defaults for every format but nccl-tuner, the only one whose
// rules carry them (the others are asked on one node and would ignore them).
void refuse_tuner_options(const Request& request, const std::string& format);

// The strategies an engine format needs, by role (custom, nccl, oneshot, ...): the --map'ped ones, else the
// model strategies the role's default rule picks (names compared in lower case). Several strategies for one role
// act as the fastest of them.
struct RoleSpec {
  std::string name;
  bool (*picks)(const std::string& lower_name);  // the default rule
  std::string default_rule;                      // the rule in words, for error messages
};
StrategySources resolve_roles(const ModelSet& models, const Request& request, const std::vector<RoleSpec>& roles);
// Throws std::invalid_argument when `role` has no strategy, saying how to map one.
void require_role(const StrategySources& roles, const RoleSpec& role, const std::string& format);
// The default rules of the roles the engine formats share (names in lower case).
bool is_nccl_name(const std::string& lower_name);
bool is_oneshot_name(const std::string& lower_name);
bool is_twoshot_name(const std::string& lower_name);

// What the engine formats (vllm, sglang, flashinfer) plan thresholds with: --tp, --bytes, the roles, predictions
// through the roles, and the query (system, all-reduce, no fusion, --dtype, the prediction SM, one node). Made by
// engine_planner after refusing the grid options these formats do not have.
struct EnginePlanner {
  std::vector<int> tps;
  std::vector<double> sizes;
  StrategySources roles;
  Predictor predict;
  PredictQuery base;
  bool has(const std::string& role) const { return roles.count(role) > 0; }
  std::vector<ThresholdRow> plan(const std::string& below, const std::string& above) const;
};
EnginePlanner engine_planner(const FormatInput& input, const std::string& format, const std::vector<RoleSpec>& roles);
// The query the engine formats plan with (also the tuner's, with its --nnodes).
PredictQuery engine_query(const ModelSet& models, const Request& request);
// --bytes as doubles.
std::vector<double> request_sizes(const Request& request);

}  // namespace arfit::codegen

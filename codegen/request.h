// What `arfit codegen` / `arfit suggest` are asked for: the models file, the system, the grid and the options
// of the output formats. Parsed by cli/, read by every format (codegen/formats.h).
#pragma once

#include <string>
#include <vector>

#include "codegen/table.h"
#include "model/model_set.h"

namespace arfit::codegen {

struct Request {
  std::string models_path;     // for the banner (path + hash) and the date fallback
  std::string system;          // "" = the only system of the model set
  int sm = 90;                 // the consumer's SM (which TensorRT-LLM table, vLLM capability, SGLang arch)
  bool transfer_sm = false;    // ask the models for this SM (fit/ transfers across generations, extrapolated)
  std::string tp = "2,4,8";
  std::string fusion = "all";
  std::string hidden = "128:8192";
  std::string tokens = "1:16384";
  std::string bytes = "8:4294967296";  // nccl-tuner, vllm, sglang, flashinfer: sizes (powers of two) considered
  int nnodes = 1;                      // nccl-tuner: nNodes of the rules and of the models asked
  int channels = 0;                    // nccl-tuner: channels field (0 = NCCL's own channel count)
  std::vector<std::string> map;        // --map MODEL_STRATEGY=TARGET (trtllm, json, vllm, sglang, flashinfer)
  std::string dtype = "bf16";
  std::string fallback = strategy::kNccl;
  std::string consumer_version;        // --consumer-version: the engine's version or snapshot ("" = the newest known)
  std::string base_path;               // --base: the consumer's own file (its values fill the cells no model decides)
  std::string base_text;               //   ... as read (the CLI reads it; codegen parses it and names base_path)
  std::string date;                    // "" = resolve_date's order (SOURCE_DATE_EPOCH, models file)
  std::string command;                 // written into the banner
};

// The defaults of the grid options: TensorRT-LLM's lookup axes.
inline const Request kDefaultRequest{};

// The most cells a table may have: 1e6, about 800 default grids (1,260 cells). A table holds every strategy's
// prediction of every cell in memory, and the json format writes about 500 bytes a cell: 4,000 TP sizes (1.68e6
// cells) took 5.9 GB of memory for an 830 MB file, and a --tp list of every count up to 2^20 ran out of memory.
inline constexpr double kMaxGridCells = 1e6;

// The grid of --tp, --fusion, --hidden, --tokens. Throws std::invalid_argument naming the option (and naming all
// four when the grid has more than kMaxGridCells cells).
Grid request_grid(const Request& request);
// Refuses a grid whose largest cell (tokens x hidden x the size of `dtype`, 1 byte when unknown) is above
// kMaxSampleBytes: std::invalid_argument naming --tokens x --hidden. request_grid calls it; so does `arfit plot`'s
// grid from a models file.
void check_cell_bytes(const Grid& grid, const std::string& dtype);
// Refuses a grid of more than kMaxGridCells cells: std::invalid_argument naming all four options and the count.
// request_grid calls it; so does `arfit plot`'s grid from a models file, once its TP sizes and fusions are known.
void check_grid_cells(const Grid& grid);

// Predictions as the request asks for them: the model set's, at --sm when --transfer-sm, with models of another
// type of the same element size answering for --dtype.
Predictor request_predictor(const ModelSet& models, const Request& request);
// 0 (the measured SM) or --sm with --transfer-sm: what PredictQuery::sm carries.
int prediction_sm(const Request& request);
// With --transfer-sm, whether the models of `system` can be carried to --sm: both SMs need datasheet figures
// (model/sm_targets.h; the transfer scales by their interconnect bandwidths). Throws std::invalid_argument naming
// the option and the SM that has none (an unknown measured SM: no sm in the samples, no device name or system
// label arfit recognises); the grid would otherwise come out all fallback cells for a reason it does not say.
// `option` names what asked for the transfer (`arfit plot`'s grids transfer with --sm alone).
void check_sm_transfer(const ModelSet& models, const std::string& system, const Request& request,
                       const std::string& option = "--transfer-sm");

// The `arfit codegen` command line that asks for `format` from `models_path` with `request`'s options, every grid
// option spelled out: what a generated file's banner records (Request::command), the same from the command line
// and from the Python package.
std::string codegen_command_line(const std::string& models_path, const std::string& format, const Request& request);

}  // namespace arfit::codegen

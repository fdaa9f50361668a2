// The strategy table: for every cell of a (TP x fusion x hidden x tokens) grid, the strategy with the lowest
// predicted time, the predicted times of all candidates, the margin to the runner-up and whether that margin
// is smaller than the predictions' uncertainty. Writers (codegen/writers.h) turn a table into the files
// inference engines and NCCL read.
//
// The table is built against an abstract predictor so that it can be tested with synthetic models;
// model_set_predictor() adapts a fitted ModelSet.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/axes.h"
#include "model/model_set.h"
#include "model/sample.h"

namespace arfit::codegen {

// TensorRT-LLM's AllReduceStrategyType numbers for the strategies its lookup table can hold:
// NCCL=0, ONESHOT=4, TWOSHOT=5, LOWPRECISION=6, NCCL_SYMMETRIC=8. nullopt for other strategy names.
std::optional<int> trtllm_strategy_number(const std::string& strategy);

// The grid the table covers. Defaults: TensorRT-LLM's lookup grid (TP 2/4/8, its four fusion ops in its order,
// hidden 128..8192 and tokens 1..16384 in powers of two).
struct Grid {
  std::vector<int> tps{2, 4, 8};
  std::vector<FusionOp> fusions{FusionOp::None, FusionOp::ResidualRmsNorm, FusionOp::ResidualRmsNormQuantFp8,
                                FusionOp::ResidualRmsNormQuantNvfp4};
  std::vector<std::int64_t> hiddens{128, 256, 512, 1024, 2048, 4096, 8192};
  std::vector<std::int64_t> tokens{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

  std::size_t size() const { return tps.size() * fusions.size() * hiddens.size() * tokens.size(); }
  // Row-major index [tp][fusion][hidden][tokens].
  std::size_t index(std::size_t tp, std::size_t fusion, std::size_t hidden, std::size_t token) const {
    return ((tp * fusions.size() + fusion) * hiddens.size() + hidden) * tokens.size() + token;
  }
};

// Asks the models for one candidate's time. nullopt: the candidate has no model for this cell.
using Predictor = std::function<std::optional<Prediction>(const PredictQuery&)>;
// The candidate strategies of one (tp, fusion) slice.
using CandidateLister = std::function<std::vector<std::string>(int tp, FusionOp fusion)>;

struct Cell;

// Why the consumer of a table could not run `strategy` in `cell` (a precondition its code checks, e.g.
// TensorRT-LLM's TWOSHOT with fewer tokens than GPUs), or "" when it can.
using Precondition = std::function<std::string(const Cell& cell, const std::string& strategy)>;

struct TableOptions {
  std::string system;          // passed through to the predictor ("" = the only system in the model set)
  // Element type of the reduced tensor; bytes = tokens * hidden * size. A candidate without a model of this
  // type is asked for the other types of the same element size (fp16 NCCL tables next to bf16 kernels).
  std::string dtype = "bf16";
  int sm = 0;                  // 0: the measured SM
  std::string fallback = strategy::kNccl;  // strategy of cells no candidate can predict
  // Candidates the consumer could not run in a cell are kept out of its choice (Cell::excluded). Empty: all run.
  Precondition precondition;
};

struct CandidateTime {
  std::string strategy;
  Prediction prediction;
};

// A candidate predicted for a cell that the consumer cannot run there (TableOptions::precondition).
struct ExcludedCandidate {
  std::string strategy;
  Prediction prediction;
  std::string why;
};

// The one decision rule of the table and of every format that picks a strategy from predictions (codegen's
// formats, suggest, plot's grids, the nccl-tuner rules): the index of the fastest candidate (lowest time_us; the
// earlier one on an exact tie) and of the fastest of the rest; candidates.size() where there is none.
std::pair<std::size_t, std::size_t> fastest_two(const std::vector<CandidateTime>& candidates);

struct Cell {
  int tp = 0;
  FusionOp fusion = FusionOp::None;
  std::int64_t hidden = 0, tokens = 0;
  double bytes = 0;
  std::vector<CandidateTime> candidates;  // those with a prediction the consumer can run, in candidate-list order
  std::vector<ExcludedCandidate> excluded;  // those with a prediction the consumer cannot run here
  std::string choice;                     // lowest predicted time; the fallback when `candidates` is empty
  std::string runner_up;                  // "" when fewer than two candidates
  double margin = 0;         // t(runner-up) / t(choice) - 1 (0 without a runner-up)
  double margin_sigma = 0;   // standard deviation of ln(t_runner / t_choice) from the 90 % intervals
  bool uncertain = false;    // the 90 % intervals of choice and runner-up overlap
  bool fallback = false;     // no candidate could be predicted (or run): choice = TableOptions::fallback
  bool extrapolated = false; // the choice's prediction is an extrapolation
  bool transferred = false;  // the choice's prediction comes from curves carried from other machines (arfit fit --prior)
  double expected_regret = 0;  // E[max(0, ln t_choice - ln t_runner)] under the predictive distribution
};

// How the summary and the C++ formats' Cells line name the cells whose choice is Cell::transferred.
inline constexpr const char* kTransferredCellsNote = "chosen from curves transferred from other machines";

struct StrategyTable {
  Grid grid;
  TableOptions options;
  std::vector<std::string> strategies;  // every candidate that appears in some cell, sorted
  std::vector<Cell> cells;              // grid.size() cells, row-major [tp][fusion][hidden][tokens]
  int uncertain_cells() const;
  int fallback_cells() const;
  int transferred_cells() const;
  // "N cells, U uncertain (...), F without a model (fallback X)[, T chosen from curves transferred from other
  // machines]": what codegen prints after writing a table.
  std::string summary() const;
  const Cell& at(std::size_t tp, std::size_t fusion, std::size_t hidden, std::size_t token) const {
    return cells[grid.index(tp, fusion, hidden, token)];
  }
};

// Predicts every candidate of every cell and chooses. Deterministic: ties go to the earlier candidate.
StrategyTable build_table(const Grid& grid, const CandidateLister& candidates, const Predictor& predict,
                          const TableOptions& options = {});

// Adapters for a fitted model set: all-reduce strategies of (system, fusion, nranks), and ModelSet::predict.
CandidateLister model_set_candidates(const ModelSet& models, const std::string& system);
Predictor model_set_predictor(const ModelSet& models);
// The all-reduce strategies the model set holds for `system` (fitted groups or joint-n families), sorted.
std::vector<std::string> system_strategies(const ModelSet& models, const std::string& system);

// A predictor that asks for q.dtype first, then for the other types of the same element size (aiconfigurator's
// fp16 NCCL tables next to bf16 kernels: the models need the size in bytes only), in model/'s order
// (predict_same_element_size, which `arfit predict` and whatif use too).
Predictor with_same_size_dtypes(Predictor base);

// Which model-set strategies stand for each name an output format uses (a TensorRT-LLM strategy such as
// ONESHOT, an engine role such as `custom`). A name backed by several strategies takes the fastest of them in
// every cell.
using StrategySources = std::map<std::string, std::vector<std::string>>;
// Answers for a name with the fastest prediction among its strategies; names not in `sources` pass through.
Predictor mapped_predictor(Predictor base, StrategySources sources);
// The same table with its candidates renamed through `sources` (each name takes the fastest prediction of its
// strategies; strategies in no name are dropped) and every cell chosen again; cells left without a candidate get
// `fallback`. The same choices as predicting the names through mapped_predictor, without predicting again.
StrategyTable remap_table(const StrategyTable& table, const StrategySources& sources, const std::string& fallback);

// `--map MODEL=TARGET` entries: every MODEL must be one of `model_strategies`, every TARGET one of `targets`
// (compared case-insensitively, returned as spelled in `targets`), each MODEL at most once. Returns
// MODEL -> TARGET. Throws std::invalid_argument naming --map.
std::map<std::string, std::string> parse_map_options(const std::vector<std::string>& entries,
                                                     const std::vector<std::string>& model_strategies,
                                                     const std::vector<std::string>& targets);

// The decision quantities of two predictions, shared with the select evaluation:
// sigma of ln t from a 90 % interval (half-width of ln(hi/lo) / 1.645; 0 when no interval),
double log_sigma(const Prediction& p);
// and E[max(0, -d)] for d ~ N(mean, sigma^2) (expected loss, in ln time, of trusting the sign of `mean`).
double expected_shortfall(double mean, double sigma);

}  // namespace arfit::codegen

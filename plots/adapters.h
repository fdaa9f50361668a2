// Adapters that fill the figure structs of plots/figures.h from what arfit produces: samples (any ingest
// format, already loaded), a ModelSet (models.json), the codegen JSON (`arfit codegen --format json`) and the
// eval JSON (`arfit eval --json`, `arfit eval --protocol select --json`). Pure data work, no gnuplot.
//
// JSON inputs read here (documented in docs/figures.md):
//  * codegen JSON: {"system", "dtype", "strategies": [...], "cells": [{"tp", "fusion", "hidden", "tokens",
//    "bytes", "choice", "predicted": {S: {"time_us", "lo_us", "hi_us"}}, "uncertain", ...}]}
//  * eval JSON: {"protocol": P, "methods": {NAME: {"gmae", "median", "p90", ...}}} plus, optionally,
//    "points": [{"method", "group", "bytes", "measured_us", "predicted_us", "lo_us"?, "hi_us"?}]
//    for the predicted-vs-measured scatter and the error histogram.
//  * select eval JSON: {"protocol": "select", "methods": {NAME: {"geomean_regret", "p95_regret", "max_regret",
//    "exact", "cells"}}} plus, optionally, "cells": [{"method", "system"?, "tp"|"nranks", "fusion"?,
//    "tokens"?, "hidden"?, "bytes"?, "regret"}] (regret as a ratio >= 1) for a regret map.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_set.h"
#include "model/sample.h"
#include "plots/figures.h"

namespace arfit::plots {

// Title text naming a group: "system · allreduce · NCCL · NONE · bf16 · TP8" (" · 2 nodes" when > 1).
std::string group_title(const GroupKey& key);
// Samples are grouped with arfit::sample_group_key / arfit::sample_system (model/model_set.h), as fit/ does.
using arfit::sample_group_key;
using arfit::sample_system;

// A group's file-name-safe name: "<system>_<collective>_<strategy>_<fusion>_<dtype>_n8" ("_N2" for 2 nodes).
std::string key_name(const GroupKey& key);
// The models' prediction for `key` at `bytes` (`sm` 0 = the measured SM); nullopt when they cannot answer.
std::optional<Prediction> predict_at(const ModelSet& models, const GroupKey& key, double bytes, int sm = 0);
// The models' prediction for `key` from `lo` to `hi` bytes, `per_octave` points per doubling (sizes the models
// cannot answer are left out), with the 90 % band; `sm` 0 = the measured SM.
FitCurve model_curve(const ModelSet& models, const GroupKey& key, double lo, double hi, int per_octave, int sm,
                     const std::string& label, bool dashed);

// ---- fit figures ----

struct FitAdapterOptions {
  int curve_points_per_octave = 4;  // sampling of the fitted curve
  double extend_octaves = 2;        // draw the model this far beyond the measured range (extrapolation)
};

struct NamedFit {
  std::string name;  // file-name-safe, unique: "fit_<system>_<collective>_<strategy>_<fusion>_<dtype>_n8"
  FitFigureData data;
};

// One figure per group found in the samples and/or models. `held_out` samples are drawn as open symbols
// (points the fit did not see). Samples at the same size are reduced as the fit reduces them (the upper median,
// model/metrics.h size_median, so the dot is the fitted knot; out-of-place preferred when both in-place and
// out-of-place exist). Models without samples give curve-only figures; samples without a model give point-only
// figures.
std::vector<NamedFit> fit_figures(const std::vector<Sample>& samples, const std::vector<Sample>& held_out,
                                  const ModelSet* models, const FitAdapterOptions& options = {});

// Cross-TP / cross-SM: per (system, collective, strategy, fusion, dtype) family with a model, the measured
// rank counts (points + fitted curve) and predicted curves, dashed, for `extra_nranks` not measured and for
// each SM in `extra_sms` (at the largest measured rank count).
std::vector<NamedFit> cross_figures(const std::vector<Sample>& samples, const ModelSet& models,
                                    const std::vector<int>& extra_nranks, const std::vector<int>& extra_sms,
                                    const FitAdapterOptions& options = {});

// ---- strategy grids (heatmaps, best, diff, regret) ----

// Times of every strategy in one cell of a (system, TP, fusion, tokens x hidden) grid. For byte-only data
// (no shapes) tokens = hidden = 0 and the cell is placed by (bytes, TP).
struct StrategyCell {
  std::string system;
  int tp = 0;
  std::string fusion = "NONE";
  std::int64_t tokens = 0, hidden = 0;
  double bytes = 0;
  std::map<std::string, double> time_us;  // per strategy (measured or predicted)
  std::string choice;                     // chosen strategy ("" = argmin of time_us)
  bool uncertain = false;
  bool measured = false;  // some strategy was measured in this cell
};

struct StrategyGrid {
  std::string source;  // what the times are: "predicted (models.json)" / "measured (samples)"
  std::string dtype = "bf16";
  std::vector<std::string> strategies;  // key order
  std::vector<StrategyCell> cells;
  bool shaped() const;  // every cell has tokens and hidden
};

// From the codegen JSON (choice, predicted times, uncertain flags) parsed from `text` read from `name`. Every
// value is checked (tp >= 1, tokens and hidden in 1..2^40, a known fusion, times and bytes > 0, names without
// control characters): throws InputError naming the file, the line (of `text`; 0 without it) and the JSON
// pointer, e.g. "t.json:12: /cells/3/tp: expected a whole number in 1..2147483647, got -1".
StrategyGrid grid_from_codegen_json(const nlohmann::json& j, const std::string& name, const std::string& text = "");
// From measured samples of one collective (all-reduce by default): the time per strategy per cell (size_median,
// as codegen's selection reduces repeats).
StrategyGrid grid_from_samples(const std::vector<Sample>& samples, Collective collective = Collective::AllReduce);
// Marks cells of `grid` measured when `measured` has any strategy in the same cell.
void mark_measured(StrategyGrid& grid, const StrategyGrid& measured);

struct NamedHeatmap {
  std::string name;
  HeatmapData data;
};
struct NamedBestMap {
  std::string name;
  BestMapData data;
};

// Time heatmaps: one figure per (system, TP, fusion) with a panel per strategy (shaped grids), or per
// (system, fusion) with x = size and y = TP (byte-only grids).
std::vector<NamedHeatmap> heatmaps(const StrategyGrid& grid);
// Best strategy: one figure per (system, TP) with a panel per fusion (shaped), or per system (byte-only).
std::vector<NamedBestMap> best_maps(const StrategyGrid& grid);
// % slower than the best per strategy; figures as heatmaps().
std::vector<NamedHeatmap> diff_maps(const StrategyGrid& grid);
// Regret of `chosen`'s choice against the measured times of `measured`, in % (measured(choice)/measured best - 1),
// over the cells measured for the choice and at least one other strategy.
std::vector<NamedHeatmap> regret_maps(const StrategyGrid& chosen, const StrategyGrid& measured);
// True when `j` is a select-eval JSON with per-cell records (a "cells" array) to draw a regret map from.
bool has_select_cells(const nlohmann::json& j);
// Regret map from the optional per-cell records of a select-eval JSON (method "auto" unless given), parsed from
// `text` read from `name`. Every record is checked as read_codegen_json checks a cell (tp or nranks >= 1, a known
// fusion, tokens and hidden in 1..2^40 or bytes > 0, names without control characters) and its regret is a
// number >= 1: throws InputError naming the file, the line (0 without `text`) and the JSON pointer.
std::vector<NamedHeatmap> regret_maps_from_select_json(const nlohmann::json& j, const std::string& name,
                                                       const std::string& method = "auto", const std::string& text = "");

// ---- eval runs ----

struct NamedSummary {
  std::string name;
  ErrorSummaryData data;
};
// The summary bars of an eval JSON (GMAE/median/p90 per method), or of a select eval JSON (geomean/p95/max
// regret as % above 1, and % exact), parsed from `text` read from `name`. Throws InputError naming `name` when
// the JSON has no "methods", and naming the file, line (0 without `text`) and JSON pointer of a bad value: a
// protocol or method name with a control character, an error below 0 %, a regret below 1, "exact" outside
// 0..100, "measured_fraction" outside 0..1, a negative count, a value of the wrong type (null = not reported).
ErrorSummaryData summary_from_eval_json(const nlohmann::json& j, const std::string& name, const std::string& text = "");
// The per-point records of an eval JSON; empty series when the JSON has none. Checked as the summary is, and
// measured_us and predicted_us are numbers > 0.
ErrorData errors_from_eval_json(const nlohmann::json& j, const std::string& name, const std::string& text = "");

}  // namespace arfit::plots

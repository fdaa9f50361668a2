// The `select` evaluation protocol: how good are the strategy choices made from a partial sweep?
//
// On any sample set where two or more strategies were measured over the same cells, for every case
// (system, collective, fusion, GPU count, the competing strategies):
//   1. measure a subset of the cells (the plan: sparse4 = every 4th size plus the largest, for byte-size
//      curves; lattice:K = every K-th value along tokens and hidden, ends included, for token x hidden grids),
//   2. fit each strategy on its measured subset only, predict every cell, choose,
//   3. score the choice against the measured times of ALL cells: regret = t(choice) / t(measured best).
// Reported per method: the fraction of cells where the choice is the measured best ("exact", %),
// geometric-mean, p95 and max regret; plus the fraction of cells measured.
//
// Methods: `auto` (arfit: fitted models + the decision rule below), and the baselines
//   always-nccl  NCCL everywhere,
//   nearest      the measured winner of the nearest measured cell (a table filled from a partial sweep),
//   threshold    custom below a byte threshold, NCCL above; the threshold tuned on the measured cells,
//   loglog       per-strategy piecewise-linear interpolation of log time against log size, then argmin.
//
// How cases are formed from samples (documented in docs/codegen.md):
//   * failed samples and eager-mode variants (strategy names containing "eager") are dropped: engines capture
//     the all-reduce in CUDA graphs, and the graph-mode variant of the same kernel is in the same table;
//   * system = Sample::extra["system"], else the aiconfigurator system in the file name (aic_<system>_<fw>_...),
//     else the device name, else the source;
//   * a source that measured several strategies (a TensorRT-LLM benchmark CSV) forms one case per
//     (system, collective, fusion, nranks) with all its strategies; a source that measured only non-NCCL
//     strategies (an aiconfigurator custom all-reduce table) is paired with the same system's NCCL table of
//     the same element size: the NCCL source last in natural (version-aware) name order, i.e. the newest NCCL;
//   * cells = the sizes (or token x hidden shapes) every strategy of the case measured; cases with fewer than
//     `min_cells` shared cells or without an NCCL candidate are skipped.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_set.h"
#include "model/sample.h"

namespace arfit::codegen {

// Measured (bytes ascending, duplicates collapsed to the median) points of one strategy in one case.
struct MeasuredCurve {
  GroupKey key;
  std::string source;  // the file the points came from
  std::vector<double> bytes;
  std::vector<double> time_us;
};

// Predicts a strategy at `bytes` from its measured subset. Must return one Prediction per query.
using CurvePredictor = std::function<std::vector<Prediction>(const MeasuredCurve&, const std::vector<double>& bytes)>;

// fit::fit_curve on the measured points (family chosen by cross-validation, residual correction), then
// fit::predict_group. Falls back to log-log interpolation (with a flag in Prediction::how) when the fit fails.
CurvePredictor fitted_model_predictor();
// Piecewise-linear log-log interpolation, linear extrapolation of the end segments (the loglog baseline).
std::vector<double> loglog_interpolate(const std::vector<double>& bytes, const std::vector<double>& time_us,
                                       const std::vector<double>& query);

struct SelectOptions {
  std::string plan = "auto";  // auto | sparse4 | lattice:K (K >= 2)
  int min_cells = 12;
  CurvePredictor model;       // empty: fitted_model_predictor()
};

struct MethodStats {
  double geomean_regret = 1, p95_regret = 1, max_regret = 1;
  double exact = 0;  // percent of cells where the choice is the measured best
  long cells = 0;
};

struct SelectCase {
  std::string system;
  Collective collective = Collective::AllReduce;
  FusionOp fusion = FusionOp::None;
  int nranks = 0;
  std::vector<std::string> candidates;  // "strategy@source"
  int cells = 0, measured = 0;
  std::map<std::string, MethodStats> methods;
};

struct SelectReport {
  std::string plan;
  long cells = 0, measured = 0;
  double measured_fraction = 0;
  std::vector<std::string> method_order;  // auto first, then the baselines
  std::map<std::string, MethodStats> methods;
  std::vector<std::pair<std::string, std::map<std::string, MethodStats>>> per_system;  // sorted by system
  std::vector<SelectCase> cases;
  std::vector<std::string> notes;  // skipped cases and fallbacks, one line each
};

// One case of the protocol as other protocols replay it (planner/simulate.h: the adaptive plan on fully measured
// tables): its candidates, NCCL first, and each one's measured time at every cell they all measured. The same
// pairing, cells and medians as evaluate_select.
struct SelectPair {
  std::string system;
  Collective collective = Collective::AllReduce;
  FusionOp fusion = FusionOp::None;
  int nranks = 0;
  std::vector<std::string> candidates;  // "strategy@source"
  std::vector<MeasuredCurve> curves;    // per candidate: key and source; bytes and time_us per cell (not collapsed)
  std::vector<std::int64_t> tokens, hidden;  // per cell; 0 for byte-size cells
};
// The cases evaluate_select would score (at least `min_cells` shared cells, NCCL among the candidates); what it
// skips goes to `notes`.
std::vector<SelectPair> select_pairs(const std::vector<Sample>& samples, int min_cells = 12,
                                     std::vector<std::string>* notes = nullptr);

// Throws std::invalid_argument for a bad plan and std::runtime_error when no case can be formed.
SelectReport evaluate_select(const std::vector<Sample>& samples, const SelectOptions& options = {});
// evaluate_select's check of options.plan, which needs no samples: throws std::invalid_argument naming --plan.
void check_select_options(const SelectOptions& options);

// {"protocol": "select", "plan": ..., "measured_fraction": F, "cells": N, "cases": C,
//  "methods": {NAME: {"geomean_regret", "p95_regret", "max_regret", "exact", "cells"}}, "systems": {...}}
nlohmann::json select_report_json(const SelectReport& report);
// Human-readable: the overall table and the per-system table.
std::string format_select_report(const SelectReport& report);

// Statistics of a list of regrets (>= 1); p95 interpolates linearly between order statistics (numpy's default).
MethodStats regret_stats(std::vector<double> regrets);

}  // namespace arfit::codegen

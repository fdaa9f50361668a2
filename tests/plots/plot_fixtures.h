// Small, fixed figure inputs built from closed-form curves (no files, no randomness), shared by the plot tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "plots/figures.h"

namespace arfit::plots::fixtures {

// A latency curve with a latency floor and a bandwidth ceiling: t = alpha + f(n) s / B.
inline double toy_time_us(double bytes, int nranks, double alpha_us = 8.0, double gbps = 150.0) {
  double f = 2.0 * (nranks - 1) / nranks;
  return alpha_us + f * bytes / (gbps * 1e3);
}

inline FitFigureData fit_data() {
  FitFigureData d;
  d.title = "h100-sxm · allreduce · NCCL · NONE · bf16 · TP8";
  d.subtitle = "family seed, CV GMAE 2.1 %";
  FitMeasured m{"TP8", "TP8 measured", Collective::AllReduce, 8, {}};
  FitCurve c{"TP8", "TP8 fit (seed)", Collective::AllReduce, 8, false, {}};
  for (int k = 10; k <= 32; ++k) {
    double s = std::ldexp(1.0, k);
    // a small deterministic wiggle so points sit off the curve
    double wiggle = 1.0 + 0.04 * std::sin(1.7 * k);
    m.points.push_back({s, toy_time_us(s, 8) * wiggle, k % 2 == 1});
  }
  for (int i = 0; i <= 88; ++i) {
    double s = std::ldexp(1.0, 10) * std::pow(2.0, i * 0.25);
    double t = toy_time_us(s, 8);
    c.points.push_back({s, t, t * 0.93, t * 1.08});
  }
  d.measured.push_back(m);
  d.curves.push_back(c);
  d.turning_points = {{std::ldexp(1.0, 16), "ln_p"}, {std::ldexp(1.0, 29), "sats_p"}};
  return d;
}

inline FitFigureData cross_tp_data() {
  FitFigureData d;
  d.title = "h100-sxm · allreduce · NCCL · NONE · bf16 · TP 2/4 measured, TP 8 predicted";
  for (int n : {2, 4}) {
    std::string tp = "TP" + std::to_string(n);
    FitMeasured m{tp, tp + " measured", Collective::AllReduce, n, {}};
    FitCurve c{tp, tp + " fit", Collective::AllReduce, n, false, {}};
    for (int k = 12; k <= 30; k += 2) m.points.push_back({std::ldexp(1.0, k), toy_time_us(std::ldexp(1.0, k), n, 6.0 + n), false});
    for (int k = 12; k <= 30; ++k) {
      double t = toy_time_us(std::ldexp(1.0, k), n, 6.0 + n);
      c.points.push_back({std::ldexp(1.0, k), t, t * 0.95, t * 1.05});
    }
    d.measured.push_back(m);
    d.curves.push_back(c);
  }
  FitCurve p{"TP8", "TP8 predicted (joint-n)", Collective::AllReduce, 8, true, {}};
  for (int k = 12; k <= 30; ++k) {
    double t = toy_time_us(std::ldexp(1.0, k), 8, 14.0);
    p.points.push_back({std::ldexp(1.0, k), t, t * 0.85, t * 1.2});
  }
  d.curves.push_back(p);
  return d;
}

inline std::vector<std::int64_t> tokens_axis() {
  std::vector<std::int64_t> v;
  for (int k = 0; k <= 14; ++k) v.push_back(std::int64_t{1} << k);
  return v;
}
inline std::vector<std::int64_t> hidden_axis() {
  std::vector<std::int64_t> v;
  for (int k = 7; k <= 13; ++k) v.push_back(std::int64_t{1} << k);
  return v;
}

// Three toy strategies over the TensorRT-LLM grid: one-shot cheap to start and bandwidth-poor, two-shot the
// reverse, NCCL in between with a higher floor.
inline double toy_strategy_us(int strategy, std::int64_t tokens, std::int64_t hidden) {
  double bytes = 2.0 * static_cast<double>(tokens) * static_cast<double>(hidden);
  switch (strategy) {
    case 0: return 14.0 + bytes / 120e3;  // NCCL
    case 1: return 5.0 + bytes / 40e3;    // ONESHOT
    default: return 9.0 + bytes / 150e3;  // TWOSHOT
  }
}
inline const std::vector<std::string>& toy_strategies() {
  static const std::vector<std::string> s{"NCCL", "ONESHOT", "TWOSHOT"};
  return s;
}

inline HeatmapData heatmap_data() {
  HeatmapData d;
  d.title = "h100-sxm · allreduce · fusion RESIDUAL_RMS_NORM · TP8 · predicted time per strategy";
  for (int s = 0; s < 3; ++s) {
    GridPanel p{toy_strategies()[static_cast<std::size_t>(s)], {}};
    for (auto t : tokens_axis())
      for (auto h : hidden_axis()) {
        GridCell c;
        c.x = t, c.y = h, c.value = toy_strategy_us(s, t, h);
        if (s == 0 && t == 1 && h == 128) c.value = NAN;  // one hole: drawn grey
        p.cells.push_back(c);
      }
    d.panels.push_back(p);
  }
  return d;
}

inline int toy_best(std::int64_t t, std::int64_t h) {
  int best = 0;
  for (int s = 1; s < 3; ++s)
    if (toy_strategy_us(s, t, h) < toy_strategy_us(best, t, h)) best = s;
  return best;
}

inline BestMapData best_data() {
  BestMapData d;
  d.title = "h100-sxm · allreduce · TP8 · best strategy per cell";
  d.strategies = toy_strategies();
  for (std::string fusion : {"NONE", "RESIDUAL_RMS_NORM"}) {
    GridPanel p{"fusion " + fusion, {}};
    for (auto t : tokens_axis())
      for (auto h : hidden_axis()) {
        GridCell c;
        c.x = t, c.y = h;
        c.category = toy_best(t, h);
        c.measured = (t == 1 || t % 4 == 0) && (h == 128 || h % 512 == 0);
        double a = toy_strategy_us(c.category, t, h);
        double second = 1e30;
        for (int s = 0; s < 3; ++s)
          if (s != c.category) second = std::min(second, toy_strategy_us(s, t, h));
        c.uncertain = second / a < 1.15;
        p.cells.push_back(c);
      }
    d.panels.push_back(p);
  }
  return d;
}

inline HeatmapData diff_data() {
  HeatmapData d;
  d.title = "h100-sxm · allreduce · NONE · TP8 · % slower than the best strategy";
  d.scale = GridScale::Percent;
  d.value_label = "slower than best (%)";
  for (int s = 0; s < 3; ++s) {
    GridPanel p{toy_strategies()[static_cast<std::size_t>(s)], {}};
    for (auto t : tokens_axis())
      for (auto h : hidden_axis()) {
        double best = toy_strategy_us(toy_best(t, h), t, h);
        GridCell c;
        c.x = t, c.y = h, c.value = 100.0 * (toy_strategy_us(s, t, h) / best - 1.0);
        p.cells.push_back(c);
      }
    d.panels.push_back(p);
  }
  return d;
}

inline HeatmapData regret_data() {
  HeatmapData d;
  d.title = "h100-sxm · allreduce · TP8 · regret of the chosen strategy vs measured best";
  d.scale = GridScale::Percent;
  d.value_label = "regret (%)";
  GridPanel p{"fusion NONE", {}};
  for (auto t : tokens_axis())
    for (auto h : hidden_axis()) {
      GridCell c;
      c.x = t, c.y = h;
      // the chooser errs near the one-shot/two-shot crossover
      double ratio = toy_strategy_us(1, t, h) / toy_strategy_us(2, t, h);
      c.value = std::fabs(std::log(ratio)) < 0.12 ? 100.0 * std::fabs(ratio - 1.0) : 0.0;
      p.cells.push_back(c);
    }
  d.panels.push_back(p);
  return d;
}

inline ErrorData error_data() {
  ErrorData d;
  d.title = "eval interp2 · predicted vs measured";
  const char* names[] = {"auto", "seed", "loglog"};
  const double spread[] = {0.015, 0.07, 0.025};
  for (int m = 0; m < 3; ++m) {
    ErrorSeries s{names[m], {}};
    for (int k = 0; k < 120; ++k) {
      double meas = 5.0 * std::pow(10.0, k / 30.0);
      double err = spread[m] * std::sin(0.9 * k + m) * (1.0 + (k % 7) / 3.0);
      s.measured_predicted.push_back({meas, meas * (1.0 + err)});
    }
    d.series.push_back(s);
  }
  return d;
}

inline ErrorSummaryData error_summary_data() {
  ErrorSummaryData d;
  d.title = "eval sparse4 · error per method";
  d.methods = {{"auto", {2.1, 1.4, 5.2}, 800}, {"seed", {17.0, 9.5, 40.1}, 800},
               {"alphabeta", {8.4, 6.0, 20.3}, 800}, {"loglog", {3.9, 2.2, 9.8}, 800}};
  return d;
}

inline StackedBarData stacked_data() {
  StackedBarData d;
  d.title = "llama-70b · TP8 · kernel time per op class";
  d.bars = {"prefill", "decode 1", "decode 64", "decode 128"};
  d.classes = {"gemm", "attention", "nccl all-reduce", "rms_norm", "others"};
  d.values = {{5200, 1800, 900, 120, 300}, {410, 95, 160, 12, 40}, {415, 120, 158, 12, 42}, {420, 140, 161, 12, 41}};
  return d;
}

}  // namespace arfit::plots::fixtures

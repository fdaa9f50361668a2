// Figure kinds as plain data structs and the functions that turn them into gnuplot figures
// (plots/gnuplot_runner.h renders them). Nothing here reads files: plots/adapters.h fills the structs from
// samples, models, eval JSON and codegen JSON, so figures are testable from hand-built data.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "model/sample.h"
#include "plots/gnuplot_runner.h"

namespace arfit::plots {

// ---------------------------------------------------------------------------------------------------------
// Fit: latency and bus bandwidth against message size, measured points, fitted curve with its 90 % band,
// turning points; also cross-TP / cross-SM figures (predicted curves for unmeasured TP or SM drawn dashed).
// Series with the same `series` name share a colour (a measured set and its fitted curve).

struct FitPoint {
  double bytes = 0;
  double time_us = 0;
  bool held_out = false;  // not used by the fit (evaluation point): drawn as an open symbol
};

struct FitMeasured {
  std::string series;  // colour key, e.g. "TP8"
  std::string label;   // legend text, e.g. "TP8 measured"
  Collective collective = Collective::AllReduce;
  int nranks = 2;  // for the bus bandwidth
  std::vector<FitPoint> points;
};

struct FitCurvePoint {
  double bytes = 0;
  double time_us = 0;
  double lo_us = 0, hi_us = 0;  // 90 % prediction interval; both 0 = no band at this point
};

struct FitCurve {
  std::string series;
  std::string label;  // e.g. "TP8 fit (sigmoid)"
  Collective collective = Collective::AllReduce;
  int nranks = 2;
  bool dashed = false;  // a prediction where nothing was measured (other TP / SM)
  std::vector<FitCurvePoint> points;
};

struct TurningPoint {
  double bytes = 0;
  std::string label;  // "ln_p" / "sats_p"
};

struct FitFigureData {
  std::string title;     // names system, collective, strategy, fusion, dtype, TP
  std::string subtitle;  // e.g. "family sigmoid, CV GMAE 1.2 %"
  std::vector<FitMeasured> measured;
  std::vector<FitCurve> curves;
  std::vector<TurningPoint> turning_points;
};

Figure fit_figure(const FitFigureData& data, const std::string& stem);

// ---------------------------------------------------------------------------------------------------------
// Grids over two axes (num_tokens x hidden_size, or size x GPUs): one panel per strategy / fusion / TP,
// cells placed by the rank of their value on each axis (so any grid, regular or not, gets equal cells).

enum class AxisStyle { Pow2, Bytes, Plain };  // tick labels: 2^k, 1K/1M, 1.5K

struct GridAxis {
  std::string label;
  AxisStyle style = AxisStyle::Pow2;
};

struct GridCell {
  std::int64_t x = 0, y = 0;
  double value = std::numeric_limits<double>::quiet_NaN();  // colour value (heatmaps, diff, regret)
  int category = -1;       // best map: index into BestMapData::strategies
  bool measured = false;   // best map: a dot
  bool uncertain = false;  // best map: outlined
};

struct GridPanel {
  std::string title;  // "ONESHOT", "fusion RESIDUAL_RMS_NORM", ...
  std::vector<GridCell> cells;
};

enum class GridScale {
  LogTime,     // value in µs, log colour scale, sequential palette, shared colour bar
  Percent,     // value in % >= 0, white at 0 (best), red as it grows; values annotated
};

struct HeatmapData {
  std::string title;
  std::string caption;  // extra sentence for the index (what the cells are)
  GridAxis x{"num_tokens", AxisStyle::Pow2};
  GridAxis y{"hidden_size", AxisStyle::Pow2};
  GridScale scale = GridScale::LogTime;
  std::string value_label = "time (µs)";  // colour bar label
  bool annotate = false;  // write each cell's value in it (default on for Percent)
  std::vector<GridPanel> panels;
};

Figure heatmap_figure(const HeatmapData& data, const std::string& stem, const std::string& kind = "heatmap");

struct BestMapData {
  std::string title;
  GridAxis x{"num_tokens", AxisStyle::Pow2};
  GridAxis y{"hidden_size", AxisStyle::Pow2};
  std::vector<std::string> strategies;  // categories, in key order
  std::vector<GridPanel> panels;
};

// Share of each strategy over all cells of all panels, in percent (same order as strategies).
std::vector<double> strategy_shares(const BestMapData& data);
Figure best_map_figure(const BestMapData& data, const std::string& stem);

// ---------------------------------------------------------------------------------------------------------
// Errors of an eval run: predicted vs measured (log-log, y = x), histogram of relative errors per family,
// and (when only summaries exist) GMAE / median / p90 per method as bars.

struct ErrorSeries {
  std::string name;  // method / model family
  std::vector<std::pair<double, double>> measured_predicted;  // (measured µs, predicted µs)
};

struct ErrorData {
  std::string title;
  std::vector<ErrorSeries> series;
};

Figure error_scatter_figure(const ErrorData& data, const std::string& stem);
// Signed relative error (pred - meas) / meas in %, bins of `bin_percent`, clamped to +-clip_percent.
Figure error_histogram_figure(const ErrorData& data, const std::string& stem, double bin_percent = 1.0,
                              double clip_percent = 25.0);

struct MethodSummary {
  std::string name;
  std::vector<double> values;  // one per ErrorSummaryData::metrics; NaN = not reported
  long points = 0;
};

// Grouped bars: one group per method, one bar per metric (eval: GMAE / median / p90 in %; select eval:
// regret above 1 in % and % of cells chosen exactly).
struct ErrorSummaryData {
  std::string title;
  std::string y_label = "error (%)";
  std::vector<std::string> metrics{"GMAE", "median", "p90"};
  std::vector<MethodSummary> methods;
  std::string caption;  // replaces the default caption when set
};

Figure error_summary_figure(const ErrorSummaryData& data, const std::string& stem);

// ---------------------------------------------------------------------------------------------------------
// Stacked bars (profile breakdowns: time per op class per phase), value labels inside the segments.

struct StackedBarData {
  std::string title;
  std::string y_label = "time (µs)";
  std::vector<std::string> bars;     // x labels, e.g. "prefill", "decode 1", ...
  std::vector<std::string> classes;  // stack segments, bottom first (legend order)
  std::vector<std::vector<double>> values;  // [bar][class], >= 0
  bool value_labels = true;  // label segments taller than ~4 % of the tallest bar
  // Colour of each class ("#rrggbb"), so a class keeps its colour whatever else a figure shows; empty: the
  // shared palette by position (series_colour).
  std::vector<std::string> colours;
};

Figure stacked_bar_figure(const StackedBarData& data, const std::string& stem);

// A file-name-safe slug: letters, digits, '-', '.', '_' kept; anything else -> '_' (runs collapsed, none at the
// end; "figure" when nothing is left). Names that fold alike give one slug (slug("a b") == slug("a_b") ==
// "a_b"): a command numbers the second figure of one stem (cli/cmd_plot.cpp Renderer::draw).
std::string slug(const std::string& s);

// ---- pieces shared by the figure bodies ----

// Screen-fraction margins for one multiplot panel.
std::string panel_margins(double x0, double x1, double y0, double y1);
// Colours per series name, in first-seen order (series_colour).
class SeriesColours {
 public:
  std::string operator()(const std::string& series);

 private:
  std::map<std::string, std::size_t> index_;
};
// "set multiplot title ..." with the title and, when given, a smaller subtitle line, both shown as written.
std::string multiplot_title(const std::string& title, const std::string& subtitle);
// A quoted, enhanced-text-escaped gnuplot title.
std::string title_text(const std::string& s);
// A legend drawn as its own full-width multiplot panel below the plots, so it is never squeezed into (and
// clipped by) one narrow panel. `entries` are plot elements with titles, e.g. "NaN with lines lc rgb '#...' title 'x'".
std::string legend_panel(double top, const std::vector<std::string>& entries, int max_cols);

}  // namespace arfit::plots

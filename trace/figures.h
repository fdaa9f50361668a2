// Figures of a breakdown, as plain data first (plots::StackedBarData and CommShareData), rendered through the
// shared gnuplot runner (plots/gnuplot_runner.h) as the last, thin step.
#pragma once

#include <string>
#include <vector>

#include "plots/figures.h"
#include "plots/gnuplot_runner.h"
#include "trace/breakdown.h"

namespace arfit::trace {

// The colour of an op class in every figure of every run: a fixed table for the built-in classes, light grey
// for "unmatched", and for any other class (user rules, folded nodes) a colour derived from its id alone.
std::string class_colour(const std::string& class_id);

// Scales the bars (µs) to the unit the tallest bar reads best in (µs, ms or s) and names it in the y label.
void use_time_unit_of_tallest_bar(plots::StackedBarData& d);

// Bar labels: "prefill", "decode 1", ... or the phase name.
std::string bar_label(const PhaseBreakdown& p);

// Which phases a figure shows: prefill (with any other non-decode phases, e.g. nsys "all") and the decode
// steps are drawn in separate figures, since a prefill step is often 10-100x longer than a decode step.
enum class FigurePart { Prefill, Decode };
// Indices of the phases of that part: every non-decode phase, or the decimated decode steps (figure_phases).
std::vector<std::size_t> part_phases(const Breakdown& b, FigurePart part, std::size_t decode_steps);

// Time per op class for the given phases, each class in its class_colour, in the unit of the tallest bar.
plots::StackedBarData class_bars(const Breakdown& b, const std::vector<std::size_t>& phases);
// Time per entry (top K + others) for the given phases, with shortened, unique legend names (keeping the element
// type and algorithm), coloured by entry rank, in the unit of the tallest bar.
plots::StackedBarData entry_bars(const Breakdown& b, const std::vector<std::size_t>& phases);
// The most series an entry figure draws: beyond it (`--top 0`, or a large --top) the entries after the first
// kMaxFigureEntries - 1 by total time are folded into one "others" series, the title saying how many. A legend of
// more colours than this tells none apart, and gnuplot's cost grows with every series (10^5 kernel names took
// minutes); the CSV keeps every entry.
inline constexpr std::size_t kMaxFigureEntries = 24;
// How many entries of `b` an entry figure folds into "others" beyond what the breakdown already folded (0: none).
std::size_t entries_folded_in_figures(const Breakdown& b);
// Removes series that are zero in every bar (classes absent from the decode steps, say), with their colours.
void drop_empty_series(plots::StackedBarData& d);
// The shared stacked-bar figure, with a right margin wide enough for the longest legend name.
plots::Figure stacked_figure(const plots::StackedBarData& d, const std::string& stem);

struct CommShareData {
  std::string title;
  std::vector<std::string> bars;
  std::vector<double> share_pct;  // communication share of each bar's phase, percent
};
// Every non-decode phase and the decimated decode steps.
CommShareData comm_share_bars(const Breakdown& b, std::size_t decode_steps);
plots::Figure comm_share_figure(const CommShareData& d, const std::string& stem);

// Legend names: shorten_name() of each entry, disambiguated by (shortened) call path where shortening or
// duplicates made them collide. "others" stays "others".
std::vector<std::string> legend_names(const std::vector<EntryTime>& entries);

}  // namespace arfit::trace

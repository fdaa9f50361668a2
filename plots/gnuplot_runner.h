// The shared gnuplot runner: every arfit figure (plots/, trace/) is a gnuplot script that is written next to
// its image as <stem>.gp, so users can tweak and re-run it, and rendered through gnuplot-iostream into PNG
// (pngcairo) and/or SVG. Images are rendered to a temporary file and renamed, so a failed or interrupted
// render never leaves a half-written figure.
//
// A script written by render_figure() is self-contained (the data sit in inline data blocks) and starts with
//   # arfit-figure v1
//   # title: <Figure::title>
//   # caption: <Figure::caption>
// which write_index() (plots/index.h) reads to caption the figure. Re-render by hand from the figure's folder:
//   gnuplot fit_x.gp                              -> fit_x.png
//   gnuplot -e "arfit_format='svg'" fit_x.gp      -> fit_x.svg
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace arfit::plots {

enum class ImageFormat { Png, Svg };

std::string extension(ImageFormat f);  // "png" / "svg"
// "png", "svg" or "both"; throws std::invalid_argument naming the value otherwise.
std::vector<ImageFormat> parse_formats(const std::string& s);

// gnuplot is not installed (or ARFIT_GNUPLOT names nothing executable).
class GnuplotMissing : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// gnuplot ran but failed on the script; what() names the script and quotes gnuplot's messages.
class GnuplotFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The gnuplot executable: $ARFIT_GNUPLOT when set, else "gnuplot" searched in $PATH. Empty when not found.
std::string find_gnuplot();
// Throws GnuplotMissing with an install hint when find_gnuplot() is empty.
std::string require_gnuplot();

// One figure: where it goes, what it is called, and the gnuplot commands that draw it.
struct Figure {
  std::string stem;     // output path without extension, e.g. "out/figures/fit_h100_allreduce_NCCL_n8"
  std::string title;    // short title (index heading); usually also drawn on the figure by the body
  std::string caption;  // one or two sentences for the index page: how to read the figure
  std::string kind;     // fit, heatmap, best, diff, regret, errors, breakdown, ... (index grouping)
  int width = 1000, height = 700;  // pixels (PNG) / points (SVG)
  int font_size = 11;
  // Commands after the terminal and output are set: data blocks, settings, plot/multiplot. Must not set the
  // terminal or output itself.
  std::string body;
};

struct RenderResult {
  std::string script;               // path of the .gp written
  std::vector<std::string> images;  // one per requested format, in request order
  std::vector<std::string> warnings;  // gnuplot's "warning:" lines, if any (an empty list is the goal)
};

// Writes <stem>.gp atomically, then renders one image per format to <stem>.<ext> (temp + rename).
// Throws GnuplotMissing, GnuplotFailed (with gnuplot's error text), or std::runtime_error on I/O errors.
// Creates the stem's directory when missing.
RenderResult render_figure(const Figure& figure, const std::vector<ImageFormat>& formats);

// The full script text render_figure() writes (header, terminal selection, body).
std::string figure_script(const Figure& figure);

// ---- helpers for building script bodies ----

// A gnuplot single-quoted string literal ('' escapes a quote): gp_quote("it's") == "'it''s'".
std::string gp_quote(const std::string& s);
// Text safe inside an enhanced-text label: escapes _ ^ @ & { } ~ so names like "RESIDUAL_RMS_NORM" print as is.
std::string gp_enhanced_escape(const std::string& s);
// Number formatting for data blocks: shortest round-trippable-enough form ("%.9g"); NaN/inf -> "NaN".
std::string gp_number(double v);

// A data block "$name << EOD ... EOD" from rows of already-formatted fields (joined by tabs; fields holding
// spaces are double-quoted, so string columns work with `using ...:(stringcolumn(k))`).
std::string data_block(const std::string& name, const std::vector<std::vector<std::string>>& rows);

// ---- tick labels ----

// Binary-prefix size labels: 512 -> "512", 1024 -> "1K", 3<<20 -> "3M", 1<<30 -> "1G", 1<<40 -> "1T".
std::string bytes_label(double bytes);
// Decimal labels for times in microseconds: 0.5 -> "0.5 µs", 20 -> "20 µs", 1500 -> "1.5 ms", 2e6 -> "2 s".
std::string time_label(double us);
// Decimal SI labels for plain numbers: 0.01 -> "0.01", 1500 -> "1.5K", 2e6 -> "2M", 3e9 -> "3G".
std::string si_label(double v);
// "2^{k}" (enhanced text) for powers of two, plain number otherwise.
std::string pow2_label(std::int64_t v);

// "set xtics (...)" style tick lists. `axis` is "x", "y", "x2", "cb"...
// Byte axis on log scale: powers of two with bytes_label, stepping by 2^k so at most `max_tics` labels.
std::string bytes_tics(const std::string& axis, double lo, double hi, int max_tics = 10);
// Log time axis in µs: decades (plus 2x/5x when the range is under two decades) with time_label.
std::string time_tics(const std::string& axis, double lo_us, double hi_us);
// Log axis of plain numbers: decades with si_label (plus 2x/5x when the range is small).
std::string log_tics(const std::string& axis, double lo, double hi);
// An integer axis at positions log2(v) for the given powers of two, labels pow2_label (every `step`-th).
std::string pow2_index_tics(const std::string& axis, const std::vector<std::int64_t>& values, int step = 1);

// A fixed, colour-blind-friendly categorical palette (Okabe-Ito, then Tableau); index wraps around.
std::string series_colour(std::size_t index);  // "#rrggbb"

}  // namespace arfit::plots

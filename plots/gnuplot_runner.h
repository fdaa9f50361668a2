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

  // What every figure function starts from: the figure of `kind` titled `title`, written at `stem`.
  static Figure named(const std::string& stem, const std::string& kind, const std::string& title) {
    Figure f;
    f.stem = stem;
    f.kind = kind;
    f.title = title;
    return f;
  }
};

struct RenderResult {
  std::string script;               // path of the .gp written
  std::vector<std::string> images;  // one per requested format, in request order
  std::vector<std::string> warnings;  // gnuplot's "warning:" lines, if any (an empty list is the goal)
};

// The files render_figure() writes: <stem>.gp, then <stem>.<ext> per format.
std::vector<std::string> figure_outputs(const Figure& figure, const std::vector<ImageFormat>& formats);
// Throws OutputPathError when one of figure_outputs() may not be written (check_output_path, io/output_path_rule.h)
// or the stem holds a control character. A command drawing several figures checks them all before rendering any.
void check_figure_outputs(const Figure& figure, const std::vector<ImageFormat>& formats);

// Checks the outputs (check_figure_outputs), writes <stem>.gp atomically, then renders one image per format to
// <stem>.<ext> (temp + rename).
// Throws GnuplotMissing, GnuplotFailed (with gnuplot's error text), or std::runtime_error on I/O errors.
// Creates the stem's directory when missing.
RenderResult render_figure(const Figure& figure, const std::vector<ImageFormat>& formats);

// The full script text render_figure() writes (header, terminal selection, body).
std::string figure_script(const Figure& figure);

// ---- helpers for building script bodies ----

// Every string from an input (a system, strategy or file name, a title) reaches a script through one of these
// two, so it cannot end its comment or string and run the rest as gnuplot commands (`system "..."`, `set output`):
//
// A gnuplot string literal holding `s`: single-quoted, a quote doubled ('' is gnuplot's escape there; a
// backslash is literal), and each control character (a line break would end the command) a space:
// gp_quote("it's") == "'it''s'". Join pieces with gnuplot's `.` operator where a "\n" is needed.
std::string gp_quote(const std::string& s);
// One comment line "# <text>\n": control characters become spaces, so a line break cannot end the comment, and a
// trailing backslash is followed by a space, so it cannot continue the comment onto the next line.
std::string gp_comment(const std::string& text);
// Text safe inside an enhanced-text label: escapes \ _ ^ @ & { } ~ so names like "RESIDUAL_RMS_NORM" print as
// is. Pass the result through gp_quote.
std::string gp_enhanced_escape(const std::string& s);
// Number formatting for data blocks: shortest round-trippable-enough form ("%.9g"); NaN/inf -> "NaN".
std::string gp_number(double v);

// A data block "$name << EOD ... EOD" from rows of already-formatted fields (joined by tabs; fields holding
// spaces are double-quoted, so string columns work with `using ...:(stringcolumn(k))`). `name` must be an
// identifier (letters, digits, _); a field's control characters become spaces and its double quotes single
// ones, and a field that starts with "EOD" or holds a backslash is quoted, so no field ends the block early.
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

// The pieces every figure family shares: panel margins, series colours, titles, the legend panel, file-name
// slugs. The families: fit_figure.cpp, grid_figures.cpp (heatmaps, best / difference / regret maps),
// error_figures.cpp, stacked_bar_figure.cpp; all-to-allv figures: alltoallv.cpp.
#include "plots/figures.h"

#include <sstream>

namespace arfit::plots {

std::string panel_margins(double x0, double x1, double y0, double y1) {
  return "set lmargin at screen " + gp_number(x0) + "\nset rmargin at screen " + gp_number(x1) + "\nset bmargin at screen " +
         gp_number(y0) + "\nset tmargin at screen " + gp_number(y1) + "\n";
}

std::string SeriesColours::operator()(const std::string& series) {
  auto it = index_.find(series);
  if (it == index_.end()) it = index_.emplace(series, index_.size()).first;
  return series_colour(it->second);
}

std::string title_text(const std::string& s) { return gp_quote(gp_enhanced_escape(s)); }

std::string multiplot_title(const std::string& title, const std::string& subtitle) {
  // Quoted pieces joined with gnuplot's `.`: the line break between title and subtitle is the one double-quoted
  // piece, so no input text is ever inside a double-quoted (escape-interpreting) string.
  std::string text = title_text(title);
  if (!subtitle.empty()) text += " . \"\\n\" . " + gp_quote("{/*0.85 " + gp_enhanced_escape(subtitle) + "}");
  return "set multiplot title " + text + " font ',14'\n";
}

std::string legend_panel(double top, const std::vector<std::string>& entries, int max_cols) {
  if (entries.empty()) return "";
  std::ostringstream s;
  s << gp_comment("---- legend ----");
  s << "set lmargin at screen 0.02\nset rmargin at screen 0.98\nset bmargin at screen 0.005\nset tmargin at screen "
    << gp_number(top) << "\n";
  s << "unset border\nunset xtics\nunset ytics\nunset x2tics\nunset y2tics\nunset xlabel\nunset ylabel\nunset title\n";
  s << "unset logscale\nunset grid\nunset arrow\nunset label\nunset object\nunset colorbox\n";
  s << "set xrange [0:1]\nset yrange [0:1]\n";
  s << "set key at screen 0.5," << gp_number(top) << " center top horizontal maxcols " << max_cols
    << " font ',10' samplen 2.5 spacing 1.2 width 2\n";
  s << "plot ";
  for (std::size_t i = 0; i < entries.size(); ++i) s << (i ? ", \\\n     " : "") << entries[i];
  s << "\n";
  return s.str();
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                c == '_';
    if (keep) out += c;
    else if (out.empty() || out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  // Names that fold alike ("a b" and "a_b") get one slug; the command's renderer numbers a second figure of one
  // stem ("_2"), so neither overwrites the other, and the usual names stay readable (a system label with a
  // space, "AMD EPYC", is the common case, a clash the rare one).
  return out.empty() ? std::string("figure") : out;
}

}  // namespace arfit::plots

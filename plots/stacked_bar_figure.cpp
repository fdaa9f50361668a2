// Stacked bars: shares of a total per category, e.g. a profile's time per op class and phase (plots/figures.h).
#include "plots/figures.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace arfit::plots {

Figure stacked_bar_figure(const StackedBarData& d, const std::string& stem) {
  auto colour = [&](std::size_t c) { return c < d.colours.size() ? d.colours[c] : series_colour(c); };
  Figure f = Figure::named(stem, "breakdown", d.title);
  f.width = std::max(800, 90 * static_cast<int>(d.bars.size()) + 420);
  f.height = 620;
  std::vector<std::vector<std::string>> rows;
  double tallest = 0;
  for (std::size_t b = 0; b < d.bars.size(); ++b) {
    std::vector<std::string> row{d.bars[b]};
    double total = 0;
    for (std::size_t c = 0; c < d.classes.size(); ++c) {
      double v = (b < d.values.size() && c < d.values[b].size()) ? d.values[b][c] : 0;
      if (!std::isfinite(v) || v < 0) v = 0;
      total += v;
      row.push_back(gp_number(v));
    }
    tallest = std::max(tallest, total);
    rows.push_back(row);
  }
  std::vector<std::vector<std::string>> labels;
  if (d.value_labels)
    for (std::size_t b = 0; b < rows.size(); ++b) {
      double base = 0;
      for (std::size_t c = 0; c < d.classes.size(); ++c) {
        double v = std::stod(rows[b][c + 1] == "NaN" ? "0" : rows[b][c + 1]);
        if (v > 0.04 * tallest) {
          // White text on dark segments, near-black on light ones (yellow, sky blue, orange).
          long rgb = std::stol(colour(c).substr(1), nullptr, 16);
          double lum = 0.299 * ((rgb >> 16) & 255) + 0.587 * ((rgb >> 8) & 255) + 0.114 * (rgb & 255);
          labels.push_back({std::to_string(b), gp_number(base + v / 2), si_label(v), lum > 150 ? "2105376" : "16777215"});
        }
        base += v;
      }
    }
  if (!(tallest > 0)) tallest = 1;
  std::ostringstream s;
  s << "# bar, then one column per class (bottom first)\n" << data_block("d", rows);
  s << "# label positions: bar index, y, text, text colour (24-bit rgb)\n" << data_block("labels", labels);
  s << "set title " << title_text(d.title) << " font ',14'\n";
  s << "set style data histogram\nset style histogram rowstacked\nset style fill solid 0.9 border lc rgb '#ffffff'\n";
  s << "set boxwidth 0.7\nset yrange [0:" << gp_number(tallest * 1.08) << "]\n";
  s << "set ylabel " << title_text(d.y_label) << "\nset grid ytics lc rgb '#d0d0d0'\n";
  s << "set xtics nomirror scale 0 noenhanced" << (d.bars.size() > 6 ? " rotate by -35 left" : "") << "\n";
  s << "set key outside right top noenhanced font ',10' reverse Left invert\nset rmargin 24\n";
  s << "plot ";
  for (std::size_t c = 0; c < d.classes.size(); ++c)
    s << (c ? ", \\\n     " : "") << (c ? "''" : "$d") << " using " << (c + 2) << (c ? "" : ":xtic(1)") << " title "
      << gp_quote(d.classes[c]) << " lc rgb '" << colour(c) << "'";
  if (!labels.empty()) s << ", \\\n     $labels using 1:2:3:4 with labels font ',8' tc rgb variable notitle";
  if (d.classes.empty()) s << "NaN notitle";
  s << "\n";
  f.body = s.str();
  f.caption = "Time per operation class, stacked per phase (" + d.y_label + "); segments large enough carry their value.";
  return f;
}

}  // namespace arfit::plots

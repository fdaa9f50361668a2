// Error figures of an evaluation: predicted against measured, the distribution of signed errors, and the
// per-method summary bars (plots/figures.h).
#include "plots/figures.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "model/text.h"

namespace arfit::plots {

Figure error_scatter_figure(const ErrorData& d, const std::string& stem) {
  Figure f = Figure::named(stem, "errors", d.title);
  // The axes span the measured times (x3 each side); predictions beyond are pinned to the border and drawn as
  // triangles, so one wild prediction cannot squash every other point into a corner.
  double lo = INFINITY, hi = 0;
  for (const auto& se : d.series)
    for (const auto& [m, p] : se.measured_predicted)
      if (m > 0 && std::isfinite(p)) lo = std::min(lo, m), hi = std::max(hi, m);
  if (!(hi > 0)) lo = 1, hi = 1e4;
  double a = lo / 3, b = hi * 3;
  std::ostringstream s;
  std::size_t total = 0, pinned = 0;
  for (std::size_t i = 0; i < d.series.size(); ++i) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [m, p] : d.series[i].measured_predicted) {
      if (!(m > 0) || std::isnan(p)) continue;
      double y = p;
      bool out = !(p >= a && p <= b);
      if (out) y = p < a ? a : b, ++pinned;
      rows.push_back({gp_number(m), gp_number(y), out ? "1" : "0", gp_number(p)});
    }
    total = std::max(total, rows.size());
    s << gp_comment(d.series[i].name + " (measured_us, predicted_us drawn, pinned to the border, predicted_us)")
      << data_block("s" + std::to_string(i), rows);
  }
  // One square panel per method (small multiples: overlaid methods hide each other), same axes everywhere.
  std::string alpha = total > 2000 ? "A0" : total > 300 ? "60" : "00";
  double ps = total > 2000 ? 0.35 : total > 300 ? 0.5 : 0.8;
  std::size_t n = std::max<std::size_t>(1, d.series.size());
  std::size_t cols = n <= 1 ? 1 : n <= 4 ? 2 : 3;
  std::size_t rows = (n + cols - 1) / cols;
  const double P = 380, L = 95, G = 95, T = 80, V = 90, B = 70;  // panel side, margins and gaps in pixels
  f.width = static_cast<int>(L + cols * P + (cols - 1) * G + 30);
  f.height = static_cast<int>(T + rows * P + (rows - 1) * V + B);
  s << "set multiplot title " << title_text(d.title) << " font ',14'\n";
  s << "set logscale xy\nset grid lc rgb '#d0d0d0'\n";
  s << "set xrange [" << gp_number(a) << ":" << gp_number(b) << "]\nset yrange [" << gp_number(a) << ":" << gp_number(b) << "]\n";
  s << time_tics("x", a, b) << time_tics("y", a, b);
  s << "set xtics font ',9'\nset ytics font ',9'\n";
  s << "set key top left opaque box lc rgb '#bbbbbb' font ',9' samplen 1.5 width 1.5\nset samples 200\n";
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t r = i / cols, c = i % cols;
    double x0 = L + c * (P + G), y0 = T + r * (P + V);
    s << "# ---- panel " << i << " ----\n";
    s << panel_margins(x0 / f.width, (x0 + P) / f.width, 1 - (y0 + P) / f.height, 1 - y0 / f.height);
    bool bottom = i + cols >= n;
    s << "set xlabel " << (bottom ? "'measured time'" : "''") << "\nset ylabel " << (c == 0 ? "'predicted time'" : "''")
      << "\n";
    if (i >= d.series.size()) {
      s << "plot x with lines lc rgb '#000000' title 'y = x'\n";
      continue;
    }
    std::string col = series_colour(i).substr(1);
    s << "set title " << title_text(d.series[i].name + " (" + std::to_string(d.series[i].measured_predicted.size()) +
                                    " points)") << " font ',12'\n";
    if (i == 1) s << "unset key\n";
    s << "plot x with lines lc rgb '#000000' lw 1.5 title 'y = x', \\\n"
         "     1.1*x with lines lc rgb '#888888' dt 3 title '±10 %', \\\n"
         "     x/1.1 with lines lc rgb '#888888' dt 3 notitle";
    s << ", \\\n     $s" << i << " using 1:($3 == 0 ? $2 : NaN) with points pt 7 ps " << gp_number(ps) << " lc rgb '#" << alpha
      << col << "' notitle";
    if (pinned)
      s << ", \\\n     $s" << i << " using 1:($3 != 0 ? $2 : NaN) with points pt 8 ps 1.0 lc rgb '#" << col << "' notitle";
    s << "\n";
  }
  s << "unset multiplot\n";
  f.body = s.str();
  f.caption = "Each dot is one held-out point: measured time (x) against the predicted time (y) on log axes; on the "
              "solid y = x line the prediction is exact, the dotted lines are ±10 %.";
  if (pinned)
    f.caption += " " + std::to_string(pinned) + " predictions beyond 3x the measured range are pinned to the border (triangles).";
  return f;
}

Figure error_histogram_figure(const ErrorData& d, const std::string& stem, double bin, double clip) {
  Figure f = Figure::named(stem, "errors", d.title);
  f.width = 1000;
  f.height = 620;
  if (!(bin > 0)) bin = 1;
  if (!(clip > bin)) clip = 25 * bin;
  int nb = static_cast<int>(std::ceil(clip / bin));
  std::ostringstream s;
  double ymax = 0;
  for (std::size_t i = 0; i < d.series.size(); ++i) {
    std::vector<double> counts(static_cast<std::size_t>(2 * nb + 1), 0);
    double n = 0;
    for (const auto& [m, p] : d.series[i].measured_predicted) {
      if (!(m > 0) || !std::isfinite(p)) continue;
      double e = 100.0 * (p - m) / m;
      int k = static_cast<int>(std::lround(e / bin));
      k = std::clamp(k, -nb, nb);  // the end bins collect everything beyond +-clip
      counts[static_cast<std::size_t>(k + nb)] += 1;
      n += 1;
    }
    std::vector<std::vector<std::string>> rows;
    for (int k = -nb; k <= nb; ++k) {
      double share = n > 0 ? 100.0 * counts[static_cast<std::size_t>(k + nb)] / n : 0;
      ymax = std::max(ymax, share);
      rows.push_back({gp_number(k * bin), gp_number(share)});
    }
    s << gp_comment(d.series[i].name + " (relative error bin centre %, share of points %), " + format_number(n, "%.0f") + " points");
    s << data_block("h" + std::to_string(i), rows);
  }
  if (!(ymax > 0)) ymax = 1;
  s << "set title " << title_text(d.title) << " font ',14'\n";
  s << "set grid ytics lc rgb '#d0d0d0'\n";
  s << "set xrange [" << gp_number(-(nb + 0.5) * bin) << ":" << gp_number((nb + 0.5) * bin) << "]\n";
  s << "set yrange [0:" << gp_number(ymax * 1.12) << "]\n";
  s << "set xlabel 'relative error (predicted − measured) / measured (%); end bins hold everything beyond ±" << format_number(clip, "%g")
    << " %'\n";
  s << "set ylabel 'share of points (%)'\nset xtics out nomirror\nset ytics nomirror\n";
  s << "set arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb '#000000' dt 2\n";
  s << "set key top right box lc rgb '#bbbbbb' font ',10'\n";
  s << "plot ";
  for (std::size_t i = 0; i < d.series.size(); ++i)
    s << (i ? ", \\\n     " : "") << "$h" << i << " using 1:2 with histeps lw 2.2 lc rgb '" << series_colour(i) << "' title "
      << title_text(d.series[i].name);
  if (d.series.empty()) s << "NaN notitle";
  s << "\n";
  f.body = s.str();
  f.caption = "Distribution of signed relative errors per model family or method, as a share of its points (" +
              format_number(bin, "%g") + " % bins): narrow and centred on 0 is good; mass at the ends is error beyond ±" +
              format_number(clip, "%g") + " %.";
  return f;
}

Figure error_summary_figure(const ErrorSummaryData& d, const std::string& stem) {
  Figure f = Figure::named(stem, "errors", d.title);
  std::size_t nm = std::max<std::size_t>(1, d.metrics.size());
  f.width = std::max(760, static_cast<int>((40 * nm + 50) * d.methods.size()) + 220);
  f.height = 580;
  std::vector<std::vector<std::string>> rows;
  double ymax = 0;
  for (const auto& m : d.methods) {
    std::vector<std::string> row{m.name};
    for (std::size_t k = 0; k < d.metrics.size(); ++k) {
      double x = k < m.values.size() ? m.values[k] : NAN;
      row.push_back(std::isfinite(x) ? gp_number(x) : std::string("NaN"));
      if (std::isfinite(x)) ymax = std::max(ymax, x);
    }
    rows.push_back(row);
  }
  if (!(ymax > 0)) ymax = 1;
  std::ostringstream s;
  s << gp_comment("method" + (d.metrics.empty() ? std::string() : ", " + join(d.metrics, ", "))) << data_block("d", rows);
  s << "set title " << title_text(d.title) << " font ',14'\n";
  s << "set style data histogram\nset style histogram cluster gap 1\nset style fill solid 0.85 border -1\n";
  s << "set yrange [0:" << gp_number(ymax * 1.18) << "]\nset ylabel " << title_text(d.y_label) << "\nset grid ytics lc rgb '#d0d0d0'\n";
  s << "set xtics nomirror scale 0 noenhanced\nset key top left font ',10'\n";
  static const std::size_t colour_of[] = {0, 5, 1, 2, 3, 4, 6, 7};
  s << "plot ";
  double w = 1.0 / (static_cast<double>(nm) + 1.0);  // bar width in a cluster with gap 1
  for (std::size_t k = 0; k < d.metrics.size(); ++k)
    s << (k ? ", \\\n     ''" : "$d") << " using " << (k + 2) << (k ? "" : ":xtic(1)") << " title " << title_text(d.metrics[k])
      << " lc rgb '" << series_colour(colour_of[k % 8]) << "'";
  // Every bar gets its value on top (rotated when the bars are narrow).
  for (std::size_t k = 0; k < d.metrics.size(); ++k) {
    double off = (static_cast<double>(k) - (static_cast<double>(nm) - 1) / 2.0) * w;
    s << ", \\\n     '' using ($0 + " << gp_number(off) << "):" << (k + 2) << ":(sprintf('%.3g', $" << (k + 2)
      << ")) with labels offset 0,0.7 font ',9' notitle";
  }
  if (d.metrics.empty()) s << "NaN notitle";
  s << "\n";
  f.body = s.str();
  f.caption = d.caption.empty() ? "Error of each method on the held-out points (GMAE as in the DLRM paper, median and "
                                  "90th percentile of the relative error), lower is better."
                                : d.caption;
  return f;
}

}  // namespace arfit::plots

// Grid figures over tokens x hidden (or sizes): strategy heatmaps, best-strategy maps, difference and
// regret maps (plots/figures.h).
#include "plots/figures.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "model/text.h"

namespace arfit::plots {

namespace {

struct GridLayout {
  std::vector<std::int64_t> xs, ys;  // distinct axis values, ascending (union over panels)
  std::map<std::int64_t, int> xpos, ypos;
  int cols = 1, rows = 1;
  double cell_w = 24, cell_h = 22;   // pixels
  double left = 95, gap = 70, right = 40, top = 78, bottom = 75, vgap = 85;  // pixels
  int width = 0, height = 0;
  double panel_w = 0, panel_h = 0;

  // Panel k's screen box.
  double x0(int k) const { return (left + (k % cols) * (panel_w + gap)) / width; }
  double x1(int k) const { return (left + (k % cols) * (panel_w + gap) + panel_w) / width; }
  double y1(int k) const { return 1.0 - (top + (k / cols) * (panel_h + vgap)) / height; }
  double y0(int k) const { return 1.0 - (top + (k / cols) * (panel_h + vgap) + panel_h) / height; }
};

GridLayout layout_grid(const std::vector<GridPanel>& panels, int max_cols, double cell_w, double cell_h, double right,
                       double extra_bottom, const std::string& title) {
  GridLayout g;
  std::set<std::int64_t> xs, ys;
  for (const auto& p : panels)
    for (const auto& c : p.cells) {
      xs.insert(c.x);
      ys.insert(c.y);
    }
  g.xs.assign(xs.begin(), xs.end());
  g.ys.assign(ys.begin(), ys.end());
  for (std::size_t i = 0; i < g.xs.size(); ++i) g.xpos[g.xs[i]] = static_cast<int>(i);
  for (std::size_t i = 0; i < g.ys.size(); ++i) g.ypos[g.ys[i]] = static_cast<int>(i);
  int n = std::max<int>(1, static_cast<int>(panels.size()));
  g.cols = std::min(n, max_cols);
  g.rows = (n + g.cols - 1) / g.cols;
  g.cell_w = cell_w;
  g.cell_h = cell_h;
  g.right = right;
  g.bottom += extra_bottom;
  g.panel_w = std::max(220.0, cell_w * std::max<std::size_t>(1, g.xs.size()));
  g.panel_h = std::max(140.0, cell_h * std::max<std::size_t>(1, g.ys.size()));
  g.width = static_cast<int>(g.left + g.cols * g.panel_w + (g.cols - 1) * g.gap + g.right);
  g.height = static_cast<int>(g.top + g.rows * g.panel_h + (g.rows - 1) * g.vgap + g.bottom);
  // Wide enough for the title (about 9.5 px per character at 14 pt): extra room is split between both sides.
  int min_width = std::max(640, static_cast<int>(9.5 * static_cast<double>(title.size())) + 60);
  if (g.width < min_width) {
    double extra = min_width - g.width;
    g.left += extra / 2;
    g.right += extra / 2;
    g.width = min_width;
  }
  return g;
}

std::string axis_label_text(std::int64_t v, AxisStyle style) {
  switch (style) {
    case AxisStyle::Pow2: return pow2_label(v);
    case AxisStyle::Bytes: return bytes_label(static_cast<double>(v));
    case AxisStyle::Plain: return si_label(static_cast<double>(v));
  }
  return std::to_string(v);
}

// Tick list for an index axis; every `step`-th value labelled so labels never collide.
std::string index_tics(const std::string& axis, const std::vector<std::int64_t>& vals, AxisStyle style, double cell_px,
                       double label_px) {
  int step = 1;
  while (cell_px * step < label_px) ++step;
  std::string out = "set " + axis + "tics (";
  bool first = true;
  for (std::size_t i = 0; i < vals.size(); i += static_cast<std::size_t>(step)) {
    if (!first) out += ", ";
    first = false;
    out += gp_quote(axis_label_text(vals[i], style)) + " " + std::to_string(i);
  }
  return out + ") scale 0 font ',9'\n";
}

// Raw label; title_text() escapes it for enhanced text.
std::string axis_title(const GridAxis& a) { return a.label; }

// Panel k's margins, title and axis titles: the x title on the bottom row only, the y title on the first column.
std::string panel_head(const GridLayout& g, int k, std::size_t panels, const std::string& title, const GridAxis& x,
                       const GridAxis& y) {
  std::string out = panel_margins(g.x0(k), g.x1(k), g.y0(k), g.y1(k));
  out += "set title " + title_text(title) + " font ',12'\n";
  const bool bottom_row = (k / g.cols == g.rows - 1) || (k + g.cols >= static_cast<int>(panels));
  out += "set xlabel " + (bottom_row ? title_text(axis_title(x)) : std::string("''")) + "\n";
  out += "set ylabel " + (k % g.cols == 0 ? title_text(axis_title(y)) : std::string("''")) + "\n";
  return out;
}

std::string panel_background() {
  return "set object 1 rectangle from graph 0,0 to graph 1,1 behind fc rgb '#d9d9d9' fs solid 1.0 noborder\n";
}

std::string percent_text(double v) {
  if (!std::isfinite(v)) return "";
  if (v < 0.5) return "";  // best (or within rounding of it): left blank, the cell is white
  if (v >= 999.5) return ">999";
  return format_number(v, "%.0f");
}

// The colour bar's range: percent maps from 0 to the largest value (at least 5, at most 100: one very slow cell must
// not wash out the rest; its number is still written); time maps span the finite positive values on a log scale.
void heatmap_color_range(const HeatmapData& d, bool percent, double& cb0, double& cb1) {
  double vmin = INFINITY, vmax = 0;
  for (const auto& p : d.panels)
    for (const auto& c : p.cells)
      if (std::isfinite(c.value) && (percent ? c.value >= 0 : c.value > 0)) {
        vmin = std::min(vmin, c.value);
        vmax = std::max(vmax, c.value);
      }
  if (percent) {
    cb0 = 0;
    cb1 = vmax > 0 ? vmax : 1;
    if (cb1 > 100) cb1 = 100;
    cb1 = std::max(cb1, 5.0);
  } else {
    if (!(vmax > 0)) vmin = 1, vmax = 10;
    cb0 = vmin;
    cb1 = vmax;
    if (cb1 / cb0 < 1.5) cb0 /= 1.25, cb1 *= 1.25;  // a flat map still gets a readable bar
  }
}

// One data block per panel: cell position, value, the percent text and the cell's axis indices.
std::string heatmap_data_blocks(const HeatmapData& d, const GridLayout& g, bool percent) {
  std::ostringstream s;
  for (std::size_t k = 0; k < d.panels.size(); ++k) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : d.panels[k].cells) {
      if (!std::isfinite(c.value)) continue;
      rows.push_back({std::to_string(g.xpos.at(c.x)), std::to_string(g.ypos.at(c.y)), gp_number(c.value),
                      percent ? percent_text(c.value) : "", std::to_string(c.x), std::to_string(c.y)});
    }
    s << gp_comment("panel " + std::to_string(k) + ": " + d.panels[k].title + " (x index, y index, value, text, " +
                    d.x.label + ", " + d.y.label + ")");
    s << data_block("p" + std::to_string(k), rows);
  }
  return s.str();
}

// The settings every panel shares: palette and colour range, axes ranges and tics, border, background.
std::string heatmap_shared_settings(const HeatmapData& d, const GridLayout& g, bool percent, double cb0, double cb1) {
  std::ostringstream s;
  if (percent) {
    s << "set palette defined (0 '#ffffff', 0.15 '#fee5d9', 0.4 '#fcae91', 0.7 '#fb6a4a', 1 '#de2d26')\n";
    s << "unset logscale cb\nset cbrange [0:" << gp_number(cb1) << "]\n";
  } else {
    s << "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', 0.75 '#5ec962', 1 '#fde725')\n";
    s << "set logscale cb\nset cbrange [" << gp_number(cb0) << ":" << gp_number(cb1) << "]\n" << time_tics("cb", cb0, cb1);
  }
  s << "set cblabel " << title_text(d.value_label) << " offset 1,0\n";
  s << "set xrange [-0.5:" << gp_number(g.xs.size() - 0.5) << "]\nset yrange [-0.5:" << gp_number(g.ys.size() - 0.5) << "]\n";
  s << index_tics("x", g.xs, d.x.style, g.cell_w, 34);
  s << index_tics("y", g.ys, d.y.style, g.cell_h, 14);
  s << "set border lw 1\nunset key\n" << panel_background();
  return s.str();
}

// Panel k: its head, the colour bar beside the last panel only, and its cells (with their numbers when annotated).
std::string heatmap_panel(const HeatmapData& d, const GridLayout& g, std::size_t k, bool annotate) {
  std::ostringstream s;
  s << "# ---- panel " << k << " ----\n";
  s << panel_head(g, static_cast<int>(k), d.panels.size(), d.panels[k].title, d.x, d.y);
  if (k + 1 == d.panels.size()) {
    double cx = (g.left + g.cols * g.panel_w + (g.cols - 1) * g.gap + 22) / g.width;
    double ytop = g.y1(0), ybot = g.y0(static_cast<int>((g.rows - 1) * g.cols));
    s << "set colorbox user origin screen " << gp_number(cx) << "," << gp_number(ybot) << " size screen " << gp_number(18.0 / g.width)
      << "," << gp_number(ytop - ybot) << "\n";
  } else {
    s << "unset colorbox\n";
  }
  bool has_cells = false;
  for (const auto& c : d.panels[k].cells) has_cells = has_cells || std::isfinite(c.value);
  if (!has_cells) {
    s << "plot NaN notitle\n";
    return s.str();
  }
  const std::string p = "$p" + std::to_string(k);
  s << "plot " << p << " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder fc palette notitle";
  if (annotate) s << ", \\\n     " << p << " using 1:2:4 with labels font ',8' tc rgb '#202020' notitle";
  s << "\n";
  return s.str();
}

std::string heatmap_caption(const HeatmapData& d, const std::string& kind, bool percent) {
  std::string caption;
  if (percent && kind == "regret")
    caption = "Each cell shows how much slower the chosen strategy measured than the measured best, in %; white "
              "(blank) cells are where the choice was the best (or within 0.5 %), grey cells have no measurement.";
  else if (percent)
    caption = "Each cell shows how much slower than the best strategy this one is, in %; white (blank) cells are where "
              "it is the best, grey cells have no data.";
  else
    caption = "Colour is the time in µs on a log scale, one shared colour bar for all panels, so panels compare "
              "directly; grey cells have no data.";
  if (!d.caption.empty()) caption += " " + d.caption;
  return caption;
}

}  // namespace

Figure heatmap_figure(const HeatmapData& d, const std::string& stem, const std::string& kind) {
  Figure f = Figure::named(stem, kind, d.title);
  const bool percent = d.scale == GridScale::Percent;
  const bool annotate = d.annotate || percent;
  // Annotated cells need room for "123": wide grids (byte axes) stack their panels in one column.
  std::set<std::int64_t> distinct_x;
  for (const auto& p : d.panels)
    for (const auto& c : p.cells) distinct_x.insert(c.x);
  const int max_cols = annotate ? (distinct_x.size() > 16 ? 1 : 2) : 3;
  const GridLayout g = layout_grid(d.panels, max_cols, annotate ? 40 : 30, annotate ? 24 : 28, 140, 0, d.title);
  f.width = g.width;
  f.height = g.height;
  double cb0, cb1;
  heatmap_color_range(d, percent, cb0, cb1);
  std::ostringstream s;
  s << heatmap_data_blocks(d, g, percent);
  s << "set multiplot title " << title_text(d.title) << " font ',14'\n";
  s << heatmap_shared_settings(d, g, percent, cb0, cb1);
  for (std::size_t k = 0; k < d.panels.size(); ++k) s << heatmap_panel(d, g, k, annotate);
  s << "unset multiplot\n";
  f.body = s.str();
  f.caption = heatmap_caption(d, kind, percent);
  return f;
}

std::vector<double> strategy_shares(const BestMapData& d) {
  std::vector<double> counts(d.strategies.size(), 0);
  double total = 0;
  for (const auto& p : d.panels)
    for (const auto& c : p.cells)
      if (c.category >= 0 && c.category < static_cast<int>(counts.size())) {
        counts[static_cast<std::size_t>(c.category)] += 1;
        total += 1;
      }
  for (auto& v : counts) v = total > 0 ? 100.0 * v / total : 0;
  return counts;
}

namespace {

bool has_category(const BestMapData& d, const GridCell& c) {
  return c.category >= 0 && c.category < static_cast<int>(d.strategies.size());
}

// One data block per panel: (x index, y index, rgb, measured, uncertain, strategy, x, y) of each cell with a strategy.
std::string best_map_blocks(const BestMapData& d, const GridLayout& g) {
  std::ostringstream s;
  for (std::size_t k = 0; k < d.panels.size(); ++k) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : d.panels[k].cells) {
      if (!has_category(d, c)) continue;
      std::string hex = series_colour(static_cast<std::size_t>(c.category));
      long rgb = std::stol(hex.substr(1), nullptr, 16);
      rows.push_back({std::to_string(g.xpos.at(c.x)), std::to_string(g.ypos.at(c.y)), std::to_string(rgb),
                      c.measured ? "1" : "0", c.uncertain ? "1" : "0", d.strategies[static_cast<std::size_t>(c.category)],
                      std::to_string(c.x), std::to_string(c.y)});
    }
    s << gp_comment("panel " + std::to_string(k) + ": " + d.panels[k].title +
                    " (x index, y index, rgb, measured, uncertain, strategy, " + d.x.label + ", " + d.y.label + ")");
    s << data_block("p" + std::to_string(k), rows);
  }
  return s.str();
}

// Panel k: coloured cells, outlines on uncertain ones, dots on measured ones.
std::string best_map_panel(const BestMapData& d, const GridLayout& g, std::size_t k) {
  std::ostringstream s;
  s << "# ---- panel " << k << " ----\n";
  s << panel_head(g, static_cast<int>(k), d.panels.size(), d.panels[k].title, d.x, d.y);
  const std::string p = "$p" + std::to_string(k);
  std::vector<std::string> parts;
  bool has = false, has_measured = false, has_uncertain = false;
  for (const auto& c : d.panels[k].cells) {
    if (!has_category(d, c)) continue;
    has = true;
    has_measured = has_measured || c.measured;
    has_uncertain = has_uncertain || c.uncertain;
  }
  if (has) parts.push_back(p + " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc rgb variable notitle");
  if (has_uncertain)
    parts.push_back(p + " using 1:($5 > 0 ? $2 : NaN):(0.42):(0.42) with boxxyerror lc rgb '#111111' lw 2.5 fs empty notitle");
  if (has_measured)
    parts.push_back(p + " using 1:($4 > 0 ? $2 : NaN) with points pt 7 ps 0.55 lc rgb '#111111' notitle");
  if (parts.empty()) {
    s << "plot NaN notitle\n";
    return s.str();
  }
  s << "plot ";
  for (std::size_t i = 0; i < parts.size(); ++i) s << (i ? ", \\\n     " : "") << parts[i];
  s << "\n";
  return s.str();
}

// The legend: each strategy with its share of the cells, then the markers in use.
std::string best_map_legend(const BestMapData& d, const std::vector<double>& shares, bool any_measured,
                            bool any_uncertain, double key_y) {
  std::vector<std::string> legend;
  for (std::size_t i = 0; i < d.strategies.size(); ++i)
    legend.push_back("NaN with boxes fs solid 1.0 noborder lc rgb '" + series_colour(i) + "' title " +
                     title_text(d.strategies[i] + " " + format_number(shares[i], "%.0f") + " %"));
  if (any_measured) legend.push_back("NaN with points pt 7 ps 0.55 lc rgb '#111111' title 'measured cell'");
  if (any_uncertain)
    legend.push_back("NaN with boxes lc rgb '#111111' lw 2.5 fs empty title 'uncertain (intervals overlap)'");
  return legend_panel(key_y, legend, 4);
}

std::string best_map_caption(const BestMapData& d, const std::vector<double>& shares, bool any_measured,
                             bool any_uncertain) {
  std::ostringstream cap;
  cap << "The fastest strategy per cell (colour); ";
  if (any_measured) cap << "dots mark measured cells, the rest are predicted; ";
  if (any_uncertain) cap << "outlined cells are uncertain (best and runner-up overlap within their 90 % intervals); ";
  cap << "grey cells have no data. Shares:";
  for (std::size_t i = 0; i < d.strategies.size(); ++i)
    cap << (i ? ", " : " ") << d.strategies[i] << " " << format_number(shares[i], "%.1f") << " %";
  cap << ".";
  return cap.str();
}

}  // namespace

Figure best_map_figure(const BestMapData& d, const std::string& stem) {
  Figure f = Figure::named(stem, "best", d.title);
  std::vector<double> shares = strategy_shares(d);
  bool any_measured = false, any_uncertain = false;
  for (const auto& p : d.panels)
    for (const auto& c : p.cells) {
      any_measured = any_measured || c.measured;
      any_uncertain = any_uncertain || c.uncertain;
    }
  std::size_t key_entries = d.strategies.size() + (any_measured ? 1 : 0) + (any_uncertain ? 1 : 0);
  int key_rows = static_cast<int>((key_entries + 3) / 4);
  GridLayout g = layout_grid(d.panels, 3, 30, 28, 30, 26.0 * key_rows + 10, d.title);
  f.width = g.width;
  f.height = g.height;

  std::ostringstream s;
  s << best_map_blocks(d, g);
  s << "set multiplot title " << title_text(d.title) << " font ',14'\n";
  s << "set xrange [-0.5:" << gp_number(g.xs.size() - 0.5) << "]\nset yrange [-0.5:" << gp_number(g.ys.size() - 0.5) << "]\n";
  s << index_tics("x", g.xs, d.x.style, g.cell_w, 34);
  s << index_tics("y", g.ys, d.y.style, g.cell_h, 14);
  s << "set border lw 1\n" << panel_background();
  s << "unset key\n";
  for (std::size_t k = 0; k < d.panels.size(); ++k) s << best_map_panel(d, g, k);
  s << best_map_legend(d, shares, any_measured, any_uncertain, (26.0 * key_rows + 12) / g.height);
  s << "unset multiplot\n";
  f.body = s.str();
  f.caption = best_map_caption(d, shares, any_measured, any_uncertain);
  return f;
}

}  // namespace arfit::plots

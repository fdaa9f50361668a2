#include "plots/figures.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "model/bus_factor.h"
#include "model/text.h"

namespace arfit::plots {

namespace {

std::string num(double v) { return gp_number(v); }

}  // namespace

std::string panel_margins(double x0, double x1, double y0, double y1) {
  return "set lmargin at screen " + num(x0) + "\nset rmargin at screen " + num(x1) + "\nset bmargin at screen " +
         num(y0) + "\nset tmargin at screen " + num(y1) + "\n";
}

std::string SeriesColours::operator()(const std::string& series) {
  auto it = index_.find(series);
  if (it == index_.end()) it = index_.emplace(series, index_.size()).first;
  return series_colour(it->second);
}

std::string title_text(const std::string& s) { return gp_quote(gp_enhanced_escape(s)); }

std::string multiplot_title(const std::string& title, const std::string& subtitle) {
  // A double-quoted gnuplot string (for the "\n"): the enhanced-text backslashes must be doubled.
  auto dquote = [](const std::string& t) {
    std::string out;
    for (char ch : t) {
      if (ch == '\\' || ch == '"') out += '\\';
      out += ch;
    }
    return out;
  };
  std::string text = dquote(gp_enhanced_escape(title));
  if (!subtitle.empty()) text += "\\n{/*0.85 " + dquote(gp_enhanced_escape(subtitle)) + "}";
  return "set multiplot title \"" + text + "\" font ',14'\n";
}

std::string legend_panel(double top, const std::vector<std::string>& entries, int max_cols) {
  if (entries.empty()) return "";
  std::ostringstream s;
  s << "# ---- legend ----\n";
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
  return out.empty() ? "figure" : out;
}

// ============================================ fit =========================================================

Figure fit_figure(const FitFigureData& d, const std::string& stem) {
  Figure f;
  f.stem = stem;
  f.kind = "fit";
  f.title = d.title;
  f.width = 1300;
  f.height = 640;

  double xmin = INFINITY, xmax = 0, tmin = INFINITY, tmax = 0, bmin = INFINITY, bmax = 0;
  auto see = [&](double bytes, double t, Collective c, int n) {
    if (!(bytes > 0) || !(t > 0)) return;
    xmin = std::min(xmin, bytes);
    xmax = std::max(xmax, bytes);
    tmin = std::min(tmin, t);
    tmax = std::max(tmax, t);
    double bw = bus_bw_gbps(c, std::max(1, n), bytes, t);
    if (bw > 0) {
      bmin = std::min(bmin, bw);
      bmax = std::max(bmax, bw);
    }
  };

  std::ostringstream s;
  bool any_band = false, any_held = false;
  for (std::size_t i = 0; i < d.measured.size(); ++i) {
    const auto& m = d.measured[i];
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : m.points) {
      if (!(p.bytes > 0) || !(p.time_us > 0)) continue;
      see(p.bytes, p.time_us, m.collective, m.nranks);
      any_held = any_held || p.held_out;
      rows.push_back({num(p.bytes), num(p.time_us), num(bus_bw_gbps(m.collective, std::max(1, m.nranks), p.bytes, p.time_us)),
                      p.held_out ? "1" : "0"});
    }
    s << "# measured: " << m.label << " (bytes, time_us, busbw_GBps, held_out)\n";
    s << data_block("m" + std::to_string(i), rows);
  }
  for (std::size_t i = 0; i < d.curves.size(); ++i) {
    const auto& c = d.curves[i];
    std::vector<std::vector<std::string>> rows;
    int n = std::max(1, c.nranks);
    for (const auto& p : c.points) {
      if (!(p.bytes > 0) || !(p.time_us > 0)) continue;
      see(p.bytes, p.time_us, c.collective, n);
      bool band = p.lo_us > 0 && p.hi_us > 0;
      if (band) {
        any_band = true;
        see(p.bytes, p.lo_us, c.collective, n);
        see(p.bytes, p.hi_us, c.collective, n);
      }
      rows.push_back({num(p.bytes), num(p.time_us), band ? num(p.lo_us) : "NaN", band ? num(p.hi_us) : "NaN",
                      num(bus_bw_gbps(c.collective, n, p.bytes, p.time_us)),
                      band ? num(bus_bw_gbps(c.collective, n, p.bytes, p.hi_us)) : "NaN",
                      band ? num(bus_bw_gbps(c.collective, n, p.bytes, p.lo_us)) : "NaN"});
    }
    s << "# curve: " << c.label << " (bytes, time_us, lo_us, hi_us, busbw, busbw_lo, busbw_hi)\n";
    s << data_block("c" + std::to_string(i), rows);
  }
  if (!(xmax > 0)) {  // nothing to draw: an empty, labelled frame rather than a gnuplot error
    xmin = 1024, xmax = 1 << 30, tmin = 1, tmax = 1e4, bmin = 0.01, bmax = 100;
  }
  if (!(bmax > 0)) bmin = 0.01, bmax = 100;
  double x0 = xmin / 1.6, x1 = xmax * 1.6, t0 = tmin / 1.6, t1 = tmax * 1.6, b0 = bmin / 1.6, b1 = bmax * 1.6;

  // Legend rows: at most 4 entries per row below the panels.
  std::size_t entries = d.curves.size() + (any_band ? 1 : 0);
  for (const auto& m : d.measured) {
    bool held = false, train = false;
    for (const auto& p : m.points) (p.held_out ? held : train) = true;
    entries += (held ? 1 : 0) + (train ? 1 : 0);
  }
  int key_rows = static_cast<int>((entries + 3) / 4);
  double key_h = 0.045 * std::max(1, key_rows);
  double bottom = 0.13 + key_h;
  double top = d.subtitle.empty() ? 0.88 : 0.85;

  s << multiplot_title(d.title, d.subtitle);
  s << "set logscale xy\nset grid xtics ytics lc rgb '#d0d0d0' lw 1\nset border lw 1.2\n";
  s << "set xrange [" << num(x0) << ":" << num(x1) << "]\n";
  s << bytes_tics("x", x0, x1, 11);
  s << "set xlabel 'message size (bytes; K = 1024)'\n";
  s << "unset key\n";
  for (std::size_t i = 0; i < d.turning_points.size(); ++i) {
    const auto& tp = d.turning_points[i];
    if (!(tp.bytes > 0)) continue;
    s << "set arrow " << (i + 1) << " from " << num(tp.bytes) << ", graph 0 to " << num(tp.bytes)
      << ", graph 1 nohead dt 3 lw 1.5 lc rgb '#555555'\n";
    s << "set label " << (i + 1) << " " << title_text(tp.label + " = " + bytes_label(tp.bytes)) << " at " << num(tp.bytes)
      << ", graph 0.97 right rotate by 90 offset -1,0 font ',9' tc rgb '#444444'\n";
  }

  // One plot command per panel; `which` = 0 latency, 1 bus bandwidth. Titles go to the legend panel.
  SeriesColours colours;
  std::vector<std::string> legend;
  auto plot_cmd = [&](int which) {
    std::vector<std::string> parts;
    bool band_titled = false;
    for (std::size_t i = 0; i < d.curves.size(); ++i) {
      const auto& c = d.curves[i];
      bool has_band = false;
      for (const auto& p : c.points) has_band = has_band || (p.lo_us > 0 && p.hi_us > 0);
      if (!has_band) continue;
      std::string col = colours(c.series.empty() ? c.label : c.series);
      std::string cols = which == 0 ? "1:3:4" : "1:6:7";
      if (which == 0 && !band_titled)
        legend.push_back("NaN with boxes fs solid 0.3 noborder fc rgb '#9a9a9a' title '90 % prediction interval'");
      band_titled = true;
      parts.push_back("$c" + std::to_string(i) + " using " + cols + " with filledcurves fc rgb '" + col +
                      "' fs transparent solid 0.18 noborder notitle");
    }
    for (std::size_t i = 0; i < d.curves.size(); ++i) {
      const auto& c = d.curves[i];
      std::string col = colours(c.series.empty() ? c.label : c.series);
      std::string cols = which == 0 ? "1:2" : "1:5";
      std::string style = "with lines lw 2.2 dt " + std::string(c.dashed ? "2" : "1") + " lc rgb '" + col + "'";
      parts.push_back("$c" + std::to_string(i) + " using " + cols + " " + style + " notitle");
      if (which == 0) legend.push_back("NaN " + style + " title " + title_text(c.label));
    }
    for (std::size_t i = 0; i < d.measured.size(); ++i) {
      const auto& m = d.measured[i];
      std::string col = colours(m.series.empty() ? m.label : m.series);
      std::string y = which == 0 ? "$2" : "$3";
      bool held = false, train = false;
      for (const auto& p : m.points) (p.held_out ? held : train) = true;
      std::string train_style = "with points pt 7 ps 0.9 lc rgb '" + col + "'";
      std::string held_style = "with points pt 6 ps 1.3 lw 1.5 lc rgb '" + col + "'";
      if (train) {
        parts.push_back("$m" + std::to_string(i) + " using 1:($4 == 0 ? " + y + " : NaN) " + train_style + " notitle");
        if (which == 0) legend.push_back("NaN " + train_style + " title " + title_text(m.label));
      }
      if (held) {
        parts.push_back("$m" + std::to_string(i) + " using 1:($4 != 0 ? " + y + " : NaN) " + held_style + " notitle");
        if (which == 0) legend.push_back("NaN " + held_style + " title " + title_text(m.label + " (held out)"));
      }
    }
    if (parts.empty()) return std::string("plot NaN notitle\n");
    std::string out = "plot ";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", \\\n     " : "") + parts[i];
    return out + "\n";
  };

  s << "# ---- left: latency ----\n";
  s << panel_margins(0.075, 0.475, bottom, top);
  s << "set yrange [" << num(t0) << ":" << num(t1) << "]\n" << time_tics("y", t0, t1);
  s << "set ylabel 'latency'\nset title 'latency (median per size)' font ',12'\n";
  s << plot_cmd(0);
  s << "# ---- right: bus bandwidth ----\n";
  s << panel_margins(0.575, 0.975, bottom, top);
  s << "set yrange [" << num(b0) << ":" << num(b1) << "]\n" << log_tics("y", b0, b1);
  s << "set ylabel 'bus bandwidth (GB/s)'\nset title 'bus bandwidth = bus factor × size / time' font ',12'\n";
  s << plot_cmd(1);
  s << legend_panel(bottom - 0.1, legend, 4);
  s << "unset multiplot\n";
  f.body = s.str();

  std::ostringstream cap;
  cap << "Latency (left) and bus bandwidth (right) against message size on log axes; dots are measured points"
      << (any_held ? ", open circles held-out points the fit did not see" : "")
      << (d.curves.empty() ? "" : ", lines the fitted model")
      << (any_band ? " with its 90 % prediction interval shaded" : "");
  bool any_dashed = false;
  for (const auto& c : d.curves) any_dashed = any_dashed || c.dashed;
  if (any_dashed) cap << "; dashed lines are predictions where nothing was measured (other TP or SM)";
  if (!d.turning_points.empty()) cap << "; dotted verticals mark the seed model's turning points";
  cap << ".";
  f.caption = cap.str();
  return f;
}

// ============================================ grids =======================================================

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
    out += "'" + axis_label_text(vals[i], style) + "' " + std::to_string(i);
  }
  return out + ") scale 0 font ',9'\n";
}

// Raw label; title_text() escapes it for enhanced text.
std::string axis_title(const GridAxis& a) { return a.label; }

std::string panel_background() {
  return "set object 1 rectangle from graph 0,0 to graph 1,1 behind fc rgb '#d9d9d9' fs solid 1.0 noborder\n";
}

std::string percent_text(double v) {
  if (!std::isfinite(v)) return "";
  if (v < 0.5) return "";  // best (or within rounding of it): left blank, the cell is white
  if (v >= 999.5) return ">999";
  return format_number(v, "%.0f");
}

}  // namespace

Figure heatmap_figure(const HeatmapData& d, const std::string& stem, const std::string& kind) {
  Figure f;
  f.stem = stem;
  f.kind = kind;
  f.title = d.title;
  bool percent = d.scale == GridScale::Percent;
  bool annotate = d.annotate || percent;
  // Annotated cells need room for "123": wide grids (byte axes) stack their panels in one column.
  std::set<std::int64_t> distinct_x;
  for (const auto& p : d.panels)
    for (const auto& c : p.cells) distinct_x.insert(c.x);
  int max_cols = annotate ? (distinct_x.size() > 16 ? 1 : 2) : 3;
  GridLayout g = layout_grid(d.panels, max_cols, annotate ? 40 : 30, annotate ? 24 : 28, 140, 0, d.title);
  f.width = g.width;
  f.height = g.height;

  double vmin = INFINITY, vmax = 0;
  for (const auto& p : d.panels)
    for (const auto& c : p.cells)
      if (std::isfinite(c.value) && (percent ? c.value >= 0 : c.value > 0)) {
        vmin = std::min(vmin, c.value);
        vmax = std::max(vmax, c.value);
      }
  double cb0, cb1;
  if (percent) {
    cb0 = 0;
    cb1 = vmax > 0 ? vmax : 1;
    if (cb1 > 100) cb1 = 100;  // one very slow cell must not wash out the rest; the number is still written
    cb1 = std::max(cb1, 5.0);
  } else {
    if (!(vmax > 0)) vmin = 1, vmax = 10;
    cb0 = vmin;
    cb1 = vmax;
    if (cb1 / cb0 < 1.5) cb0 /= 1.25, cb1 *= 1.25;  // a flat map still gets a readable bar
  }

  std::ostringstream s;
  for (std::size_t k = 0; k < d.panels.size(); ++k) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : d.panels[k].cells) {
      if (!std::isfinite(c.value)) continue;
      rows.push_back({std::to_string(g.xpos[c.x]), std::to_string(g.ypos[c.y]), num(c.value),
                      percent ? percent_text(c.value) : "", std::to_string(c.x), std::to_string(c.y)});
    }
    s << "# panel " << k << ": " << d.panels[k].title << " (x index, y index, value, text, " << d.x.label << ", "
      << d.y.label << ")\n";
    s << data_block("p" + std::to_string(k), rows);
  }
  s << "set multiplot title " << title_text(d.title) << " font ',14'\n";
  if (percent) {
    s << "set palette defined (0 '#ffffff', 0.15 '#fee5d9', 0.4 '#fcae91', 0.7 '#fb6a4a', 1 '#de2d26')\n";
    s << "unset logscale cb\nset cbrange [0:" << num(cb1) << "]\n";
  } else {
    s << "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', 0.75 '#5ec962', 1 '#fde725')\n";
    s << "set logscale cb\nset cbrange [" << num(cb0) << ":" << num(cb1) << "]\n" << time_tics("cb", cb0, cb1);
  }
  s << "set cblabel " << title_text(d.value_label) << " offset 1,0\n";
  s << "set xrange [-0.5:" << num(g.xs.size() - 0.5) << "]\nset yrange [-0.5:" << num(g.ys.size() - 0.5) << "]\n";
  s << index_tics("x", g.xs, d.x.style, g.cell_w, 34);
  s << index_tics("y", g.ys, d.y.style, g.cell_h, 14);
  s << "set border lw 1\nunset key\n" << panel_background();
  for (std::size_t k = 0; k < d.panels.size(); ++k) {
    int kk = static_cast<int>(k);
    s << "# ---- panel " << k << " ----\n";
    s << panel_margins(g.x0(kk), g.x1(kk), g.y0(kk), g.y1(kk));
    s << "set title " << title_text(d.panels[k].title) << " font ',12'\n";
    bool bottom_row = (kk / g.cols == g.rows - 1) || (kk + g.cols >= static_cast<int>(d.panels.size()));
    s << "set xlabel " << (bottom_row ? title_text(axis_title(d.x)) : std::string("''")) << "\n";
    s << "set ylabel " << (kk % g.cols == 0 ? title_text(axis_title(d.y)) : std::string("''")) << "\n";
    if (k + 1 == d.panels.size()) {
      double cx = (g.left + g.cols * g.panel_w + (g.cols - 1) * g.gap + 22) / g.width;
      double ytop = g.y1(0), ybot = g.y0(static_cast<int>((g.rows - 1) * g.cols));
      s << "set colorbox user origin screen " << num(cx) << "," << num(ybot) << " size screen " << num(18.0 / g.width)
        << "," << num(ytop - ybot) << "\n";
    } else {
      s << "unset colorbox\n";
    }
    std::string p = "$p" + std::to_string(k);
    bool has_cells = false;
    for (const auto& c : d.panels[k].cells) has_cells = has_cells || std::isfinite(c.value);
    if (!has_cells) {
      s << "plot NaN notitle\n";
      continue;
    }
    s << "plot " << p << " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder fc palette notitle";
    if (annotate) s << ", \\\n     " << p << " using 1:2:4 with labels font ',8' tc rgb '#202020' notitle";
    s << "\n";
  }
  s << "unset multiplot\n";
  f.body = s.str();
  if (percent && kind == "regret")
    f.caption = "Each cell shows how much slower the chosen strategy measured than the measured best, in %; white "
                "(blank) cells are where the choice was the best (or within 0.5 %), grey cells have no measurement.";
  else if (percent)
    f.caption = "Each cell shows how much slower than the best strategy this one is, in %; white (blank) cells are where "
                "it is the best, grey cells have no data.";
  else
    f.caption = "Colour is the time in µs on a log scale, one shared colour bar for all panels, so panels compare "
                "directly; grey cells have no data.";
  if (!d.caption.empty()) f.caption += " " + d.caption;
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

Figure best_map_figure(const BestMapData& d, const std::string& stem) {
  Figure f;
  f.stem = stem;
  f.kind = "best";
  f.title = d.title;
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
  for (std::size_t k = 0; k < d.panels.size(); ++k) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : d.panels[k].cells) {
      if (c.category < 0 || c.category >= static_cast<int>(d.strategies.size())) continue;
      std::string hex = series_colour(static_cast<std::size_t>(c.category));
      long rgb = std::stol(hex.substr(1), nullptr, 16);
      rows.push_back({std::to_string(g.xpos[c.x]), std::to_string(g.ypos[c.y]), std::to_string(rgb),
                      c.measured ? "1" : "0", c.uncertain ? "1" : "0", d.strategies[static_cast<std::size_t>(c.category)],
                      std::to_string(c.x), std::to_string(c.y)});
    }
    s << "# panel " << k << ": " << d.panels[k].title
      << " (x index, y index, rgb, measured, uncertain, strategy, " << d.x.label << ", " << d.y.label << ")\n";
    s << data_block("p" + std::to_string(k), rows);
  }
  s << "set multiplot title " << title_text(d.title) << " font ',14'\n";
  s << "set xrange [-0.5:" << num(g.xs.size() - 0.5) << "]\nset yrange [-0.5:" << num(g.ys.size() - 0.5) << "]\n";
  s << index_tics("x", g.xs, d.x.style, g.cell_w, 34);
  s << index_tics("y", g.ys, d.y.style, g.cell_h, 14);
  s << "set border lw 1\n" << panel_background();
  double key_y = (26.0 * key_rows + 12) / g.height;
  s << "unset key\n";
  for (std::size_t k = 0; k < d.panels.size(); ++k) {
    int kk = static_cast<int>(k);
    bool last = k + 1 == d.panels.size();
    s << "# ---- panel " << k << " ----\n";
    s << panel_margins(g.x0(kk), g.x1(kk), g.y0(kk), g.y1(kk));
    s << "set title " << title_text(d.panels[k].title) << " font ',12'\n";
    bool bottom_row = (kk / g.cols == g.rows - 1) || (kk + g.cols >= static_cast<int>(d.panels.size()));
    s << "set xlabel " << (bottom_row ? title_text(axis_title(d.x)) : std::string("''")) << "\n";
    s << "set ylabel " << (kk % g.cols == 0 ? title_text(axis_title(d.y)) : std::string("''")) << "\n";
    std::string p = "$p" + std::to_string(k);
    std::vector<std::string> parts;
    bool has = false, has_measured = false, has_uncertain = false;
    for (const auto& c : d.panels[k].cells) {
      if (c.category < 0 || c.category >= static_cast<int>(d.strategies.size())) continue;
      has = true;
      has_measured = has_measured || c.measured;
      has_uncertain = has_uncertain || c.uncertain;
    }
    if (has) parts.push_back(p + " using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc rgb variable notitle");
    if (has_uncertain)
      parts.push_back(p + " using 1:($5 > 0 ? $2 : NaN):(0.42):(0.42) with boxxyerror lc rgb '#111111' lw 2.5 fs empty notitle");
    if (has_measured)
      parts.push_back(p + " using 1:($4 > 0 ? $2 : NaN) with points pt 7 ps 0.55 lc rgb '#111111' notitle");
    (void)last;
    if (parts.empty()) {
      s << "plot NaN notitle\n";
      continue;
    }
    s << "plot ";
    for (std::size_t i = 0; i < parts.size(); ++i) s << (i ? ", \\\n     " : "") << parts[i];
    s << "\n";
  }
  std::vector<std::string> legend;
  for (std::size_t i = 0; i < d.strategies.size(); ++i)
    legend.push_back("NaN with boxes fs solid 1.0 noborder lc rgb '" + series_colour(i) + "' title " +
                     title_text(d.strategies[i] + " " + format_number(shares[i], "%.0f") + " %"));
  if (any_measured) legend.push_back("NaN with points pt 7 ps 0.55 lc rgb '#111111' title 'measured cell'");
  if (any_uncertain)
    legend.push_back("NaN with boxes lc rgb '#111111' lw 2.5 fs empty title 'uncertain (intervals overlap)'");
  s << legend_panel(key_y, legend, 4);
  s << "unset multiplot\n";
  f.body = s.str();

  std::ostringstream cap;
  cap << "The fastest strategy per cell (colour); ";
  if (any_measured) cap << "dots mark measured cells, the rest are predicted; ";
  if (any_uncertain) cap << "outlined cells are uncertain (best and runner-up overlap within their 90 % intervals); ";
  cap << "grey cells have no data. Shares:";
  for (std::size_t i = 0; i < d.strategies.size(); ++i)
    cap << (i ? ", " : " ") << d.strategies[i] << " " << format_number(shares[i], "%.1f") << " %";
  cap << ".";
  f.caption = cap.str();
  return f;
}

// ============================================ errors ======================================================

Figure error_scatter_figure(const ErrorData& d, const std::string& stem) {
  Figure f;
  f.stem = stem;
  f.kind = "errors";
  f.title = d.title;
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
      rows.push_back({num(m), num(y), out ? "1" : "0", num(p)});
    }
    total = std::max(total, rows.size());
    s << "# " << d.series[i].name << " (measured_us, predicted_us drawn, pinned to the border, predicted_us)\n"
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
  s << "set xrange [" << num(a) << ":" << num(b) << "]\nset yrange [" << num(a) << ":" << num(b) << "]\n";
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
    s << ", \\\n     $s" << i << " using 1:($3 == 0 ? $2 : NaN) with points pt 7 ps " << num(ps) << " lc rgb '#" << alpha
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
  Figure f;
  f.stem = stem;
  f.kind = "errors";
  f.title = d.title;
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
      rows.push_back({num(k * bin), num(share)});
    }
    s << "# " << d.series[i].name << " (relative error bin centre %, share of points %), " << n << " points\n";
    s << data_block("h" + std::to_string(i), rows);
  }
  if (!(ymax > 0)) ymax = 1;
  s << "set title " << title_text(d.title) << " font ',14'\n";
  s << "set grid ytics lc rgb '#d0d0d0'\n";
  s << "set xrange [" << num(-(nb + 0.5) * bin) << ":" << num((nb + 0.5) * bin) << "]\n";
  s << "set yrange [0:" << num(ymax * 1.12) << "]\n";
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
  Figure f;
  f.stem = stem;
  f.kind = "errors";
  f.title = d.title;
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
  s << "# method";
  for (const auto& m : d.metrics) s << ", " << m;
  s << "\n" << data_block("d", rows);
  s << "set title " << title_text(d.title) << " font ',14'\n";
  s << "set style data histogram\nset style histogram cluster gap 1\nset style fill solid 0.85 border -1\n";
  s << "set yrange [0:" << num(ymax * 1.18) << "]\nset ylabel " << title_text(d.y_label) << "\nset grid ytics lc rgb '#d0d0d0'\n";
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
    s << ", \\\n     '' using ($0 + " << num(off) << "):" << (k + 2) << ":(sprintf('%.3g', $" << (k + 2)
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

// ============================================ stacked bars ================================================

Figure stacked_bar_figure(const StackedBarData& d, const std::string& stem) {
  auto colour = [&](std::size_t c) { return c < d.colours.size() ? d.colours[c] : series_colour(c); };
  Figure f;
  f.stem = stem;
  f.kind = "breakdown";
  f.title = d.title;
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
      row.push_back(num(v));
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
          labels.push_back({std::to_string(b), num(base + v / 2), si_label(v), lum > 150 ? "2105376" : "16777215"});
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
  s << "set boxwidth 0.7\nset yrange [0:" << num(tallest * 1.08) << "]\n";
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

// Fit figures: latency and bus bandwidth against message size, measured points, the fitted curve with its
// 90 % band, turning points; also the cross-TP / cross-SM figures (plots/figures.h, "Fit").
#include "plots/figures.h"

#include <algorithm>
#include <sstream>

#include "model/bus_factor.h"

namespace arfit::plots {

namespace {

// The axes' extent over everything drawn: sizes, latencies and bus bandwidths.
struct FitExtent {
  double xmin = INFINITY, xmax = 0, tmin = INFINITY, tmax = 0, bmin = INFINITY, bmax = 0;

  void see(double bytes, double t, Collective c, int n) {
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
  }
};

bool has_band(const FitCurve& c) {
  for (const auto& p : c.points)
    if (p.lo_us > 0 && p.hi_us > 0) return true;
  return false;
}

// Whether a measured set has training points and held-out points.
void point_kinds(const FitMeasured& m, bool& train, bool& held) {
  train = held = false;
  for (const auto& p : m.points) (p.held_out ? held : train) = true;
}

// The data blocks: $m<i> (bytes, time_us, busbw, held_out) per measured set, $c<i> (bytes, time_us, lo_us, hi_us,
// busbw, busbw_lo, busbw_hi) per curve.
std::string fit_data_blocks(const FitFigureData& d, FitExtent& e, bool& any_band, bool& any_held) {
  std::ostringstream s;
  for (std::size_t i = 0; i < d.measured.size(); ++i) {
    const auto& m = d.measured[i];
    std::vector<std::vector<std::string>> rows;
    for (const auto& p : m.points) {
      if (!(p.bytes > 0) || !(p.time_us > 0)) continue;
      e.see(p.bytes, p.time_us, m.collective, m.nranks);
      any_held = any_held || p.held_out;
      rows.push_back({gp_number(p.bytes), gp_number(p.time_us), gp_number(bus_bw_gbps(m.collective, std::max(1, m.nranks), p.bytes, p.time_us)),
                      p.held_out ? "1" : "0"});
    }
    s << gp_comment("measured: " + m.label + " (bytes, time_us, busbw_GBps, held_out)");
    s << data_block("m" + std::to_string(i), rows);
  }
  for (std::size_t i = 0; i < d.curves.size(); ++i) {
    const auto& c = d.curves[i];
    std::vector<std::vector<std::string>> rows;
    int n = std::max(1, c.nranks);
    for (const auto& p : c.points) {
      if (!(p.bytes > 0) || !(p.time_us > 0)) continue;
      e.see(p.bytes, p.time_us, c.collective, n);
      bool band = p.lo_us > 0 && p.hi_us > 0;
      if (band) {
        any_band = true;
        e.see(p.bytes, p.lo_us, c.collective, n);
        e.see(p.bytes, p.hi_us, c.collective, n);
      }
      rows.push_back({gp_number(p.bytes), gp_number(p.time_us), band ? gp_number(p.lo_us) : "NaN", band ? gp_number(p.hi_us) : "NaN",
                      gp_number(bus_bw_gbps(c.collective, n, p.bytes, p.time_us)),
                      band ? gp_number(bus_bw_gbps(c.collective, n, p.bytes, p.hi_us)) : "NaN",
                      band ? gp_number(bus_bw_gbps(c.collective, n, p.bytes, p.lo_us)) : "NaN"});
    }
    s << gp_comment("curve: " + c.label + " (bytes, time_us, lo_us, hi_us, busbw, busbw_lo, busbw_hi)");
    s << data_block("c" + std::to_string(i), rows);
  }
  return s.str();
}

// One panel's plot command; `which` = 0 latency, 1 bus bandwidth. The latency panel adds the titles to `legend`
// (drawn in the legend panel).
std::string fit_plot_command(const FitFigureData& d, int which, SeriesColours& colours, std::vector<std::string>& legend) {
  std::vector<std::string> parts;
  bool band_titled = false;
  for (std::size_t i = 0; i < d.curves.size(); ++i) {
    const auto& c = d.curves[i];
    if (!has_band(c)) continue;
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
    point_kinds(m, train, held);
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
}

std::string fit_caption(const FitFigureData& d, bool any_held, bool any_band) {
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
  return cap.str();
}

}  // namespace

Figure fit_figure(const FitFigureData& d, const std::string& stem) {
  Figure f = Figure::named(stem, "fit", d.title);
  f.width = 1300;
  f.height = 640;

  FitExtent e;
  bool any_band = false, any_held = false;
  std::ostringstream s;
  s << fit_data_blocks(d, e, any_band, any_held);
  if (!(e.xmax > 0)) {  // nothing to draw: an empty, labelled frame rather than a gnuplot error
    e.xmin = 1024, e.xmax = 1 << 30, e.tmin = 1, e.tmax = 1e4, e.bmin = 0.01, e.bmax = 100;
  }
  if (!(e.bmax > 0)) e.bmin = 0.01, e.bmax = 100;
  double x0 = e.xmin / 1.6, x1 = e.xmax * 1.6, t0 = e.tmin / 1.6, t1 = e.tmax * 1.6, b0 = e.bmin / 1.6, b1 = e.bmax * 1.6;

  // Legend rows: at most 4 entries per row below the panels.
  std::size_t entries = d.curves.size() + (any_band ? 1 : 0);
  for (const auto& m : d.measured) {
    bool held = false, train = false;
    point_kinds(m, train, held);
    entries += (held ? 1 : 0) + (train ? 1 : 0);
  }
  int key_rows = static_cast<int>((entries + 3) / 4);
  double key_h = 0.045 * std::max(1, key_rows);
  double bottom = 0.13 + key_h;
  double top = d.subtitle.empty() ? 0.88 : 0.85;

  s << multiplot_title(d.title, d.subtitle);
  s << "set logscale xy\nset grid xtics ytics lc rgb '#d0d0d0' lw 1\nset border lw 1.2\n";
  s << "set xrange [" << gp_number(x0) << ":" << gp_number(x1) << "]\n";
  s << bytes_tics("x", x0, x1, 11);
  s << "set xlabel 'message size (bytes; K = 1024)'\n";
  s << "unset key\n";
  for (std::size_t i = 0; i < d.turning_points.size(); ++i) {
    const auto& tp = d.turning_points[i];
    if (!(tp.bytes > 0)) continue;
    s << "set arrow " << (i + 1) << " from " << gp_number(tp.bytes) << ", graph 0 to " << gp_number(tp.bytes)
      << ", graph 1 nohead dt 3 lw 1.5 lc rgb '#555555'\n";
    s << "set label " << (i + 1) << " " << title_text(tp.label + " = " + bytes_label(tp.bytes)) << " at " << gp_number(tp.bytes)
      << ", graph 0.97 right rotate by 90 offset -1,0 font ',9' tc rgb '#444444'\n";
  }

  SeriesColours colours;
  std::vector<std::string> legend;
  s << "# ---- left: latency ----\n";
  s << panel_margins(0.075, 0.475, bottom, top);
  s << "set yrange [" << gp_number(t0) << ":" << gp_number(t1) << "]\n" << time_tics("y", t0, t1);
  s << "set ylabel 'latency'\nset title 'latency (median per size)' font ',12'\n";
  s << fit_plot_command(d, 0, colours, legend);
  s << "# ---- right: bus bandwidth ----\n";
  s << panel_margins(0.575, 0.975, bottom, top);
  s << "set yrange [" << gp_number(b0) << ":" << gp_number(b1) << "]\n" << log_tics("y", b0, b1);
  s << "set ylabel 'bus bandwidth (GB/s)'\nset title 'bus bandwidth = bus factor × size / time' font ',12'\n";
  s << fit_plot_command(d, 1, colours, legend);
  s << legend_panel(bottom - 0.1, legend, 4);
  s << "unset multiplot\n";
  f.body = s.str();
  f.caption = fit_caption(d, any_held, any_band);
  return f;
}

}  // namespace arfit::plots

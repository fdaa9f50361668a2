#include "plots/alltoallv.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "model/alltoallv.h"
#include "model/metrics.h"
#include "model/text.h"
#include "plots/adapters.h"

namespace arfit::plots {
namespace {

constexpr int kCurvePointsPerOctave = 6;

bool all_equal(const std::vector<double>& v) {
  for (double x : v)
    if (std::fabs(x - v.front()) > 1e-9 * std::max(1.0, std::fabs(v.front()))) return false;
  return true;
}

std::string percent(double fraction) { return format_number(fraction * 100, "%.1f") + " %"; }

}  // namespace

std::string alltoallv_family(const std::string& splits, double element_bytes) {
  return alltoallv_family(parse_alltoallv_split(splits, element_bytes));
}

std::string alltoallv_family(const AllToAllvSplit& sp) {
  std::vector<double> sent, received;
  for (int r = 0; r < sp.nranks(); ++r) sent.push_back(sp.sent(r)), received.push_back(sp.received(r));
  const bool even_sent = all_equal(sent), even_received = all_equal(received);
  if (even_sent && even_received) return "even";
  if (even_received) return "uneven senders";
  if (even_sent) return "uneven receivers";
  return "both uneven";
}

namespace {

// The log axes' extent: every measured point, then the curve where it lies within them.
struct LogRange {
  double xmin = INFINITY, xmax = 0, tmin = INFINITY, tmax = 0;
  void see(double x, double t) {
    if (!(x > 0) || !(t > 0)) return;
    xmin = std::min(xmin, x), xmax = std::max(xmax, x), tmin = std::min(tmin, t), tmax = std::max(tmax, t);
  }
};

// Pixel geometry: panel side, left margin, gap between panels, top and bottom margins.
constexpr double kPanel = 400, kLeft = 90, kGap = 70, kTop = 95, kBottom = 150;

// The uniform all-to-all prediction's data block; `band` says whether any point has its interval.
std::string curve_block(const std::vector<FitCurvePoint>& curve, bool& band) {
  std::vector<std::vector<std::string>> rows;
  band = false;
  for (const auto& p : curve) {
    const bool has_band = p.lo_us > 0 && p.hi_us > 0;
    band = band || has_band;
    rows.push_back({gp_number(p.bytes), gp_number(p.time_us), has_band ? gp_number(p.lo_us) : "NaN",
                    has_band ? gp_number(p.hi_us) : "NaN"});
  }
  return gp_comment("uniform all-to-all prediction (bytes, time_us, lo_us, hi_us)") + data_block("curve", rows);
}

// Data block of panel k's points of one family: named by indices, a name holds no input text.
std::string block_name(std::size_t k, const std::string& family, const std::vector<std::string>& families) {
  const auto at = std::find(families.begin(), families.end(), family) - families.begin();
  return "m" + std::to_string(k) + "_" + std::to_string(at);
}

// Every panel's measured points, a block per family; `families` in order of first appearance, `range` over them.
std::string point_blocks(const std::vector<AllToAllvPanel>& panels, std::vector<std::string>& families, LogRange& range) {
  std::ostringstream s;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    std::map<std::string, std::vector<std::vector<std::string>>> by_family;
    for (const auto& p : panels[k].points) {
      range.see(p.bytes, p.time_us);
      by_family[p.family].push_back({gp_number(p.bytes), gp_number(p.time_us)});
      if (std::find(families.begin(), families.end(), p.family) == families.end()) families.push_back(p.family);
    }
    for (const auto& [family, pts] : by_family) {
      s << gp_comment(panels[k].mode + ", " + family + " (effective bytes, measured time_us)");
      s << data_block(block_name(k, family, families), pts);
    }
  }
  return s.str();
}

const std::string kCurveLine = "with lines lw 2.2 lc rgb '#000000'";

// Panel k: its margins, labels, title (with the prediction's GMAE) and plot command.
std::string panel_plot(const AllToAllvPanel& panel, std::size_t k, const Figure& f, bool band, bool curve,
                       const std::vector<std::string>& families, SeriesColours& colours) {
  const std::string shade = "with filledcurves fc rgb '#777777' fs transparent solid 0.2 noborder";
  const double px = kLeft + k * (kPanel + kGap);
  std::ostringstream s;
  s << gp_comment("---- panel " + panel.mode + " ----");
  s << panel_margins(px / f.width, (px + kPanel) / f.width, kBottom / f.height, (kBottom + kPanel) / f.height);
  s << "set xlabel " << title_text("effective all-to-all size (" + panel.mode + ")") << "\nset ylabel "
    << (k == 0 ? "'latency'" : "''") << "\n";
  s << "set title " << title_text(panel.mode + (panel.gmae >= 0 ? " · GMAE " + percent(panel.gmae) : "")) << " font ',12'\n";
  std::vector<std::string> parts;
  if (band) parts.push_back("$curve using 1:3:4 " + shade + " notitle");
  if (curve) parts.push_back("$curve using 1:2 " + kCurveLine + " notitle");
  std::set<std::string> drawn;
  for (const auto& p : panel.points)
    if (drawn.insert(p.family).second)
      parts.push_back("$" + block_name(k, p.family, families) + " using 1:2 with points pt 7 ps 1.0 lc rgb '" +
                      colours(p.family) + "' notitle");
  if (parts.empty()) parts.push_back("NaN notitle");
  s << "plot ";
  for (std::size_t i = 0; i < parts.size(); ++i) s << (i ? ", \\\n     " : "") << parts[i];
  s << "\n";
  return s.str();
}

// The legend: the prediction, its interval, and each family's dots.
std::string legend(const Figure& f, bool band, bool curve, const std::vector<std::string>& families, SeriesColours& colours) {
  std::vector<std::string> entries;
  if (curve) entries.push_back("NaN " + kCurveLine + " title 'uniform all-to-all prediction'");
  if (band) entries.push_back("NaN with boxes fs solid 0.3 noborder fc rgb '#9a9a9a' title '90 % prediction interval'");
  for (const auto& family : families)
    entries.push_back("NaN with points pt 7 ps 1.2 lc rgb '" + colours(family) + "' title " +
                      title_text("measured all-to-allv, " + family));
  return legend_panel((kBottom - 70) / f.height, entries, 4);
}

}  // namespace

Figure alltoallv_figure(const AllToAllvFigureData& d, const std::string& stem) {
  Figure f = Figure::named(stem, "alltoallv", d.title);
  const std::size_t n = std::max<std::size_t>(1, d.panels.size());
  f.width = static_cast<int>(kLeft + n * kPanel + (n - 1) * kGap + 30);
  f.height = static_cast<int>(kTop + kPanel + kBottom);

  // Shared axes: every panel spans all modes' effective sizes and the curve.
  bool band = false;
  std::ostringstream s;
  s << curve_block(d.curve, band);
  std::vector<std::string> families;
  LogRange r;
  s << point_blocks(d.panels, families, r);
  // The curve is drawn over the points' range only (it spans a wider range to cover every mode).
  if (!(r.xmax > 0)) r.xmin = 1024, r.xmax = 1 << 20, r.tmin = 1, r.tmax = 1000;
  for (const auto& p : d.curve)
    if (p.bytes >= r.xmin / 1.5 && p.bytes <= r.xmax * 1.5) r.see(p.bytes, p.time_us);
  const double x0 = r.xmin / 1.5, x1 = r.xmax * 1.5, t0 = r.tmin / 1.5, t1 = r.tmax * 1.5;

  s << multiplot_title(d.title, d.subtitle);
  s << "set logscale xy\nset grid xtics ytics lc rgb '#d0d0d0' lw 1\nset border lw 1.2\nunset key\n";
  s << "set xrange [" << gp_number(x0) << ":" << gp_number(x1) << "]\n" << bytes_tics("x", x0, x1, 6);
  s << "set yrange [" << gp_number(t0) << ":" << gp_number(t1) << "]\n" << time_tics("y", t0, t1);
  SeriesColours colours;
  for (std::size_t k = 0; k < d.panels.size(); ++k)
    s << panel_plot(d.panels[k], k, f, band, !d.curve.empty(), families, colours);
  s << legend(f, band, !d.curve.empty(), families, colours);
  s << "unset multiplot\n";
  f.body = s.str();
  f.caption = "Measured all-to-allv latency (dots, one per split, coloured by which side of the exchange is uneven) "
              "against its effective all-to-all size in each mode, over the uniform all-to-all model's prediction (line) " +
              std::string(band ? "and its 90 % interval (shaded) " : "") +
              "on log axes. In the mode that describes the exchange the dots sit on the line; the panel titles give the "
              "GMAE of that prediction.";
  return f;
}

std::vector<NamedAllToAllv> alltoallv_figures(const std::vector<Sample>& samples, const ModelSet& models) {
  // Median of the repeats of each split, per group.
  std::map<GroupKey, std::map<std::string, std::vector<double>>> by_group;
  for (const Sample& s : samples)
    if (s.ok() && s.collective == Collective::AllToAllV && !s.splits.empty() && s.time_us > 0)
      by_group[sample_group_key(s)][s.splits].push_back(s.time_us);
  std::vector<NamedAllToAllv> out;
  for (const auto& [key, splits] : by_group) {
    GroupKey uniform = key;
    uniform.collective = Collective::AllToAll;
    const double elem = dlrm_element_bytes(key.dtype);
    struct Point {
      AllToAllvSplit split;
      std::string family;
      double time_us;
    };
    std::vector<Point> points;
    double lo = INFINITY, hi = 0;
    for (const auto& [text, times] : splits) {
      Point p;
      try {
        p.split = parse_alltoallv_split(text, elem);
        p.family = alltoallv_family(p.split);
      } catch (const std::invalid_argument&) {
        continue;  // a split the model cannot read has no effective size to draw at
      }
      p.time_us = size_median(times);
      for (EffectiveMode m : all_effective_modes()) {
        lo = std::min(lo, effective_alltoall_bytes(p.split, m));
        hi = std::max(hi, effective_alltoall_bytes(p.split, m));
      }
      points.push_back(std::move(p));
    }
    if (points.empty()) continue;
    FitCurve curve = model_curve(models, uniform, lo / 2, hi * 2, kCurvePointsPerOctave, 0, "all-to-all", false);
    if (curve.points.empty()) {  // the all-to-all of another dtype (bytes move alike), when only one was modelled
      uniform.dtype.clear();
      curve = model_curve(models, uniform, lo / 2, hi * 2, kCurvePointsPerOctave, 0, "all-to-all", false);
    }
    if (curve.points.empty()) continue;  // no all-to-all model of this system, strategy and rank count
    NamedAllToAllv fig;
    fig.name = "alltoallv_" + key_name(key);
    fig.data.title = group_title(key);
    fig.data.subtitle = std::to_string(points.size()) + " splits, predicted from the uniform all-to-all model; mode in models.json: " +
                        models.raw().value("alltoallv_mode", std::string("max_of_sum"));
    for (const auto& c : curve.points) fig.data.curve.push_back(c);
    for (EffectiveMode m : all_effective_modes()) {
      AllToAllvPanel panel;
      panel.mode = to_string(m);
      std::vector<double> errors;
      for (const Point& p : points) {
        const double bytes = effective_alltoall_bytes(p.split, m);
        panel.points.push_back({bytes, p.time_us, p.family});
        if (const auto pred = predict_at(models, uniform, bytes)) errors.push_back(relative_error(pred->time_us, p.time_us));
      }
      if (errors.size() == points.size()) panel.gmae = gmae(errors);
      fig.data.panels.push_back(std::move(panel));
    }
    out.push_back(std::move(fig));
  }
  return out;
}

}  // namespace arfit::plots

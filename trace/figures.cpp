#include "trace/figures.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

namespace arfit::trace {

std::string bar_label(const PhaseBreakdown& p) {
  if (p.kind == PhaseKind::Decode && p.step > 0) return "decode " + std::to_string(p.step);
  return p.phase;
}

namespace {
std::string title_of(const Breakdown& b, const std::string& what) {
  std::string src = b.source;
  auto slash = src.find_last_of('/');
  if (slash != std::string::npos) src = src.substr(slash + 1);
  return what + " - " + src;
}
}  // namespace

std::vector<std::size_t> part_phases(const Breakdown& b, FigurePart part, std::size_t decode_steps) {
  std::vector<std::size_t> out;
  for (std::size_t i : figure_phases(b.phases, decode_steps))
    if ((b.phases[i].kind == PhaseKind::Decode) == (part == FigurePart::Decode)) out.push_back(i);
  return out;
}

plots::StackedBarData class_bars(const Breakdown& b, const std::vector<std::size_t>& phases) {
  plots::StackedBarData d;
  d.title = title_of(b, "GPU time per operation class");
  d.y_label = "GPU time (µs)";
  d.classes = b.class_labels;
  for (std::size_t i : phases) {
    const auto& p = b.phases[i];
    d.bars.push_back(bar_label(p));
    std::vector<double> row;
    for (const auto& c : p.classes) row.push_back(c.time_us);
    d.values.push_back(row);
  }
  drop_empty_series(d);
  return d;
}

std::vector<std::string> legend_names(const std::vector<EntryTime>& entries) {
  std::vector<std::pair<std::string, std::vector<std::string>>> items;
  for (const auto& e : entries) {
    if (e.name == "others" && e.full_name.empty()) {
      items.push_back({"others", {}});
      continue;
    }
    std::vector<std::string> path;
    for (const auto& p : e.path) path.push_back(shorten_name(p, 18));
    items.push_back({shorten_name(e.full_name, 36), path});
  }
  return unique_names(items);
}

plots::StackedBarData entry_bars(const Breakdown& b, const std::vector<std::size_t>& phases) {
  plots::StackedBarData d;
  bool others = !b.entry_names.empty() && b.entry_names.back() == "others";
  d.title = title_of(b, others ? "GPU time per entry (top " + std::to_string(b.entry_names.size() - 1) + " + others)"
                               : std::string("GPU time per entry"));
  d.y_label = "GPU time (µs)";
  if (!b.phases.empty()) d.classes = legend_names(b.phases.front().entries);
  for (std::size_t i : phases) {
    const auto& p = b.phases[i];
    d.bars.push_back(bar_label(p));
    std::vector<double> row;
    for (const auto& e : p.entries) row.push_back(e.time_us);
    d.values.push_back(row);
  }
  drop_empty_series(d);
  return d;
}

plots::Figure stacked_figure(const plots::StackedBarData& d, const std::string& stem) {
  plots::Figure f = plots::stacked_bar_figure(d, stem);
  std::size_t longest = 0;
  for (const auto& c : d.classes) longest = std::max(longest, c.size());
  // The shared figure reserves a fixed right margin (in characters) for the key; widen margin and image when
  // the legend names are longer.
  static const std::regex margin_re("set rmargin ([0-9]+)\n");
  std::smatch m;
  if (std::regex_search(f.body, m, margin_re)) {
    int fixed = std::stoi(m[1].str());
    int margin = static_cast<int>(0.8 * static_cast<double>(longest)) + 6;
    if (margin > fixed) {
      f.body.replace(static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)),
                     "set rmargin " + std::to_string(margin) + "\n");
      f.width += 8 * (margin - fixed);
    }
  }
  return f;
}

// Drops the series that are zero in every bar (a class absent from the decode steps, say).
void drop_empty_series(plots::StackedBarData& d) {
  std::vector<std::string> classes;
  std::vector<std::vector<double>> values(d.values.size());
  for (std::size_t c = 0; c < d.classes.size(); ++c) {
    bool any = false;
    for (const auto& row : d.values) any = any || (c < row.size() && row[c] > 0);
    if (!any) continue;
    classes.push_back(d.classes[c]);
    for (std::size_t b = 0; b < d.values.size(); ++b) values[b].push_back(c < d.values[b].size() ? d.values[b][c] : 0);
  }
  d.classes = std::move(classes);
  d.values = std::move(values);
}

CommShareData comm_share_bars(const Breakdown& b, std::size_t decode_steps) {
  CommShareData d;
  d.title = title_of(b, "Communication share of GPU time");
  for (std::size_t i : figure_phases(b.phases, decode_steps)) {
    const auto& p = b.phases[i];
    d.bars.push_back(bar_label(p));
    d.share_pct.push_back(p.total_us > 0 ? 100.0 * p.comm_us / p.total_us : 0.0);
  }
  return d;
}

plots::Figure comm_share_figure(const CommShareData& d, const std::string& stem) {
  plots::Figure f;
  f.stem = stem;
  f.kind = "breakdown";
  f.title = d.title;
  f.caption = "Share of each phase's GPU kernel time spent in communication kernels (NCCL and custom all-reduce).";
  f.width = std::max(700, 70 * static_cast<int>(d.bars.size()) + 260);
  f.height = 500;
  std::vector<std::vector<std::string>> rows;
  double top = 0;
  for (std::size_t i = 0; i < d.bars.size(); ++i) {
    char label[32];
    std::snprintf(label, sizeof label, "%.1f%%", d.share_pct[i]);
    rows.push_back({std::to_string(i), plots::gp_number(d.share_pct[i]), label, d.bars[i]});
    top = std::max(top, d.share_pct[i]);
  }
  std::ostringstream s;
  s << "# index, share %, label, phase\n" << plots::data_block("d", rows);
  s << "set title " << plots::gp_quote(plots::gp_enhanced_escape(d.title)) << " font ',14'\n";
  s << "set style fill solid 0.9 border lc rgb '#ffffff'\nset boxwidth 0.7\n";
  s << "set yrange [0:" << plots::gp_number(top > 0 ? std::min(100.0, top * 1.15 + 1) : 1) << "]\n";
  s << "set xrange [-0.6:" << plots::gp_number(static_cast<double>(d.bars.size()) - 0.4) << "]\n";
  s << "set ylabel 'communication share (%)'\nset grid ytics lc rgb '#d0d0d0'\n";
  s << "set xtics nomirror scale 0 noenhanced" << (d.bars.size() > 6 ? " rotate by -35 left" : "") << "\n";
  s << "plot $d using 1:2:xtic(4) with boxes lc rgb '" << plots::series_colour(0) << "' notitle, \\\n"
    << "     $d using 1:2:3 with labels offset 0,0.8 font ',9' notitle\n";
  f.body = s.str();
  return f;
}

}  // namespace arfit::trace

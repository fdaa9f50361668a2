#include "trace/figures.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>

#include "model/text.h"

namespace arfit::trace {

std::string bar_label(const PhaseBreakdown& p) {
  if (p.kind == PhaseKind::Decode && p.step > 0) return "decode " + std::to_string(p.step);
  return p.phase;
}

std::string class_colour(const std::string& class_id) {
  // Communication in reds and darks, compute in blues, greens and yellows; no two the same, none the grey of
  // "unmatched". Changing a colour here changes it in every figure of every run: keep the table stable.
  static const std::map<std::string, std::string> table = {
      {"gemm", "#0072B2"},           {"moe_gemm", "#56B4E9"},         {"attention", "#009E73"},
      {"rms_norm", "#CC79A7"},       {"quant", "#F0E442"},            {"elementwise", "#E69F00"},
      {"moe_routing", "#8C564B"},    {"sort_scan", "#BCBD22"},        {"memory", "#7F7F7F"},
      {"embedding", "#17BECF"},      {"reduce", "#9467BD"},           {"nccl_all_reduce", "#D55E00"},
      {"nccl_all_gather", "#FF9DA7"}, {"nccl_reduce_scatter", "#B2182B"}, {"nccl_broadcast", "#F4A582"},
      {"nccl_other", "#67001F"},     {"moe_comm", "#D62728"},         {"custom_ar_1stage", "#000000"},
      {"custom_ar_2stage", "#525252"}, {"trtllm_oneshot", "#4D004B"}, {"trtllm_twoshot", "#A6761D"},
      {kUnmatchedClass, "#C7C7C7"}};
  if (auto it = table.find(class_id); it != table.end()) return it->second;
  // Other classes (user rules, folded nodes): a colour from the id alone (FNV-1a), so it too is the same in
  // every figure and run; two such classes may share one.
  static const char* spare[] = {"#AEC7E8", "#98DF8A", "#FFBB78", "#C5B0D5", "#C49C94", "#F7B6D2",
                                "#DBDB8D", "#9EDAE5", "#393B79", "#637939", "#8C6D31", "#843C39"};
  std::uint32_t h = 2166136261u;
  for (unsigned char c : class_id) h = (h ^ c) * 16777619u;
  return spare[h % (sizeof spare / sizeof spare[0])];
}

void use_time_unit_of_tallest_bar(plots::StackedBarData& d) {
  double tallest = 0;
  for (const auto& row : d.values) {
    double total = 0;
    for (double v : row) total += v;
    tallest = std::max(tallest, total);
  }
  // The unit time_label (plots/) would print for the tallest bar: axis numbers stay between 1 and 1000.
  const char* unit = "\xc2\xb5s";
  double per_unit = 1;
  if (tallest >= 1e6) {
    unit = "s";
    per_unit = 1e6;
  } else if (tallest >= 1e3) {
    unit = "ms";
    per_unit = 1e3;
  }
  for (auto& row : d.values)
    for (double& v : row) v /= per_unit;
  d.y_label = std::string("GPU time (") + unit + ")";
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
  d.classes = b.class_labels;
  for (const auto& id : b.class_ids) d.colours.push_back(class_colour(id));
  for (std::size_t i : phases) {
    const auto& p = b.phases[i];
    d.bars.push_back(bar_label(p));
    std::vector<double> row;
    for (const auto& c : p.classes) row.push_back(c.time_us);
    d.values.push_back(row);
  }
  drop_empty_series(d);
  use_time_unit_of_tallest_bar(d);
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

std::size_t entries_folded_in_figures(const Breakdown& b) {
  const bool others = !b.entry_names.empty() && b.entry_names.back() == "others";
  const std::size_t named = b.entry_names.size() - (others ? 1 : 0);
  return named > kMaxFigureEntries - 1 ? named - (kMaxFigureEntries - 1) : 0;
}

plots::StackedBarData entry_bars(const Breakdown& b, const std::vector<std::size_t>& phases) {
  plots::StackedBarData d;
  bool others = !b.entry_names.empty() && b.entry_names.back() == "others";
  const std::size_t folded = entries_folded_in_figures(b);
  d.title = title_of(b, folded ? "GPU time per entry (top " + std::to_string(kMaxFigureEntries - 1) + " + others; " +
                                     std::to_string(folded) + " more entries folded in the figure, all in the CSV)"
                       : others ? "GPU time per entry (top " + std::to_string(b.entry_names.size() - 1) + " + others)"
                                : std::string("GPU time per entry"));
  // Series drawn: every entry, or when that is too many the first kMaxFigureEntries - 1 and one "others" holding the
  // rest (the breakdown's own "others" among them). Folded before any legend name is made: with 10^6 entries,
  // shortening and disambiguating names that are never drawn took longer than the rest of the figure.
  const std::size_t drawn = folded ? kMaxFigureEntries - 1 : b.entry_names.size();
  if (!b.phases.empty()) {
    const auto& entries = b.phases.front().entries;
    d.classes = legend_names(std::vector<EntryTime>(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(
                                                                                        std::min(drawn, entries.size()))));
  }
  // Entries by rank (their column in the entry table), "others" in grey: an entry keeps its colour in the
  // prefill and the decode figure even when series empty in one of them are left out.
  for (std::size_t i = 0; i < d.classes.size(); ++i)
    d.colours.push_back(!folded && others && i + 1 == d.classes.size() ? "#DDDDDD" : plots::series_colour(i));
  if (folded) {
    d.classes.push_back("others");
    d.colours.push_back("#DDDDDD");
  }
  for (std::size_t i : phases) {
    const auto& p = b.phases[i];
    d.bars.push_back(bar_label(p));
    std::vector<double> row;
    double rest = 0;
    for (std::size_t e = 0; e < p.entries.size(); ++e) {
      if (e < drawn) row.push_back(p.entries[e].time_us);
      else rest += p.entries[e].time_us;
    }
    if (folded) row.push_back(rest);
    d.values.push_back(row);
  }
  drop_empty_series(d);
  use_time_unit_of_tallest_bar(d);
  return d;
}

plots::Figure stacked_figure(const plots::StackedBarData& d, const std::string& stem) {
  plots::Figure f = plots::stacked_bar_figure(d, stem);
  std::size_t longest = 0;
  for (const auto& c : d.classes) longest = std::max(longest, c.size());
  // The shared figure reserves a fixed right margin (in characters) for the key; widen margin and image when
  // the legend names are longer.
  const std::string key = "set rmargin ";
  auto at = f.body.find(key);
  auto eol = at == std::string::npos ? at : f.body.find('\n', at);
  if (eol != std::string::npos) {
    int fixed = std::atoi(f.body.c_str() + at + key.size());
    int margin = static_cast<int>(0.8 * static_cast<double>(longest)) + 6;
    if (margin > fixed) {
      f.body.replace(at, eol - at, key + std::to_string(margin));
      f.width += 8 * (margin - fixed);
    }
    // gnuplot centres the title over the plot area, left of the key: wide enough that the title (about 9 px a
    // character at its 14 pt font; it names the profile file) does not run off the left edge.
    f.width = std::max(f.width, static_cast<int>(9 * d.title.size()) + 16 * std::max(margin, fixed));
  }
  return f;
}

// Drops the series that are zero in every bar (a class absent from the decode steps, say).
void drop_empty_series(plots::StackedBarData& d) {
  std::vector<std::string> classes, colours;
  std::vector<std::vector<double>> values(d.values.size());
  for (std::size_t c = 0; c < d.classes.size(); ++c) {
    bool any = false;
    for (const auto& row : d.values) any = any || (c < row.size() && row[c] > 0);
    if (!any) continue;
    classes.push_back(d.classes[c]);
    if (c < d.colours.size()) colours.push_back(d.colours[c]);
    for (std::size_t b = 0; b < d.values.size(); ++b) values[b].push_back(c < d.values[b].size() ? d.values[b][c] : 0);
  }
  d.classes = std::move(classes);
  d.colours = std::move(colours);
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
    rows.push_back({std::to_string(i), plots::gp_number(d.share_pct[i]), format_number(d.share_pct[i], "%.1f") + "%", d.bars[i]});
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

// Breakdown figures: a class keeps one colour in every figure of a run and across runs (checked on the gnuplot
// scripts), entries keep theirs between the prefill and decode figures, and the time axis reads in µs, ms or s.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "plots/gnuplot_runner.h"
#include "trace/figures.h"
#include "trace/nsys_csv.h"
#include "trace/load.h"
#include "trace_test_util.h"

namespace fs = std::filesystem;
using namespace arfit::trace;
using arfit::testing::run_command;
using arfit::testing::slurp;

namespace {

Breakdown breakdown_of(const std::string& file) {
  return compute_breakdown(load_profile(trace_data(file)), RuleTable::defaults(), {});
}

// (legend title, colour) of every series a gnuplot script plots: "... title 'GEMM' lc rgb '#0072B2'".
std::vector<std::pair<std::string, std::string>> series_colours(const std::string& script) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string title = " title '", colour = "' lc rgb '";
  std::size_t plot = script.find("\nplot ");
  if (plot == std::string::npos) return out;
  for (std::size_t at = script.find(title, plot); at != std::string::npos; at = script.find(title, at + 1)) {
    std::size_t name_end = script.find(colour, at + title.size());
    if (name_end == std::string::npos) continue;
    std::size_t colour_at = name_end + colour.size();
    out.emplace_back(script.substr(at + title.size(), name_end - at - title.size()), script.substr(colour_at, 7));
  }
  return out;
}

// Label -> colour over several scripts; fails when one label shows two colours.
void collect(const std::string& script, std::map<std::string, std::string>& seen, const std::string& where) {
  for (const auto& [label, colour] : series_colours(script)) {
    auto [it, fresh] = seen.emplace(label, colour);
    EXPECT_EQ(it->second, colour) << "'" << label << "' changes colour in " << where;
  }
}

std::string class_script(const Breakdown& b, FigurePart part) {
  return stacked_figure(class_bars(b, part_phases(b, part, 8)), "x").body;
}

}  // namespace

TEST(TraceFigures, ClassColoursAreFixedAndDistinct) {
  std::set<std::string> colours;
  for (const auto& c : RuleTable::defaults().classes()) {
    EXPECT_EQ(class_colour(c.id).size(), 7u) << c.id;
    EXPECT_TRUE(colours.insert(class_colour(c.id)).second) << c.id << " shares its colour";
  }
  EXPECT_TRUE(colours.insert(class_colour(kUnmatchedClass)).second);
  // Fixed, not positional: the same answer whatever was asked before, and a user class gets one from its id.
  EXPECT_EQ(class_colour("gemm"), "#0072B2");
  EXPECT_EQ(class_colour(kUnmatchedClass), "#C7C7C7");
  EXPECT_EQ(class_colour("sampling"), class_colour("sampling"));
  EXPECT_EQ(class_colour("folded:LogitsProcessor"), class_colour("folded:LogitsProcessor"));
  EXPECT_NE(class_colour("sampling"), class_colour(kUnmatchedClass));
}

// Prefill and decode figures of one run (the decode steps lack several classes, which shifted positional
// colours: "Unmatched" was olive in one and orange in the other), and figures of three other runs.
TEST(TraceFigures, OneColourPerClassInEveryFigureAndRun) {
  std::map<std::string, std::string> seen;
  Breakdown small = breakdown_of("vllm_tp2_small.json");
  std::string prefill = class_script(small, FigurePart::Prefill), decode = class_script(small, FigurePart::Decode);
  EXPECT_GT(series_colours(prefill).size(), series_colours(decode).size());  // the case that used to shift
  collect(prefill, seen, "vllm_tp2_small prefill");
  collect(decode, seen, "vllm_tp2_small decode");
  for (const char* run : {"sglang_dsv3_ep8_h200_kern_sum.csv", "trtllm_mixtral_tp4_h100_kern_sum.csv", "vllm_mixtral_ep4_a100_gui_kern_sum.csv"})
    collect(class_script(breakdown_of(run), FigurePart::Prefill), seen, run);
  // And each colour is the class's own.
  std::map<std::string, std::string> label_to_id;
  for (const auto& c : RuleTable::defaults().classes()) label_to_id[c.label] = c.id;
  label_to_id["Unmatched"] = kUnmatchedClass;
  ASSERT_GT(seen.size(), 12u);
  for (const auto& [label, colour] : seen) {
    ASSERT_TRUE(label_to_id.count(label)) << label;
    EXPECT_EQ(colour, class_colour(label_to_id[label])) << label;
  }
  EXPECT_EQ(seen["Unmatched"], "#C7C7C7");
}

TEST(TraceFigures, EntriesKeepTheirColourBetweenPrefillAndDecode) {
  BreakdownOptions opt;
  opt.top_k = 6;
  Breakdown b = compute_breakdown(load_profile(trace_data("vllm_tp2_small.json")), RuleTable::defaults(), opt);
  std::map<std::string, std::string> seen;
  auto pre = entry_bars(b, part_phases(b, FigurePart::Prefill, 8)), dec = entry_bars(b, part_phases(b, FigurePart::Decode, 8));
  EXPECT_GT(pre.classes.size(), dec.classes.size());
  collect(stacked_figure(pre, "p").body, seen, "prefill entries");
  collect(stacked_figure(dec, "d").body, seen, "decode entries");
  EXPECT_EQ(seen["others"], "#DDDDDD");
}

TEST(TraceFigures, TimeAxisUnitFollowsTheTallestBar) {
  auto tallest = [](const arfit::plots::StackedBarData& d) {
    double t = 0;
    for (const auto& row : d.values) {
      double s = 0;
      for (double v : row) s += v;
      t = std::max(t, s);
    }
    return t;
  };
  Breakdown run = breakdown_of("vllm_mixtral_ep4_a100_gui_kern_sum.csv");  // 212 s of kernel time
  auto d = class_bars(run, part_phases(run, FigurePart::Prefill, 8));
  EXPECT_EQ(d.y_label, "GPU time (s)");
  EXPECT_NEAR(tallest(d), 212.0, 1e-3);
  EXPECT_NE(stacked_figure(d, "x").body.find("GPU time (s)"), std::string::npos);
  Breakdown ms = breakdown_of("nsys_kern_sum.csv");  // 1000 µs
  d = class_bars(ms, part_phases(ms, FigurePart::Prefill, 8));
  EXPECT_EQ(d.y_label, "GPU time (ms)");
  EXPECT_NEAR(tallest(d), 1.0, 1e-9);
  Breakdown us = breakdown_of("vllm_tp2_small.json");  // prefill 684 µs
  d = entry_bars(us, part_phases(us, FigurePart::Prefill, 8));
  EXPECT_EQ(d.y_label, "GPU time (\xc2\xb5s)");
  EXPECT_NEAR(tallest(d), 684.0, 1e-9);
}

// End to end: the scripts `arfit breakdown` writes for two runs agree on every class's colour.
TEST(TraceFigures, BreakdownScriptsOfTwoRunsAgree) {
  if (arfit::plots::find_gnuplot().empty()) GTEST_SKIP() << "gnuplot not installed";
  arfit::testing::TempDir dir;
  std::map<std::string, std::string> seen;
  int scripts = 0;
  for (const char* run : {"vllm_tp2_small.json", "sglang_dsv3_ep8_h200_kern_sum.csv"}) {
    std::string out = dir.file(run);
    auto r = run_command(arfit::testing::arfit_bin() + " breakdown " + trace_data(run) + " -o " + out + " --image-format svg");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const auto& e : fs::directory_iterator(out)) {
      std::string name = e.path().filename().string();
      if (name.rfind("breakdown_classes_", 0) != 0 || e.path().extension() != ".gp") continue;
      collect(slurp(e.path().string()), seen, name);
      ++scripts;
    }
  }
  EXPECT_EQ(scripts, 3);  // prefill + decode of the vLLM run, "all" of the nsys summary
  EXPECT_EQ(seen["Attention"], class_colour("attention"));
  EXPECT_EQ(seen["MoE dispatch/combine"], class_colour("moe_comm"));
}

// --top 0 keeps every entry in the CSV, but an entry figure draws at most kMaxFigureEntries series: the rest summed
// into "others", the title saying how many (issue 43: one gnuplot series per kernel of 10^5 took minutes).
TEST(TraceFigures, EntryFiguresFoldWhatTheyCannotShow) {
  std::string csv = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n";
  double total_ns = 0;
  for (int i = 0; i < 300; ++i) {
    const int t = 1000 + 37 * i;
    total_ns += t;
    csv += "0.1," + std::to_string(t) + ",1," + std::to_string(t) + "," + std::to_string(t) + ",1," + std::to_string(t) +
           ",0,kernel_" + std::to_string(i) + "\n";
  }
  BreakdownOptions opt;
  opt.top_k = 0;
  const Breakdown b = compute_breakdown(arfit::trace::parse_nsys_csv(csv, "k.csv"), RuleTable::defaults(), opt);
  ASSERT_EQ(b.entry_names.size(), 300u);  // the table keeps all
  EXPECT_EQ(entries_folded_in_figures(b), 300 - (kMaxFigureEntries - 1));
  const auto d = entry_bars(b, {0});
  ASSERT_EQ(d.classes.size(), kMaxFigureEntries);
  EXPECT_EQ(d.classes.back(), "others");
  EXPECT_EQ(d.classes.front(), "kernel_299");  // the largest first
  EXPECT_NE(d.title.find("277 more entries folded"), std::string::npos) << d.title;
  double drawn = 0;
  for (double v : d.values.at(0)) drawn += v;
  EXPECT_NEAR(drawn, total_ns / 1e6, 1e-9) << "time lost in folding";  // the bar's unit: ms (1.96 ms tall)
  // Ten entries: drawn as they are.
  opt.top_k = 10;
  const Breakdown ten = compute_breakdown(arfit::trace::parse_nsys_csv(csv, "k.csv"), RuleTable::defaults(), opt);
  EXPECT_EQ(entries_folded_in_figures(ten), 0u);
  EXPECT_EQ(entry_bars(ten, {0}).classes.size(), 11u);  // top 10 + the breakdown's own others
}

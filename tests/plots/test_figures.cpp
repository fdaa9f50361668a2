// Renders every figure kind from small fixed inputs and checks the PNG (signature, IHDR size, IEND) and the
// .gp script written next to it (titles, series). Set ARFIT_PLOTS_KEEP=DIR to keep the figures for a look.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "plot_fixtures.h"
#include "plots/figures.h"
#include "png_check.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace arfit::plots;
using arfit::plots::testing::read_png_header;

namespace {

class FigureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (find_gnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
    const char* keep = std::getenv("ARFIT_PLOTS_KEEP");
    dir_ = keep && *keep ? std::string(keep) : tmp_.path().string();
    fs::create_directories(dir_);
  }
  std::string stem(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // Renders, checks the PNG's size against the figure's and returns the script text.
  std::string render_and_check(const Figure& f) {
    RenderResult r = render_figure(f, {ImageFormat::Png});
    EXPECT_EQ(r.images.size(), 1u);
    auto png = read_png_header(r.images.at(0));
    EXPECT_TRUE(png.valid) << png.problem;
    EXPECT_EQ(png.width, static_cast<std::uint32_t>(f.width));
    EXPECT_EQ(png.height, static_cast<std::uint32_t>(f.height));
    EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
    EXPECT_EQ(r.script, f.stem + ".gp");
    // nothing temporary left behind
    for (const auto& e : fs::directory_iterator(fs::path(f.stem).parent_path()))
      EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
    return arfit::testing::slurp(r.script);
  }

  arfit::testing::TempDir tmp_;
  std::string dir_;
};

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST_F(FigureTest, FitFigureHasCurveBandHeldOutAndTurningPoints) {
  Figure f = fit_figure(fixtures::fit_data(), stem("fit"));
  std::string gp = render_and_check(f);
  EXPECT_TRUE(has(gp, "# title: h100-sxm · allreduce · NCCL · NONE · bf16 · TP8"));
  EXPECT_TRUE(has(gp, "title 'TP8 fit (seed)'"));
  EXPECT_TRUE(has(gp, "title 'TP8 measured'"));
  EXPECT_TRUE(has(gp, "title 'TP8 measured (held out)'"));
  EXPECT_TRUE(has(gp, "title '90 % prediction interval'"));
  EXPECT_TRUE(has(gp, "ln\\_p = 64K"));
  EXPECT_TRUE(has(gp, "sats\\_p = 512M"));
  EXPECT_TRUE(has(gp, "set ylabel 'bus bandwidth (GB/s)'"));
  EXPECT_TRUE(has(gp, "'1M' 1048576"));  // byte ticks read 1K/1M/1G
}

TEST_F(FigureTest, CrossTpFigureDrawsPredictionDashed) {
  FitFigureData d = fixtures::cross_tp_data();
  Figure f = fit_figure(d, stem("cross_tp"));
  std::string gp = render_and_check(f);
  EXPECT_TRUE(has(gp, "dt 2 lc rgb '" + series_colour(2) + "' title 'TP8 predicted (joint-n)'"));
  EXPECT_TRUE(has(gp, "dt 1 lc rgb '" + series_colour(0) + "' title 'TP2 fit'"));
  EXPECT_TRUE(has(f.caption, "dashed"));
}

TEST_F(FigureTest, HeatmapPanelsShareOneLogColourBar) {
  Figure f = heatmap_figure(fixtures::heatmap_data(), stem("heatmap"));
  std::string gp = render_and_check(f);
  for (const char* s : {"set title 'NCCL'", "set title 'ONESHOT'", "set title 'TWOSHOT'"}) EXPECT_TRUE(has(gp, s)) << s;
  EXPECT_TRUE(has(gp, "set logscale cb"));
  EXPECT_TRUE(has(gp, "'2^{14}'"));  // tokens ticks as powers of two
  // exactly one colour box (the last panel), two panels without
  std::size_t boxes = 0, pos = 0;
  while ((pos = gp.find("set colorbox user", pos)) != std::string::npos) ++boxes, ++pos;
  EXPECT_EQ(boxes, 1u);
  EXPECT_TRUE(has(gp, "fusion RESIDUAL\\_RMS\\_NORM"));
}

TEST_F(FigureTest, BestMapShowsSharesMeasuredAndUncertain) {
  BestMapData d = fixtures::best_data();
  auto shares = strategy_shares(d);
  double total = 0;
  for (double s : shares) total += s;
  EXPECT_NEAR(total, 100.0, 1e-9);
  Figure f = best_map_figure(d, stem("best"));
  std::string gp = render_and_check(f);
  EXPECT_TRUE(has(gp, "title 'measured cell'"));
  EXPECT_TRUE(has(gp, "title 'uncertain (intervals overlap)'"));
  for (const auto& s : d.strategies) EXPECT_TRUE(has(f.caption, s + " ")) << f.caption;
  EXPECT_TRUE(has(gp, "lc rgb variable"));
}

TEST_F(FigureTest, DiffMapAnnotatesPercentAndLeavesBestWhite) {
  HeatmapData d = fixtures::diff_data();
  Figure f = heatmap_figure(d, stem("diff"), "diff");
  std::string gp = render_and_check(f);
  EXPECT_TRUE(has(gp, "with labels"));
  EXPECT_TRUE(has(gp, "set palette defined (0 '#ffffff'"));
  EXPECT_TRUE(has(gp, "set cbrange [0:"));
}

TEST_F(FigureTest, RegretMapRenders) {
  Figure f = heatmap_figure(fixtures::regret_data(), stem("regret"), "regret");
  std::string gp = render_and_check(f);
  EXPECT_TRUE(has(gp, "set cblabel 'regret (%)'"));
  EXPECT_TRUE(has(gp, "# kind: regret"));
}

TEST_F(FigureTest, ErrorScatterAndHistogram) {
  ErrorData d = fixtures::error_data();
  std::string gp = render_and_check(error_scatter_figure(d, stem("errors_scatter")));
  EXPECT_TRUE(has(gp, "title 'y = x'"));
  // one panel per method, titled with its point count
  for (const char* m : {"auto", "seed", "loglog"})
    EXPECT_TRUE(has(gp, std::string("set title '") + m + " (120 points)'")) << m;
  EXPECT_TRUE(has(gp, "# ---- panel 2 ----"));
  gp = render_and_check(error_histogram_figure(d, stem("errors_hist")));
  EXPECT_TRUE(has(gp, "with histeps"));
  EXPECT_TRUE(has(gp, "120 points"));
  gp = render_and_check(error_summary_figure(fixtures::error_summary_data(), stem("errors_summary")));
  EXPECT_TRUE(has(gp, "title 'GMAE'"));
  EXPECT_TRUE(has(gp, "alphabeta\t8.4\t6\t20.3"));
}

TEST_F(FigureTest, StackedBars) {
  std::string gp = render_and_check(stacked_bar_figure(fixtures::stacked_data(), stem("breakdown")));
  EXPECT_TRUE(has(gp, "rowstacked"));
  EXPECT_TRUE(has(gp, "title 'nccl all-reduce'"));
  EXPECT_TRUE(has(gp, "5.2K"));  // value label inside the prefill gemm segment
}

TEST_F(FigureTest, SvgAndPngFromOneScript) {
  Figure f = fit_figure(fixtures::fit_data(), stem("both"));
  RenderResult r = render_figure(f, parse_formats("both"));
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_TRUE(read_png_header(r.images[0]).valid);
  std::string svg = arfit::testing::slurp(r.images[1]);
  EXPECT_TRUE(has(svg, "<svg"));
  EXPECT_TRUE(has(svg, "width=\"1300\""));
}

TEST_F(FigureTest, GnuplotErrorIsReportedAndNothingIsLeft) {
  Figure f;
  f.stem = stem("broken");
  f.title = "broken";
  f.body = "plot $nosuchblock using 1:2\n";
  try {
    render_figure(f, {ImageFormat::Png});
    FAIL() << "expected GnuplotFailed";
  } catch (const GnuplotFailed& e) {
    EXPECT_TRUE(has(e.what(), "broken.gp")) << e.what();
    EXPECT_TRUE(has(e.what(), "nosuchblock")) << e.what();
  }
  EXPECT_FALSE(fs::exists(f.stem + ".png"));
  for (const auto& e : fs::directory_iterator(fs::path(f.stem).parent_path()))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(GnuplotRunner, MissingGnuplotSaysSo) {
  ::setenv("ARFIT_GNUPLOT", "/nonexistent/gnuplot", 1);
  arfit::testing::TempDir tmp;
  Figure f;
  f.stem = tmp.file("x");
  f.body = "plot x\n";
  try {
    render_figure(f, {ImageFormat::Png});
    ADD_FAILURE() << "expected GnuplotMissing";
  } catch (const GnuplotMissing& e) {
    EXPECT_TRUE(has(e.what(), "gnuplot not found")) << e.what();
  }
  ::unsetenv("ARFIT_GNUPLOT");
}

TEST(TickLabels, ReadableUnits) {
  EXPECT_EQ(bytes_label(512), "512");
  EXPECT_EQ(bytes_label(1024), "1K");
  EXPECT_EQ(bytes_label(3 << 20), "3M");
  EXPECT_EQ(bytes_label(1 << 30), "1G");
  EXPECT_EQ(time_label(20), "20 µs");
  EXPECT_EQ(time_label(1500), "1.5 ms");
  EXPECT_EQ(time_label(2e6), "2 s");
  EXPECT_EQ(si_label(1500), "1.5K");
  EXPECT_EQ(pow2_label(1024), "2^{10}");
  EXPECT_EQ(pow2_label(96), "96");
  // 1 B .. 16 GiB: at most 10 labels, on K/M/G boundaries
  std::string t = bytes_tics("x", 1, 16.0 * (1 << 30), 10);
  EXPECT_TRUE(has(t, "'1K' 1024")) << t;
  EXPECT_TRUE(has(t, "'1G' 1073741824")) << t;
  EXPECT_FALSE(has(t, "'2K'")) << t;
  EXPECT_EQ(parse_formats("both").size(), 2u);
  EXPECT_THROW(parse_formats("jpeg"), std::invalid_argument);
  EXPECT_EQ(gp_quote("it's"), "'it''s'");
  // Input text in a quoted string, a comment or a data block cannot end it: control characters become spaces,
  // a comment's trailing backslash (a line continuation) gets a space, a field starting with EOD or holding a
  // backslash is quoted.
  EXPECT_EQ(gp_quote("a\nsystem 'x'\r"), "'a system ''x'' '");
  EXPECT_EQ(gp_comment("title: x\nsystem \"id\""), "# title: x system \"id\"\n");
  EXPECT_EQ(gp_comment("ends in \\"), "# ends in \\ \n");
  EXPECT_EQ(data_block("d", {{"EOD", "1"}, {"a\\"}, {"x\ny"}}), "$d << EOD\n\"EOD\"\t1\n\"a\\\"\n\"x y\"\nEOD\n");
  EXPECT_THROW(data_block("m0_a-b", {}), std::invalid_argument);
  EXPECT_EQ(slug("h100-sxm_allreduce.NCCL"), "h100-sxm_allreduce.NCCL");  // nothing to fold: kept as it is
  EXPECT_EQ(slug("h100/allreduce NCCL"), "h100_allreduce_NCCL");
}

// File names from names: safe, readable, never empty (a clash of two names that fold alike is numbered by the
// command: PlotRobustness.FiguresWhoseNamesFoldAlikeAreAllWritten).
TEST(Slug, FileNameSafeAndReadable) {
  EXPECT_EQ(slug("a_b"), "a_b");
  EXPECT_EQ(slug("AMD EPYC/allreduce"), "AMD_EPYC_allreduce");
  EXPECT_EQ(slug("a  b//"), "a_b");
  EXPECT_EQ(slug("../x"), ".._x");
  EXPECT_EQ(slug(""), "figure");
  EXPECT_EQ(slug("//"), "figure");
}

// A name or title from an input holding gnuplot commands after a line break, a backslash or "EOD" draws as
// text: gnuplot runs none of it (no file appears), and the figure renders.
TEST_F(FigureTest, InputTextNeverRunsAsGnuplotCommands) {
  const std::string ran = stem("ran"), elsewhere = stem("elsewhere.png");
  const std::string evil = "x\nsystem \"touch " + ran + "\"\nset output \"" + elsewhere + "\"\r\nprint 'y' \\";
  FitFigureData fit = fixtures::fit_data();
  fit.title = fit.subtitle = evil;
  fit.measured.at(0).label = evil;
  fit.curves.at(0).label = "EOD" + evil;
  ErrorSummaryData summary = fixtures::error_summary_data();
  summary.title = evil;
  summary.methods.at(0).name = "EOD";
  summary.methods.at(1).name = evil;
  summary.metrics = {evil, "median", "p90"};
  BestMapData best = fixtures::best_data();
  best.title = evil;
  best.strategies.at(0) = evil;
  best.panels.at(0).title = evil;
  ErrorData errors = fixtures::error_data();
  errors.series.at(0).name = evil;
  for (Figure f : {fit_figure(fit, stem("fit_evil")), error_summary_figure(summary, stem("summary_evil")),
                   best_map_figure(best, stem("best_evil")), error_histogram_figure(errors, stem("hist_evil"))}) {
    f.caption = evil;
    f.kind = evil;
    const std::string gp = render_and_check(f);
    std::istringstream lines(gp);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_NE(line.rfind("system", 0), 0u) << f.stem << ": " << line;
      EXPECT_NE(line.rfind("set output \"", 0), 0u) << f.stem << ": " << line;
    }
  }
  EXPECT_FALSE(fs::exists(ran)) << "a title ran as a gnuplot command";
  EXPECT_FALSE(fs::exists(elsewhere)) << "a title redirected gnuplot's output";
}

}  // namespace

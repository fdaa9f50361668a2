// The all-to-allv figure (plots/alltoallv.h): rendered from fixed data, built from samples and a models file,
// and drawn by `arfit plot alltoallv` end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "fit/fit.h"
#include "model/alltoallv.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "plots/alltoallv.h"
#include "png_check.h"
#include "test_support.h"

using namespace arfit;
using namespace arfit::plots;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

double uniform_time(double bytes) { return 3.0 + bytes / 2500.0; }

// A uniform all-to-all curve of 2 ranks and all-to-allv whose latency follows max_of_max.
std::vector<Sample> samples() {
  std::vector<Sample> v;
  auto make = [](Collective c, double bytes, double t, const std::string& splits) {
    Sample s;
    s.collective = c;
    s.strategy = "MPI";
    s.dtype = "fp32";
    s.nranks = 2;
    s.bytes = static_cast<std::int64_t>(bytes);
    s.time_us = t;
    s.splits = splits;
    s.device = "toy-cpu";
    return s;
  };
  for (int e = 12; e <= 22; ++e) v.push_back(make(Collective::AllToAll, std::ldexp(1.0, e), uniform_time(std::ldexp(1.0, e)), ""));
  for (const std::string split : {"256,3-5,16", "1024,1-7,16", "4096,4-4,16", "30000-10000/30000-10000", "90000-10000/90000-10000"}) {
    const AllToAllvSplit sp = parse_alltoallv_split(split);
    for (double repeat : {1.0, 1.3, 0.99})  // three repeats: the figure shows their upper median
      v.push_back(make(Collective::AllToAllV, effective_alltoall_bytes(sp, EffectiveMode::Sum),
                       repeat * uniform_time(effective_alltoall_bytes(sp, EffectiveMode::MaxOfMax)), split));
  }
  return v;
}

}  // namespace

TEST(AllToAllvFigure, FamiliesSayWhichSideIsUneven) {
  EXPECT_EQ(alltoallv_family("64,4-4,16", 4), "even");
  EXPECT_EQ(alltoallv_family("64,1-7,16", 4), "uneven senders");
  EXPECT_EQ(alltoallv_family("300-100/300-100", 4), "uneven receivers");
  EXPECT_EQ(alltoallv_family("300-100/50-50", 4), "both uneven");
}

TEST(AllToAllvFigure, RendersOnePanelPerModeOverTheUniformPrediction) {
  if (find_gnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  const ModelSet models = fit::fit_model_set(samples());
  const std::vector<NamedAllToAllv> figs = alltoallv_figures(samples(), models);
  ASSERT_EQ(figs.size(), 1u);
  const AllToAllvFigureData& d = figs[0].data;
  EXPECT_EQ(figs[0].name, "alltoallv_toy-cpu_alltoallv_MPI_NONE_fp32_n2");
  ASSERT_EQ(d.panels.size(), 3u);
  EXPECT_EQ(d.panels[1].mode, "max_of_max");
  ASSERT_EQ(d.panels[1].points.size(), 5u);
  // The upper median of the repeats is drawn at the mode's effective size; in the true mode it sits on the line.
  for (const auto& p : d.panels[1].points) EXPECT_NEAR(p.time_us, uniform_time(p.bytes), 1e-6 * p.time_us);
  EXPECT_LT(d.panels[1].gmae, 0.02);
  EXPECT_GT(d.panels[0].gmae, 0.05);  // sum: the uneven splits are slower than their mean size says
  EXPECT_NE(d.subtitle.find("5 splits"), std::string::npos) << d.subtitle;
  ASSERT_FALSE(d.curve.empty());
  for (const auto& c : d.curve) {
    EXPECT_LE(c.lo_us, c.time_us);
    EXPECT_GE(c.hi_us, c.time_us);
  }
  TempDir tmp;
  const Figure f = alltoallv_figure(d, (tmp.path() / figs[0].name).string());
  EXPECT_EQ(f.kind, "alltoallv");
  const RenderResult r = render_figure(f, {ImageFormat::Png});
  ASSERT_EQ(r.images.size(), 1u);
  const auto png = arfit::plots::testing::read_png_header(r.images[0]);
  EXPECT_TRUE(png.valid) << png.problem;
  EXPECT_EQ(png.width, static_cast<std::uint32_t>(f.width));
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  const std::string gp = arfit::testing::slurp(r.script);
  EXPECT_TRUE(has(gp, "set title 'max\\_of\\_max · GMAE 0.")) << gp.substr(0, 2000);
  EXPECT_TRUE(has(gp, "title 'uniform all-to-all prediction'"));
  EXPECT_TRUE(has(gp, "title '90 % prediction interval'"));
  EXPECT_TRUE(has(gp, "title 'measured all-to-allv, uneven senders'"));
  EXPECT_TRUE(has(gp, "title 'measured all-to-allv, uneven receivers'"));
  // Without an all-to-all model of that system nothing is drawn.
  std::vector<Sample> only_v;
  for (const Sample& s : samples())
    if (s.collective == Collective::AllToAllV) only_v.push_back(s);
  EXPECT_TRUE(alltoallv_figures(only_v, fit::fit_model_set(only_v)).empty());
}

TEST(AllToAllvFigure, PlotCommandDrawsItFromSamplesAndModels) {
  if (find_gnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  TempDir tmp;
  SampleFile f;
  f.samples = samples();
  write_samples_csv(tmp.file("s.csv"), f);
  const std::string arfit = arfit::testing::arfit_bin();
  auto r = run_command(arfit + " fit " + tmp.file("s.csv") + " -o " + tmp.file("m.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(arfit + " plot alltoallv " + tmp.file("s.csv") + " " + tmp.file("m.json") + " -o " + tmp.file("fig"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(tmp.file("fig/alltoallv_toy-cpu_alltoallv_MPI_NONE_fp32_n2.png"))) << r.output;
  r = run_command(arfit + " plot alltoallv " + tmp.file("s.csv") + " -o " + tmp.file("fig"));
  EXPECT_EQ(r.exit_code, 2) << r.output;  // no models.json
  EXPECT_TRUE(has(r.output, "plot alltoallv needs")) << r.output;
  // `plot all` over all-to-all data alone (the main job's second models file): the fits and the all-to-allv
  // figure, the strategy grids skipped with a note, an index; not a usage error for the grid it cannot draw.
  r = run_command(arfit + " plot all " + tmp.file("s.csv") + " " + tmp.file("m.json") + " -o " + tmp.file("all") +
                  " --index " + tmp.file("all/index.html"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "heatmap, best and diff skipped")) << r.output;
  EXPECT_TRUE(std::filesystem::exists(tmp.file("all/alltoallv_toy-cpu_alltoallv_MPI_NONE_fp32_n2.png"))) << r.output;
  EXPECT_TRUE(std::filesystem::exists(tmp.file("all/index.html"))) << r.output;
}

// Adapters: samples, models, codegen JSON and eval JSON -> figure structs. No gnuplot needed.
#include <gtest/gtest.h>

#include <cmath>

#include "model/errors.h"
#include "plot_fixtures.h"
#include "plots/adapters.h"
#ifdef ARFIT_PLOTS_TEST_WITH_FIT
#include "fit/fit.h"
#endif

using namespace arfit;
using namespace arfit::plots;

namespace {

Sample make_sample(const std::string& strategy, int nranks, std::int64_t tokens, std::int64_t hidden, double time_us,
                   FusionOp fusion = FusionOp::None) {
  Sample s;
  s.collective = Collective::AllReduce;
  s.strategy = strategy;
  s.fusion = fusion;
  s.dtype = "bf16";
  s.nranks = nranks;
  s.tokens = tokens;
  s.hidden = hidden;
  s.bytes = tokens * hidden * 2;
  s.time_us = time_us;
  s.device = "toy-gpu";
  return s;
}

// The three toy strategies of the fixtures, measured on a 4 x 3 grid at TP 4, two fusions.
std::vector<Sample> toy_grid_samples() {
  std::vector<Sample> v;
  for (FusionOp f : {FusionOp::None, FusionOp::ResidualRmsNorm})
    for (std::int64_t t : {1, 64, 1024, 16384})
      for (std::int64_t h : {128, 1024, 8192})
        for (int s = 0; s < 3; ++s)
          v.push_back(make_sample(fixtures::toy_strategies()[s], 4, t, h, fixtures::toy_strategy_us(s, t, h), f));
  return v;
}

TEST(FitAdapter, SamplesOnlyOneFigurePerGroupWithMedianAndHeldOut) {
  std::vector<Sample> train, held;
  for (int k = 10; k <= 20; ++k) {
    double b = std::ldexp(1.0, k);
    for (double jitter : {0.9, 1.0, 1.3}) {  // three repeats: the median (1.0) is drawn
      Sample s = make_sample("NCCL", 8, 0, 0, fixtures::toy_time_us(b, 8) * jitter);
      s.bytes = static_cast<std::int64_t>(b);
      (k % 2 ? held : train).push_back(s);
    }
  }
  Sample other = train.front();
  other.nranks = 4;
  train.push_back(other);
  auto figs = fit_figures(train, held, nullptr);
  ASSERT_EQ(figs.size(), 2u);
  const FitFigureData* n8 = nullptr;
  for (const auto& f : figs)
    if (f.data.title.find("TP8") != std::string::npos) n8 = &f.data;
  ASSERT_NE(n8, nullptr);
  EXPECT_NE(n8->title.find("toy-gpu · allreduce · NCCL · NONE · bf16 · TP8"), std::string::npos);
  ASSERT_EQ(n8->measured.size(), 1u);
  const auto& pts = n8->measured[0].points;
  ASSERT_EQ(pts.size(), 11u);
  int held_count = 0;
  for (const auto& p : pts) {
    held_count += p.held_out;
    EXPECT_NEAR(p.time_us, fixtures::toy_time_us(p.bytes, 8), 1e-9);
    EXPECT_EQ(p.held_out, static_cast<int>(std::lround(std::log2(p.bytes))) % 2 == 1);
  }
  EXPECT_EQ(held_count, 5);
  EXPECT_TRUE(n8->curves.empty());
}

#ifdef ARFIT_PLOTS_TEST_WITH_FIT
TEST(FitAdapter, ModelCurvesBandsAndSeedTurningPoints) {
  std::vector<Sample> samples;
  for (int k = 4; k <= 30; ++k) {
    double b = std::ldexp(1.0, k);
    Sample s = make_sample("NCCL", 8, 0, 0, fixtures::toy_time_us(b, 8) * (1.0 + 0.02 * std::sin(1.3 * k)));
    s.bytes = static_cast<std::int64_t>(b);
    samples.push_back(s);
  }
  fit::FitOptions fo;
  fo.family = "seed";
  ModelSet seed = fit::fit_model_set(samples, fo);
  auto figs = fit_figures(samples, {}, &seed);
  ASSERT_EQ(figs.size(), 1u);
  const auto& d = figs[0].data;
  ASSERT_EQ(d.curves.size(), 1u);
  EXPECT_GT(d.curves[0].points.size(), 50u);
  // the model is drawn two octaves beyond the measured sizes on both sides
  EXPECT_NEAR(d.curves[0].points.front().bytes, std::ldexp(1.0, 2), 1e-6);
  EXPECT_NEAR(d.curves[0].points.back().bytes, std::ldexp(1.0, 32), 1.0);
  for (const auto& p : d.curves[0].points) {
    EXPECT_LE(p.lo_us, p.time_us);
    EXPECT_GE(p.hi_us, p.time_us);
  }
  EXPECT_NE(d.subtitle.find("family seed"), std::string::npos);
  ASSERT_EQ(d.turning_points.size(), 2u);
  EXPECT_LT(d.turning_points[0].bytes, d.turning_points[1].bytes);

  // cross-TP: a TP16 curve is predicted (dashed) from models at 2, 4, 8
  for (int n : {2, 4})
    for (int k = 4; k <= 30; ++k) {
      double b = std::ldexp(1.0, k);
      Sample s = make_sample("NCCL", n, 0, 0, fixtures::toy_time_us(b, n, 6.0 + n));
      s.bytes = static_cast<std::int64_t>(b);
      samples.push_back(s);
    }
  ModelSet all = fit::fit_model_set(samples);
  auto cross = cross_figures(samples, all, {16}, {});
  ASSERT_EQ(cross.size(), 1u);
  int dashed = 0;
  for (const auto& c : cross[0].data.curves) dashed += c.dashed;
  EXPECT_EQ(dashed, 1);
  EXPECT_EQ(cross[0].data.measured.size(), 3u);
}
#endif

#ifdef ARFIT_PLOTS_TEST_WITH_FIT
// Two shapes with equal bytes (1 x 1024 and 2 x 512 tokens x hidden) measured differently: the dot drawn at that
// size is the value the fit passed through (model/metrics.h size_median), not another average of the two.
TEST(FitAdapter, MeasuredDotsAreTheFittedKnotsWhenSizesRepeat) {
  std::vector<Sample> samples;
  for (int k = 4; k <= 16; ++k) {
    const std::int64_t hidden = 256;
    const std::int64_t tokens = std::int64_t{1} << (k - 4);
    samples.push_back(make_sample("NCCL", 8, tokens, hidden, fixtures::toy_time_us(2.0 * tokens * hidden, 8)));
    // the same bytes again as twice the tokens at half the hidden size, 30 % slower
    samples.push_back(make_sample("NCCL", 8, 2 * tokens, hidden / 2, 1.3 * fixtures::toy_time_us(2.0 * tokens * hidden, 8)));
  }
  const ModelSet models = fit::fit_model_set(samples);
  auto figs = fit_figures(samples, {}, &models);
  ASSERT_EQ(figs.size(), 1u);
  ASSERT_EQ(figs[0].data.measured.size(), 1u);
  const auto& pts = figs[0].data.measured[0].points;
  ASSERT_EQ(pts.size(), 13u);
  for (const auto& p : pts) {
    EXPECT_NEAR(p.time_us, 1.3 * fixtures::toy_time_us(p.bytes, 8), 1e-9 * p.time_us);  // upper of the two
    PredictQuery q;
    q.nranks = 8;
    q.bytes = p.bytes;
    const auto pred = models.predict(q);
    ASSERT_TRUE(pred.has_value());
    EXPECT_NEAR(pred->time_us / p.time_us, 1.0, 1e-9);
  }
}
#endif

TEST(GridAdapter, MeasuredBestDiffAndShares) {
  StrategyGrid g = grid_from_samples(toy_grid_samples());
  ASSERT_TRUE(g.shaped());
  EXPECT_EQ(g.strategies, (std::vector<std::string>{"NCCL", "ONESHOT", "TWOSHOT"}));
  EXPECT_EQ(g.cells.size(), 2u * 4 * 3);
  auto best = best_maps(g);
  ASSERT_EQ(best.size(), 1u);  // one TP
  ASSERT_EQ(best[0].data.panels.size(), 2u);  // one panel per fusion
  EXPECT_EQ(best[0].data.panels[0].title, "fusion NONE");
  int expect_oneshot = 0, total = 0;
  for (std::int64_t t : {1, 64, 1024, 16384})
    for (std::int64_t h : {128, 1024, 8192}) expect_oneshot += fixtures::toy_best(t, h) == 1, ++total;
  auto shares = strategy_shares(best[0].data);
  EXPECT_NEAR(shares[1], 100.0 * expect_oneshot / total, 1e-9);
  EXPECT_NEAR(shares[0] + shares[1] + shares[2], 100.0, 1e-9);

  auto diffs = diff_maps(g);
  ASSERT_EQ(diffs.size(), 2u);  // per fusion
  for (const auto& p : diffs[0].data.panels)
    for (const auto& c : p.cells) {
      int s = p.title == "NCCL" ? 0 : p.title == "ONESHOT" ? 1 : 2;
      double best_t = fixtures::toy_strategy_us(fixtures::toy_best(c.x, c.y), c.x, c.y);
      EXPECT_NEAR(c.value, 100.0 * (fixtures::toy_strategy_us(s, c.x, c.y) / best_t - 1.0), 1e-9);
    }
  EXPECT_EQ(diffs[0].data.scale, GridScale::Percent);
}

nlohmann::json toy_codegen_json(const std::string& wrong_choice_at_1024) {
  nlohmann::json j;
  j["system"] = "toy-gpu";
  j["dtype"] = "bf16";
  j["strategies"] = {"NCCL", "ONESHOT", "TWOSHOT"};
  j["cells"] = nlohmann::json::array();
  for (std::int64_t t : {1, 64, 1024, 16384})
    for (std::int64_t h : {128, 1024, 8192}) {
      nlohmann::json c;
      c["tp"] = 4;
      c["fusion"] = "NONE";
      c["tokens"] = t;
      c["hidden"] = h;
      c["bytes"] = t * h * 2;
      int b = fixtures::toy_best(t, h);
      c["choice"] = (t == 1024 && h == 128) ? wrong_choice_at_1024 : fixtures::toy_strategies()[b];
      for (int s = 0; s < 3; ++s) {
        double v = fixtures::toy_strategy_us(s, t, h);
        c["predicted"][fixtures::toy_strategies()[s]] = {{"time_us", v}, {"lo_us", v * 0.9}, {"hi_us", v * 1.1}};
      }
      c["uncertain"] = (t == 64);
      c["fallback"] = false;
      j["cells"].push_back(c);
    }
  nlohmann::json fb;  // a cell no model could predict: skipped
  fb["tp"] = 16, fb["fusion"] = "NONE", fb["tokens"] = 1, fb["hidden"] = 128, fb["choice"] = "NCCL", fb["fallback"] = true;
  fb["predicted"] = nlohmann::json::object();
  j["cells"].push_back(fb);
  return j;
}

TEST(GridAdapter, CodegenJsonMeasuredMarksAndRegret) {
  StrategyGrid table = grid_from_codegen_json(toy_codegen_json("NCCL"), "table.json");
  EXPECT_EQ(table.cells.size(), 12u);  // the fallback cell is skipped
  StrategyGrid measured = grid_from_samples(toy_grid_samples());
  mark_measured(table, measured);
  for (const auto& c : table.cells) EXPECT_TRUE(c.measured);
  auto best = best_maps(table);
  ASSERT_EQ(best.size(), 1u);
  int uncertain = 0, dots = 0;
  for (const auto& c : best[0].data.panels[0].cells) uncertain += c.uncertain, dots += c.measured;
  EXPECT_EQ(uncertain, 3);  // the t = 64 column
  EXPECT_EQ(dots, 12);

  auto regret = regret_maps(table, measured);
  ASSERT_EQ(regret.size(), 1u);
  ASSERT_EQ(regret[0].data.panels.size(), 1u);  // the table has fusion NONE only
  int nonzero = 0;
  for (const auto& c : regret[0].data.panels[0].cells) {
    if (c.x == 1024 && c.y == 128) {
      double best_t = fixtures::toy_strategy_us(fixtures::toy_best(1024, 128), 1024, 128);
      EXPECT_NEAR(c.value, 100.0 * (fixtures::toy_strategy_us(0, 1024, 128) / best_t - 1.0), 1e-9);
      EXPECT_GT(c.value, 1.0);
      ++nonzero;
    } else {
      EXPECT_NEAR(c.value, 0.0, 1e-12);
    }
  }
  EXPECT_EQ(nonzero, 1);
  EXPECT_NE(regret[0].data.caption.find("12 measured cells"), std::string::npos) << regret[0].data.caption;

  EXPECT_THROW(grid_from_codegen_json(nlohmann::json{{"x", 1}}, "bad.json"), InputError);
}

TEST(EvalAdapter, SummaryPointsAndSelect) {
  nlohmann::json j = {{"protocol", "interp2"},
                      {"methods", {{"auto", {{"gmae", 1.2}, {"median", 0.8}, {"p90", 3.0}, {"points", 10}}},
                                   {"loglog", {{"gmae", 2.2}, {"median", 1.5}, {"p90", 5.0}, {"points", 10}}}}},
                      {"points",
                       {{{"method", "auto"}, {"bytes", 1024}, {"measured_us", 10.0}, {"predicted_us", 10.5}},
                        {{"method", "loglog"}, {"bytes", 1024}, {"measured_us", 10.0}, {"predicted_us", 9.0}},
                        {{"method", "auto"}, {"bytes", 2048}, {"measured_us", 12.0}, {"predicted_us", 12.1}}}}};
  auto s = summary_from_eval_json(j, "eval.json");
  ASSERT_EQ(s.methods.size(), 2u);
  EXPECT_EQ(s.methods[0].name, "auto");
  EXPECT_DOUBLE_EQ(s.methods[0].values[0], 1.2);
  EXPECT_DOUBLE_EQ(s.methods[1].values[2], 5.0);
  auto e = errors_from_eval_json(j, "eval.json");
  ASSERT_EQ(e.series.size(), 2u);
  EXPECT_EQ(e.series[0].measured_predicted.size(), 2u);
  EXPECT_DOUBLE_EQ(e.series[1].measured_predicted[0].second, 9.0);

  nlohmann::json sel = {{"protocol", "select"},
                        {"measured_fraction", 0.25},
                        {"methods", {{"auto", {{"geomean_regret", 1.004}, {"p95_regret", 1.01}, {"max_regret", 1.5},
                                               {"exact", 93.0}, {"cells", 100}}}}},
                        {"cells",
                         {{{"method", "auto"}, {"system", "b200"}, {"nranks", 8}, {"bytes", 4096}, {"regret", 1.0}},
                          {{"method", "auto"}, {"system", "b200"}, {"nranks", 8}, {"bytes", 8192}, {"regret", 1.25}}}}};
  auto ss = summary_from_eval_json(sel, "select.json");
  EXPECT_NEAR(ss.methods[0].values[0], 0.4, 1e-9);
  EXPECT_NEAR(ss.methods[0].values[3], 93.0, 1e-9);
  EXPECT_NE(ss.title.find("25 % of cells measured"), std::string::npos);
  auto maps = regret_maps_from_select_json(sel, "select.json");
  ASSERT_EQ(maps.size(), 1u);
  double mx = 0;
  for (const auto& c : maps[0].data.panels[0].cells) mx = std::max(mx, c.value);
  EXPECT_NEAR(mx, 25.0, 1e-9);
  EXPECT_THROW(summary_from_eval_json(nlohmann::json{{"protocol", "x"}}, "e.json"), InputError);
}

}  // namespace

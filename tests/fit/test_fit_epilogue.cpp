// fit/epilogue.h: the fitted term a fused epilogue adds over the unfused strategy.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fit/epilogue.h"
#include "fit/fit.h"

using namespace arfit;
using namespace arfit::fit;

namespace {

Sample shape_sample(FusionOp fusion, std::int64_t tokens, std::int64_t hidden, double time_us) {
  Sample s;
  s.collective = Collective::AllReduce;
  s.strategy = "ONESHOT";
  s.fusion = fusion;
  s.dtype = "bf16";
  s.nranks = 4;
  s.device = "synthetic";
  s.tokens = tokens;
  s.hidden = hidden;
  s.bytes = tokens * hidden * 2;
  s.time_us = time_us;
  s.source = "synthetic.csv";
  return s;
}

double unfused_us(double bytes) { return 4.0 + bytes / 2.0e5; }
// Known epilogue: 1.5 µs + 0.2 µs per KiB... expressed per byte, + 3 ns per row.
constexpr double kA = 1.5, kPerByte = 2.0e-4, kPerRow = 3.0e-3;

std::vector<Sample> grid(double noise, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::vector<Sample> v;
  for (std::int64_t tokens = 1; tokens <= 16384; tokens *= 4)
    for (std::int64_t hidden = 256; hidden <= 8192; hidden *= 2) {
      const double b = static_cast<double>(tokens * hidden * 2);
      const double base = unfused_us(b);
      const double epi = kA + kPerByte * b + kPerRow * tokens;
      v.push_back(shape_sample(FusionOp::None, tokens, hidden, base * std::exp(noise * nd(rng))));
      v.push_back(shape_sample(FusionOp::ResidualRmsNorm, tokens, hidden, (base + epi) * std::exp(noise * nd(rng))));
    }
  return v;
}

const nlohmann::json* group(const ModelSet& m, FusionOp f) {
  for (const auto& g : m.raw().at("groups"))
    if (g.at("key").at("fusion").get<std::string>() == to_string(f)) return &g;
  return nullptr;
}

}  // namespace

TEST(FitEpilogue, RecoversAKnownEpilogueTerm) {
  const ModelSet m = fit_model_set(grid(0.01, 7));
  const nlohmann::json* fused = group(m, FusionOp::ResidualRmsNorm);
  ASSERT_NE(fused, nullptr);
  ASSERT_TRUE(fused->contains("epilogue"));
  const auto& e = (*fused)["epilogue"];
  ASSERT_TRUE(e.at("ok").get<bool>()) << e.dump();
  EXPECT_EQ(e.at("base_group").get<std::string>(), group(m, FusionOp::None)->at("id").get<std::string>());
  // The byte term dominates large shapes and is well determined; the intercept and the per-row term are
  // small and share the noise of the small shapes.
  EXPECT_NEAR(e.at("per_byte_us").get<double>(), kPerByte, 0.05 * kPerByte);
  EXPECT_NEAR(e.at("a_us").get<double>(), kA, 0.6);
  EXPECT_NEAR(e.at("per_row_us").get<double>(), kPerRow, 0.5 * kPerRow);
  EXPECT_LT(e.at("median_rel_residual").get<double>(), 0.03);
  EXPECT_GE(e.at("per_row_us").get<double>(), 0.0);
  // The unfused group carries no epilogue.
  EXPECT_FALSE(group(m, FusionOp::None)->contains("epilogue"));
}

TEST(FitEpilogue, CoefficientsStayNonNegativeWhenFusionCostsNothing) {
  // Fused == unfused (up to noise): the fit must not invent negative costs.
  std::vector<Sample> v;
  for (std::int64_t tokens = 1; tokens <= 4096; tokens *= 4)
    for (std::int64_t hidden = 512; hidden <= 4096; hidden *= 2) {
      const double b = static_cast<double>(tokens * hidden * 2);
      v.push_back(shape_sample(FusionOp::None, tokens, hidden, unfused_us(b)));
      v.push_back(shape_sample(FusionOp::ResidualRmsNorm, tokens, hidden, unfused_us(b) * 0.98));
    }
  const ModelSet m = fit_model_set(v);
  const auto& e = group(m, FusionOp::ResidualRmsNorm)->at("epilogue");
  ASSERT_TRUE(e.at("ok").get<bool>());
  EXPECT_EQ(e.at("a_us").get<double>(), 0.0);
  EXPECT_EQ(e.at("per_byte_us").get<double>(), 0.0);
  EXPECT_EQ(e.at("per_row_us").get<double>(), 0.0);
}

TEST(FitEpilogue, TooFewShapesIsReportedNotFitted) {
  const ModelSet m = fit_model_set(grid(0.0, 1));
  const GroupModel unfused = GroupModel::from_json(*group(m, FusionOp::None));
  Curve fused;
  fused.key.fusion = FusionOp::ResidualRmsNorm;
  for (std::int64_t tokens : {16, 64}) {  // two shapes only
    const double b = static_cast<double>(tokens * 1024 * 2);
    fused.shape_points.push_back({tokens, 1024, b, unfused_us(b) + kA + kPerByte * b});
  }
  const EpilogueFit e = fit_epilogue(fused, unfused);
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.problem.find(">= 3 distinct"), std::string::npos) << e.problem;
}

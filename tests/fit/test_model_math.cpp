// Pure model/ math: splines, metrics, the seed port's turning points, all-to-allv effective sizes, SM table.
#include <gtest/gtest.h>

#include <cmath>

#include "model/alltoallv.h"
#include "model/families.h"
#include "model/group_model.h"
#include "model/interp.h"
#include "model/metrics.h"
#include "model/seed.h"
#include "model/sm_targets.h"

using namespace arfit;

TEST(Spline, PassesThroughKnotsAndIsZeroOutside) {
  std::vector<double> x = {0, 1, 2, 4, 5}, y = {0.1, -0.2, 0.05, 0.3, 0.0};
  for (SplineKind k : {SplineKind::Natural, SplineKind::Akima, SplineKind::Pchip, SplineKind::Linear, SplineKind::Additive}) {
    HermiteSpline s(x, y, k);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(s(x[i]), y[i], 1e-12) << to_string(k);
    EXPECT_EQ(s(-0.5), 0.0);
    EXPECT_EQ(s(5.5), 0.0);
  }
}

// The additive rule is exact for a curve that is α + s/β between consecutive knots, whatever the model: here the
// truth has a different α-β segment in each gap and the "model" is a single wrong α-β line.
TEST(Spline, AdditiveCorrectionIsExactForPiecewiseAlphaBeta) {
  const std::vector<double> s = {1e3, 1e4, 1e5, 1e6};
  // Continuous piecewise α-β: 6 us at 1 kB, 15 us at 10 kB, 45 us at 100 kB, 200 us at 1 MB (each segment's α
  // and 1/β follow from its two ends).
  const std::vector<double> v = {6, 15, 45, 200};
  auto truth = [&](double b) {
    size_t i = 0;
    while (i + 2 < s.size() && b > s[i + 1]) ++i;
    const double per_byte = (v[i + 1] - v[i]) / (s[i + 1] - s[i]);
    return (v[i] - per_byte * s[i]) + per_byte * b;
  };
  auto model_lt = [](double lx) { return std::log(4 + std::exp(lx) / 2e3); };
  std::vector<double> x, y;
  for (double b : s) {
    x.push_back(std::log(b));
    y.push_back(std::log(truth(b)) - model_lt(std::log(b)));
  }
  const HermiteSpline add(x, y, SplineKind::Additive), log_linear(x, y, SplineKind::Linear);
  double worst_add = 0, worst_log = 0;
  for (double b = 1e3; b <= 1e6; b *= 1.07) {
    const double lx = std::log(b);
    worst_add = std::max(worst_add, std::fabs(std::exp(add.corrected(lx, model_lt(lx), model_lt)) / truth(b) - 1));
    worst_log = std::max(worst_log, std::fabs(std::exp(log_linear.corrected(lx, model_lt(lx), model_lt)) / truth(b) - 1));
  }
  EXPECT_LT(worst_add, 1e-12);
  EXPECT_GT(worst_log, 0.05);  // a log-space interpolation of the same residuals is not: the test can fail
  // Outside the knots the additive rule holds the nearest knot's residual t - model (200 - 504 us at 1 MB,
  // 6 - 4.5 us at 1 kB); the log-space kinds leave the model alone.
  const double above = std::log(1e7), below = std::log(500.0);
  EXPECT_NEAR(std::exp(add.corrected(above, model_lt(above), model_lt)), 4 + 1e7 / 2e3 + (200 - (4 + 1e6 / 2e3)), 1e-9);
  EXPECT_NEAR(std::exp(add.corrected(below, model_lt(below), model_lt)), 4 + 500 / 2e3 + (6 - (4 + 1e3 / 2e3)), 1e-9);
  EXPECT_DOUBLE_EQ(log_linear.corrected(above, model_lt(above), model_lt), model_lt(above));
}

TEST(Spline, AdditiveCorrectionFallsBackWhenTheSumIsNotATime) {
  // The model dwarfs a tiny measured time at one knot: the additive sum goes negative between the knots, and the
  // multiplicative value (always positive) answers instead.
  const std::vector<double> x = {0.0, std::log(10.0)}, y = {std::log(1e-3 / 100), 0.0};
  auto model_lt = [](double lx) { return lx < 1 ? std::log(100.0) : std::log(100.0 - 99.0 * lx / std::log(10.0)); };
  const HermiteSpline add(x, y, SplineKind::Additive);
  const double lx = std::log(2.0);
  const double v = add.corrected(lx, std::log(50.0), model_lt);
  EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(v, std::log(50.0) + add(lx), 1e-12);
}

TEST(Spline, PchipIsMonotoneOnMonotoneData) {
  std::vector<double> x = {0, 1, 2, 3, 4}, y = {0, 0.01, 0.02, 1.0, 1.01};
  HermiteSpline s(x, y, SplineKind::Pchip);
  double prev = -1;
  for (double v = 0; v <= 4; v += 0.01) {
    const double f = s(v);
    EXPECT_GE(f, prev - 1e-12);
    prev = f;
  }
  // The natural spline overshoots on the same data: the test can fail.
  HermiteSpline nat(x, y, SplineKind::Natural);
  bool overshoot = false;
  for (double v = 0; v <= 4; v += 0.01) overshoot = overshoot || nat(v) > 1.01 + 1e-6 || nat(v) < -1e-6;
  EXPECT_TRUE(overshoot);
}

TEST(Spline, NaturalReproducesALine) {
  std::vector<double> x = {0, 0.5, 2, 3}, y = {1, 2, 5, 7};
  HermiteSpline s(x, y, SplineKind::Natural);
  EXPECT_NEAR(s(1.0), 3.0, 1e-12);
  EXPECT_NEAR(s(2.5), 6.0, 1e-12);
}

TEST(Spline, RejectsUnsortedKnots) { EXPECT_THROW(HermiteSpline({0, 2, 1}, {0, 0, 0}, SplineKind::Akima), std::invalid_argument); }

TEST(LogLog, InterpolatesAndExtendsTheEndSegments) {
  const std::vector<double> x = {10, 100, 1000}, y = {1, 10, 10};
  EXPECT_NEAR(loglog_at(x, y, 31.6227766), std::sqrt(10.0), 1e-6);  // halfway in log-log on a slope of 1
  EXPECT_NEAR(loglog_at(x, y, 100), 10, 1e-12);
  EXPECT_NEAR(loglog_at(x, y, 500), 10, 1e-12);   // flat segment
  EXPECT_NEAR(loglog_at(x, y, 1), 0.1, 1e-12);    // first segment extended below
  EXPECT_NEAR(loglog_at(x, y, 1e5), 10, 1e-12);   // last segment extended above
  EXPECT_EQ(loglog_at({5}, {7}, 1e9), 7);
  EXPECT_TRUE(std::isnan(loglog_at({}, {}, 1)));
}

TEST(Metrics, GmaeByHand) {
  // exp(mean(ln(e + 4e-4))) with e = 0.01, 0.04: sqrt(0.0104 * 0.0404)
  EXPECT_NEAR(gmae({0.01, 0.04}), std::sqrt(0.0104 * 0.0404), 1e-15);
  EXPECT_NEAR(relative_error(110, 100), 0.1, 1e-15);
  const ErrorSummary s = summarize_errors({0.1, 0.2, 0.3, 0.4, 0.5});
  EXPECT_NEAR(s.median, 0.3, 1e-15);
  EXPECT_NEAR(s.p90, 0.46, 1e-12);  // numpy: 0.1 + 0.9*4 -> between 0.4 and 0.5 at 0.6
  EXPECT_EQ(s.max, 0.5);
  EXPECT_EQ(s.points, 5);
}

// A curve built so that the turning points can be read off by hand.
//   i      0     1     2     3     4     5     6     7     8     9     10    11
//   size   2^10 ... 2^21 (doubling)
//   lat    10    10    10    10    10    10    10    13    20    36    70    138
// Central ratio (t[i+1]-t[i-1])/(2 t[i]) for i >= 5: i=5: 0; i=6: (13-10)/20 = 0.15 > 0.1 -> lin = 5.
TEST(SeedPort, TurningPointsByHand) {
  std::vector<double> s, t = {10, 10, 10, 10, 10, 10, 10, 13, 20, 36, 70, 138};
  for (int i = 0; i < 12; ++i) s.push_back(std::ldexp(1.0, 10 + i));
  std::vector<double> bw;
  for (size_t i = 0; i < s.size(); ++i) bw.push_back(s[i] / t[i] / 1e3);
  const SeedTurningPoints tp = seed_turning_points(s, t, bw);
  EXPECT_EQ(tp.lin, 5);
  // bw = s/t: max at i = 11 (2^21/138 = 15196); from i = 10 downwards the first below 95 %:
  // i=10: 2^20/70 = 14979 (98.6 %) no; i=9: 2^19/36 = 14563 (95.8 %) no; i=8: 2^18/20 = 13107 (86 %) -> sat = 10.
  EXPECT_EQ(tp.sat, 10);
  const SeedSetup setup = seed_setup(s, t, 1.0);
  EXPECT_DOUBLE_EQ(setup.model.ln_p, 15.0);
  EXPECT_DOUBLE_EQ(setup.model.sats_p, 20.0);
  EXPECT_DOUBLE_EQ(setup.model.overhead, 10.0);  // t[lin - 1]
  EXPECT_EQ(setup.x.size(), 6u);                 // sizes 2^15 .. 2^20
  EXPECT_DOUBLE_EQ(setup.model.L, 20.0);         // start: max x
  EXPECT_DOUBLE_EQ(setup.model.x0, 17.5);        // start: median x
}

TEST(SeedPort, PiecewisePrediction) {
  SeedModel m;
  m.ln_p = 12;
  m.sats_p = 20;
  m.max_bw = 100;  // GB/s
  m.overhead = 8;
  m.L = 2;
  m.x0 = 16;
  m.k = 1;
  m.b = 0;  // log10 bw = 2/(1+e^-(x-16)); at x = 16: 1 -> 10 GB/s
  EXPECT_DOUBLE_EQ(m.time_us(1024, 1.0), 8.0);                       // below ln_p: overhead
  EXPECT_NEAR(m.time_us(65536, 1.0), 65536 / 10.0 / 1e3, 1e-9);      // logistic: 6.5536 µs
  EXPECT_NEAR(m.time_us(std::ldexp(1.0, 24), 2.0), std::ldexp(1.0, 24) / 100 * 2 / 1e3 + 8, 1e-9);  // above sats_p
  // The seam the seed is known for: just above sats_p the prediction jumps by the overhead.
  EXPECT_GT(m.time_us(std::ldexp(1.0, 20) * 1.01, 1.0) - m.time_us(std::ldexp(1.0, 20), 1.0), 5.0);
}

namespace {

// The seed of a public nccl-tests table (thomaslie reduce_scatter, 2 nodes): its turning point 2^sats_p is the
// measured 63,963,136 bytes; its logistic, fitted on three sizes (the start values kept), is 8.6e-13 us there.
SeedModel reduce_scatter_seed() {
  SeedModel m;
  m.ln_p = 25.357552004618082;
  m.sats_p = std::log2(63963136.0);
  m.max_bw = 13.946964675885066;
  m.overhead = 1232.57;
  m.L = 25.672425341971497;
  m.x0 = 25.514988673294788;
  m.k = 1;
  m.b = 1.1004190826464015;
  return m;
}

// A seed group with correction knots at `sizes`, residuals taken as fit/fit_group.cpp takes them.
GroupModel seed_group(const SeedModel& m, const std::vector<double>& sizes, const std::vector<double>& times) {
  nlohmann::json lx = nlohmann::json::array(), resid = nlohmann::json::array();
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    lx.push_back(std::log(sizes[i]));
    resid.push_back(std::log(times[i]) - std::log(m.time_us(sizes[i], 0.5)));
  }
  const nlohmann::json j = {
      {"key", {{"system", "s"}, {"collective", "reducescatter"}, {"strategy", "NCCL"}, {"fusion", "NONE"}, {"dtype", "fp32"}, {"nranks", 2}, {"nnodes", 1}}},
      {"ok", true}, {"family", "seed"}, {"params", nlohmann::json::array()}, {"seed", m.to_json()}, {"bus_factor", 0.5},
      {"range", {{"min_bytes", sizes.front()}, {"max_bytes", sizes.back()}, {"points", static_cast<int>(sizes.size())}}},
      {"correction", {{"kind", "additive"}, {"log_bytes", lx}, {"log_resid", resid}}}};
  return GroupModel::from_json(j);
}

}  // namespace

// A correction knot exactly on the turning point 2^sats_p: the residual is taken at the measured size, on the
// logistic's side. Read back at e^(ln s), a last-bit neighbour above sats_p, the model was the line (3,526 us),
// and the stored residual of +35.5 predicted 9.6e18 us there.
TEST(SeedPort, CorrectionKnotOnTheTurningPointPredictsTheMeasurement) {
  const std::vector<double> sizes = {53477376, 63963136, 74448896}, times = {2017.72, 2365.0, 2767.11};
  const GroupModel g = seed_group(reduce_scatter_seed(), sizes, times);
  for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_NEAR(g.predict(sizes[i]).time_us, times[i], 1e-6 * times[i]) << sizes[i];
}

// Between measurements the corrected seed stays between them, on either side of a step: the knot's residual
// against the logistic (+35.5 in ln t) was added to the line just past the knot (5,479 us at 65.3 MB between
// 2,365 and 2,767 us), and with the turning point strictly between two knots the line and the logistic each
// took the residuals of both knots. The seed alone keeps its step (the paper's predictor).
TEST(SeedPort, CorrectionCarriesNoStepBetweenMeasurements) {
  const SeedModel m = reduce_scatter_seed();
  const double step = 63963136;
  EXPECT_GT(m.time_us(step * 1.001, 0.5) / m.time_us(step, 0.5), 1e9);
  const std::vector<std::vector<double>> knot_sets = {{53477376, 63963136, 74448896}, {53477376, 74448896}};
  const std::vector<std::vector<double>> time_sets = {{2017.72, 2365.0, 2767.11}, {2017.72, 2767.11}};
  for (std::size_t k = 0; k < knot_sets.size(); ++k) {
    const std::vector<double>& s = knot_sets[k];
    const std::vector<double>& t = time_sets[k];
    const GroupModel g = seed_group(m, s, t);
    double prev = 0;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      for (double frac = 0; frac <= 1.0; frac += 1.0 / 64) {
        const double b = s[i] + frac * (s[i + 1] - s[i]);
        const double p = g.predict(b).time_us;
        EXPECT_GE(p, t[i] * (1 - 1e-9)) << k << " " << b;
        EXPECT_LE(p, t[i + 1] * (1 + 1e-9)) << k << " " << b;
        EXPECT_GE(p, prev * (1 - 1e-9)) << k << " " << b;  // no step down either
        prev = p;
      }
    }
    // Across the step itself: continuous.
    EXPECT_NEAR(g.predict(step * (1 + 1e-9)).time_us, g.predict(step).time_us, 1e-3) << k;
  }
}

TEST(AllToAllv, EffectiveSizesByHand) {
  // Per-rank totals: rank 0 sends 400, rank 1 sends 200 (evenly over 2 ranks).
  const AllToAllvSplit sp = parse_alltoallv_split("400-200");
  ASSERT_EQ(sp.nranks(), 2);
  EXPECT_DOUBLE_EQ(sp.sent(0), 400);
  EXPECT_DOUBLE_EQ(sp.received(0), 300);  // 200 from itself + 100 from rank 1
  EXPECT_DOUBLE_EQ(effective_alltoall_bytes(sp, EffectiveMode::Sum), 300);
  EXPECT_DOUBLE_EQ(effective_alltoall_bytes(sp, EffectiveMode::MaxOfMax), 400);
  EXPECT_DOUBLE_EQ(effective_alltoall_bytes(sp, EffectiveMode::MaxOfSum), 350);  // (400 + 300) / 2
  // DLRM form: B = 8, tables 1 and 3, D = 4, fp32 -> rank r sends 8/2 * T_r * 4 * 4 bytes to each rank.
  const AllToAllvSplit d = parse_alltoallv_split("8,1-3,4");
  EXPECT_DOUBLE_EQ(d.self(0), 64);
  EXPECT_DOUBLE_EQ(d.sent(1), 2 * 192);
  EXPECT_DOUBLE_EQ(d.received(0), 64 + 192);
  // A uniform split gives the all-to-all's own size in every mode.
  const AllToAllvSplit u = parse_alltoallv_split("1000-1000-1000-1000");
  for (EffectiveMode m : all_effective_modes()) EXPECT_DOUBLE_EQ(effective_alltoall_bytes(u, m), 1000);
  // 20,000 ranks each sending 1000 bytes: per-rank sums, no 20,000 x 20,000 matrix (it took 3.2 GB).
  std::string wide_text = "1000";
  for (int i = 1; i < 20000; ++i) wide_text += "-1000";
  const AllToAllvSplit wide = parse_alltoallv_split(wide_text);
  ASSERT_EQ(wide.nranks(), 20000);
  EXPECT_NEAR(wide.received(19999), 1000, 1e-6);
  EXPECT_NEAR(effective_alltoall_bytes(wide, EffectiveMode::MaxOfSum), 1000, 1e-6);
  EXPECT_THROW(parse_alltoallv_split("1,2,3,4"), std::invalid_argument);
  EXPECT_THROW(parse_alltoallv_split("abc-1"), std::invalid_argument);
}

TEST(AllToAllv, MatrixFormRoundTripsAndPaperSizesLeaveSelfTrafficOut) {
  // Rank 0 sends 100 to itself and 300 to rank 1; rank 1 sends 50 and 150.
  const std::string text = format_alltoallv_matrix({{100, 300}, {50, 150}});
  EXPECT_EQ(text, "100-300/50-150");
  const AllToAllvSplit m = parse_alltoallv_split(text);
  ASSERT_EQ(m.nranks(), 2);
  EXPECT_DOUBLE_EQ(m.self(0), 100);
  EXPECT_DOUBLE_EQ(m.sent(0), 400);
  EXPECT_DOUBLE_EQ(m.received(1), 450);
  EXPECT_DOUBLE_EQ(effective_alltoall_bytes(m, EffectiveMode::Sum), 300);        // (400 + 200) / 2
  EXPECT_DOUBLE_EQ(effective_alltoall_bytes(m, EffectiveMode::MaxOfMax), 450);   // rank 1 receives 450
  EXPECT_DOUBLE_EQ(effective_alltoall_bytes(m, EffectiveMode::MaxOfSum), 325);   // rank 1: (200 + 450) / 2
  // The paper's sizes without self traffic: rank 0 sends 300 and receives 50, rank 1 sends 50 and receives 300.
  EXPECT_DOUBLE_EQ(paper_effective_bytes(m, EffectiveMode::Sum), 300);
  EXPECT_DOUBLE_EQ(paper_effective_bytes(m, EffectiveMode::MaxOfMax), 300);
  EXPECT_DOUBLE_EQ(paper_effective_bytes(m, EffectiveMode::MaxOfSum), 350);
  // A uniform split: S under sum, (n-1)/n S and 2 (n-1)/n S under the paper's max modes (n = 4, S = 4000).
  const AllToAllvSplit u = parse_alltoallv_split("4000-4000-4000-4000");
  EXPECT_DOUBLE_EQ(paper_effective_bytes(u, EffectiveMode::Sum), 4000);
  EXPECT_DOUBLE_EQ(paper_effective_bytes(u, EffectiveMode::MaxOfMax), 3000);
  EXPECT_DOUBLE_EQ(paper_effective_bytes(u, EffectiveMode::MaxOfSum), 6000);
  // The batch splits as floor(B/n), as PARAM and the DLRM paper's code do: B = 10 over 4 ranks is 2 per rank.
  EXPECT_DOUBLE_EQ(parse_alltoallv_split("10,1-1-1-1,8").self(0), 2 * 8 * 4);
  EXPECT_THROW(parse_alltoallv_split("1-2/3"), std::invalid_argument);      // not square
  EXPECT_THROW(parse_alltoallv_split("1-2-3/4-5-6"), std::invalid_argument);
  EXPECT_THROW(parse_alltoallv_split("1-x/3-4"), std::invalid_argument);
}

TEST(SmTargets, TransferScalesTheBandwidthPartAndWidens) {
  Prediction p;
  p.time_us = 110;
  p.lo_us = 100;
  p.hi_us = 121;
  const auto t = transfer_prediction(p, 10, 90, 100);  // NVLink4 450 -> NVLink5 900 GB/s
  ASSERT_TRUE(t.has_value());
  EXPECT_NEAR(t->time_us, 10 + 100 * 0.5, 1e-9);
  EXPECT_TRUE(t->extrapolated);
  EXPECT_GT(std::log(t->hi_us / t->lo_us), std::log(p.hi_us / p.lo_us));
  EXPECT_FALSE(transfer_prediction(p, 10, 90, 75).has_value());
  for (int sm : {80, 89, 90, 100, 103, 120}) EXPECT_TRUE(find_sm_target(sm).has_value()) << sm;
  EXPECT_EQ(sm_from_device("NVIDIA H100 80GB HBM3"), 90);
  EXPECT_EQ(sm_from_device("NVIDIA B200"), 100);
  EXPECT_EQ(sm_from_device("NVIDIA GB300"), 103);
  EXPECT_EQ(sm_from_device("NVIDIA A100-SXM4-80GB"), 80);
  EXPECT_EQ(sm_from_device("NVIDIA L40S"), 89);
  EXPECT_EQ(sm_from_device("NVIDIA RTX PRO 6000 Blackwell Server Edition"), 120);
  EXPECT_EQ(sm_from_device("some cpu"), 0);
}

// The GPU without its memory: one model and form factor across capacities, not across form factors.
TEST(SmTargets, GpuModelNameDropsTheMemoryOnly) {
  EXPECT_EQ(gpu_model_name("NVIDIA A100-SXM4-40GB"), "NVIDIA A100 SXM4");
  EXPECT_EQ(gpu_model_name("NVIDIA A100-SXM4-80GB"), gpu_model_name("NVIDIA A100-SXM4-40GB"));
  EXPECT_NE(gpu_model_name("NVIDIA A100-PCIE-40GB"), gpu_model_name("NVIDIA A100-SXM4-40GB"));
  EXPECT_EQ(gpu_model_name("NVIDIA H100 80GB HBM3"), "NVIDIA H100");
  EXPECT_NE(gpu_model_name("NVIDIA H100 NVL"), gpu_model_name("NVIDIA H100 80GB HBM3"));
  EXPECT_NE(gpu_model_name("NVIDIA H200"), gpu_model_name("NVIDIA H100 80GB HBM3"));
  EXPECT_EQ(gpu_model_name("nvidia  l40s 48G gddr6"), "NVIDIA L40S");
  EXPECT_EQ(gpu_model_name(""), "");
}

TEST(Families, EvaluateKnownValues) {
  // alphabeta: α = 5 µs, β = 100 GB/s, f = 1.75, s = 1e6: t = 5 + 1.75e6/1e5 = 22.5
  const FamilySpec ab = parse_family("alphabeta");
  const double p[2] = {std::log(5.0), std::log(100.0)};
  EXPECT_NEAR(std::exp(families::log_time(ab, p, 1e6, 1.75)), 22.5, 1e-9);
  // regimes1 equals alphabeta
  const FamilySpec r1 = parse_family("regimes1");
  EXPECT_NEAR(families::log_time(r1, p, 1e6, 1.75), families::log_time(ab, p, 1e6, 1.75), 1e-12);
  // regimes2: far from the crossing the soft minimum is the smaller line
  const FamilySpec r2 = parse_family("regimes2");
  const double q[4] = {std::log(5.0), std::log(10.0), std::log(50.0), std::log(1000.0)};
  EXPECT_NEAR(std::exp(families::log_time(r2, q, 1e3, 1.0)), 5.1, 1e-3);
  EXPECT_NEAR(std::exp(families::log_time(r2, q, 1e9, 1.0)), 50 + 1e3, 1e-3 * 1050);
  EXPECT_THROW(parse_family("regimes5"), std::invalid_argument);
  EXPECT_EQ(parse_family("sigmoid").num_params(), 4);
}

// An SM from the machine label alone is a name, not a measurement: the device the file states wins, and a label is
// the source only where neither an SM nor a device says one.
TEST(SmTargets, LabelOnlyWhereTheFileStatesNothing) {
  EXPECT_TRUE(sm_from_label_only(0, "", "a100box_allreduce"));
  EXPECT_FALSE(sm_from_label_only(0, "NVIDIA H100 80GB HBM3", "a100box_allreduce"));
  EXPECT_FALSE(sm_from_label_only(90, "", "a100box_allreduce"));
  EXPECT_FALSE(sm_from_label_only(0, "", "box"));  // nothing read at all, so nothing from the name
  EXPECT_EQ(datasheet_sm(0, "NVIDIA H100 80GB HBM3", "a100box"), 90);
  // An "sm" word in a label (TensorRT-LLM's benchmark.tp8.sm90.csv) is a name's SM too; not inside another word.
  EXPECT_EQ(sm_from_label("benchmark.tp8.sm90"), 90);
  EXPECT_EQ(sm_from_label("run_SM100"), 100);
  EXPECT_EQ(sm_from_label("gb300_sm90"), 103);  // the GPU's name first
  EXPECT_EQ(sm_from_label("asm90"), 0);
  EXPECT_EQ(sm_from_label("sm9"), 0);
  EXPECT_EQ(sm_from_label("sm90x"), 0);
  EXPECT_EQ(sm_from_label("sm1000"), 0);
  EXPECT_TRUE(sm_from_label_only(0, "", "benchmark.tp8.sm90"));
  const nlohmann::json groups = nlohmann::json::parse(R"([
    {"key": {"system": "a100box"}, "sm": 0, "device": "", "sources": ["a100box.txt"]},
    {"key": {"system": "h100named"}, "sm": 0, "device": "NVIDIA A100-SXM4-80GB", "sources": ["h100named.txt"]},
    {"key": {"system": "b200x"}, "sources": ["run7.csv"]},
    {"key": {"system": "h100_sxm"}, "sources": ["aic_h100_sxm_nccl_2.23_nccl_perf.txt"]}])");
  const auto by_label = machines_known_by_label_only(groups);
  ASSERT_EQ(by_label.size(), 3u);  // h100named's file names an A100: its device wins
  EXPECT_EQ(by_label.at("a100box").sm, 80);
  EXPECT_EQ(by_label.at("b200x").sm, 100);
  // Where the label came from: a file's name (its stem), else stated (an aiconfigurator table's system= note states it,
  // whatever the table's name).
  EXPECT_EQ(by_label.at("a100box").file_name, "a100box.txt");
  EXPECT_EQ(by_label.at("b200x").file_name, "");
  EXPECT_EQ(by_label.at("h100_sxm").file_name, "");
  EXPECT_EQ(machines_known_by_label_only(groups, "a100box").size(), 1u);
  EXPECT_EQ(label_only_machine_note("a100box", by_label.at("a100box")),
            "machine 'a100box' taken from the file name a100box.txt; the file does not say its GPU (no device or SM): SM 80 is "
            "read from the name");
  EXPECT_EQ(label_only_machine_note("b200x", by_label.at("b200x")),
            "machine 'b200x': SM 100 is read from its label; no file says its GPU (no device or SM)");
  EXPECT_EQ(label_only_machine_how("b200x", by_label.at("b200x")), " (machine 'b200x': SM 100 from its label only)");
  // A label that only contains a file's name, or is contained in it, is not made of it.
  EXPECT_EQ(label_file_name("h100", {"h100_run1.txt", "xh100.txt"}), "");
  EXPECT_EQ(label_file_name("", {".txt"}), "");
}

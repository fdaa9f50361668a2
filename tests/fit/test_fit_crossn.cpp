// The crossn protocol end to end on a synthetic family: counts 2, 4, 8 of a known law (latency affine in the
// number of peers, bus bandwidth independent of n, 0.5 % noise), the largest count held out and predicted from
// fits of the smaller ones through the joint-n rule.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "fit/eval.h"
#include "model/bus_factor.h"

using namespace arfit;

namespace {

std::vector<Sample> synthetic_family(Collective c, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.005);
  std::vector<Sample> out;
  for (int n : {2, 4, 8}) {
    const double alpha_us = 6.0 + 1.5 * (n - 1), busbw_bytes_per_us = 300e3;
    for (int e = 10; e <= 30; ++e) {
      Sample x;
      x.collective = c;
      x.strategy = "NCCL";
      x.dtype = "fp16";
      x.nranks = n;
      x.nnodes = 1;
      x.bytes = std::int64_t{1} << e;
      x.time_us = (alpha_us + bus_factor(c, n) * std::ldexp(1.0, e) / busbw_bytes_per_us) * std::exp(noise(rng));
      x.source = "synthetic_" + to_string(c) + ".txt";
      out.push_back(x);
    }
  }
  return out;
}

}  // namespace

TEST(FitCrossN, RecoversASyntheticFamilysLargestCount) {
  std::vector<Sample> samples;
  for (Collective c : {Collective::AllReduce, Collective::AllGather}) {
    auto v = synthetic_family(c, 7 + static_cast<unsigned>(c));
    samples.insert(samples.end(), v.begin(), v.end());
  }
  fit::EvalOptions o;
  o.methods = {"auto", "loglog"};
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_crossn(samples, o);
  EXPECT_EQ(r.curves, 2);
  const auto* a = r.method("auto");
  const auto* l = r.method("loglog");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(a->errors.points, 2 * 21);
  // Exact in both limits, a few % where latency and bandwidth mix (tests/model/test_joint_model.cpp).
  EXPECT_LT(a->errors.gmae, 0.025);
  EXPECT_LT(a->errors.max, 0.07);
  EXPECT_LT(a->errors.gmae, l->errors.gmae);  // carrying bus bandwidth over misses the latency growth
  EXPECT_GE(a->coverage, 0.95);               // a smooth family is well inside the per-doubling width
  for (const auto& p : a->points) {
    EXPECT_EQ(p.key.nranks, 8);
    EXPECT_EQ(p.predicted.how, "joint-n 2,4->8");
  }
}

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

// Families are per machine label: a log per GPU count of one machine (`arfit ingest --system`) is one family,
// predicted like a single file's; two files that both measured every count (two versions of one table) stay
// two families, one per file; files of other labels never join.
TEST(FitCrossN, FamiliesAreOneMachinesCountsAcrossFiles) {
  std::vector<Sample> per_count = synthetic_family(Collective::AllReduce, 17);
  for (Sample& s : per_count) {
    s.source = "mycluster_" + std::to_string(s.nranks) + "gpu.txt";
    s.extra["system"] = "mycluster";
  }
  fit::EvalOptions o;
  o.methods = {"auto"};
  fit::EvalResult r = fit::eval_crossn(per_count, o);
  EXPECT_EQ(r.curves, 1);
  ASSERT_NE(r.method("auto"), nullptr);
  EXPECT_EQ(r.method("auto")->errors.points, 21);
  EXPECT_LT(r.method("auto")->errors.gmae, 0.025);
  // Unlabelled, each file is its own machine (the file stem) with one count: no family.
  std::vector<Sample> unlabelled = per_count;
  for (Sample& s : unlabelled) s.extra.erase("system");
  EXPECT_EQ(fit::eval_crossn(unlabelled, o).curves, 0);
  // Two versions of the whole table, both labelled "mycluster": one family per file.
  std::vector<Sample> versions;
  for (unsigned v = 1; v <= 2; ++v)
    for (Sample s : synthetic_family(Collective::AllReduce, 20 + v)) {
      s.source = "mycluster_v" + std::to_string(v) + ".txt";
      s.extra["system"] = "mycluster";
      versions.push_back(s);
    }
  r = fit::eval_crossn(versions, o);
  EXPECT_EQ(r.curves, 2);
  EXPECT_EQ(r.method("auto")->errors.points, 2 * 21);
}

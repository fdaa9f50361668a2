// The crossn protocol end to end on a synthetic family: counts 2, 4, 8 of a known law (latency affine in the
// number of peers, bus bandwidth independent of n, 0.5 % noise), the largest count held out and predicted from
// fits of the smaller ones through the joint-n rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
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

// More GPUs per node on the same nodes (issue 41): curves of a known network, NCCL's ring as its cost model counts
// it — 2(n − 1) steps, 2N of them across the network, bus bandwidth the slower of the node's fabric (300 GB/s) and
// the rails the node drives (12 GB/s each, one per GPU up to `rails`) — measured at 1, 2 and 4 GPUs per node on 2
// nodes and at 2, 4, 8 GPUs on one node, 1 % noise; crossn predicts 8 GPUs per node on the 2 nodes. The law is not
// the family's own (a max of the two bandwidths where the family adds their times).
namespace {

std::vector<Sample> two_node_cluster(int rails, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<Sample> out;
  auto add = [&](int g, int nodes) {
    const int n = g * nodes;
    const double steps = 2.0 * (n - 1), net_steps = nodes > 1 ? std::min(2.0 * nodes, steps) : 0;
    const double latency_us = 8.0 + 0.6 * (steps - net_steps) + 3.0 * net_steps;
    const double busbw_gbps = nodes > 1 ? std::min(300.0, 12.0 * std::min(g, rails)) : 300.0;
    for (int e = 10; e <= 30; ++e) {
      Sample x;
      x.collective = Collective::AllReduce;
      x.strategy = "NCCL";
      x.dtype = "fp16";
      x.nranks = n;
      x.nnodes = nodes;
      x.bytes = std::int64_t{1} << e;
      x.time_us = (latency_us + bus_factor(x.collective, n) * std::ldexp(1.0, e) / (busbw_gbps * 1e3)) * std::exp(noise(rng));
      x.source = "cluster_" + std::to_string(nodes) + "node.txt";
      x.extra["system"] = "cluster";
      out.push_back(x);
    }
  };
  for (int g : {2, 4, 8}) add(g, 1);
  for (int g : {1, 2, 4}) add(g, 2);
  add(8, 2);  // the held-out count
  return out;
}

}  // namespace

// Four rails per node: the NICs are shared from 4 GPUs per node on, so 8 per node keep 4's bus bandwidth (48 GB/s).
// The joint-n rule carried the measured growth (12, 24, 48 GB/s) on to 96 and put the largest sizes near half the
// time; the topology family holds the network's bus bandwidth and counts the ring's steps.
TEST(FitCrossN, MoreGpusPerNodeKeepsTheSharedNicsBandwidth) {
  fit::EvalOptions o;
  o.methods = {"auto", "loglog", "alphabeta"};
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_crossn(two_node_cluster(4, 41), o);
  std::cout << r.to_table();
  ASSERT_EQ(r.subsets.size(), 3u);
  EXPECT_EQ(r.subsets[2].name, "more_gpus_per_node");
  EXPECT_EQ(r.subsets[2].curves, 1);  // 16 on 2 nodes; the one-node family (8 from 2, 4) is not in it
  EXPECT_EQ(r.subsets[0].curves, 2);
  const fit::EvalMethodResult& a = r.subsets[2].methods[0];
  ASSERT_EQ(a.name, "auto");
  EXPECT_EQ(a.errors.points, 21);
  EXPECT_LT(a.errors.gmae, 0.06);
  EXPECT_GE(a.coverage, 0.9);
  for (const auto& m : r.subsets[2].methods)
    if (m.name != "auto") {
      EXPECT_LT(a.errors.gmae, m.errors.gmae) << m.name;
    }
  int at_64mib = 0;
  for (const auto& p : r.method("auto")->points) {
    if (p.key.nnodes != 2) continue;
    EXPECT_NE(p.predicted.how.find("extrapolated across the topology"), std::string::npos) << p.predicted.how;
    EXPECT_TRUE(p.predicted.extrapolated);
    if (p.bytes == 64.0 * 1024 * 1024) {  // the ceiling respected: within 10 % of the measured time
      ++at_64mib;
      EXPECT_NEAR(p.predicted.time_us / p.measured, 1.0, 0.10);
    }
  }
  EXPECT_EQ(at_64mib, 1);
}

// A rail per GPU: the bus bandwidth does double again at 8 per node, which the measurements cannot tell from the
// shared case. The point stays the held bandwidth (off by up to 2x at the largest sizes); the interval's low end
// reaches the growing world, so it still covers.
TEST(FitCrossN, MoreGpusPerNodeIntervalCoversUnsharedNics) {
  fit::EvalOptions o;
  o.methods = {"auto"};
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_crossn(two_node_cluster(8, 43), o);
  const fit::EvalMethodResult& a = r.subsets[2].methods[0];
  EXPECT_EQ(a.errors.points, 21);
  EXPECT_GE(a.coverage, 0.9);
}

// The same rail-per-GPU cluster whose logs state its network (8 NICs of 12 GB/s, as a header or `arfit ingest
// --network` says it): the family keeps the stated rails instead of choosing among the measured counts, so the
// bandwidth's doubling at 8 per node is predicted, not only covered: closer at 64 MiB (within 20 %; the family adds
// the node's and the network's times where this law takes the slower) and a lower GMAE than the same logs
// unstated, and `how` says the rails were stated.
TEST(FitCrossN, MoreGpusPerNodeKeepsStatedRails) {
  fit::EvalOptions o;
  o.methods = {"auto"};
  o.keep_points = true;
  auto run = [&o](bool stated) {
    std::vector<Sample> samples = two_node_cluster(8, 43);
    if (stated)
      for (Sample& x : samples) x.extra["network"] = "8x12GB/s";
    return fit::eval_crossn(samples, o);
  };
  auto ratio_at_64mib = [](const fit::EvalResult& r) {
    for (const auto& p : r.method("auto")->points)
      if (p.key.nnodes == 2 && p.bytes == 64.0 * 1024 * 1024) return p.predicted.time_us / p.measured;
    return 0.0;
  };
  const fit::EvalResult stated = run(true), unstated = run(false);
  const fit::EvalMethodResult& a = stated.subsets[2].methods[0];
  EXPECT_EQ(a.errors.points, 21);
  EXPECT_LT(a.errors.gmae, 0.06);
  EXPECT_LT(a.errors.gmae, unstated.subsets[2].methods[0].errors.gmae);
  EXPECT_GE(a.coverage, 0.9);
  EXPECT_NEAR(ratio_at_64mib(stated), 1.0, 0.20);
  EXPECT_LT(std::abs(std::log(ratio_at_64mib(stated))), std::abs(std::log(ratio_at_64mib(unstated))));
  for (const auto& p : stated.method("auto")->points)
    if (p.key.nnodes == 2) EXPECT_NE(p.predicted.how.find("stated"), std::string::npos) << p.predicted.how;
}

// The topology family is used only where it wins on the family's own counts (the largest on the target's nodes held
// out): a machine whose time grows by the same factor per doubling of GPUs per node at every size (no rails bound
// it, nor the ring's steps) is closer to the joint-n rule's law than to the family's; held out (4 per node from 1
// and 2), the family is 11.9 % off and joint-n 10.3 %, so the answer for 8 per node is joint-n's (9.7 % off).
TEST(FitCrossN, MoreGpusPerNodeChoosesTheRuleThatWinsTheHeldOutCount) {
  std::vector<Sample> samples;
  auto add = [&samples](int g, int nodes, double time_factor) {
    for (int e = 10; e <= 30; ++e) {
      Sample x;
      x.collective = Collective::AllReduce;
      x.strategy = "NCCL";
      x.dtype = "fp16";
      x.nranks = g * nodes;
      x.nnodes = nodes;
      x.bytes = std::int64_t{1} << e;
      x.time_us = (10.0 + std::ldexp(1.0, e) / 20e3) * time_factor;
      x.source = "trend_" + std::to_string(nodes) + "node.txt";
      x.extra["system"] = "trend";
      samples.push_back(x);
    }
  };
  for (int g : {2, 4, 8}) add(g, 1, 0.5 * std::pow(1.2, std::log2(g)));
  for (int g : {1, 2, 4, 8}) add(g, 2, std::pow(1.3, std::log2(g)));
  fit::EvalOptions o;
  o.methods = {"auto"};
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_crossn(samples, o);
  ASSERT_EQ(r.subsets.size(), 3u);
  ASSERT_EQ(r.subsets[2].curves, 1);
  EXPECT_LT(r.subsets[2].methods[0].errors.gmae, 0.15);
  int joint = 0;
  for (const auto& p : r.method("auto")->points)
    if (p.key.nnodes == 2 && p.key.nranks == 16) {
      joint += p.predicted.how.rfind("joint-n", 0) == 0;
      EXPECT_NE(p.predicted.how.find("over the topology family by its held-out count; extrapolated across the topology"),
                std::string::npos)
          << p.predicted.how;
      EXPECT_TRUE(p.predicted.extrapolated);
    }
  EXPECT_EQ(joint, 21);
  EXPECT_GE(r.subsets[2].methods[0].coverage, 0.85);
}

// `arfit predict` asked the same count from a models file (ModelSet::predict: the joint family measured on 2 nodes,
// the topology family read off its largest count): the shared NICs' bus bandwidth held at the large sizes, the
// interval covering, `how` saying the answer is extrapolated across the topology.
TEST(FitCrossN, PredictMoreGpusPerNodeFromAModelsFile) {
  std::vector<Sample> measured, truth;
  for (const Sample& s : two_node_cluster(4, 47)) (s.nnodes == 2 && s.nranks == 16 ? truth : measured).push_back(s);
  const ModelSet set = fit::fit_model_set(measured);
  ASSERT_EQ(truth.size(), 21u);
  int covered = 0;
  for (const Sample& t : truth) {
    PredictQuery q;
    q.system = "cluster";
    q.collective = Collective::AllReduce;
    q.strategy = "NCCL";
    q.dtype = "fp16";
    q.nranks = 16;
    q.nnodes = 2;
    q.bytes = static_cast<double>(t.bytes);
    const std::optional<Prediction> p = set.predict(q);
    ASSERT_TRUE(p.has_value()) << t.bytes;
    EXPECT_NE(p->how.find("extrapolated across the topology"), std::string::npos) << p->how;
    covered += p->lo_us <= t.time_us && t.time_us <= p->hi_us;
    if (t.bytes >= (std::int64_t{64} << 20)) {
      EXPECT_NEAR(p->time_us / t.time_us, 1.0, 0.15) << t.bytes;
    }
    if (std::getenv("ARFIT_TEST_VERBOSE"))
      std::cout << t.bytes << " " << t.time_us << " " << p->time_us << " [" << p->lo_us << ", " << p->hi_us << "] " << p->how << "\n";
  }
  EXPECT_GE(covered, 19);  // 90 % of 21
}

// Another machine that measured the same step (4 to 8 GPUs per node on 2 nodes) with a rail per GPU: its step is
// the growing world's, and the family's interval widens by its distance from the family's step (the spread of what
// other machines did at the same step), `how` counting it. The point stays the family's own.
TEST(FitCrossN, MoreGpusPerNodeWidensByOtherMachinesSteps) {
  fit::EvalOptions o;
  o.methods = {"auto"};
  o.keep_points = true;
  const std::vector<Sample> alone = two_node_cluster(4, 41);
  std::vector<Sample> with_other = alone;
  for (Sample s : two_node_cluster(8, 53))
    if (s.nnodes == 2 && (s.nranks == 8 || s.nranks == 16)) {
      s.source = "other_2node.txt";
      s.extra["system"] = "other";
      with_other.push_back(s);
    }
  const fit::EvalResult a = fit::eval_crossn(alone, o), b = fit::eval_crossn(with_other, o);
  ASSERT_EQ(b.subsets[2].curves, 1);  // the other machine's two counts make no family of their own
  int wider = 0, compared = 0;
  for (const auto& p : b.method("auto")->points) {
    if (p.key.nnodes != 2) continue;
    EXPECT_NE(p.predicted.how.find("other machines' steps: 1"), std::string::npos) << p.predicted.how;
    for (const auto& q : a.method("auto")->points)
      if (q.key.nnodes == 2 && q.bytes == p.bytes) {
        ++compared;
        EXPECT_NEAR(p.predicted.time_us, q.predicted.time_us, 1e-9 * q.predicted.time_us);
        EXPECT_GE(p.predicted.hi_us, q.predicted.hi_us * (1 - 1e-12));
        wider += p.predicted.hi_us > q.predicted.hi_us * 1.05;
      }
  }
  EXPECT_EQ(compared, 21);
  EXPECT_GE(wider, 5);  // at the large sizes the other network's step is 2x off the family's
}

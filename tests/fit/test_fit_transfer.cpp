// Transfer of a new machine's curves from a few of its sizes and other machines' matching curves
// (fit/transfer.h), the crosshw:K protocol, `fit_model_set` with priors, and crossn across node counts — on
// synthetic machines whose laws are known.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <random>

#include "fit/eval.h"
#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/anchors.h"
#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/scale_out.h"

using namespace arfit;

namespace {

// An NCCL-like machine: α-β with a protocol switch at `switch_bytes` (the bandwidth there rises by 40 %) and,
// with `ramp_bytes`, a bus bandwidth that ramps up over the sizes around it (not an α-β line: the machine's
// own line through a few sizes misses it, a machine of the same make shows it).
struct Machine {
  std::string system;
  double alpha_us, busbw_bytes_per_us, switch_bytes;
  int sm = 0;
  double ramp_bytes = 0;
  double time_us(Collective c, int n, double bytes) const {
    const double bw = bytes < switch_bytes ? busbw_bytes_per_us : 1.4 * busbw_bytes_per_us;
    return alpha_us * (1 + 0.1 * (n - 2)) + bus_factor(c, n) * bytes / bw * std::sqrt(1 + ramp_bytes / bytes);
  }
};

std::vector<Sample> measure(const Machine& m, const std::vector<int>& counts, int first_exp, int last_exp,
                            double noise_sigma, unsigned seed, int nnodes = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, noise_sigma);
  std::vector<Sample> out;
  for (int n : counts)
    for (int e = first_exp; e <= last_exp; ++e) {
      Sample x;
      x.collective = Collective::AllReduce;
      x.strategy = "NCCL";
      x.dtype = "fp16";
      x.nranks = n;
      x.nnodes = nnodes;
      x.sm = m.sm;
      x.bytes = std::int64_t{1} << e;
      x.time_us = m.time_us(x.collective, n, std::ldexp(1.0, e)) * std::exp(noise(rng));
      x.source = m.system + ".txt";
      x.extra["system"] = m.system;
      out.push_back(x);
    }
  return out;
}

fit::TransferSource source_of(const std::vector<Sample>& samples) {
  const std::vector<fit::Curve> curves = fit::build_curves(samples);
  const fit::GroupFit g = fit::fit_curve(curves.front());
  EXPECT_TRUE(g.ok) << g.problem;
  return fit::TransferSource::from_model(GroupModel::from_json(g.model), curves.front().hardware);
}

fit::TransferTarget anchors_of(const Machine& m, int K, int first_exp, int last_exp) {
  fit::TransferTarget t;
  t.key.system = m.system;
  t.key.collective = Collective::AllReduce;
  t.key.strategy = "NCCL";
  t.key.dtype = "fp16";
  t.key.nranks = 8;
  t.sm = m.sm;
  const size_t n = static_cast<size_t>(last_exp - first_exp + 1);
  for (size_t i : anchor_indices(n, K)) {
    const double b = std::ldexp(1.0, first_exp + static_cast<int>(i));
    t.bytes.push_back(b);
    t.time_us.push_back(m.time_us(Collective::AllReduce, 8, b));
  }
  return t;
}

}  // namespace

// numpy's round(linspace(0, n - 1, K)): half to even, ends kept, duplicates dropped.
TEST(FitTransfer, AnchorIndicesFollowTheSpreadRule) {
  EXPECT_EQ(anchor_indices(22, 3), (std::vector<size_t>{0, 10, 21}));  // 10.5 rounds to 10
  EXPECT_EQ(anchor_indices(23, 3), (std::vector<size_t>{0, 11, 22}));
  EXPECT_EQ(anchor_indices(22, 4), (std::vector<size_t>{0, 7, 14, 21}));
  EXPECT_EQ(anchor_indices(10, 1), (std::vector<size_t>{0}));
  EXPECT_EQ(anchor_indices(3, 6), (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(anchor_indices(10, 0).empty());
  EXPECT_TRUE(anchor_indices(0, 3).empty());
}

// A machine twice as fast in bandwidth, 30 % slower in latency, its switch at twice the size: the size-and-
// time map of the source carries it through three anchors within a few per cent; the interval covers.
TEST(FitTransfer, CarriesAnotherMachinesShapeThroughThreeAnchors) {
  const Machine src{"old", 10.0, 100e3, 1 << 20, 90};
  const Machine tgt{"new", 13.0, 200e3, 1 << 21, 100};
  const fit::TransferSource s = source_of(measure(src, {8}, 10, 30, 0.005, 1));
  const fit::TransferTarget t = anchors_of(tgt, 3, 10, 30);
  const fit::Transfer tr = fit::transfer_curve(t, {&s});
  ASSERT_TRUE(tr.ok()) << tr.problem();
  EXPECT_NE(tr.how().find("old"), std::string::npos) << tr.how();
  std::vector<double> errs;
  int covered = 0;
  for (int e = 10; e <= 30; ++e) {
    const double b = std::ldexp(1.0, e), truth = tgt.time_us(Collective::AllReduce, 8, b);
    const Prediction p = tr.predict(b);
    errs.push_back(std::fabs(p.time_us / truth - 1));
    covered += truth >= p.lo_us && truth <= p.hi_us;
  }
  EXPECT_LT(gmae(errs), 0.03);
  EXPECT_GE(covered, 19);
  // Through the anchors exactly.
  for (size_t i = 0; i < t.bytes.size(); ++i) EXPECT_NEAR(tr.predict(t.bytes[i]).time_us / t.time_us[i], 1.0, 1e-9);
}

// Of two sources, the one whose ratio to the target is constant at the anchors gets the weight.
TEST(FitTransfer, WeightsTheSourceThatAgreesAtTheAnchors) {
  const Machine like{"like", 10.0, 100e3, 1 << 20, 0, 1 << 24};
  const Machine unlike{"unlike", 3.0, 900e3, 1 << 14};
  const Machine tgt{"new", 12.0, 100e3 / 1.2, 1 << 20, 0, 1 << 24};  // like, 20 % slower throughout
  const fit::TransferSource a = source_of(measure(like, {8}, 10, 30, 0.003, 2));
  const fit::TransferSource b = source_of(measure(unlike, {8}, 10, 30, 0.003, 3));
  const fit::Transfer tr = fit::transfer_curve(anchors_of(tgt, 4, 10, 30), {&a, &b});
  ASSERT_TRUE(tr.ok());
  double w_like = 0, w_unlike = 0;
  for (const auto& sh : tr.shares()) (sh.system == "like" ? w_like : sh.system == "unlike" ? w_unlike : w_unlike) += sh.weight;
  EXPECT_GT(w_like, 0.8) << tr.how();
  EXPECT_EQ(tr.how().rfind("transfer K=4: like", 0), 0u) << tr.how();
}

// A new machine with one source's shape at small sizes and another's at large ones: each source is weighed by
// its leave-one-out errors at the anchors around the size asked, so the answer follows the first where the
// machine is like it and the second where it is like that one. (Weighed over the whole curve, the two sources
// erred alike and the answer was their mean everywhere.)
TEST(FitTransfer, WeighsEachSourceWhereItFollowsTheMachine) {
  // Bandwidth-bound from a few KiB up; the protocol switch (bandwidth +40 %) at 64 KiB or at 64 MiB.
  const Machine early{"early-switch", 1.0, 1e3, 1 << 16};
  const Machine late{"late-switch", 1.0, 1e3, 1 << 26};
  const fit::TransferSource a = source_of(measure(early, {8}, 10, 30, 0.0, 1));
  const fit::TransferSource b = source_of(measure(late, {8}, 10, 30, 0.0, 2));
  // The target switches at both: `early` up to 2 MiB, `late`'s shape (scaled to meet it) beyond.
  const double joint = std::ldexp(1.0, 21);
  auto truth = [&](double bytes) {
    return bytes <= joint ? early.time_us(Collective::AllReduce, 8, bytes)
                          : late.time_us(Collective::AllReduce, 8, bytes) * early.time_us(Collective::AllReduce, 8, joint) /
                                late.time_us(Collective::AllReduce, 8, joint);
  };
  fit::TransferTarget t = anchors_of(early, 5, 10, 30);  // 1 KiB, 32 KiB, 1 MiB, 32 MiB, 1 GiB
  for (size_t i = 0; i < t.bytes.size(); ++i) t.time_us[i] = truth(t.bytes[i]);
  const fit::Transfer both = fit::transfer_curve(t, {&a, &b});
  const fit::Transfer only_a = fit::transfer_curve(t, {&a});
  const fit::Transfer only_b = fit::transfer_curve(t, {&b});
  ASSERT_TRUE(both.ok() && only_a.ok() && only_b.ok());
  // How much nearer (in ln t) the answer is to the one source's than to the other's: about 1 for their mean.
  auto nearer = [&](int e, const fit::Transfer& like, const fit::Transfer& unlike) {
    const double x = both.log_time(std::ldexp(1.0, e));
    return std::fabs(x - like.log_time(std::ldexp(1.0, e))) / std::fabs(x - unlike.log_time(std::ldexp(1.0, e)));
  };
  auto error = [&](int e, const fit::Transfer& tr) { return std::fabs(tr.log_time(std::ldexp(1.0, e)) - std::log(truth(std::ldexp(1.0, e)))); };
  for (int e : {16, 17, 18, 19}) {  // between the anchors around the early switch
    EXPECT_LT(nearer(e, only_a, only_b), 0.5) << e;
    EXPECT_LT(error(e, both), 0.5 * error(e, only_b)) << e;
  }
  for (int e : {27, 28, 29}) {  // past the late one
    EXPECT_LT(nearer(e, only_b, only_a), 0.5) << e;
    EXPECT_LT(error(e, both), 0.5 * error(e, only_a)) << e;
  }
}

// Nothing comparable: with fewer than two own sizes there is no answer (and the reason says so); with more,
// the machine's own line answers and `how` says that nothing was borrowed.
TEST(FitTransfer, SaysSoWhenNothingIsComparable) {
  const Machine tgt{"new", 12.0, 120e3, 1 << 20};
  const fit::Transfer none = fit::transfer_curve(anchors_of(tgt, 1, 10, 30), {});
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.problem().find("no comparable curve"), std::string::npos) << none.problem();
  const fit::Transfer own = fit::transfer_curve(anchors_of(tgt, 3, 10, 30), {});
  ASSERT_TRUE(own.ok());
  EXPECT_NE(own.how().find("no comparable curve in the priors: own 3 sizes"), std::string::npos) << own.how();
  // Sources of another collective, rank count or element size are not comparable either.
  GroupKey k;
  k.collective = Collective::AllReduce;
  k.dtype = "bf16";
  k.nranks = 8;
  GroupKey other = k;
  EXPECT_TRUE(comparable_curves(k, other));
  other.dtype = "fp16";
  EXPECT_TRUE(comparable_curves(k, other));  // same element size
  other.dtype = "fp32";
  EXPECT_FALSE(comparable_curves(k, other));
  other = k;
  other.nnodes = 2;
  EXPECT_FALSE(comparable_curves(k, other));
}

// K = 0: the bandwidth part scaled by the datasheet interconnect ratio (NVLink 4 -> 5: twice the bandwidth),
// the latency carried as is; K = 1 fixes the latency from the one anchor.
TEST(FitTransfer, ZeroShotScalesByTheDatasheetAndOneAnchorFixesTheLatency) {
  const Machine src{"h", 10.0, 100e3, 1e30, 90};
  const Machine tgt{"b", 14.0, 200e3, 1e30, 100};
  const fit::TransferSource s = source_of(measure(src, {8}, 10, 30, 0.0, 4));
  const fit::Transfer k0 = fit::transfer_curve(anchors_of(tgt, 0, 10, 30), {&s});
  ASSERT_TRUE(k0.ok());
  const double big = std::ldexp(1.0, 30);
  EXPECT_NEAR(k0.predict(big).time_us / tgt.time_us(Collective::AllReduce, 8, big), 1.0, 0.05);
  EXPECT_TRUE(k0.predict(big).extrapolated);
  EXPECT_EQ(k0.how().rfind("zero-shot K=0 from datasheet-nearest h", 0), 0u) << k0.how();
  const fit::Transfer k1 = fit::transfer_curve(anchors_of(tgt, 1, 10, 30), {&s});
  const double small = std::ldexp(1.0, 11);
  EXPECT_NEAR(k1.predict(small).time_us / tgt.time_us(Collective::AllReduce, 8, small), 1.0, 0.02);
  EXPECT_NEAR(k1.predict(big).time_us / tgt.time_us(Collective::AllReduce, 8, big), 1.0, 0.05);
}

// K = 0 from two equally near machines: at a size only one of them measured, the answer is that one's (the
// other's shape there is its own model's extrapolation, 4x off in latency here); where both measured, their
// median. A source is read at the size scaled by the datasheet ratio (here half the size: NVLink 4 -> 5), so
// "measured" is from 2 KiB of the target's sizes.
TEST(FitTransfer, ZeroShotTakesTheSourcesThatMeasuredTheSize) {
  const Machine wide{"h1", 10.0, 100e3, 1e30, 90};
  const Machine narrow{"h2", 40.0, 110e3, 1e30, 90};
  const Machine tgt{"b", 14.0, 200e3, 1e30, 100};
  const fit::TransferSource s1 = source_of(measure(wide, {8}, 10, 30, 0.0, 5));
  const fit::TransferSource s2 = source_of(measure(narrow, {8}, 24, 30, 0.0, 6));  // 16 MiB and up only
  const fit::Transfer both = fit::transfer_curve(anchors_of(tgt, 0, 10, 30), {&s1, &s2});
  const fit::Transfer first = fit::transfer_curve(anchors_of(tgt, 0, 10, 30), {&s1});
  const fit::Transfer second = fit::transfer_curve(anchors_of(tgt, 0, 10, 30), {&s2});
  ASSERT_TRUE(both.ok() && first.ok() && second.ok());
  for (int e : {11, 14, 18}) {
    const double b = std::ldexp(1.0, e);
    EXPECT_NEAR(both.predict(b).time_us / first.predict(b).time_us, 1.0, 1e-12) << e;
    EXPECT_NEAR(both.predict(b).lo_us / first.predict(b).lo_us, 1.0, 1e-12) << e;
    EXPECT_GT(second.predict(b).time_us, 1.5 * first.predict(b).time_us) << e;  // h2's latency, extrapolated
  }
  const double b = std::ldexp(1.0, 28);  // both measured: the median of two, between them
  const double lo = std::min(first.predict(b).time_us, second.predict(b).time_us);
  const double hi = std::max(first.predict(b).time_us, second.predict(b).time_us);
  EXPECT_GT(both.predict(b).time_us, lo * (1 + 1e-6));
  EXPECT_LT(both.predict(b).time_us, hi * (1 - 1e-6));
}

// The models-file group of a transfer: what predict, codegen and plot read. It answers what the transfer
// answers at its grid, names the sources in `how`, and round-trips through a models file.
TEST(FitTransfer, TransferredGroupIsAnOrdinaryGroupThatSaysWhereItCameFrom) {
  const Machine src{"old", 10.0, 100e3, 1 << 20, 90, 1 << 24};
  const Machine tgt{"new", 13.0, 100e3 / 1.3, 1 << 20, 90, 1 << 24};  // the old machine's shape, 30 % slower
  const fit::TransferSource s = source_of(measure(src, {8}, 10, 30, 0.005, 5));
  const fit::TransferTarget t = anchors_of(tgt, 3, 10, 30);
  const fit::Transfer tr = fit::transfer_curve(t, {&s});
  const fit::GroupFit g = fit::transferred_group(t, tr, tr.min_bytes(), tr.max_bytes());
  ASSERT_TRUE(g.ok) << g.problem;
  ASSERT_TRUE(g.model.contains("transfer"));
  const GroupModel m = GroupModel::from_json(g.model);
  for (double b : tr.grid(tr.min_bytes(), tr.max_bytes())) {
    const Prediction p = m.predict(b);
    EXPECT_NEAR(p.time_us / tr.predict(b).time_us, 1.0, 1e-6) << b;
    EXPECT_NEAR(std::log(p.hi_us / p.time_us), kZ90 * tr.log_sigma(b), 1e-6) << b;
    EXPECT_EQ(p.how.rfind("transfer K=3: old", 0), 0u) << p.how;
  }
  EXPECT_FALSE(m.predict(t.bytes[1] * 1.5).extrapolated);  // between its own anchors
  const nlohmann::json set = {{"schema", "arfit-models"}, {"schema_version", 1}, {"groups", {g.model}}};
  const ModelSet ms = ModelSet::from_json(set);
  EXPECT_EQ(ms.to_json(), set);
}

// `arfit fit --prior`: a curve of the new machine with three sizes is transferred (marked in the file), one
// with enough sizes is fitted alone, and an unmeasured GPU count goes through the joint-n rule.
TEST(FitTransfer, FitModelSetTransfersSparseCurvesAndJoinsCounts) {
  const Machine old_m{"old", 10.0, 100e3, 1 << 20, 90, 1 << 24};
  const Machine new_m{"new", 13.0, 100e3 / 1.3, 1 << 20, 90, 1 << 24};
  const ModelSet prior = fit::fit_model_set(measure(old_m, {2, 4, 8}, 10, 30, 0.005, 6));
  std::vector<Sample> target;
  for (int n : {2, 4}) {
    auto v = measure(new_m, {n}, 10, 30, 0.005, 7 + n);
    for (size_t i : anchor_indices(v.size(), 3)) target.push_back(v[i]);
  }
  fit::FitOptions fo;
  fo.prior = std::make_shared<fit::TransferLibrary>(std::vector<ModelSet>{prior});
  const ModelSet set = fit::fit_model_set(target, fo, {}, {"prior.json"});
  int transferred = 0;
  for (const auto& g : set.raw().at("groups")) transferred += g.contains("transfer");
  EXPECT_EQ(transferred, 2);
  EXPECT_EQ(set.raw().at("priors").size(), 1u);
  PredictQuery q;
  q.system = "new";
  q.nranks = 8;
  q.bytes = std::ldexp(1.0, 28);
  const auto p = set.predict(q);
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->how.find("joint-n"), std::string::npos) << p->how;
  EXPECT_NEAR(p->time_us / new_m.time_us(Collective::AllReduce, 8, q.bytes), 1.0, 0.15);
  q.nranks = 4;
  const auto p4 = set.predict(q);
  ASSERT_TRUE(p4.has_value());
  EXPECT_NE(p4->how.find("transfer K=3: old"), std::string::npos) << p4->how;
  EXPECT_NEAR(p4->time_us / new_m.time_us(Collective::AllReduce, 4, q.bytes), 1.0, 0.03);
  // Both say they rest on transferred curves (Prediction::transferred, which predict --json and codegen's json
  // write): the transferred group's own answer and the joint-n answer over transferred counts; the prior's own
  // fitted curve does not.
  EXPECT_TRUE(p->transferred) << p->how;
  EXPECT_TRUE(p4->transferred) << p4->how;
  q.system = "old";
  const auto own = prior.predict(q);
  ASSERT_TRUE(own.has_value());
  EXPECT_FALSE(own->transferred) << own->how;
}

// crosshw:K end to end on three synthetic machines: auto beats log-log interpolation of the same K sizes and
// the datasheet rule; curves no other machine measured are counted, not predicted; the table and JSON carry
// a row per target system.
TEST(FitTransfer, CrossHwProtocolLeavesOneSystemOut) {
  std::vector<Sample> s;
  const Machine ms[] = {{"a", 10.0, 100e3, 1 << 20, 90}, {"b", 12.0, 150e3, 1 << 21, 90}, {"c", 8.0, 300e3, 1 << 22, 100}};
  unsigned seed = 11;
  for (const Machine& m : ms) {
    auto v = measure(m, {8}, 10, 30, 0.01, seed++);
    s.insert(s.end(), v.begin(), v.end());
  }
  auto lonely = measure(ms[0], {2}, 10, 30, 0.01, 99);  // only machine a measured 2 GPUs
  s.insert(s.end(), lonely.begin(), lonely.end());
  fit::EvalOptions o;
  o.methods = {"auto", "loglog", "scale"};
  const fit::EvalResult r = fit::eval_crosshw(s, 3, o);
  EXPECT_EQ(r.protocol, "crosshw:3");
  EXPECT_EQ(r.curves, 3);
  EXPECT_EQ(r.unmatched_curves, 1);
  const auto* a = r.method("auto");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->errors.points, 3 * 18);
  EXPECT_LT(a->errors.gmae, r.method("loglog")->errors.gmae);
  EXPECT_LT(a->errors.gmae, r.method("scale")->errors.gmae);
  EXPECT_LT(a->errors.gmae, 0.05);
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("unmatched_curves"), 1);
  EXPECT_EQ(j.at("by_system").size(), 3u);
  EXPECT_TRUE(j.at("by_system").at("a").at("methods").contains("auto"));
  EXPECT_NE(r.to_table().find("by_system"), std::string::npos);
  EXPECT_THROW(fit::eval_crosshw(s, -1, o), std::invalid_argument);
  o.methods = {"seed"};
  EXPECT_THROW(fit::eval_crosshw(s, 3, o), std::invalid_argument);
}

// Two nccl-tests logs of one cluster (the same device on the same hosts, another NCCL setting) are one machine
// to crosshw, whatever their file names: neither is the other's source, so with no third machine nothing
// qualifies; a machine on other hosts is another machine. The label is the first of the two in name order.
TEST(FitTransfer, CrossHwTellsMachinesApartByTheirHosts) {
  auto logs_of = [](const Machine& m, const std::string& hosts, unsigned seed) {
    std::vector<Sample> v = measure(m, {8}, 10, 30, 0.01, seed);
    for (Sample& x : v) {
      x.device = "NVIDIA A100-PCIE-40GB";
      if (!hosts.empty()) x.extra["hosts"] = hosts;
    }
    return v;
  };
  std::vector<Sample> s = logs_of({"cluster_gdr_on", 10.0, 100e3, 1 << 20}, "n013 n014", 1);
  const std::vector<Sample> off = logs_of({"cluster_gdr_off", 14.0, 60e3, 1 << 21}, "n013 n014", 2);
  s.insert(s.end(), off.begin(), off.end());
  fit::EvalOptions o;
  o.methods = {"auto"};
  const std::vector<fit::Curve> curves = fit::eval_curves(s);
  ASSERT_EQ(curves.size(), 2u);
  for (const fit::Curve& c : curves) EXPECT_EQ(c.machine, "cluster_gdr_off") << c.hardware;
  fit::EvalResult r = fit::eval_crosshw(s, 3, o);
  EXPECT_EQ(r.curves, 0);
  EXPECT_EQ(r.unmatched_curves, 2);
  EXPECT_NE(r.nothing_qualifies.find("one system"), std::string::npos) << r.nothing_qualifies;

  // Another cluster on other hosts (and a log that names none) are machines of their own.
  const std::vector<Sample> other = logs_of({"other_cluster", 12.0, 80e3, 1 << 20}, "gpu01 gpu02", 3);
  const std::vector<Sample> unnamed = logs_of({"unnamed", 11.0, 90e3, 1 << 20}, "", 4);
  s.insert(s.end(), other.begin(), other.end());
  s.insert(s.end(), unnamed.begin(), unnamed.end());
  o.keep_points = true;
  r = fit::eval_crosshw(s, 3, o);
  EXPECT_EQ(r.curves, 4);
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("by_system").size(), 3u) << j.at("by_system").dump();
  EXPECT_TRUE(j.at("by_system").contains("cluster_gdr_off"));
  for (const auto& p : r.method("auto")->points)
    if (p.key.system.rfind("cluster_", 0) == 0) {
      EXPECT_EQ(p.predicted.how.find("cluster_"), std::string::npos) << p.predicted.how;
    }
}

// crossn across node boundaries: counts 2, 4, 8 on one node, 16 on two. Without another machine's multi-node
// curves the joint-n answer is kept, marked extrapolated, its interval widened to the intra-node / network gap;
// with them, their scale-out step carries the largest measured count.
TEST(FitTransfer, CrossNAcrossNodesUsesOtherMachinesOrWidens) {
  const Machine m{"x", 10.0, 100e3, 1e30, 90};
  std::vector<Sample> s = measure(m, {2, 4, 8}, 10, 28, 0.005, 21);
  // 16 GPUs on two nodes: the network at a fifth of the bandwidth.
  Machine net = m;
  net.busbw_bytes_per_us = 20e3;
  auto far = measure(net, {16}, 10, 28, 0.005, 22, 2);
  s.insert(s.end(), far.begin(), far.end());
  fit::EvalOptions o;
  o.methods = {"auto", "loglog"};
  o.keep_points = true;
  const fit::EvalResult alone = fit::eval_crossn(s, o);
  ASSERT_EQ(alone.subsets.size(), 3u);  // same, more, more_gpus_per_node
  EXPECT_EQ(alone.subsets[1].name, "more");
  EXPECT_EQ(alone.subsets[1].curves, 1);
  const auto* a = alone.method("auto");
  ASSERT_NE(a, nullptr);
  for (const auto& p : a->points) {
    EXPECT_TRUE(p.predicted.extrapolated);
    EXPECT_NE(p.predicted.how.find("no multi-node prior"), std::string::npos);
  }
  EXPECT_GE(a->coverage, 0.9);  // widened to cover the network
  // Another machine measured 8 GPUs on one node and 16 on two.
  Machine other{"y", 9.0, 120e3, 1e30, 90};
  auto o8 = measure(other, {8}, 10, 28, 0.005, 23);
  Machine other_net = other;
  other_net.busbw_bytes_per_us = 24e3;
  auto o16 = measure(other_net, {16}, 10, 28, 0.005, 24, 2);
  s.insert(s.end(), o8.begin(), o8.end());
  s.insert(s.end(), o16.begin(), o16.end());
  const fit::EvalResult with = fit::eval_crossn(s, o);
  const auto* w = with.method("auto");
  ASSERT_NE(w, nullptr);
  ASSERT_FALSE(w->points.empty());
  for (const auto& p : w->points) EXPECT_NE(p.predicted.how.find("scale-out prior"), std::string::npos);
  EXPECT_LT(w->errors.gmae, a->errors.gmae);
  EXPECT_LT(w->errors.gmae, with.method("loglog")->errors.gmae);
}

// `arfit predict` across node boundaries from a models file: machine x measured 2, 4 and 8 GPUs on one node;
// asked for 16 on two. Alone, the joint-n answer is kept, marked and widened to cover the network; with
// machine y's 8 -> 16 step in the file, that step carries x's 8-GPU curve (the crossn rule, model/scale_out.h).
TEST(FitTransfer, PredictAcrossNodesFromAModelsFile) {
  const Machine x{"x", 10.0, 100e3, 1e30, 90};
  Machine x_net = x;
  x_net.busbw_bytes_per_us = 20e3;  // the network at a fifth of the bandwidth
  const Machine y{"y", 9.0, 120e3, 1e30, 90};
  Machine y_net = y;
  y_net.busbw_bytes_per_us = 24e3;
  PredictQuery q;
  q.system = "x";
  q.nranks = 16;
  q.nnodes = 2;
  auto covered = [](const Prediction& p, double truth) { return p.lo_us <= truth && truth <= p.hi_us; };
  const std::vector<double> sizes = {1 << 12, 1 << 20, 1 << 26};

  const ModelSet alone = fit::fit_model_set(measure(x, {2, 4, 8}, 10, 28, 0.005, 31));
  for (double b : sizes) {
    q.bytes = b;
    const auto p = alone.predict(q);
    ASSERT_TRUE(p.has_value()) << b;
    EXPECT_TRUE(p->extrapolated);
    EXPECT_NE(p->how.find("joint-n"), std::string::npos) << p->how;
    EXPECT_NE(p->how.find("across nodes (no multi-node prior)"), std::string::npos) << p->how;
    EXPECT_TRUE(covered(*p, x_net.time_us(Collective::AllReduce, 16, b))) << b;
  }

  std::vector<Sample> s = measure(x, {2, 4, 8}, 10, 28, 0.005, 31);
  for (auto v : {measure(y, {8}, 10, 28, 0.005, 32), measure(y_net, {16}, 10, 28, 0.005, 33, 2)})
    s.insert(s.end(), v.begin(), v.end());
  // z measured the step too, but on another intra-node fabric (an A100's NVLink 3 against x's and y's SM 90):
  // it lends nothing while y shares x's fabric (model/scale_out.h, same_fabric_lenders).
  const Machine z{"z", 9.0, 60e3, 1e30, 80};
  Machine z_net = z;
  z_net.busbw_bytes_per_us = 5e3;
  for (auto v : {measure(z, {8}, 10, 28, 0.005, 34), measure(z_net, {16}, 10, 28, 0.005, 35, 2)})
    s.insert(s.end(), v.begin(), v.end());
  const ModelSet with = fit::fit_model_set(s);
  for (double b : sizes) {
    q.bytes = b;
    const auto p = with.predict(q);
    const auto guess = alone.predict(q);
    ASSERT_TRUE(p.has_value()) << b;
    EXPECT_TRUE(p->extrapolated);
    EXPECT_EQ(p->how, "scale-out prior from 1 machine(s): y; extrapolated across the topology");
    const double truth = x_net.time_us(Collective::AllReduce, 16, b);
    EXPECT_TRUE(covered(*p, truth)) << b;
    // Closer than the joint-n guess where the network dominates (the largest size).
    if (b == sizes.back()) {
      EXPECT_LT(std::fabs(std::log(p->time_us / truth)), std::fabs(std::log(guess->time_us / truth)));
    }
  }
  // y measured its network (16 GPUs on 2 nodes): 16 on 4 nodes and 32 on 4 are carried within it, from that
  // count, not widened by an unknown network.
  q.system = "y";
  q.nnodes = 4;
  for (int n : {16, 32})
    for (double b : sizes) {
      q.nranks = n;
      q.bytes = b;
      const auto p = with.predict(q);
      ASSERT_TRUE(p.has_value()) << n << " " << b;
      EXPECT_TRUE(p->extrapolated);
      EXPECT_EQ(p->how, "within the measured network: from 16 GPUs on 2 nodes; extrapolated across the topology");
      EXPECT_TRUE(covered(*p, y_net.time_us(Collective::AllReduce, n, b))) << n << " " << b;
      EXPECT_LT(std::log(p->hi_us / p->lo_us), 2 * cross_node_half_width(90)) << n << " " << b;
    }
  // x never left one node: 8 GPUs on 2 nodes has no network to carry within, and y's step is for 16.
  q.system = "x";
  q.nranks = 8;
  q.nnodes = 2;
  const auto x8 = with.predict(q);
  ASSERT_TRUE(x8.has_value());
  EXPECT_NE(x8->how.find("no multi-node prior"), std::string::npos) << x8->how;
}

// crossn where the family measured its network: 2, 4, 8 GPUs on one node and 16 on two (a fifth of the
// bandwidth, three times the latency) predict 32 on four from the 16-GPU count alone; with 32 on four measured
// too, 64 on eight from the network's own 16 -> 32 trend. Both beat log-log (bus bandwidth held) and α-β, and
// the intervals cover without the unknown network's width.
TEST(FitTransfer, CrossNAcrossNodesWithinTheMeasuredNetwork) {
  const Machine node{"x", 10.0, 100e3, 1e30, 90};
  Machine net = node;
  net.alpha_us = 30.0;
  net.busbw_bytes_per_us = 20e3;
  for (int largest_measured : {16, 32}) {
    std::vector<Sample> s = measure(node, {2, 4, 8}, 10, 28, 0.005, 41);
    for (int n = 16; n <= 2 * largest_measured; n *= 2) {
      auto v = measure(net, {n}, 10, 28, 0.005, 42 + n, n / 8);
      s.insert(s.end(), v.begin(), v.end());
    }
    fit::EvalOptions o;
    o.methods = {"auto", "loglog", "alphabeta"};
    o.keep_points = true;
    const fit::EvalResult r = fit::eval_crossn(s, o);
    ASSERT_EQ(r.subsets.size(), 3u);  // same, more, more_gpus_per_node
    EXPECT_EQ(r.subsets[1].curves, 1) << largest_measured;
    const auto* a = r.method("auto");
    ASSERT_NE(a, nullptr);
    ASSERT_FALSE(a->points.empty());
    double mean_half_width = 0;
    for (const auto& p : a->points) {
      EXPECT_TRUE(p.predicted.extrapolated);
      EXPECT_EQ(p.predicted.how.rfind("within the measured network: ", 0), 0u) << p.predicted.how;
      mean_half_width += 0.5 * std::log(p.predicted.hi_us / p.predicted.lo_us) / a->points.size();
    }
    EXPECT_NE(a->points[0].predicted.how.find(largest_measured == 16 ? "from 16 GPUs on 2 nodes" : "joint-n 16,32->64"),
              std::string::npos)
        << a->points[0].predicted.how;
    EXPECT_LT(a->errors.gmae, r.method("loglog")->errors.gmae) << largest_measured;
    EXPECT_LT(a->errors.gmae, r.method("alphabeta")->errors.gmae) << largest_measured;
    EXPECT_LT(a->errors.gmae, 0.10) << largest_measured;
    EXPECT_GE(a->coverage, 0.85) << largest_measured;
    EXPECT_LT(mean_half_width, 0.5 * cross_node_half_width(90)) << largest_measured;
  }
}

// Across nodes to a count no other machine measured: x measured 2, 4 and 8 GPUs on one node and is asked for 32
// on four nodes; y measured 8 on one node and its network at 16 on two, not 32 on four. y's step is bridged
// through its own network (model/scale_out.h, bridged_step): its 16-on-2 curve carried to 32 on 4 over its
// 8-GPU one. Both `arfit predict` and crossn take it, and it beats keeping x's own joint-n guess.
TEST(FitTransfer, AcrossNodesBridgedThroughALendersNetwork) {
  const Machine x{"x", 10.0, 100e3, 1e30, 90};
  Machine x_net = x;
  x_net.alpha_us = 30.0;
  x_net.busbw_bytes_per_us = 20e3;
  const Machine y{"y", 9.0, 120e3, 1e30, 90};
  Machine y_net = y;
  y_net.alpha_us = 27.0;
  y_net.busbw_bytes_per_us = 24e3;
  std::vector<Sample> s = measure(x, {2, 4, 8}, 10, 28, 0.005, 51);
  for (auto v : {measure(y, {8}, 10, 28, 0.005, 52), measure(y_net, {16}, 10, 28, 0.005, 53, 2)})
    s.insert(s.end(), v.begin(), v.end());
  auto truth = [&](double b) { return x_net.time_us(Collective::AllReduce, 32, b); };

  const ModelSet alone = fit::fit_model_set(measure(x, {2, 4, 8}, 10, 28, 0.005, 51));
  const ModelSet with = fit::fit_model_set(s);
  PredictQuery q;
  q.system = "x";
  q.nranks = 32;
  q.nnodes = 4;
  double err_bridged = 0, err_alone = 0;
  for (int e = 10; e <= 28; e += 3) {
    q.bytes = std::ldexp(1.0, e);
    const auto p = with.predict(q);
    const auto guess = alone.predict(q);
    ASSERT_TRUE(p.has_value()) << e;
    ASSERT_TRUE(guess.has_value()) << e;
    EXPECT_EQ(p->how, "scale-out prior from 1 machine(s): y (bridged through their own networks); extrapolated across the topology");
    EXPECT_TRUE(p->extrapolated);
    EXPECT_LE(p->lo_us, truth(q.bytes)) << e;
    EXPECT_GE(p->hi_us, truth(q.bytes)) << e;
    err_bridged += std::fabs(std::log(p->time_us / truth(q.bytes)));
    err_alone += std::fabs(std::log(guess->time_us / truth(q.bytes)));
  }
  std::cout << "mean |ln error| at 32 GPUs on 4 nodes: bridged " << err_bridged / 7 << ", joint-n kept " << err_alone / 7 << "\n";
  EXPECT_LT(err_bridged, 0.5 * err_alone);

  // crossn: x's 32 GPUs on four nodes as the held-out count, predicted from 2, 4, 8 and y's bridged step; y's
  // 16 on two from its 8 on one, which nothing lends (x measured no network within two nodes): its one count
  // carried across nodes, the interval an unknown network's.
  auto x32 = measure(x_net, {32}, 10, 28, 0.005, 54, 4);
  s.insert(s.end(), x32.begin(), x32.end());
  fit::EvalOptions o;
  o.methods = {"auto", "loglog", "alphabeta"};
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_crossn(s, o);
  std::cout << r.to_table();
  ASSERT_EQ(r.subsets.size(), 3u);  // same, more, more_gpus_per_node
  EXPECT_EQ(r.subsets[1].curves, 2);
  const auto* a = r.method("auto");
  ASSERT_NE(a, nullptr);
  ASSERT_FALSE(a->points.empty());
  int x_points = 0;
  for (const auto& p : a->points) {
    const bool of_x = p.key.nranks == 32;
    x_points += of_x;
    EXPECT_NE(p.predicted.how.find(of_x ? "bridged through their own networks" : "across nodes (no multi-node prior)"),
              std::string::npos) << p.predicted.how;
  }
  EXPECT_EQ(x_points, 19);
  EXPECT_LT(a->errors.gmae, r.method("loglog")->errors.gmae);
  EXPECT_LT(a->errors.gmae, r.method("alphabeta")->errors.gmae);
  EXPECT_GE(a->coverage, 0.9);
}

// The K <= 1 rule's calibration classes: by the datasheet distance to the nearest source on one node, the
// network's "unknown" across nodes, and PCIe machines (no NVLink) apart, whatever their distance. Two PCIe
// machines whose slots differ 2x but whose collectives differ 12x (the public L40S and RTX PRO 6000 differ 17x)
// widen the PCIe class only: an NVLink machine's interval is calibrated as if they were absent.
TEST(FitTransfer, ZeroShotCalibrationKeepsPcieMachinesApart) {
  using C = fit::TransferCalibration;
  EXPECT_EQ(C::calibration_class(0, 1, 90), 0);
  EXPECT_EQ(C::calibration_class(std::log(1.5), 1, 80), 1);
  EXPECT_EQ(C::calibration_class(std::log(3.0), 1, 100), 2);
  EXPECT_EQ(C::calibration_class(std::numeric_limits<double>::infinity(), 1, 90), 3);
  EXPECT_EQ(C::calibration_class(0, 2, 90), 3);   // across nodes the network decides
  EXPECT_EQ(C::calibration_class(std::log(2.0), 1, 89), 4);
  EXPECT_EQ(C::calibration_class(0, 1, 120), 4);
  EXPECT_EQ(C::calibration_class(0, 2, 89), 3);

  const std::vector<Machine> nvlink = {{"h1", 10.0, 100e3, 1e30, 90}, {"h2", 11.0, 105e3, 1e30, 90},
                                       {"b1", 9.0, 200e3, 1e30, 100}, {"b2", 9.5, 190e3, 1e30, 100},
                                       {"a1", 12.0, 70e3, 1e30, 80}};  // its nearest: the H100s, 1.5x
  const std::vector<Machine> pcie = {{"p1", 20.0, 5e3, 1e30, 89}, {"p2", 25.0, 60e3, 1e30, 120}};
  std::vector<fit::TransferSource> library;
  unsigned seed = 60;
  auto add = [&](const std::vector<Machine>& machines) {
    for (const Machine& m : machines)
      for (int n : {2, 4, 8}) library.push_back(source_of(measure(m, {n}, 10, 28, 0.01, ++seed)));
  };
  add(nvlink);
  const C without = fit::transfer_calibration(library, 0);
  add(pcie);
  const C with = fit::transfer_calibration(library, 0);
  ASSERT_GE(without.tau[1], 0);  // the A100's class, where a 2x PCIe pair would have fallen
  for (int c = 0; c < 4; ++c) EXPECT_DOUBLE_EQ(with.tau[c], without.tau[c]) << c;
  EXPECT_LT(without.tau[4], 0);  // no PCIe machine: no class of its own
  ASSERT_GE(with.tau[4], 0);
  EXPECT_GT(with.tau[4], 1.0);  // 12x against a 2x slot: ln 6 off at large sizes
  EXPECT_GT(with.tau[4], 5 * std::max(with.tau[0], 0.01));
}

// A source measured densely at a few sizes only (twelve within 1 %, then 1 TiB) and two anchors 0.1 %
// apart: the grid keeps one size per eighth of an octave and the anchors, three sizes. The transferred group was
// refused, "too few distinct sizes: 3 (need >= 4)", where the same anchors without a comparable prior fit their own
// line; the grid carries the shape at every size, the family needs two.
TEST(FitTransfer, TransferredGroupOfASparseGridIsFitted) {
  std::vector<Sample> dense;
  for (double b : {1000., 1001., 1002., 1003., 1004., 1005., 1006., 1007., 1008., 1009., 1010., 1011., 0x1p40}) {
    Sample x;
    x.collective = Collective::AllReduce;
    x.strategy = "NCCL";
    x.dtype = "fp16";
    x.nranks = 8;
    x.bytes = static_cast<std::int64_t>(b);
    x.time_us = 10 + b / 1e7;
    x.extra["system"] = "old";
    dense.push_back(x);
  }
  const fit::TransferSource s = source_of(dense);
  fit::TransferTarget t;
  t.key.system = "new";
  t.key.collective = Collective::AllReduce;
  t.key.strategy = "NCCL";
  t.key.dtype = "fp16";
  t.key.nranks = 8;
  t.bytes = {1000, 1001};
  t.time_us = {7.0143, 7.0144};
  const fit::Transfer tr = fit::transfer_curve(t, {&s});
  ASSERT_TRUE(tr.ok()) << tr.problem();
  ASSERT_LT(tr.grid(tr.min_bytes(), tr.max_bytes()).size(), 4u);
  const fit::GroupFit g = fit::transferred_group(t, tr, tr.min_bytes(), tr.max_bytes());
  ASSERT_TRUE(g.ok) << g.problem;
  const GroupModel m = GroupModel::from_json(g.model);
  EXPECT_NEAR(m.predict(1000).time_us, 7.0143, 1e-3);
  EXPECT_EQ(m.predict(1000).how.rfind("transfer K=2", 0), 0u) << m.predict(1000).how;
}

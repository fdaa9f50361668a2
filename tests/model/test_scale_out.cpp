// The across-node rules of model/scale_out.h that need no fit: which machines lend a scale-out step, how wide
// the interval of a new machine's step is from theirs, and how a step is carried to another intra-node fabric.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/metrics.h"
#include "model/scale_out.h"
#include "model/stated_network.h"

using namespace arfit;

// Lenders with the target's intra-node fabric (the same datasheet interconnect bandwidth) when any; else all,
// and all when the target's SM is not in the table.
TEST(ScaleOut, LendersShareTheTargetsIntraNodeFabric) {
  using V = std::vector<std::size_t>;
  EXPECT_EQ(same_fabric_lenders({90, 80, 80, 0}, 80), (V{1, 2}));
  EXPECT_EQ(same_fabric_lenders({90, 0}, 80), (V{0, 1}));       // no A100 among them: all
  EXPECT_EQ(same_fabric_lenders({90, 80}, 0), (V{0, 1}));       // the target's fabric is unknown: all
  EXPECT_EQ(same_fabric_lenders({100, 103, 90}, 100), (V{0, 1}));  // B200 and B300 share NVLink 5's bandwidth
  EXPECT_TRUE(same_fabric_lenders({}, 80).empty());
}

namespace {

LenderCurve lender_curve(const std::string& system, int nranks, int nnodes, int sm, const std::string& device,
                         const std::string& dtype = "fp32") {
  LenderCurve c;
  c.key.system = system;
  c.key.collective = Collective::AllReduce;
  c.key.strategy = "NCCL";
  c.key.dtype = dtype;
  c.key.nranks = nranks;
  c.key.nnodes = nnodes;
  c.sm = sm;
  c.device = device;
  return c;
}

}  // namespace

// Which machines lend a B200 node's step from 8 GPUs on one node to 32 on four. A machine that measured no one-node
// count lends paired with the one-node logs of its GPU (gpu_model_name; never of its SM alone: an A100 on PCIe is
// no A100 on NVLink); a lender with its own one-node count goes first; a table that states no element type borrows from
// any.
TEST(ScaleOut, LendersPairANetworkLogWithOneNodeLogsOfItsGpu) {
  const std::string h100 = "NVIDIA H100 80GB HBM3", a100_sxm = "NVIDIA A100-SXM4-80GB", a100_pcie = "NVIDIA A100-PCIE-40GB";
  GroupKey largest = lender_curve("p6", 8, 1, 100, "").key, target = largest;
  largest.dtype = target.dtype = "unknown";
  target.nranks = 32;
  target.nnodes = 4;
  std::vector<LenderCurve> pool = {
      lender_curve("p6", 16, 2, 100, ""),                     // the machine's own: never lends
      lender_curve("h100-1node-a", 8, 1, 90, h100),
      lender_curve("h100-1node-b", 8, 1, 90, h100),
      lender_curve("h100-2node", 16, 2, 90, h100),            // paired with both H100 one-node logs
      lender_curve("a100-pcie-2node", 2, 2, 80, a100_pcie),   // no one-node log of its GPU: no lender
      lender_curve("a100-1node", 8, 1, 80, a100_sxm),
      lender_curve("a100-40g-2node", 16, 2, 80, "NVIDIA A100-SXM4-40GB"),  // the same GPU, less memory: paired
      lender_curve("h100-other-op", 16, 2, 90, h100, "fp32"),
  };
  pool.back().key.collective = Collective::AllGather;  // another collective: no step
  auto plans = plan_scale_out_lenders(pool, largest, target, 100);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].system, "a100-40g-2node");
  EXPECT_EQ(plans[0].from, (std::vector<std::size_t>{5}));
  EXPECT_EQ(plans[1].system, "h100-2node");
  EXPECT_TRUE(plans[1].paired);
  EXPECT_EQ(plans[1].from, (std::vector<std::size_t>{1, 2}));
  EXPECT_FALSE(plans[1].to.has_value());
  EXPECT_EQ(plans[1].network, (std::vector<std::size_t>{3}));

  // A cluster with its own one-node count goes before the paired one; a measured step before a bridged one.
  auto add_machine = [&](const std::string& system, int nranks, int nnodes) {
    pool.push_back(lender_curve(system, 8, 1, 90, h100));
    pool.push_back(lender_curve(system, nranks, nnodes, 90, h100));
    const auto chosen = plan_scale_out_lenders(pool, largest, target, 100);
    EXPECT_EQ(chosen.size(), 1u) << system;
    return chosen.empty() ? LenderPlan{} : chosen.front();
  };
  const LenderPlan own = add_machine("h100-cluster", 16, 2);
  EXPECT_EQ(own.system, "h100-cluster");
  EXPECT_FALSE(own.paired);
  EXPECT_EQ(own.from, (std::vector<std::size_t>{8}));
  const LenderPlan measured = add_machine("h100-pod", 32, 4);
  EXPECT_EQ(measured.system, "h100-pod");
  EXPECT_EQ(measured.to, std::optional<std::size_t>(11));

  // Element types: a step passes between any; a machine that measured several lends in the target's.
  GroupKey fp16 = largest, fp32 = largest;
  fp16.dtype = "fp16";
  fp32.dtype = "fp32";
  EXPECT_TRUE(comparable_steps(fp16, fp32));
  fp16.fusion = FusionOp::ResidualRmsNorm;
  EXPECT_FALSE(comparable_steps(fp16, fp32));
  std::vector<LenderCurve> typed = {lender_curve("b200-pod", 8, 1, 100, "NVIDIA B200", "fp16"),
                                    lender_curve("b200-pod", 32, 4, 100, "NVIDIA B200", "fp16"),
                                    lender_curve("b200-pod", 8, 1, 100, "NVIDIA B200", "fp32"),
                                    lender_curve("b200-pod", 32, 4, 100, "NVIDIA B200", "fp32")};
  GroupKey typed_largest = largest, typed_target = target;
  typed_largest.dtype = typed_target.dtype = "fp32";
  plans = plan_scale_out_lenders(typed, typed_largest, typed_target, 100);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].from, (std::vector<std::size_t>{2}));
  EXPECT_EQ(plans[0].to, std::optional<std::size_t>(3));
  typed_largest.dtype = typed_target.dtype = "bf16";  // the same size as fp16
  plans = plan_scale_out_lenders(typed, typed_largest, typed_target, 100);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].from, (std::vector<std::size_t>{0}));
}

// A new machine's step: machines that agree narrow the interval only as their number grows (the unknown
// network's spread weighs as one machine); machines that disagree, or a single one, give the width of knowing
// nothing; never wider than that.
TEST(ScaleOut, NewMachineWidthPoolsTheUnknownNetworksSpread) {
  const int sm = 80;
  const double nothing = cross_node_half_width(sm);
  EXPECT_DOUBLE_EQ(nothing, std::log(300.0 / kNetworkGBps));
  EXPECT_DOUBLE_EQ(new_machine_half_width({0.6}, sm), nothing);
  // Three agreeing InfiniBand clusters: still most of the unknown width (the EFA step of the public logs lies
  // 1.5 beyond theirs in ln t).
  const double three = new_machine_half_width({0.60, 0.62, 0.61}, sm);
  EXPECT_GT(three, 1.5);
  EXPECT_LE(three, nothing);
  // Twenty agreeing machines: narrower, as the prior's weight falls to one in twenty.
  const double twenty = new_machine_half_width(std::vector<double>(20, 0.61), sm);
  EXPECT_LT(twenty, 0.6 * three);
  const double expected = student_t90(20) * std::sqrt(nothing * nothing / (kZ90 * kZ90) / 20.0) * std::sqrt(1.0 + 1.0 / 20);
  EXPECT_NEAR(twenty, expected, 1e-12);
  // Machines that disagree: capped at knowing nothing.
  EXPECT_DOUBLE_EQ(new_machine_half_width({0.6, 2.1, 0.6}, sm), nothing);
}

// A lender's step carried to the target's fabric: unchanged between machines of one fabric, or when either SM is
// not in the table; from an H100 (NVLink 4) to a B200 (NVLink 5, twice the bandwidth) it grows by nearly ln 2
// where the target's one-node time is bandwidth (1 GiB) and hardly at all where it is latency (1 KiB).
TEST(ScaleOut, FabricTermScalesTheOneNodeBandwidthShare) {
  GroupKey k;
  k.system = "b200";
  k.collective = Collective::AllReduce;
  k.strategy = "NCCL";
  k.dtype = "fp16";
  k.nranks = 8;
  k.nnodes = 1;
  const GroupModel node = GroupModel::from_json({{"key", group_key_to_json(k)},
                                                 {"ok", true},
                                                 {"family", "alphabeta"},
                                                 {"params", {std::log(20.0), std::log(700.0)}},  // 20 µs, 700 GB/s
                                                 {"bus_factor", bus_factor(k.collective, 8)},
                                                 {"range", {{"min_bytes", 1024}, {"max_bytes", 1 << 30}, {"points", 21}}},
                                                 {"interval", {{"sigma_in", 0.02}, {"sigma_out_per_octave", 0.03}}}});
  ASSERT_TRUE(node.ok);
  const double step = 0.8;
  EXPECT_DOUBLE_EQ(fabric_adjusted_step(step, 100, 100, node, 1 << 30), step);  // B200 from a B200
  EXPECT_DOUBLE_EQ(fabric_adjusted_step(step, 0, 100, node, 1 << 30), step);    // lender's SM unknown
  EXPECT_DOUBLE_EQ(fabric_adjusted_step(step, 90, 0, node, 1 << 30), step);     // target's SM unknown
  const double large = fabric_adjusted_step(step, 90, 100, node, 1 << 30) - step;
  const double small = fabric_adjusted_step(step, 90, 100, node, 1024) - step;
  EXPECT_GT(large, 0.9 * std::log(2.0));
  EXPECT_LE(large, std::log(2.0) + 1e-12);
  EXPECT_GE(small, 0.0);
  EXPECT_LT(small, 0.1 * std::log(2.0));
  // An A100 target (NVLink 3, half the H100's bandwidth) from an H100: the step shrinks.
  EXPECT_LT(fabric_adjusted_step(step, 90, 80, node, 1 << 30), step);
}

namespace {

// An α-β all-reduce curve of `nranks` GPUs on `nnodes` nodes measured over [min_bytes, max_bytes], as models.json
// stores it.
nlohmann::json alphabeta_json(const std::string& system, int nranks, int nnodes, double alpha_us, double gbps, double min_bytes,
                              double max_bytes) {
  GroupKey k;
  k.system = system;
  k.collective = Collective::AllReduce;
  k.strategy = "NCCL";
  k.dtype = "fp32";
  k.nranks = nranks;
  k.nnodes = nnodes;
  return {{"key", group_key_to_json(k)},
          {"ok", true},
          {"family", "alphabeta"},
          {"params", {std::log(alpha_us), std::log(gbps)}},
          {"bus_factor", bus_factor(k.collective, nranks)},
          {"range", {{"min_bytes", min_bytes}, {"max_bytes", max_bytes}, {"points", 11}}},
          {"interval", {{"sigma_in", 0.02}, {"sigma_out_per_octave", 0.03}}}};
}

GroupModel alphabeta_curve(const std::string& system, int nranks, int nnodes, double alpha_us, double gbps, double min_bytes,
                           double max_bytes) {
  return GroupModel::from_json(alphabeta_json(system, nranks, nnodes, alpha_us, gbps, min_bytes, max_bytes));
}

}  // namespace

// A PCIe target (L40S, 32 GB/s) from an H100 (NVLink 4): the step shrinks to 0 and no further — 16 GPUs on two L40S
// nodes are not faster than 8 on one, the ring still crosses the PCIe links (ln(32 / 450) = −2.6 had made them 7x
// faster on the public L40S table). A step the lender measured below 0 is kept.
TEST(ScaleOut, FabricTermDoesNotTurnAStepNegative) {
  const GroupModel node = alphabeta_curve("l40s", 8, 1, 20, 10, 1024, 1 << 30);  // 20 µs, 10 GB/s
  ASSERT_TRUE(node.ok);
  EXPECT_DOUBLE_EQ(fabric_adjusted_step(0.8, 90, 89, node, 1 << 30), 0.0);
  EXPECT_DOUBLE_EQ(fabric_adjusted_step(-0.3, 90, 89, node, 1 << 30), -0.3);
  EXPECT_GT(fabric_adjusted_step(0.8, 90, 89, node, 1024), 0.0);  // latency-bound: the step hardly moves
}

// A lender's step carried to the target's stated network (issue 41): a lender on 200 GB/s per node lending to a
// machine on 400 shrinks its step by ln 2 where its multi-node time is bandwidth-bound and hardly at its latency;
// never below 0 (more nodes are not faster than one); unchanged when either side states nothing.
TEST(ScaleOut, NetworkTermScalesTheLendersNetworkBandwidthShare) {
  GroupModel lender = alphabeta_curve("ib-cluster", 16, 2, 50, 100, 1024, 1 << 30);  // 50 µs, 100 GB/s
  GroupModel target = alphabeta_curve("efa-cluster", 8, 1, 10, 400, 1024, 1 << 30);
  ASSERT_TRUE(lender.ok && target.ok);
  const double step = 1.2;
  EXPECT_DOUBLE_EQ(network_adjusted_step(step, lender, target, 1 << 30), step);  // neither states a network
  EXPECT_FALSE(states_networks(lender, target));
  lender.network = parse_stated_network("8x200Gb");
  EXPECT_DOUBLE_EQ(network_adjusted_step(step, lender, target, 1 << 30), step);  // the target states none
  EXPECT_FALSE(states_networks(lender, target));
  target.network = parse_stated_network("8x400Gb");
  EXPECT_TRUE(states_networks(lender, target));
  const double large = network_adjusted_step(step, lender, target, 1 << 30) - step;
  const double small = network_adjusted_step(step, lender, target, 1024) - step;
  EXPECT_LT(large, -0.9 * std::log(2.0));
  EXPECT_GE(large, -std::log(2.0) - 1e-12);
  EXPECT_LE(small, 0.0);
  EXPECT_GT(small, -0.1 * std::log(2.0));
  // A slower target network grows the step by up to ln 2; a much faster one takes it to 0, no further.
  target.network = parse_stated_network("8x100Gb");
  EXPECT_GT(network_adjusted_step(step, lender, target, 1 << 30), step + 0.9 * std::log(2.0));
  target.network = parse_stated_network("64x400Gb");
  EXPECT_DOUBLE_EQ(network_adjusted_step(0.5, lender, target, 1 << 30), 0.0);
  EXPECT_DOUBLE_EQ(network_adjusted_step(-0.2, lender, target, 1 << 30), -0.2);
}

// A models file's group keeps the network its samples stated; anything else there is refused, naming the pointer.
TEST(ScaleOut, ModelsFileGroupReadsItsNetwork) {
  nlohmann::json j = alphabeta_json("efa-cluster", 8, 1, 10, 400, 1024, 1 << 30);
  EXPECT_FALSE(GroupModel::from_json(j).network.has_value());
  j["network"] = "8x50GB/s";
  const GroupModel g = GroupModel::from_json(j);
  ASSERT_TRUE(g.network.has_value());
  EXPECT_DOUBLE_EQ(g.network->node_gbps(), 400.0);
  j["network"] = "fast";
  try {
    GroupModel::from_json(j);
    FAIL() << "a network that is not RAILSxBANDWIDTH was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("/network"), std::string::npos) << e.what();
  }
}

// A lender whose network log starts at 1 MiB says nothing of the network's latency at 8 B: its step there is its
// tail line's guess (here a 1 µs intercept, ten times below its one-node latency). Of two lenders, the one whose
// network measured 8 B lends alone there (the public 1 MiB..1 GiB IB logs had put 2 GPUs on two nodes 1.4x below
// one node's time at 8 B); at 64 MiB, which both measured, both lend.
TEST(ScaleOut, LendersLendAtSizesTheirNetworkMeasured) {
  const GroupModel machine = alphabeta_curve("target", 8, 1, 10, 200, 8, 1 << 30);
  ScaleOutLender near_lender{"near", 0, {alphabeta_curve("near", 8, 1, 10, 200, 8, 1 << 30)},
                             alphabeta_curve("near", 16, 2, 30, 40, 8, 1 << 30), {}, false};
  ScaleOutLender far_lender{"far", 0, {alphabeta_curve("far", 8, 1, 10, 200, 8, 1 << 30)},
                            alphabeta_curve("far", 16, 2, 1, 40, 1 << 20, 1 << 30), {}, false};
  const double one_node = machine.predict(8).time_us;
  const Prediction at_8 = scale_out_by_lenders(machine, 0, {near_lender, far_lender}, 16, 2, 8, true);
  EXPECT_NEAR(at_8.time_us / one_node, 3.0, 0.05) << at_8.how;  // the near lender's step: 30 µs / 10 µs
  EXPECT_EQ(at_8.how.find("far"), std::string::npos) << at_8.how;
  const Prediction at_64m = scale_out_by_lenders(machine, 0, {near_lender, far_lender}, 16, 2, 64 << 20, true);
  EXPECT_NE(at_64m.how.find("far"), std::string::npos) << at_64m.how;
}

// A one-node family whose 8 GPUs are faster than its 4 (NVLS at 8: 300 against 100 GB/s) carries that fall to 16
// GPUs on one node, but 16 GPUs on two nodes with nothing measured of the network are not below the 8 on one: the
// ring still crosses the node's links, and the network only adds (the public 8-GPU tables' joint-n answer had put
// them up to 2.4 % below).
TEST(ScaleOut, JointAnswerAcrossNodesNotBelowTheLargestCount) {
  const GroupModel four = alphabeta_curve("target", 4, 1, 10, 100, 1024, 1 << 30);
  const GroupModel eight = alphabeta_curve("target", 8, 1, 10, 300, 1024, 1 << 30);
  const JointModel joint = JointModel::of_members(eight.key, {four, eight});
  const double bytes = 1 << 30, t8 = eight.predict(bytes).time_us;
  ASSERT_LT(joint.predict(16, bytes).time_us, 0.9 * t8) << "the one-node trend falls";
  const Prediction p = joint_across_nodes(joint, eight, 16, bytes, 0);
  EXPECT_DOUBLE_EQ(p.time_us, t8) << p.how;
  EXPECT_LE(p.lo_us, p.time_us);
  EXPECT_GE(p.hi_us, p.time_us);
  EXPECT_TRUE(p.extrapolated);
  // Where the trend grows, the joint answer stands.
  const double small = 1024;
  EXPECT_DOUBLE_EQ(joint_across_nodes(joint, eight, 16, small, 0).time_us, joint.predict(16, small).time_us);
}

namespace {

// A models file of these all-reduce groups.
ModelSet models_of(const nlohmann::json& groups) {
  return ModelSet::from_json({{"schema", "arfit-models"}, {"schema_version", 1}, {"groups", groups}});
}

// The "target" machine's 1 GiB fp32 all-reduce on `nranks` GPUs over `nnodes` nodes (expected to be answered).
Prediction ask_target(const ModelSet& set, int nranks, int nnodes) {
  PredictQuery q;
  q.system = "target";
  q.dtype = "fp32";
  q.nranks = nranks;
  q.nnodes = nnodes;
  q.bytes = 1 << 30;
  const std::optional<Prediction> p = set.predict(q);
  EXPECT_TRUE(p.has_value()) << nranks << " GPUs on " << nnodes << " nodes";
  return p.value_or(Prediction{});
}

}  // namespace

// Each node count borrows the steps of the lenders that measured nearest to it: here a slow network that measured
// 16 GPUs on two nodes lends to two nodes, a fast one that measured 32 on four to four. The answer on four nodes is
// not below the one on two (the same 8 GPUs per node on more nodes: a longer ring over the same links): the public
// A100 table's 32 GPUs on four nodes had come out 3.5x below its 16 on two.
TEST(ScaleOut, MoreNodesAreNotFasterThanHalfOfThem) {
  const ModelSet set = models_of(
      {alphabeta_json("target", 8, 1, 10, 200, 1024, 1 << 30), alphabeta_json("slow", 8, 1, 10, 200, 1024, 1 << 30),
       alphabeta_json("slow", 16, 2, 30, 20, 1024, 1 << 30), alphabeta_json("fast", 8, 1, 10, 200, 1024, 1 << 30),
       alphabeta_json("fast", 32, 4, 15, 150, 1024, 1 << 30), alphabeta_json("fast3", 8, 1, 10, 200, 1024, 1 << 30),
       alphabeta_json("fast3", 24, 3, 15, 150, 1024, 1 << 30)});
  const auto ask = [&](int nranks, int nnodes) { return ask_target(set, nranks, nnodes); };
  const Prediction two = ask(16, 2), three = ask(24, 3), four = ask(32, 4), eight = ask(64, 8);
  EXPECT_NE(two.how.find("slow"), std::string::npos) << two.how;
  EXPECT_NE(four.how.find("fast"), std::string::npos) << four.how;
  EXPECT_GE(four.time_us, two.time_us) << four.how;
  EXPECT_GE(eight.time_us, four.time_us) << eight.how;
  // An odd node count is held at one node fewer (the same 8 GPUs per node): a fast network that measured 24 GPUs
  // on three nodes lends to three.
  EXPECT_NE(three.how.find("fast3"), std::string::npos) << three.how;
  EXPECT_GE(three.time_us, two.time_us) << three.how;
  EXPECT_LE(four.lo_us, four.time_us);
  EXPECT_GE(four.hi_us, four.time_us);
  EXPECT_TRUE(four.extrapolated);
}

// Off the halving chain: a slow network that measured 24 GPUs on three nodes lends to three, a fast one that
// measured 32 on four lends to four. Four nodes are not faster than three (held only along halving, public answers
// had come out up to 25 % below the previous node count: 8 nodes below 6, 4 below 3), nor five than four; far past
// the node-by-node range (100 nodes) the answer is still held at half the nodes.
TEST(ScaleOut, MoreNodesAreNotFasterThanOneNodeFewer) {
  const ModelSet set = models_of(
      {alphabeta_json("target", 8, 1, 10, 200, 1024, 1 << 30), alphabeta_json("slow3", 8, 1, 10, 200, 1024, 1 << 30),
       alphabeta_json("slow3", 24, 3, 30, 20, 1024, 1 << 30), alphabeta_json("fast", 8, 1, 10, 200, 1024, 1 << 30),
       alphabeta_json("fast", 32, 4, 15, 150, 1024, 1 << 30)});
  const auto ask = [&](int nnodes) { return ask_target(set, 8 * nnodes, nnodes); };
  const Prediction three = ask(3), four = ask(4), five = ask(5), fifty = ask(50), hundred = ask(100);
  EXPECT_NE(three.how.find("slow3"), std::string::npos) << three.how;
  EXPECT_GE(four.time_us, three.time_us) << four.how;
  EXPECT_NE(four.how.find("held at 24 GPUs on 3 nodes"), std::string::npos) << four.how;
  EXPECT_GE(five.time_us, four.time_us) << five.how;
  EXPECT_GE(hundred.time_us, fifty.time_us) << hundred.how;
  EXPECT_GE(four.hi_us, three.hi_us);
}

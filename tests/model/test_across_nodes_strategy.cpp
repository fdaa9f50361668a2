// ModelSet::predict on more nodes than the query's machine measured: only NCCL's own strategies run across nodes by
// construction; a custom all-reduce (peer GPU memory within a node) is answered there only where the machine or a
// lender measured it on more than one node, and otherwise gets no answer with the reason (across_nodes_refusal).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/model_set.h"

using namespace arfit;

namespace {

// One fitted alphabeta group as models.json stores it: t = α + f(n)·s/β (β in GB/s).
nlohmann::json group(const std::string& system, const std::string& strategy, int nranks, int nnodes,
                     Collective c = Collective::AllReduce) {
  GroupKey k;
  k.system = system;
  k.collective = c;
  k.strategy = strategy;
  k.dtype = "bf16";
  k.nranks = nranks;
  k.nnodes = nnodes;
  return {{"key", group_key_to_json(k)},
          {"ok", true},
          {"family", "alphabeta"},
          {"params", {std::log(8.0 + nnodes * 10.0), std::log(nnodes > 1 ? 40.0 : 300.0)}},
          {"bus_factor", bus_factor(c, nranks)},
          {"range", {{"min_bytes", 1024.0}, {"max_bytes", 1024.0 * 1024 * 1024}, {"points", 21}}},
          {"interval", {{"sigma_in", 0.02}, {"sigma_out_per_octave", 0.03}}}};
}

ModelSet models(const std::vector<nlohmann::json>& groups) {
  return ModelSet::from_json({{"schema", "arfit-models"}, {"schema_version", 1}, {"groups", groups}});
}

PredictQuery query(const std::string& strategy, int nranks, int nnodes) {
  PredictQuery q;
  q.system = "h100";
  q.strategy = strategy;
  q.dtype = "bf16";
  q.nranks = nranks;
  q.nnodes = nnodes;
  q.bytes = 1 << 20;
  return q;
}

// The machine measured each strategy on one node only.
const ModelSet& one_node_machine() {
  static const ModelSet set = models({group("h100", "NCCL", 8, 1), group("h100", "NCCL_SYMMETRIC", 8, 1),
                                      group("h100", "vLLM_custom_graph", 8, 1), group("h100", "MyNewKernel", 8, 1)});
  return set;
}

}  // namespace

TEST(AcrossNodesStrategy, CustomStrategyMeasuredOnOneNodeOnlyHasNoAnswerAcrossNodes) {
  const ModelSet& set = one_node_machine();
  for (const char* s : {"vLLM_custom_graph", "MyNewKernel"}) {  // a name arfit has never seen is judged the same way
    EXPECT_FALSE(set.predict(query(s, 16, 2))) << s;
    EXPECT_FALSE(set.predict(query(s, 8, 2))) << s;
    const std::string why = set.across_nodes_refusal(query(s, 16, 2));
    EXPECT_NE(why.find(s), std::string::npos) << why;
    EXPECT_NE(why.find("more than one node"), std::string::npos) << why;
    // On the nodes it measured the strategy answers, and nothing is refused.
    EXPECT_TRUE(set.predict(query(s, 8, 1))) << s;
    EXPECT_EQ(set.across_nodes_refusal(query(s, 8, 1)), "");
  }
}

TEST(AcrossNodesStrategy, NcclIsAnsweredAcrossNodesAsBefore) {
  const ModelSet& set = one_node_machine();
  for (const char* s : {"NCCL", "NCCL_SYMMETRIC"}) {
    const std::optional<Prediction> p = set.predict(query(s, 16, 2));
    ASSERT_TRUE(p) << s;
    EXPECT_GT(p->time_us, 0);
    EXPECT_TRUE(p->extrapolated);
    EXPECT_EQ(set.across_nodes_refusal(query(s, 16, 2)), "");
  }
}

TEST(AcrossNodesStrategy, NcclVariantsCrossNodesByTheirAlgorithm) {
  // Forced ring, tree, PAT, CollNet and NVLS-tree runs cross nodes by construction; forced NVLS alone needs one
  // NVLink domain, so measured on one node only it is refused like a custom kernel.
  const ModelSet set = models({group("h100", "NCCL_RING_LL", 8, 1), group("h100", "nccl-tree-simple", 8, 1),
                               group("h100", "NCCL_NVLS_TREE_LL128", 8, 1), group("h100", "NCCL_NVLS_SIMPLE", 8, 1),
                               group("h100", "NCCL_RING_FAST", 8, 1)});
  for (const char* s : {"NCCL_RING_LL", "nccl-tree-simple", "NCCL_NVLS_TREE_LL128"}) {
    EXPECT_TRUE(set.predict(query(s, 16, 2))) << s;
    EXPECT_EQ(set.across_nodes_refusal(query(s, 16, 2)), "") << s;
  }
  for (const char* s : {"NCCL_NVLS_SIMPLE", "NCCL_RING_FAST"}) {  // NVLS alone; not a variant name NCCL knows
    EXPECT_FALSE(set.predict(query(s, 16, 2))) << s;
    EXPECT_NE(set.across_nodes_refusal(query(s, 16, 2)).find(s), std::string::npos) << s;
  }
}

TEST(AcrossNodesStrategy, CustomStrategyMeasuredOnTwoNodesByALenderIsAnswered) {
  const ModelSet& set = one_node_machine();
  // An NVL72 rack: its NVLink domain spans nodes, and it measured the kernel on two.
  const ModelSet nvl72 = models({group("gb200", "vLLM_custom_graph", 8, 1), group("gb200", "vLLM_custom_graph", 16, 2)});
  EXPECT_TRUE(set.predict(query("vLLM_custom_graph", 16, 2), {nvl72}));
  EXPECT_EQ(set.across_nodes_refusal(query("vLLM_custom_graph", 16, 2), {nvl72}), "");
  // The lender's evidence is for that strategy and collective only.
  EXPECT_FALSE(set.predict(query("MyNewKernel", 16, 2), {nvl72}));
  const ModelSet other_collective =
      models({group("gb200", "MyNewKernel", 8, 1, Collective::AllGather), group("gb200", "MyNewKernel", 16, 2, Collective::AllGather)});
  EXPECT_FALSE(set.predict(query("MyNewKernel", 16, 2), {other_collective}));
  EXPECT_NE(set.across_nodes_refusal(query("MyNewKernel", 16, 2), {other_collective}), "");
}

TEST(AcrossNodesStrategy, TheSetsOwnMachinesLendTheEvidence) {
  // Another machine of the same file measured the strategy on two nodes: the query's machine may be answered.
  const ModelSet set = models({group("h100", "vLLM_custom_graph", 8, 1), group("gb200", "vLLM_custom_graph", 8, 1),
                               group("gb200", "vLLM_custom_graph", 16, 2)});
  EXPECT_TRUE(set.predict(query("vLLM_custom_graph", 16, 2)));
  // The query's own machine measured it on two nodes: asked on four, carried within its network.
  PredictQuery on_four = query("vLLM_custom_graph", 32, 4);
  on_four.system = "gb200";
  EXPECT_TRUE(set.predict(on_four));
  EXPECT_EQ(set.across_nodes_refusal(on_four), "");
}

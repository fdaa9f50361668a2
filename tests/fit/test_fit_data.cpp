// Acceptance on the public measurements (../shared/data/public; skipped when absent): arfit's default
// (`auto`) against the baselines on every protocol, and the calibration of its 90 % intervals.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <tuple>

#include "fit/eval.h"
#include "fit/fit.h"
#include "ingest/ingest.h"
#include "model/bus_factor.h"
#include "model/metrics.h"
#include "model/model_set.h"
#include "public_files.h"

using namespace arfit;

namespace {

const std::vector<Sample>& public_samples() {
  static std::vector<Sample> samples = [] {
    std::vector<Sample> s;
    for (const auto& f : arfit::testing::readable_public_files()) s.insert(s.end(), f.samples.begin(), f.samples.end());
    return s;
  }();
  return samples;
}

// `target`: the acceptance figure (GMAE %). `guard`: what arfit reaches today plus a small margin, so
// that a regression fails even where the target is not met yet (docs/fit.md lists both).
void check_protocol(const std::string& protocol, double target, double guard) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  fit::EvalOptions o;
  o.threads = 2;
  const auto& protos = fit::fit_protocols();
  const auto it = std::find_if(protos.begin(), protos.end(), [&](const auto& p) { return p.name == protocol; });
  ASSERT_NE(it, protos.end());
  const fit::EvalResult r = it->run(public_samples(), o);
  std::cout << r.to_table();
  const auto* a = r.method("auto");
  ASSERT_NE(a, nullptr);
  ASSERT_GT(a->errors.points, 1000);
  for (const char* b : {"seed", "alphabeta", "loglog"}) {
    const auto* m = r.method(b);
    ASSERT_NE(m, nullptr);
    EXPECT_LT(a->errors.gmae, m->errors.gmae) << "auto must beat " << b << " on " << protocol;
    EXPECT_GE(a->errors.points, m->errors.points) << "auto answers every held-out point the baselines answer";
  }
  EXPECT_GE(a->coverage, 0.85) << protocol;
  EXPECT_LE(a->coverage, 0.95) << protocol;
  EXPECT_LE(a->errors.gmae * 100, std::max(target, guard)) << protocol;
  std::cout << protocol << ": auto GMAE " << a->errors.gmae * 100 << " % (acceptance target " << target << " %: "
            << (a->errors.gmae * 100 <= target ? "met" : "NOT met") << ")\n";
}

}  // namespace

TEST(PublicData, Interp2) { check_protocol("interp2", 1.6, 1.75); }
TEST(PublicData, Sparse4) { check_protocol("sparse4", 2.5, 2.75); }

// Sibling pooling (fit/siblings.h) must pay for itself where siblings measured other sizes: on sparse4 the
// aiconfigurator NCCL tables of one machine start at different sizes in different versions.
TEST(PublicData, SiblingPoolingBeatsFittingAlone) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  fit::EvalOptions o;
  o.threads = 2;
  o.methods = {"auto", "auto-solo"};
  const fit::EvalResult r = fit::eval_sizes(public_samples(), "sparse4", o);
  std::cout << r.to_table();
  ASSERT_NE(r.method("auto"), nullptr);
  ASSERT_NE(r.method("auto-solo"), nullptr);
  EXPECT_LT(r.method("auto")->errors.gmae, r.method("auto-solo")->errors.gmae);
  EXPECT_EQ(r.method("auto")->errors.points, r.method("auto-solo")->errors.points);
}
// The ceiling diagnostics (fit/eval.h) use other curves' held-out errors at the same size: what sharing
// structure across curves could add at most. docs/fit.md quotes them next to the unmet targets.
TEST(PublicData, CeilingsOfSharedInformation) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  fit::EvalOptions o;
  o.threads = 2;
  o.methods = {"auto", "ceiling-others", "ceiling-otherhw"};
  const fit::EvalResult r = fit::eval_sizes(public_samples(), "interp2", o);
  std::cout << r.to_table();
  for (const std::string& m : o.methods) ASSERT_NE(r.method(m), nullptr) << m;
  const ErrorSummary& plain = r.method("auto")->errors;
  const ErrorSummary& shared = r.method("ceiling-others")->errors;
  EXPECT_EQ(shared.points, plain.points);
  // Tables of one machine share held-out structure (the same switches at the same sizes) ...
  EXPECT_LT(shared.gmae, plain.gmae);
  // ... which other machines share less: their errors say less about this machine's.
  EXPECT_LT(shared.gmae, r.method("ceiling-otherhw")->errors.gmae);
}
TEST(PublicData, Extrap) { check_protocol("extrap", 6.0, 6.0); }
TEST(PublicData, CrossN) { check_protocol("crossn", 8.0, 7.0); }

// crossn by node count (fit/eval.h). As filed, one public family spans nodes: the p6-b200 table (8 B200s on one
// node, 32 on four), a family of two counts; the rest of the held-out counts lie on nodes that were measured.
// The p6's lenders are the two-node logs that say their node count and whose GPU has a one-node log of 8:
// GCP's A3 Mega (16 H100s over TCPXO) and OCI's A100s (RoCE), each paired with aiconfigurator's NCCL table of
// its GPU (another file, the same GPU), their networks carried to 32 on four and their steps to NVLink 5 and, where
// both logs state their network (the p6's "8x 50GBps EFA v4", GCP's "8x200Gb NICs"), to the p6's network: auto
// 12.4 % GMAE (41.3 before the network term), alphabeta 61.0, loglog 69.4 (issue 41: at most 25 %); two lenders
// that disagree leave the interval the unknown network's, 19 of 20 sizes covered (docs/fit.md). Auto beats the
// baselines on both subsets, each covered 85-95 %.
TEST(PublicData, CrossNByNodes) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  fit::EvalOptions o;
  o.threads = 2;
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_crossn(public_samples(), o);
  std::cout << r.to_table();
  ASSERT_EQ(r.subsets_key, "by_nodes");
  ASSERT_EQ(r.subsets.size(), 3u);  // same, more, more_gpus_per_node
  EXPECT_EQ(r.subsets[0].name, "same");
  EXPECT_EQ(r.subsets[1].name, "more");
  EXPECT_EQ(r.subsets[0].curves + r.subsets[1].curves, r.curves);
  EXPECT_EQ(r.subsets[1].curves, 1);
  ASSERT_FALSE(r.subsets[1].methods.empty());
  EXPECT_LE(r.subsets[1].methods[0].errors.gmae, 0.25);
  // More GPUs per node on measured nodes (issue 41): no public machine measured two GPU-per-node counts on the
  // same nodes (the multi-node logs are one count each), so the subset is reported empty; the rule is checked on
  // synthetic networks (FitCrossN.MoreGpusPerNode*).
  EXPECT_EQ(r.subsets[2].name, "more_gpus_per_node");
  EXPECT_EQ(r.subsets[2].curves, 0);
  for (const fit::EvalSubset& subset : r.subsets) {
    if (subset.curves == 0) continue;
    ASSERT_EQ(subset.methods.size(), r.methods.size());
    const auto& a = subset.methods[0];
    ASSERT_EQ(a.name, "auto");
    for (size_t i = 1; i < subset.methods.size(); ++i) {
      if (subset.methods[i].name == "loglog" || subset.methods[i].name == "alphabeta") {
        EXPECT_LT(a.errors.gmae, subset.methods[i].errors.gmae) << subset.name << " " << subset.methods[i].name;
      }
    }
    EXPECT_GE(a.coverage, 0.85) << subset.name;
    EXPECT_LE(a.coverage, 0.95) << subset.name;
  }
  int paired = 0;
  for (const auto& p : r.method("auto")->points)
    if (p.key.nnodes == 4) {
      EXPECT_EQ(p.key.nranks, 32);
      paired += p.predicted.how == "scale-out prior from 2 machine(s) (bridged through their own networks) (paired with "
                                   "one-node machines of their GPU) (carried to the stated network 8x50GB/s); "
                                   "extrapolated across the topology";
    }
  EXPECT_EQ(paired, 20);
}

// Across node boundaries on the public multi-node logs, labelled as a user would label their machines: an A100
// SXM machine measured at 4 GPUs (Sheffield's HGX) and 8 (Azure ND96asr) on one node, and each public 2-node
// 16-GPU A100 log (Azure InfiniBand x2, OCI RoCE, AWS EFA) as the count to predict, one family each; AWS p5's H100
// at 8 GPUs on one node and 16 on two (EFA) a fifth family, of two counts. Each family's target is predicted
// from its own counts and the other families' steps (the A100s lend to each other; the H100 borrows the A100s',
// carried to NVLink 4), never from its own 2-node log.
// Figures (docs/fit.md): auto 10.41 % GMAE (the A100s 7.08), alphabeta 31.25, loglog 38.95; coverage 100 %,
// above the 85-95 %: the three InfiniBand/RoCE clusters agree, the EFA ones lie 4x beyond them at small
// sizes, and three agreeing machines do not narrow a new network's interval much (model/scale_out.h).
TEST(PublicData, CrossNAcrossNodesOnThePublicMultiNodeLogs) {
  const std::string dir = arfit::testing::public_data_dir();
  if (dir.empty()) GTEST_SKIP() << "public data folder absent";
  auto read = [&](const std::string& stem, const std::string& machine, int nnodes) {
    std::vector<Sample> v = ingest::ingest_file(dir + "/nccl-tests/" + stem + ".txt").samples;
    for (Sample& x : v) {
      x.extra["system"] = machine;
      x.source = machine;  // crossn's families are per source: one per machine here
      x.nnodes = nnodes;
    }
    return v;
  };
  std::vector<Sample> samples;
  auto add = [&](std::vector<Sample> v) { samples.insert(samples.end(), v.begin(), v.end()); };
  const std::vector<std::pair<std::string, std::string>> two_node = {
      {"a100-azure-ib", "azure_nd96asrv4_a100_2node16gpu_ib_allreduce"},
      {"a100-azure-ndm", "azure_ndmv4_a100_2node16gpu_ib_allreduce"},
      {"a100-oci-roce", "oci_a100sxm40g_2node16gpu_roce_allreduce"},
      {"a100-aws-efa", "aws_p4de_a100_2node16gpu_efa_allreduce"}};
  for (const auto& [machine, stem] : two_node) {
    add(read("sheffield_stanage_a100sxm80g_4gpu_allreduce", machine, 1));
    add(read("azure_nd96asrv4_a100_1node8gpu_allreduce", machine, 1));
    add(read(stem, machine, 2));
  }
  add(read("aws_p5_h100_1node8gpu_allreduce_batch", "h100-p5", 1));
  add(read("aws_p5_h100_2node16gpu_efa_allreduce", "h100-p5", 2));
  fit::EvalOptions o;
  o.threads = 2;
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_crossn(samples, o);
  std::cout << r.to_table();
  ASSERT_EQ(r.subsets.size(), 3u);  // same, more, more_gpus_per_node
  EXPECT_EQ(r.subsets[0].curves, 0);
  const fit::EvalSubset& more = r.subsets[1];
  EXPECT_EQ(more.name, "more");
  EXPECT_EQ(more.curves, 5);
  const auto& a = more.methods[0];
  ASSERT_EQ(a.name, "auto");
  EXPECT_EQ(a.errors.points, 154);
  for (const auto& m : more.methods) {
    if (m.name == "alphabeta" || m.name == "loglog") {
      EXPECT_LT(a.errors.gmae, m.errors.gmae) << m.name;
    }
  }
  for (const auto& m : r.methods) {  // by family, for docs/fit.md
    std::map<std::string, std::vector<double>> by_family;
    for (const auto& p : m.points) by_family[p.key.system].push_back(relative_error(p.predicted.time_us, p.measured));
    std::cout << m.name << ":";
    for (const auto& [family, e] : by_family) std::cout << " " << family << " " << 100 * gmae(e) << " %";
    std::cout << "\n";
  }
  // The A100 families, each from the other A100 clusters' steps; the H100 from theirs, carried to NVLink 4.
  std::vector<double> a100;
  for (const auto& p : r.method("auto")->points)
    if (p.key.system.rfind("a100", 0) == 0) a100.push_back(relative_error(p.predicted.time_us, p.measured));
  EXPECT_EQ(a100.size(), 122u);
  EXPECT_LE(gmae(a100) * 100, 8.0);
  EXPECT_LE(a.errors.gmae * 100, 12.0);
  EXPECT_GE(a.coverage, 0.85);  // every family covered, the EFA one too
}

// A one-node machine asked for four nodes, on the public p6-b200 table (ml-engineering: 8 B200s on one node and
// 32 on four, all_reduce_bench, fp32): the 8-GPU column is the machine's, the 32-GPU column the truth. No public
// machine measured 32 GPUs on four nodes; AWS p5 (H100, EFA) and Azure ND96asr (A100, InfiniBand) measured 8 on one
// node and 16 on two, so their steps are bridged through their own networks (model/scale_out.h) and carried to the
// B200's NVLink 5 (fabric_adjusted_step). Auto 23.1 % GMAE against log-log's 69.3 % (bus bandwidth of the 8-GPU
// column held); 19 of 20 sizes covered, the 32 KiB one (0.01 GB/s on four nodes, 120x the one-node time) not.
TEST(PublicData, AcrossNodesBridgedOnTheP6B200Table) {
  const std::string dir = arfit::testing::public_data_dir();
  if (dir.empty()) GTEST_SKIP() << "public data folder absent";
  auto read = [&](const std::string& stem, const std::string& machine, int nnodes) {
    ingest::Options o;
    o.system = machine;
    o.dtype = "fp32";
    if (nnodes > 1) o.nnodes = nnodes;
    return ingest::ingest_file(dir + "/nccl-tests/" + stem + ".txt", o).samples;
  };
  std::vector<Sample> train, truth;
  for (const Sample& x : read("mle_p6b200_1node_vs_4node_allreduce_busbw", "p6-b200", 0))
    (x.nranks == 8 ? train : truth).push_back(x);
  ASSERT_EQ(train.size(), 20u);
  ASSERT_EQ(truth.size(), 20u);
  for (const auto& [stem, machine, nnodes] :
       std::vector<std::tuple<std::string, std::string, int>>{{"aws_p5_h100_1node8gpu_allreduce_batch", "h100-p5", 1},
                                                              {"aws_p5_h100_2node16gpu_efa_allreduce", "h100-p5", 2},
                                                              {"azure_nd96asrv4_a100_1node8gpu_allreduce", "a100-azure", 1},
                                                              {"azure_nd96asrv4_a100_2node16gpu_ib_allreduce", "a100-azure", 2}}) {
    const std::vector<Sample> v = read(stem, machine, nnodes);
    train.insert(train.end(), v.begin(), v.end());
  }
  const ModelSet set = fit::fit_model_set(train);
  std::map<std::int64_t, double> one_node;
  for (const Sample& x : train)
    if (x.extra.at("system") == "p6-b200") one_node[x.bytes] = x.time_us;
  PredictQuery q;
  q.system = "p6-b200";
  q.collective = Collective::AllReduce;
  q.dtype = "fp32";
  q.nranks = 32;
  q.nnodes = 4;
  std::vector<double> auto_errors, loglog_errors;
  int covered = 0;
  const double bus_ratio = bus_factor(Collective::AllReduce, 32) / bus_factor(Collective::AllReduce, 8);
  for (const Sample& x : truth) {
    q.bytes = static_cast<double>(x.bytes);
    const auto p = set.predict(q);
    ASSERT_TRUE(p.has_value()) << x.bytes;
    EXPECT_NE(p->how.find("(bridged through their own networks)"), std::string::npos) << p->how;
    auto_errors.push_back(relative_error(p->time_us, x.time_us));
    loglog_errors.push_back(relative_error(one_node.at(x.bytes) * bus_ratio, x.time_us));
    covered += p->lo_us <= x.time_us && x.time_us <= p->hi_us;
  }
  std::cout << "p6-b200 32 GPUs on 4 nodes from 8 on 1: auto GMAE " << 100 * gmae(auto_errors) << " %, log-log "
            << 100 * gmae(loglog_errors) << " %, covered " << covered << " of " << truth.size() << "\n";
  EXPECT_LT(gmae(auto_errors), 0.5 * gmae(loglog_errors));
  EXPECT_LE(gmae(auto_errors), 0.30);
  EXPECT_GE(covered, 17);  // 85 %
}

namespace {

// crosshw:K on every public curve: auto beats the datasheet rule (and log-log interpolation of the same K
// sizes, K >= 2), its 90 % interval covers 85-95 % of the held-out sizes, and its GMAE stays within
// max(target, guard): the acceptance where it set one, else today's figure plus a margin.
void check_crosshw(int K, double target, double guard) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  fit::EvalOptions o;
  o.threads = 2;
  o.methods = {"auto", "scale"};
  if (K >= 2) o.methods.push_back("loglog");
  const fit::EvalResult r = fit::eval_crosshw(public_samples(), K, o);
  std::cout << r.to_table();
  const auto* a = r.method("auto");
  ASSERT_NE(a, nullptr);
  ASSERT_GT(a->errors.points, 10000);
  for (const std::string& b : o.methods) {
    if (b == "auto") continue;
    EXPECT_LT(a->errors.gmae, r.method(b)->errors.gmae) << "auto must beat " << b << " at K=" << K;
    EXPECT_EQ(a->errors.points, r.method(b)->errors.points) << "auto answers every held-out size";
  }
  EXPECT_GE(a->coverage, 0.85) << K;
  EXPECT_LE(a->coverage, 0.95) << K;
  EXPECT_LE(a->errors.gmae * 100, std::max(target, guard)) << K;
  std::cout << "crosshw:" << K << ": auto GMAE " << a->errors.gmae * 100 << " %"
            << (target > 0 ? (a->errors.gmae * 100 <= target ? " (target met)" : " (target NOT met)") : "") << "\n";
}

}  // namespace

TEST(PublicData, CrossHw0) { check_crosshw(0, 12.0, 6.5); }
TEST(PublicData, CrossHw1) { check_crosshw(1, 0, 4.6); }
TEST(PublicData, CrossHw2) { check_crosshw(2, 0, 3.0); }
TEST(PublicData, CrossHw3) { check_crosshw(3, 2.5, 0); }
TEST(PublicData, CrossHw4) { check_crosshw(4, 2.2, 2.5); }
TEST(PublicData, CrossHw6) { check_crosshw(6, 0, 2.2); }

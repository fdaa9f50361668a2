// Predictions at GPU counts, machines and node counts nobody measured stay physical (../shared/data/public; skipped
// when absent). Every public file is fitted as `arfit fit FILE` fits it (auto, joint-n) and asked what `arfit
// predict` answers there, through ModelSet::predict, the call predict makes:
//   * BetweenMeasuredCounts: a count between two measured ones on one node (`--nranks 3, 5, 6, 7` of a 2, 4, 8
//     family), at the sizes both measured;
//   * OneDoublingBeyondTheMeasuredCounts: twice the largest measured count (`--nranks 16`);
//   * TransferredFromThreeAnchors: a file's curves reduced to the 3 sizes `arbench --plan anchors:3` measures and
//     transferred from the other machines' models (`arfit fit anchors.csv --prior others...`), read at every size
//     the file measured and between them;
//   * AcrossNodesBeyondTheMeasuredNodes: the largest measured count, and twice it, on twice the measured nodes
//     (`--nnodes 2`), with every other public file as a lender (`--prior`); a strategy other than NCCL's own that no
//     public file measured on more than one node (custom all-reduce: peer GPU memory within a node) is refused there.
// The envelopes and their reasons are at each constant below. The regions this file does not sweep (below the
// smallest count, between counts at sizes neither measured, 4 and 8 nodes, the transfer from 0, 1, 2, 4 and 6
// anchors) are test_unmeasured_data.cpp's; both read the fitted files through public_fits.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "public_fits.h"

using namespace arfit;
using namespace arfit::testing;

namespace {

// Between two measured counts c1 < n < c2 at one size: min(t_c1, t_c2) / F <= t_n <= max(t_c1, t_c2) · F.
// Why: at a fixed message size every term of a collective's time is monotone in the GPU count on one node — the
// share of the message each GPU moves ((n − 1)/n, the bus factor) and the number of peers or steps grow, the
// per-GPU chunk falls — so the time between two measured counts lies between their times, up to a topology the
// unmeasured count alone has (a PCIe switch half filled); F is the sizes test's margin (tests/fit/
// test_between_sizes_data.cpp: 25 %, ten times a measurement's repeatability).
constexpr double kBetweenCounts = 1.25;

// One doubling beyond the largest measured count c (d the next smaller measured count, q = t_c / t_d at the size,
// per doubling q^(1 / log2(c / d))):
//   t_c · min(1, q) / F  <=  t_2c  <=  t_c · max(P, B, q, 1) · F,
//   P = (2c − 1) / (c − 1) the growth of a ring's peers (a latency-bound collective: steps ∝ n − 1),
//   B = f(2c) / f(c) the growth of the bus factor (a bandwidth-bound one: bytes each GPU moves ∝ f(n)).
// Why: adding GPUs to a node does not speed a fixed-size collective up — each GPU moves a growing share of the
// message over its own link, through more peers — unless the measured counts already showed it (a faster
// algorithm at the larger count, NVLS), and then by no more than that doubling did; nor does it slow it down by
// more than the latency's or the bandwidth's own law, or than the last measured doubling did (a topology that
// grew across sockets may grow again). F as between counts.
constexpr double kBeyondCounts = 1.25;

// The same count on more nodes, or twice it on twice the nodes: t >= t_ref / F, t_ref the same count on the
// measured nodes (c: measured; 2c: the lower of c measured and predict's joint-n answer for 2c there). Why: a node
// boundary puts a network (a 400 Gb/s NIC per GPU at best among the public clusters, ~50 GB/s) on the ring beside
// the node's own links, which the ring still crosses, and adds its latency; a collective that crosses it moves at
// least as much per GPU as on one node. F as above: the lenders' own networks differ by more (up to 4x), but no
// step a lender measured went below its one-node time by more. Before the floor on fabric_adjusted_step and the
// lenders-near-the-size rule (model/scale_out.cpp) 137 of the 17,680 sizes fell below (L40S 16 GPUs on 2 nodes 7x
// under 8 on one; two PCIe GPUs on two nodes 1.4x under one node from logs that start at 1 MiB).
constexpr double kAcrossNodes = 1.25;

// ------------------------------------------------------------------------------------------- GPU counts

TEST(PublicDataAcrossGpuCounts, BetweenMeasuredCounts) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const auto families = joint_families();
  int checked = 0;
  std::vector<Violation> v;
  for_each_adjacent_counts(families, [&](const PublicFile& f, const JointModel& jm, const GroupModel& a, const GroupModel& b) {
    for (int n = a.key.nranks + 1; n < b.key.nranks; ++n) {
      for (double s : f.curves.at(a.key).bytes) {
        const double ta = measured_at(f, a, s), tb = measured_at(f, b, s);
        if (ta <= 0 || tb <= 0) continue;
        const std::optional<Prediction> p = f.models.predict(query_of(a.key, n, a.key.nnodes, s));
        ++checked;
        const double lo = std::min(ta, tb) / kBetweenCounts, hi = std::max(ta, tb) * kBetweenCounts;
        if (!p || !sane(*p) || p->time_us < lo || p->time_us > hi)
          v.push_back({jm.key.id() + " --nranks " + std::to_string(n) + " --bytes " + fmt(s) + ": " + (p ? answer(*p) : "none") +
                       ", measured " + fmt(ta) + " us at " + std::to_string(a.key.nranks) + ", " + fmt(tb) + " us at " +
                       std::to_string(b.key.nranks) + " (" + f.path + ")"});
      }
    }
  });
  std::cout << families.size() << " joint-n families, " << checked << " (count, size) between measured counts, " << v.size()
            << " outside [min / " << kBetweenCounts << ", max x " << kBetweenCounts << "]\n"
            << describe(v);
  EXPECT_GT(families.size(), 150u) << "the aiconfigurator tables measure 2, 4 and 8 GPUs";
  EXPECT_GT(checked, 5000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

TEST(PublicDataAcrossGpuCounts, OneDoublingBeyondTheMeasuredCounts) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const auto families = joint_families();
  int checked = 0;
  std::vector<Violation> v;
  for (const auto& [file, jm] : families) {
    const PublicFile& f = *file;
    const GroupModel& c = jm.members.back();
    const GroupModel& d = jm.members[jm.members.size() - 2];
    const int nc = c.key.nranks, nd = d.key.nranks, n = 2 * nc;
    const double peers = nc > 1 ? (n - 1.0) / (nc - 1.0) : n - 1.0;
    const double fc = bus_factor(c.key.collective, nc), fn = bus_factor(c.key.collective, n);
    const double bus = fc > 0 && fn > 0 ? fn / fc : 1.0;
    for (double s : f.curves.at(c.key).bytes) {
      const double tc = measured_at(f, c, s), td = measured_at(f, d, s);
      if (tc <= 0 || td <= 0) continue;
      const double q = std::pow(tc / td, 1.0 / std::log2(static_cast<double>(nc) / nd));
      const std::optional<Prediction> p = f.models.predict(query_of(c.key, n, c.key.nnodes, s));
      ++checked;
      const double lo = tc * std::min(1.0, q) / kBeyondCounts, hi = tc * std::max({peers, bus, q, 1.0}) * kBeyondCounts;
      if (!p || !sane(*p) || p->time_us < lo || p->time_us > hi)
        v.push_back({jm.key.id() + " --nranks " + std::to_string(n) + " --bytes " + fmt(s) + ": " + (p ? answer(*p) : "none") +
                     ", measured " + fmt(td) + " us at " + std::to_string(nd) + ", " + fmt(tc) + " us at " + std::to_string(nc) +
                     ", bounds [" + fmt(lo) + ", " + fmt(hi) + "] (" + f.path + ")"});
    }
  }
  std::cout << families.size() << " joint-n families, " << checked << " sizes one doubling beyond the measured counts, " << v.size()
            << " outside the bounds\n"
            << describe(v);
  EXPECT_GT(families.size(), 150u);
  EXPECT_GT(checked, 2000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

// ------------------------------------------------------------------------------------------- a new machine

TEST(PublicDataNewMachine, TransferredFromThreeAnchors) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  std::string where;
  const double drop = largest_measured_drop(&where) * kTransferDropMargin;
  std::cout << "largest fall between adjacent measured sizes on one node: " << where << "; allowed fall " << drop << "\n";
  int targets = 0, checked = 0;
  std::vector<Violation> v;
  TransferLibraries libraries;
  for (const PublicFile& f : fitted_files()) {
    fit::FitOptions o;
    o.threads = 2;
    o.prior = libraries.of(f);
    const ModelSet set = fit::fit_model_set(arfit::testing::samples_at_anchors(f.samples, 3), o);
    for (const GroupModel& g : groups_of(set)) {
      if (!g.ok || g.transfer_how.empty()) continue;
      ++targets;
      check_transferred_curve(g, f.curves.at(g.key).bytes, g.key.id() + " (anchors of " + f.path + ")", drop, checked, v);
    }
  }
  std::cout << targets << " transferred curves, " << checked << " sizes, " << v.size() << " violations\n" << describe(v);
  const size_t left = remove_left(v, kTransferLeft);
  if (left > 0) std::cout << left << " of them in curves left alone (kTransferLeft)\n";
  EXPECT_GT(targets, 300) << "most public curves have a comparable curve on another machine";
  EXPECT_GT(checked, 10000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

// ------------------------------------------------------------------------------------------- more nodes

TEST(PublicDataAcrossNodes, BeyondTheMeasuredNodes) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const std::vector<PublicFile>& files = fitted_files();
  int asked = 0, checked = 0, refused = 0;
  std::vector<Violation> v;
  // The (collective, strategy) pairs some public file measured on more than one node: shown to run across nodes.
  std::set<std::pair<Collective, std::string>> across_nodes;
  for (const PublicFile& f : files)
    for (const GroupModel& g : groups_of(f.models))
      if (g.key.nnodes > 1) across_nodes.insert({g.key.collective, g.key.strategy});
  for (const PublicFile& f : files) {
    const std::vector<ModelSet> lenders = other_files_models(f);
    const std::vector<GroupModel> groups = groups_of(f.models);
    for (const GroupModel& g : groups) {
      if (!largest_of_its_kind(g, groups)) continue;
      const bool runs_across_nodes = g.key.strategy == strategy::kNccl || g.key.strategy == strategy::kNcclSymmetric ||
                                     across_nodes.count({g.key.collective, g.key.strategy});
      for (const int n : {g.key.nranks, 2 * g.key.nranks}) {
        const int nodes = 2 * g.key.nnodes;
        ++asked;
        if (!runs_across_nodes) {
          // No answer, and the reason names the strategy.
          const PredictQuery q = query_of(g.key, n, nodes, f.curves.at(g.key).bytes.front());
          const std::optional<Prediction> p = f.models.predict(q, lenders);
          const std::string why = f.models.across_nodes_refusal(q, lenders);
          ++refused;
          if (p || why.rfind(g.key.strategy + ": ", 0) != 0)
            v.push_back({g.key.id() + " --nranks " + std::to_string(n) + " --nnodes " + std::to_string(nodes) + ": " +
                         (p ? answer(*p) : "none") + ", refusal '" + why + "' (" + f.path + ")"});
          continue;
        }
        for (double s : f.curves.at(g.key).bytes) {
          // The reference on the measured nodes: c measured; for 2c the lower of c measured (more GPUs move more)
          // and predict's answer for 2c there (the joint-n rule, bounded by OneDoublingBeyondTheMeasuredCounts,
          // which may fall below c where the measured counts fell).
          double t = measured_at(f, g, s);
          if (t <= 0) continue;
          if (n != g.key.nranks)
            if (const std::optional<Prediction> same_nodes = f.models.predict(query_of(g.key, n, g.key.nnodes, s)))
              t = std::min(t, same_nodes->time_us);
          const std::optional<Prediction> p = f.models.predict(query_of(g.key, n, nodes, s), lenders);
          ++checked;
          if (!p || !sane(*p) || p->time_us < t / kAcrossNodes)
            v.push_back({g.key.id() + " --nranks " + std::to_string(n) + " --nnodes " + std::to_string(nodes) + " --bytes " + fmt(s) +
                         ": " + (p ? answer(*p) : "none") + ", " + fmt(t) + " us on " + std::to_string(g.key.nnodes) + " node(s) (" +
                         f.path + ")"});
        }
      }
    }
  }
  std::cout << asked << " (count, nodes) asked, " << refused << " refused (strategy never measured across nodes), " << checked
            << " sizes, " << v.size() << " violations\n"
            << describe(v);
  EXPECT_GT(asked, 500);
  EXPECT_GT(refused, 0);  // the public custom all-reduce tables are one-node
  EXPECT_TRUE(v.empty()) << describe(v);
}

}  // namespace
